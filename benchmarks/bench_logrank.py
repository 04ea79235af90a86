"""Cost of LogRank: the fit's objective, the loss over the stored samples, the sampler, a fit.

A kernel benchmark: it times private kernels of skrank (the fit loop's
objectives and linear network in ``skrank._core``, the enumeration of
(good, bad) pairs in ``skrank.losses``) against a numpy reference, and
therefore imports private modules, as only the kernel benchmarks do.

Four measurements on OHSUMED Fold1 train (9219 rows x 45 features, 63
queries), every ratio taken against numpy timed in the same run:

1. The fit's objective and its gradient with respect to the weights, as
   L-BFGS calls it, for the linear model with the default penalty (``alpha="auto"``): the
   objective the ranker builds (``make_objective``: the folded one,
   ``FoldedObjective``, whose evaluation is ``Phi @ w`` and ``Phi.T @ g``
   on the ``(n_queries * k, n_features)`` matrix ``Phi`` of the
   coefficient-weighted rows ``C_q^T X_q`` folded once per fit, where that is
   cheaper; else ``Objective``: ``X @ w``, the loss's per-query products,
   ``X.T @ dscores``), against numpy's ``X @ w`` plus ``X.T @ g`` on the
   same ``X`` (BLAS on its default threads): the two products any linear
   model's gradient needs. Goal: <= 3x. The column ``unfolded`` is the ratio
   of ``Objective`` (the per-query path, which the fit used before folding)
   to the same reference. Run it on an otherwise idle machine: OpenBLAS
   splits a matrix-vector product over two threads only above a size (here
   ``Phi`` of 201 samples, about 12,000 rows, is above it and ``X``, 9219
   rows, below), and a product split over two threads while the other core
   is busy waits for that core: milliseconds per call instead of tens of
   microseconds.
2. The loss alone: objective + score gradient over all queries
   (``LogRankLoss.sorted_value_and_grad`` on a prepared state: no input checks)
   for the sampled models (``sampler="walk"``, ``n_rankings`` rankings per
   query, the ideal one included), the path of any network other than the linear
   one. The arithmetic it must do is ``C_q^T s_q`` for the log-linear scores
   of every stored ranking and ``C_q g_q`` for the gradient; the reference is
   numpy's ``s @ C`` plus ``C @ g`` on the float64 ``(n_rows, k)`` matrix
   ``C`` of all stored coefficients (one BLAS call each way, the same
   multiply-adds). Goal: <= 3x. The ratio with BLAS limited to one thread is
   printed beside it: the loss's products are one small matrix-vector product
   per query, which BLAS runs on one thread, while the reference's two large
   ones may use every thread. The column ``floor`` is the ratio of the
   per-query products alone (the two loops of ``np.dot`` the loss runs, with
   no objective between them) to the same reference: no objective computed
   with per-query BLAS calls can beat it. The closed forms
   (``sampler="exact"``, AUC and MLE) are printed beside: their arithmetic is
   one pass over the (good, bad) pairs, with ``s[g] - s[b]`` plus two
   ``np.bincount`` as the reference.
3. The sampler: ``LogRankLoss.prepare`` (random walks, coefficients, gains),
   once per fit, for both restart schemes, against the same fit's L-BFGS.
4. Seconds per fit through the public API (defaults, ``random_state=0``):
   LogRank's default, three sampled models (``sampler="walk"``), Ridge and
   ListNet (defaults, no vali set).

Timings are medians over ``--repeat`` runs after a warm-up; in 1 and 2,
the objective (or loss) and its reference are timed back to back in every
round and the ratio is the median of the rounds' ratios. Run with::

    python benchmarks/bench_logrank.py [--repeat 7]
"""

import argparse
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import threadpool_limits
from sklearn.linear_model import Ridge

from skrank import ListNetRanker, LogRankRanker, load_letor_fold
from skrank._core._objective import Objective, make_objective
from skrank._core._folded_objective import FoldedObjective
from skrank._core._networks import LinearNetwork
from skrank.losses import LogRankLoss
from skrank.losses._logrank import query_pairs
from skrank.utils import QueryLayout

from _shared_data import median_time, ohsumed_root  # benchmarks/ is the script's folder

GOAL = 3.0


def paired_times(func, reference, repeat, calls=10):
    """Median seconds per call of ``func`` and ``reference``, and the median of their ratio.

    The two are timed back to back in each of ``repeat`` rounds (``calls``
    calls each), so that a slow spell of the machine hits both.
    """
    func(), reference()
    rows = []
    for _ in range(repeat):
        pair = []
        for f in (func, reference):
            t0 = time.perf_counter()
            for _ in range(calls):
                f()
            pair.append((time.perf_counter() - t0) / calls)
        rows.append(pair)
    rows = np.array(rows)
    return np.median(rows[:, 0]), np.median(rows[:, 1]), np.median(rows[:, 0] / rows[:, 1])


def per_query_products(C, s, layout):
    """The loss's arithmetic alone: ``s_q @ C_q`` and ``C_q @ d_q`` for every query."""
    bounds = layout.offsets.tolist()
    pieces = [(slice(a, b), C[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]
    logits = np.empty((layout.n_queries, C.shape[1]))
    grad = np.empty(len(s))

    def products():
        for q, (rows, block) in enumerate(pieces):
            np.dot(s[rows], block, out=logits[q])
        for (rows, block), d in zip(pieces, logits):
            np.dot(block, d, out=grad[rows])

    return products


SAMPLED = [("convex", "ndcg@10"), ("expected_gain", "map"), ("l3", "auc")]
#: The models of the fit's objective: the default first.
FIT_MODELS = [("l3", "ndcg@10"), *SAMPLED]


def fit_objective_cost(X, y, qid, repeat):
    print("1. The fit's objective + weight gradient (linear model, alpha='auto') on OHSUMED Fold1 "
          "train, against X @ w + X.T @ g")
    layout = QueryLayout(qid)  # the file's rows are grouped by query
    network = LinearNetwork(X.shape[1])
    alpha = 2.0 / layout.n_queries  # LogRankRanker's alpha="auto"
    rng = np.random.default_rng(0)
    w = rng.normal(size=X.shape[1])
    g = rng.normal(size=X.shape[0])
    print(f"  {'model':<16}{'k':>5} {'fit uses':>9} {'folded (ms)':>12} {'unfolded (ms)':>14}"
          f" {'reference (ms)':>15} {'ratio':>7} {'unfolded':>9}")
    worst = 0.0
    for objective, gain in FIT_MODELS:
        for n_rankings in (51, 101, 201):
            loss = LogRankLoss(objective, metric=gain, sampler="walk", n_rankings=n_rankings)
            state = loss.prepare(y, layout, random_state=0)
            fit = make_objective(network, loss, state, y, X, None, alpha)  # as the ranker
            folded = FoldedObjective(network, loss, state, y, X, None, alpha)
            unfolded = Objective(network, loss, state, y, X, None, alpha)
            t_fold, t_ref, r_fold = paired_times(lambda: folded.value_and_grad(w),
                                                 lambda: (X @ w, X.T @ g), repeat * 3)
            t_unfold, _, r_unfold = paired_times(lambda: unfolded.value_and_grad(w),
                                                 lambda: (X @ w, X.T @ g), repeat * 3)
            uses_fold = isinstance(fit, FoldedObjective)
            ratio = r_fold if uses_fold else r_unfold
            worst = max(worst, ratio)
            print(f"  {objective + '-' + gain:<16}{n_rankings:>5} "
                  f"{'folded' if uses_fold else 'unfolded':>9} {1e3 * t_fold:12.3f} "
                  f"{1e3 * t_unfold:14.3f} {1e3 * t_ref:15.3f} {ratio:7.2f} {r_unfold:9.2f}")
    met = "met" if worst <= GOAL else "NOT met"
    print(f"  worst ratio of the path the fit uses {worst:.2f} (goal <= {GOAL:g}: {met})")


def objective_cost(X, y, qid, repeat):
    print("2. Loss + score gradient over all queries of OHSUMED Fold1 train")
    layout = QueryLayout(qid)
    rng = np.random.default_rng(0)
    s = layout.to_sorted(X @ rng.normal(size=X.shape[1]))
    print(f"  {'model':<28}{'k':>5} {'loss (ms)':>10} {'reference (ms)':>15} {'ratio':>7}"
          f" {'1 thread':>9} {'floor':>6}")
    worst = 0.0
    for objective, gain in SAMPLED:
        for n_rankings in (51, 101, 201):
            loss = LogRankLoss(objective, metric=gain, sampler="walk", n_rankings=n_rankings)
            state = loss.prepare(y, layout, random_state=0)
            C = state.coef.astype(np.float64)
            g = rng.random(C.shape[1])
            t_loss, t_ref, ratio = paired_times(lambda: loss.sorted_value_and_grad(s, state),
                                                lambda: (s @ C, C @ g), repeat * 3)
            worst = max(worst, ratio)
            with threadpool_limits(1):
                single = paired_times(lambda: loss.sorted_value_and_grad(s, state),
                                      lambda: (s @ C, C @ g), repeat * 3)[2]
            floor = paired_times(per_query_products(C, s, layout),
                                 lambda: (s @ C, C @ g), repeat * 3)[2]
            print(f"  {objective + '-' + gain:<28}{C.shape[1]:>5} {1e3 * t_loss:10.3f} "
                  f"{1e3 * t_ref:15.3f} {ratio:7.2f} {single:9.2f} {floor:6.2f}")
    met = "met" if worst <= GOAL else "NOT met"
    print(f"  worst ratio {worst:.2f} (goal <= {GOAL:g}: {met})")
    print("  closed forms (sampler='exact'), against s[g] - s[b] plus two bincounts:")
    g_pos, b_pos, pair_query, _ = query_pairs(layout.to_sorted(y >= 1), layout)
    d = np.empty(len(g_pos))

    def reference():
        np.subtract(s[g_pos], s[b_pos], out=d)
        return (np.bincount(pair_query, d, minlength=layout.n_queries),
                np.bincount(g_pos, d, minlength=len(s)) - np.bincount(b_pos, d, minlength=len(s)))

    for objective in ("likelihood", "expected_gain", "l3", "convex"):
        loss = LogRankLoss(objective, metric="auc", sampler="exact")
        state = loss.prepare(y, layout, random_state=0)
        t_loss, t_ref, ratio = paired_times(lambda: loss.sorted_value_and_grad(s, state),
                                            reference, repeat, calls=3)
        print(f"  {objective + '-auc (exact)':<28}{len(g_pos):>5} pairs {1e3 * t_loss:8.3f} "
              f"{1e3 * t_ref:15.3f} {ratio:7.2f}")


def sampler_cost(y, qid, repeat):
    print("3. Sampler (LogRankLoss.prepare), once per fit")
    layout = QueryLayout(qid)
    for restart in ("two", "graded"):
        for n_rankings, walk_length in ((101, 10), (101, 50), (201, 10)):
            loss = LogRankLoss("convex", metric="ndcg@10", sampler="walk", n_rankings=n_rankings,
                               walk_length=walk_length, walk_restart=restart)
            t = median_time(lambda: loss.prepare(y, layout, random_state=0), repeat)
            print(f"  walk_restart={restart:<7} n_rankings={n_rankings:<4} "
                  f"walk_length={walk_length:<3}"
                  f"{1e3 * t:9.1f} ms")


def fit_cost(X, y, qid, repeat):
    print("4. Seconds per fit (defaults, random_state=0)")
    models = {
        "LogRank (default)": lambda: LogRankRanker(random_state=0),
        **{f"LogRank {o}-{g} (walk)": (lambda o=o, g=g: LogRankRanker(
            objective=o, metric=g, sampler="walk", random_state=0)) for o, g in SAMPLED},
        "Ridge": lambda: Ridge(),
        "ListNet": lambda: ListNetRanker(random_state=0),
    }
    base = None
    for name, make in models.items():
        kwargs = {} if name == "Ridge" else {"qid": qid}

        def fit():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                return make().fit(X, y, **kwargs)

        t = median_time(fit, max(repeat // 2, 1))
        base = t if name == "Ridge" else base
        extra = f", {fit().n_iter_} iterations" if name != "Ridge" else ""
        print(f"  {name:<28}{t:8.3f} s{extra}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args(argv)
    data = load_letor_fold(ohsumed_root(), "Fold1")
    X, y, qid = data.train
    start = time.perf_counter()
    fit_objective_cost(X, y, qid, args.repeat)
    objective_cost(X, y, qid, args.repeat)
    sampler_cost(y, qid, args.repeat)
    fit_cost(X, y, qid, args.repeat)
    print(f"({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
