"""Cost of an epoch of the fit loop against the arithmetic it must do.

For a linear ListNet the arithmetic of one epoch is one product ``X @ w`` and
one ``X.T @ g`` over the training rows; everything else (batching, loss
bookkeeping, validation) is overhead. This script fits
``ListNetRanker(hidden_layer_sizes=())`` on synthetic data of 10⁴ queries of
100 documents and 136 features (10⁶ float64 rows) and prints, measured in one
run on the same machine:

1. seconds per epoch (fit time / ``n_iter_`` of a fit with every parameter
   at its default but ``random_state``: early stopping decides the number of
   epochs, and the one-time costs of a fit count) divided by the time of ``X @ w`` +
   ``X.T @ g`` on all rows, for rows in random order (the goal: ≤ 3),
   rows grouped by query, and ``batch_size=64`` (goal ≤ 2); and the cost of
   one more epoch with the fixed costs of a fit left out. Before them, the
   floor of an epoch that takes its rows from ``X``: copying every row once,
   8 and 64 queries at a time in a random query order, with rows in random
   order and grouped by query (a random row gather waits on the memory's
   latency, so its ratio to the pair differs between machines). The pair is
   timed again before every timed fit, and the ratios are taken against the
   median of those samples (a shared machine's speed drifts over minutes);
2. the same for a sparse CSR matrix of 10 % density against the sparse pair
   (goal ≤ 3);
3. the validation metric's share of an epoch (NDCG@10 on the held-out fifth
   of the queries);
4. the peak memory that ``fit`` allocates beyond ``X`` itself, measured with
   :mod:`tracemalloc`, as a multiple of the bytes of ``X`` (goal ≤ 1.5);
5. SoftRank's seconds per epoch on OHSUMED Fold1 (linear network, defaults,
   ``--ohsumed-epochs`` epochs without early stopping), when the LETOR data
   is found.

Only public API is used, so the same script measures an older checkout
(``PYTHONPATH=/path/to/old/checkout python benchmarks/bench_fit.py``).
Run with::

    python benchmarks/bench_fit.py [--queries 10000] [--max-iter 200] [--skip-ohsumed]
"""

import argparse
import os
import time
import tracemalloc
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

from skrank import ListNetRanker, SoftRankRanker, get_ranking_scorer, make_ranking

from _shared_data import median_time, ohsumed_root  # benchmarks/ is the script's folder

GOALS = {"default": 3.0, "grouped": 3.0, "batch_size=64": 2.0, "sparse": 3.0, "memory": 1.5}


def pair_time(X, repeat):
    """Median seconds of ``X @ w`` plus ``X.T @ g``."""
    rng = np.random.RandomState(0)
    w, g = rng.normal(size=X.shape[1]), rng.normal(size=X.shape[0])
    return median_time(lambda: (X @ w, X.T @ g), repeat)


def gather_time(X, qid, batch_size, repeat):
    """Median seconds of copying every row of ``X`` once, ``batch_size`` queries at a time.

    The queries come in a random order and each batch's rows are taken into
    one reused buffer, as a stochastic epoch takes them: the memory traffic
    an epoch cannot avoid without a copy of ``X`` grouped by query. With rows
    in random order its cost is the memory's latency, not its bandwidth; with
    rows grouped by query each query is copied as one block, as a fit does.
    """
    order = np.argsort(qid, kind="stable")
    _, starts, sizes = np.unique(qid[order], return_index=True, return_counts=True)
    perm = np.random.RandomState(0).permutation(len(sizes))
    ends = np.cumsum(sizes[perm])
    cuts = np.append(0, ends[np.minimum(np.arange(batch_size, len(perm) + batch_size,
                                                  batch_size), len(perm)) - 1])
    rows = order[np.concatenate([np.arange(s, s + n) for s, n in
                                 zip(starts[perm], sizes[perm])])]
    buffer = np.empty((int(np.diff(cuts).max()), X.shape[1]), dtype=X.dtype)

    if (order == np.arange(len(order))).all():  # grouped: a block per query, as a fit does
        first_batch = np.arange(0, len(perm), batch_size)

        def epoch():
            first = starts[perm]
            ranges = list(zip(first.tolist(), (first + sizes[perm]).tolist()))
            for i, (a, b) in zip(first_batch, zip(cuts[:-1], cuts[1:])):
                np.concatenate([X[lo:hi] for lo, hi in ranges[i:i + batch_size]],
                               out=buffer[: b - a])
        return median_time(epoch, repeat)

    def epoch():
        for a, b in zip(cuts[:-1], cuts[1:]):
            np.take(X, rows[a:b], axis=0, out=buffer[: b - a], mode="clip")

    return median_time(epoch, repeat)


def epoch_seconds(ranker, X, y, qid):
    """Fit time divided by the number of epochs run."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        t0 = time.perf_counter()
        ranker.fit(X, y, qid=qid)
        seconds = time.perf_counter() - t0
    print(f"    ({type(ranker).__name__} fit {seconds:.2f} s, {ranker.n_iter_} epochs)")
    return seconds / ranker.n_iter_, ranker


def report(name, ratio, goal):
    met = "met" if ratio <= goal else "NOT met"
    print(f"  {name:<34}{ratio:8.2f} x   (goal <= {goal:g}: {met})")


def marginal_epoch(make, X, y, qid, extra=10):
    """Seconds of one more epoch: (fit of 1 + extra epochs - fit of 1 epoch) / extra.

    The fixed costs of a fit (checks, grouping, the holdout) cancel; patience
    is set so that early stopping does not end the longer fit.
    """
    times = []
    for max_iter in (1, 1 + extra):
        ranker = make(max_iter=max_iter, n_iter_no_change=10 * extra)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            t0 = time.perf_counter()
            ranker.fit(X, y, qid=qid)
            times.append(time.perf_counter() - t0)
    return (times[1] - times[0]) / extra


def fit_memory(X, y, qid, max_iter):
    """Peak bytes allocated during ``fit`` beyond what was allocated before it."""
    ranker = ListNetRanker(hidden_layer_sizes=(), max_iter=max_iter, random_state=0)
    tracemalloc.start()
    before, _ = tracemalloc.get_traced_memory()
    tracemalloc.reset_peak()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ranker.fit(X, y, qid=qid)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak - before


class PairClock:
    """Times of ``X @ w`` plus ``X.T @ g``, sampled through the run.

    A shared machine's speed drifts over minutes, so the pair is timed again
    before every timed fit and each ratio is taken against the median of all
    the samples, printed with their range.
    """

    def __init__(self, X, repeat):
        self.X, self.repeat, self.samples = X, repeat, []

    def sample(self):
        self.samples.append(pair_time(self.X, self.repeat))

    @property
    def value(self):
        return float(np.median(self.samples))


def synthetic(args):
    t0 = time.perf_counter()
    X, y, qid = make_ranking(
        n_queries=args.queries, n_docs=100, n_features=136, random_state=0
    )
    X = np.ascontiguousarray(X, dtype=np.float64)
    perm = np.random.RandomState(1).permutation(len(y))
    Xr, yr, qidr = X[perm], y[perm], qid[perm]
    print(f"synthetic: {X.shape[0]} rows x {X.shape[1]} features, {args.queries} queries of 100 "
          f"({X.nbytes / 2**20:.0f} MiB; generated in {time.perf_counter() - t0:.1f} s); "
          f"linear ListNet, max_iter={args.max_iter} (the default is 200), other parameters "
          "default")
    pair = PairClock(X, args.repeat)
    pair.sample()
    floors = {}
    for batch_size in (8, 64):
        for name, rows_qid in (("rows in random order", qidr), ("rows grouped by query", qid)):
            data = Xr if rows_qid is qidr else X
            floors[batch_size, name] = gather_time(data, rows_qid, batch_size, args.repeat)

    def timed(make, data):
        pair.sample()
        return epoch_seconds(make(), *data)

    shuffled, grouped = (Xr, yr, qidr), (X, y, qid)
    per_epoch, ranker = timed(lambda: ListNetRanker(max_iter=args.max_iter, random_state=0),
                              shuffled)
    grouped_epoch, _ = timed(lambda: ListNetRanker(max_iter=args.max_iter, random_state=0),
                             grouped)
    big, _ = timed(lambda: ListNetRanker(max_iter=args.max_iter, batch_size=64,
                                         random_state=0), shuffled)
    extras = {}
    for batch_size in (8, 64):
        pair.sample()
        extras[batch_size] = marginal_epoch(
            lambda **p: ListNetRanker(batch_size=batch_size, random_state=0, **p), *shuffled)
    pair.sample()
    t_pair = pair.value

    print(f"  X @ w + X.T @ g                   {t_pair:8.4f} s (median of {len(pair.samples)} "
          f"samples through the run: {min(pair.samples):.4f}-{max(pair.samples):.4f} s)")
    for batch_size in (8, 64):
        print(f"  copying every row once, in {batch_size}-query batches of a random query "
              "order (the floor of an epoch's row copies):")
        for name in ("rows in random order", "rows grouped by query"):
            t_gather = floors[batch_size, name]
            print(f"    {name:<30}{t_gather:8.4f} s = {t_gather / t_pair:5.2f} x")
    print(f"  epoch, rows in random order       {per_epoch:8.4f} s")
    report("default, rows in random order", per_epoch / t_pair, GOALS["default"])
    report("default, rows grouped by query", grouped_epoch / t_pair, GOALS["grouped"])
    report("batch_size=64, rows in random order", big / t_pair, GOALS["batch_size=64"])
    print("  one more epoch, fixed costs of a fit left out (rows in random order):")
    for batch_size, extra in extras.items():
        print(f"    batch_size={batch_size:<3} {extra:8.4f} s = {extra / t_pair:5.2f} x")

    # the validation metric: NDCG@10 of the held-out fifth of the queries
    val = qid < np.quantile(np.unique(qid), 0.2)
    X_val, y_val, qid_val = X[val], y[val], qid[val]
    scorer = get_ranking_scorer("ndcg@10")
    coef = getattr(ranker, "coef_", None)
    if coef is None:
        coef = ranker.coefs_[0].ravel()
    t_val = median_time(lambda: scorer.score_predictions(y_val, X_val @ coef, qid=qid_val),
                        args.repeat)
    print(f"  validation metric                 {t_val:8.4f} s = "
          f"{100 * t_val / per_epoch:.1f} % of an epoch")

    rng = np.random.RandomState(2)
    Xs = sp.random(X.shape[0], X.shape[1], density=0.1, format="csr", random_state=rng,
                   data_rvs=rng.standard_normal)
    t_sparse_pair = pair_time(Xs, args.repeat)
    sparse_epoch, _ = epoch_seconds(
        ListNetRanker(max_iter=args.max_iter, random_state=0), Xs[perm], yr, qidr)
    print(f"  sparse X @ w + X.T @ g (10 %)     {t_sparse_pair:8.4f} s; "
          f"epoch {sparse_epoch:.4f} s")
    report("sparse CSR, rows in random order", sparse_epoch / t_sparse_pair, GOALS["sparse"])
    del Xs

    peak = fit_memory(Xr, yr, qidr, max_iter=2)
    report("peak memory of fit beyond X / X", peak / Xr.nbytes, GOALS["memory"])


def ohsumed(args):
    from skrank import load_letor_fold

    X, y, qid = load_letor_fold(ohsumed_root(), 1)["train"]
    ranker = SoftRankRanker(max_iter=args.ohsumed_epochs, early_stopping=False, random_state=0)
    per_epoch, _ = epoch_seconds(ranker, X, y, qid)
    listnet, _ = epoch_seconds(
        ListNetRanker(max_iter=args.ohsumed_epochs, early_stopping=False, random_state=0),
        X, y, qid)
    print(f"\nOHSUMED Fold1 train ({X.shape[0]} rows, {np.unique(qid).size} queries), linear, "
          f"defaults, {args.ohsumed_epochs} epochs without early stopping:")
    print(f"  SoftRank s / epoch                {per_epoch:8.4f} s")
    print(f"  ListNet s / epoch                 {listnet:8.4f} s")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=10000)
    parser.add_argument("--max-iter", type=int, default=200,
                        help="most epochs per timed fit (default: ListNet's default)")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs of the products")
    parser.add_argument("--ohsumed-epochs", type=int, default=5,
                        help="epochs of the timed OHSUMED fits")
    parser.add_argument("--skip-ohsumed", action="store_true")
    args = parser.parse_args()
    print(f"skrank from {os.path.dirname(__import__('skrank').__file__)}")
    synthetic(args)
    if not args.skip_ohsumed:
        ohsumed(args)


if __name__ == "__main__":
    main()
