"""Cost of the SoftRank loss: scaling in N, arithmetic rate, seconds per epoch.

Four measurements of :class:`skrank.losses.SoftRankLoss` (``sigma=1.0``,
``n_exact=10``, other parameters at their defaults):

1. Time of one ``loss.value_and_grad(scores, state)`` (loss and gradient) for
   a single query of N = 50, 100, 200, 400 documents (normal scores, labels
   0..2, fixed seeds), for each ``rank_distribution`` in ("binomial",
   "normal", "hybrid").
2. The scaling exponent of "binomial": least-squares slope of log(time)
   against log(N) over those four N. The exact recursion is O(N^3); the goal
   is a slope of at most 3.1.
3. The arithmetic rate of "binomial" against numpy's own. The exact
   Rank-Binomial recursion adds the N documents one step at a time to all N
   targets; at step t (t = 0 .. N-1) it updates the ranks 0 .. t+1 of every
   target, one multiply-add per (step t, target j, rank r <= t+1) cell, so
   the forward pass does N * sum_{t=0}^{N-1} (t+2) multiply-adds. The reverse
   pass does two per cell (the dot product of the adjoint with the stored
   state, and the adjoint update), so one loss+gradient counts

       3 * N * sum_{t=0}^{N-1} (t+2) = 3 * N * N * (N+3) / 2

   multiply-adds (everything else, O(N^2), is not counted; when the stored
   states exceed ``skrank.losses._softrank.MEMORY_BUDGET``, as at N = 400,
   the targets are processed in chunks, which adds Python overhead but no
   arithmetic). Its rate (count /
   time) is compared with that of numpy's ``a*b + c`` on N x N float64 arrays,
   the size of one recursion step's arrays (N*N multiply-adds / time), timed
   in the same run. The goal is a ratio of at least 0.30, judged at N = 400,
   where the recursion rather than Python overhead dominates.
4. Seconds per epoch on OHSUMED Fold1 train of LETOR 3.0 (9219 rows x 45
   features, 63 queries) with a linear network, as the fit loop spends it:
   mini-batches of 8 whole queries in a fixed random order, for each the full
   ``Objective.value_and_grad`` (network forward, loss and gradient, network backward, L2
   penalty) and one Adam step; for SoftRank ("binomial", "normal", "hybrid")
   and ListNet. The data are read from ``../shared/data/ohsumed`` relative to
   the repository root, or from ``$SKRANK_SHARED_DATA/ohsumed``.

Each timing is the median of ``--repeat`` runs after one warm-up run (50 runs
for numpy's ``a*b + c``, which is fast). Run with::

    python benchmarks/bench_softrank.py [--repeat 5] [--skip-ohsumed]
"""

import argparse

import numpy as np

from skrank import load_letor_fold
from skrank._query import QueryLayout
from skrank.losses import ListNetLoss, SoftRankLoss
from skrank._core._fit import Objective
from skrank._core._networks import LinearNetwork
from skrank._core._solvers import Adam

from _shared_data import median_time, ohsumed_root  # benchmarks/ is the script's folder

SIZES = (50, 100, 200, 400)
DISTRIBUTIONS = ("binomial", "normal", "hybrid")
EXPONENT_GOAL = 3.1
RATE_GOAL = 0.30
NUMPY_REPEAT = 50
BATCH_SIZE = 8


def multiply_adds(n):
    """Multiply-adds of one binomial loss+gradient on a query of ``n`` documents."""
    return 3 * n * sum(t + 2 for t in range(n))


def time_query(rank_distribution, n, repeat):
    """Median time of ``value_and_grad`` on one random query of ``n`` documents."""
    rng = np.random.RandomState(n)
    scores = rng.normal(size=n)
    y = rng.randint(0, 3, size=n)
    loss = SoftRankLoss(1.0, rank_distribution=rank_distribution)
    state = loss.prepare(y, QueryLayout(np.zeros(n, dtype=np.int64)))
    return median_time(lambda: loss.value_and_grad(scores, state), repeat)


def numpy_rate(n):
    """Multiply-adds per second of numpy's ``a*b + c`` on ``n`` x ``n`` float64."""
    rng = np.random.RandomState(0)
    a, b, c = rng.normal(size=(3, n, n))
    return n * n / median_time(lambda: a * b + c, NUMPY_REPEAT)


def single_queries(repeat):
    """Parts 1-3: time per query size, binomial exponent and arithmetic rate."""
    times = {rd: [time_query(rd, n, repeat) for n in SIZES] for rd in DISTRIBUTIONS}
    print("loss + gradient of one query (ms)")
    print(f"  {'N':>5}" + "".join(f"{rd:>12}" for rd in DISTRIBUTIONS))
    for i, n in enumerate(SIZES):
        row = "".join(f"{times[rd][i] * 1e3:12.3f}" for rd in DISTRIBUTIONS)
        print(f"  {n:>5}{row}")

    slope = np.polyfit(np.log(SIZES), np.log(times["binomial"]), 1)[0]
    met = "met" if slope <= EXPONENT_GOAL else "NOT met"
    print(f"binomial scaling exponent {slope:.2f}   (goal <= {EXPONENT_GOAL:g}: {met})")

    print("\nbinomial multiply-adds per second against numpy's a*b + c on N x N")
    print(f"  {'N':>5}{'madds':>14}{'binomial/s':>14}{'numpy/s':>14}{'ratio':>8}")
    for n, t in zip(SIZES, times["binomial"]):
        count = multiply_adds(n)
        rate, reference = count / t, numpy_rate(n)
        ratio = rate / reference
        print(f"  {n:>5}{count:14.3e}{rate:14.3e}{reference:14.3e}{ratio:8.2f}")
    met = "met" if ratio >= RATE_GOAL else "NOT met"
    print(f"ratio at N = {SIZES[-1]}: {ratio:.2f}   (goal >= {RATE_GOAL:g}: {met})")


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
    """Part 4: seconds per epoch on OHSUMED Fold1 train."""
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
    print(f"  {'loss':<20}{'s / epoch':>10}{'/ ListNet':>11}")
    for rd in DISTRIBUTIONS:
        t = epoch_time(SoftRankLoss(1.0, rank_distribution=rd), X, y, layout, repeat)
        print(f"  {'SoftRank ' + rd:<20}{t:10.4f}{t / t_listnet:11.1f}")
    print(f"  {'ListNet':<20}{t_listnet:10.4f}{1.0:11.1f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per measure")
    parser.add_argument(
        "--skip-ohsumed", action="store_true", help="skip the epochs on OHSUMED Fold1"
    )
    args = parser.parse_args()
    print(
        f"median of {args.repeat} runs after one warm-up; "
        "SoftRank sigma=1.0, n_exact=10\n"
    )
    single_queries(args.repeat)
    if not args.skip_ohsumed:
        ohsumed_epochs(args.repeat)


if __name__ == "__main__":
    main()
