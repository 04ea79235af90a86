"""Cost of one full-batch ListNet objective against two matrix-vector products.

A kernel benchmark: it times private kernels of skrank (the fit loop's
objective and linear network, in ``skrank._core``) against a numpy
reference, and therefore imports private modules, as only the kernel
benchmarks do.

Training a linear ListNet ranker needs, per pass over the data, the scores
``X @ w``, the listwise loss and its gradient with respect to the scores
(per-query softmaxes), and the weight gradient ``X.T @ g``. The two
matrix-vector products are the unavoidable floor, so the overhead of
everything else is measured by the ratio

    time(one ``Objective.value_and_grad`` evaluation) / time(``X @ w`` + ``X.T @ g``)

on the same matrix; the goal is a ratio of at most 3. Two data sets:

* OHSUMED Fold1 train of LETOR 3.0 (9219 rows x 45 features), read from
  ``../shared/data/ohsumed`` relative to the repository root, or from
  ``$SKRANK_SHARED_DATA/ohsumed``;
* ``make_ranking(n_queries=10000, n_docs=100, n_features=136)``: 10**6 rows x
  136 features, the shape of MSLR-WEB10K (about 1.1 GB; generating it takes a
  few seconds).

Each timing is the median of ``--repeat`` runs after one warm-up run. Run with::

    python benchmarks/bench_listnet.py [--repeat 7] [--skip-synthetic]
"""

import argparse
import time

import numpy as np

from skrank import load_letor_fold, make_ranking
from skrank.losses import ListNetLoss
from skrank._core._objective import Objective
from skrank._core._networks import LinearNetwork
from skrank.utils import QueryLayout

from _shared_data import median_time, ohsumed_root  # benchmarks/ is the script's folder

GOAL = 3.0


def measure(name, X, y, qid, repeat):
    """Time the objective and the two products on ``X``; print one block."""
    X = np.ascontiguousarray(X, dtype=np.float64)
    layout = QueryLayout(qid)
    loss = ListNetLoss()
    state = loss.prepare(y, layout, random_state=0)
    network = LinearNetwork(X.shape[1])
    params = network.init_params(np.random.RandomState(0))
    alpha = 1e-4

    rng = np.random.RandomState(0)
    w = rng.normal(size=X.shape[1])
    g = rng.normal(size=X.shape[0])

    if layout.order is not None:  # the fit loop keeps the rows grouped by query
        X, y = X[layout.order], y[layout.order]
        layout = QueryLayout(layout.to_sorted(layout.qid))
        state = loss.prepare(y, layout, random_state=0)
    full = Objective(network, loss, state, y, X, None, alpha)

    def objective():
        return full.value_and_grad(params)

    def products():
        return X @ w, X.T @ g

    t_obj = median_time(objective, repeat)
    t_mv = median_time(products, repeat)
    ratio = t_obj / t_mv
    n_rows, n_features = X.shape
    print(f"{name}: {n_rows} rows x {n_features} features, {layout.n_queries} queries")
    print(f"  objective (loss + gradient)    {t_obj * 1e3:10.3f} ms")
    print(f"  X @ w + X.T @ g                {t_mv * 1e3:10.3f} ms")
    met = "met" if ratio <= GOAL else "NOT met"
    print(f"  ratio                          {ratio:10.2f}   (goal <= {GOAL:g}: {met})")
    return ratio


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7, help="timed runs per measure")
    parser.add_argument(
        "--skip-synthetic", action="store_true", help="only time OHSUMED Fold1"
    )
    args = parser.parse_args()
    root = ohsumed_root()
    print(f"median of {args.repeat} runs after one warm-up; linear ListNet")

    X, y, qid = load_letor_fold(root, 1).train
    measure("OHSUMED Fold1 train", X, y, qid, args.repeat)

    if not args.skip_synthetic:
        t0 = time.perf_counter()
        X, y, qid = make_ranking(
            n_queries=10000, n_docs=100, n_features=136, random_state=0
        )
        print(f"(generated synthetic data in {time.perf_counter() - t0:.1f} s)")
        measure("make_ranking 10000 x 100 docs, 136 features", X, y, qid, args.repeat)


if __name__ == "__main__":
    main()
