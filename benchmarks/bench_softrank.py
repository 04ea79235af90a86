"""Cost of the SoftRank loss: scaling in N, truncation, arithmetic rate, seconds per epoch.

A kernel benchmark: it times private kernels of skrank (the rank
distribution's recursion in ``skrank.losses``, the fit loop's objective,
network and solver in ``skrank._core``) against a numpy reference, and
therefore imports private modules, as only the kernel benchmarks do.

Five measurements of :class:`skrank.losses.SoftRankLoss` (``sigma=1.0``,
``n_exact=10``, other parameters at their defaults):

1. Time of one ``loss.value_and_grad(scores, state)`` (loss and gradient) for
   a single query of N = 50, 100, 200, 400 documents (normal scores, labels
   0..2, fixed seeds), for each ``rank_distribution`` in ("binomial",
   "normal", "hybrid"), with all ranks and with ``truncation=10``.
2. The scaling exponent of "binomial" (all ranks): least-squares slope of
   log(time) against log(N) over those four N (the exact recursion is
   O(N^3); the goal is a slope of at most 3.1).
3. The exact recursion truncated to R = 10 ranks against the full one, on a
   single query of N = 400: forward and reverse mode of
   ``skrank.losses._softrank._binomial._rank_binomial`` (the contest probabilities
   given), median of interleaved runs. The full recursion updates
   N * sum_{t<N} (t+2) cells (step t touches only the t+2 ranks it can
   reach, so this is N^3/2, not N^3), a single truncated one
   N * sum_{t<N} min(t+2, R): a ratio of 20. Cut into m segments of S
   documents, the truncated recursion updates N * m * sum_{t<S} min(t+2, R)
   cells (27 times fewer than the full one at m = 32, S = 13, one segment
   empty: the segments are a power of two), plus about
   R^2/2 multiply-adds per target and segment to combine the segments (three
   times that with the reverse mode). The goal is a time ratio of at
   least 20.
4. The arithmetic rate of the exact recursion (all ranks) against numpy's
   own, for Q = 1, 8 (the default ``batch_size``) and 32 queries of N = 20,
   50, 100 and 400 documents in one block. At step t (t = 0 .. N-1) the
   recursion updates ranks 0 .. t+1 of every target: one multiply-add per
   cell forward, two in reverse, so one forward and reverse pass counts

       3 * Q * N * sum_{t=0}^{N-1} (t+2) = 3 * Q * N * N * (N+3) / 2

   multiply-adds. Its rate (count / time of ``_rank_binomial`` and its
   backward) is compared with that of numpy's ``a*b + c`` on float64 arrays
   of Q * N * N elements (a block's size), timed in the same run; the rate
   of the whole loss (``value_and_grad``, whose O(N^2) part is not counted)
   is printed beside it. The goal is a ratio of at least 0.30 at N = 50 with
   Q = 8: a mini-batch of short queries runs as one recursion.
5. Seconds per epoch on OHSUMED Fold1 train of LETOR 3.0 (9219 rows x 45
   features, 63 queries) with a linear network, as the fit loop spends it:
   mini-batches of 8 whole queries in a fixed random order, for each the full
   ``Objective.value_and_grad`` (network forward, loss and gradient, network backward, L2
   penalty) and one Adam step; for SoftRank ("binomial", "normal", "hybrid",
   with all ranks and with ``truncation=10``) and ListNet. The data are read
   from ``../shared/data/ohsumed`` relative to the repository root, or from
   ``$SKRANK_SHARED_DATA/ohsumed``.

Each timing is the median of ``--repeat`` runs after one warm-up run (50 runs
for numpy's ``a*b + c``, which is fast; ``3 * --repeat`` interleaved runs in
part 3). Run with::

    python benchmarks/bench_softrank.py [--repeat 5] [--skip-ohsumed]
"""

import argparse
import time
import warnings

import numpy as np

from skrank import load_letor_fold
from skrank.losses import ListNetLoss, SoftRankLoss
from skrank.losses._softrank._binomial import _rank_binomial
from skrank._core._objective import Objective
from skrank._core._networks import LinearNetwork
from skrank._core._solvers import Adam
from skrank.utils import QueryLayout

from _shared_data import median_time, ohsumed_root  # benchmarks/ is the script's folder

SIZES = (50, 100, 200, 400)
DISTRIBUTIONS = ("binomial", "normal", "hybrid")
TRUNCATION = 10
EXPONENT_GOAL = 3.1
TRUNCATION_GOAL = 20.0
RATE_SIZES = (20, 50, 100, 400)
RATE_QUERIES = (1, 8, 32)
RATE_GOAL = 0.30
NUMPY_REPEAT = 50
BATCH_SIZE = 8


def multiply_adds(n, n_queries=1):
    """Multiply-adds of one exact forward and reverse pass over queries of ``n`` documents."""
    return 3 * n_queries * n * sum(t + 2 for t in range(n))


def time_query(rank_distribution, n, repeat, truncation=None):
    """Median time of ``value_and_grad`` on one random query of ``n`` documents."""
    rng = np.random.RandomState(n)
    scores = rng.normal(size=n)
    y = rng.randint(0, 3, size=n)
    loss = SoftRankLoss(1.0, rank_distribution=rank_distribution, truncation=truncation)
    state = loss.prepare(y, QueryLayout(np.zeros(n, dtype=np.int64)))
    return median_time(lambda: loss.value_and_grad(scores, state), repeat)


def numpy_rate(size):
    """Multiply-adds per second of numpy's ``a*b + c`` on float64 arrays of ``size`` elements."""
    rng = np.random.RandomState(0)
    a, b, c = rng.normal(size=(3, size))
    return size / median_time(lambda: a * b + c, NUMPY_REPEAT)


def _block(n, n_queries, seed=0):
    """Random contest probabilities of ``n_queries`` queries of ``n`` documents (one block)."""
    rng = np.random.RandomState(seed)
    pi = rng.uniform(size=(n_queries, n, n))
    pi[:, np.arange(n), np.arange(n)] = 0.0
    return pi, np.full(n_queries, n)


def recursion_pass(pi, sizes, n_ranks=None):
    """One forward and reverse pass of the exact recursion."""
    P, backward = _rank_binomial(pi, sizes, n_ranks=n_ranks)
    backward(np.ones_like(P))


def single_queries(repeat):
    """Parts 1 and 2: time per query size, with and without truncation; binomial exponent."""
    columns = [(rd, t) for rd in DISTRIBUTIONS for t in (None, TRUNCATION)]
    times = {c: [time_query(c[0], n, repeat, c[1]) for n in SIZES] for c in columns}
    print("loss + gradient of one query (ms)")
    print(f"  {'N':>5}" + "".join(f"{rd + (f' R={t}' if t else ''):>14}" for rd, t in columns))
    for i, n in enumerate(SIZES):
        print(f"  {n:>5}" + "".join(f"{times[c][i] * 1e3:14.3f}" for c in columns))
    slope = np.polyfit(np.log(SIZES), np.log(times[("binomial", None)]), 1)[0]
    met = "met" if slope <= EXPONENT_GOAL else "NOT met"
    print(f"binomial scaling exponent {slope:.2f}   (goal <= {EXPONENT_GOAL:g}: {met})")


def truncated_recursion(repeat):
    """Part 3: the recursion truncated to R ranks against the full one, N = 400."""
    n = SIZES[-1]
    pi, sizes = _block(n, 1)
    runs = {None: [], TRUNCATION: []}
    for n_ranks in runs:  # warm-up
        recursion_pass(pi, sizes, n_ranks)
    for _ in range(3 * repeat):
        for n_ranks, times in runs.items():
            start = time.perf_counter()
            recursion_pass(pi, sizes, n_ranks)
            times.append(time.perf_counter() - start)
    full, truncated = (np.median(runs[k]) for k in (None, TRUNCATION))
    ratio = full / truncated
    met = "met" if ratio >= TRUNCATION_GOAL else "NOT met"
    print(f"\nexact recursion, one query of N = {n}, forward + reverse: all ranks "
          f"{full * 1e3:.1f} ms, R = {TRUNCATION}: {truncated * 1e3:.2f} ms, "
          f"ratio {ratio:.1f}   (goal >= {TRUNCATION_GOAL:g}: {met})")


def rates(repeat):
    """Part 4: multiply-adds per second of the exact recursion against numpy's a*b + c."""
    print("\nexact recursion (all ranks) against numpy's a*b + c on Q x N x N, "
          "multiply-adds per second")
    print(f"  {'N':>5}{'Q':>4}{'madds':>12}{'recursion/s':>13}{'numpy/s':>11}"
          f"{'ratio':>7}{'loss ratio':>12}")
    goal = None
    for n in RATE_SIZES:
        for q in RATE_QUERIES:
            if n * n * n * q > 2e8:  # the largest blocks take seconds
                continue
            pi, sizes = _block(n, q)
            count = multiply_adds(n, q)
            t = median_time(lambda: recursion_pass(pi, sizes), repeat)
            reference = numpy_rate(q * n * n)
            rng = np.random.RandomState(n)
            y = rng.randint(0, 3, size=n * q)
            qid = np.repeat(np.arange(q), n)
            loss = SoftRankLoss(1.0, rank_distribution="binomial")
            state = loss.prepare(y, QueryLayout(qid))
            scores = rng.normal(size=n * q)
            t_loss = median_time(lambda: loss.value_and_grad(scores, state), repeat)
            ratio = count / t / reference
            print(f"  {n:>5}{q:>4}{count:12.3e}{count / t:13.3e}{reference:11.3e}"
                  f"{ratio:7.2f}{count / t_loss / reference:12.2f}")
            if n == 50 and q == BATCH_SIZE:
                goal = ratio
    met = "met" if goal >= RATE_GOAL else "NOT met"
    print(f"ratio at N = 50, Q = {BATCH_SIZE}: {goal:.2f}   (goal >= {RATE_GOAL:g}: {met})")


class _NeverStop:
    """A monitor that lets a solver run all of its epochs."""

    n_updates = 0
    train_improved = True

    def update(self, params, loss):
        return False


def epoch_time(loss, X, y, layout, repeat):
    """Median seconds of one epoch of mini-batches of whole queries."""
    network = LinearNetwork(X.shape[1])
    start = network.init_params(np.random.RandomState(0))
    state = loss.prepare(y, layout, random_state=0)
    objective = Objective(network, loss, state, y, X, None, 1e-4)

    def epoch():
        solver = Adam(learning_rate_init=1e-2, batch_size=BATCH_SIZE, max_iter=1)
        solver.minimize(objective, start.copy(), _NeverStop(), np.random.RandomState(0))

    return median_time(epoch, repeat)


def ohsumed_epochs(repeat):
    """Part 5: seconds per epoch on OHSUMED Fold1 train."""
    X, y, qid = load_letor_fold(ohsumed_root(), 1)["train"]
    layout = QueryLayout(qid)
    if layout.order is not None:  # group the rows by query, as the fit loop does
        X, y = X[layout.order], y[layout.order]
        layout = QueryLayout(layout.to_sorted(layout.qid))
    X = np.ascontiguousarray(X, dtype=np.float64)
    n_rows, n_features = X.shape
    print(
        f"\nOHSUMED Fold1 train: {n_rows} rows x {n_features} features, "
        f"{layout.n_queries} queries (largest {layout.max_size}); linear network, "
        f"batches of {BATCH_SIZE} queries"
    )
    t_listnet = epoch_time(ListNetLoss(), X, y, layout, repeat)
    print(f"  {'loss':<26}{'s / epoch':>10}{'/ ListNet':>11}")
    for rd in DISTRIBUTIONS:
        for trunc in (None, TRUNCATION):
            loss = SoftRankLoss(1.0, rank_distribution=rd, truncation=trunc)
            t = epoch_time(loss, X, y, layout, repeat)
            name = f"SoftRank {rd}" + (f" R={trunc}" if trunc else "")
            print(f"  {name:<26}{t:10.4f}{t / t_listnet:11.1f}")
    print(f"  {'ListNet':<26}{t_listnet:10.4f}{1.0:11.1f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per measure")
    parser.add_argument(
        "--skip-ohsumed", action="store_true", help="skip the epochs on OHSUMED Fold1"
    )
    args = parser.parse_args()
    # truncation=10 is timed on purpose (its warning says training may fail)
    warnings.filterwarnings("ignore", message="truncation=.*below a quarter")
    print(
        f"median of {args.repeat} runs after one warm-up; "
        "SoftRank sigma=1.0, n_exact=10\n"
    )
    single_queries(args.repeat)
    truncated_recursion(args.repeat)
    rates(args.repeat)
    if not args.skip_ohsumed:
        ohsumed_epochs(args.repeat)


if __name__ == "__main__":
    main()
