"""LETOR 3.0 protocol on OHSUMED: five folds, hyperparameters chosen on vali.

For every fold and every ranker of ``python -m skrank compare`` (Ridge, the
pointwise baseline, included), each point of the ranker's grid below is fit
on the fold's ``train`` split (rankers with early stopping monitor the fold's
``vali`` split, as the LETOR baselines chose their iteration count on it);
the point with the best vali NDCG@10 is kept (the first in grid order on a
tie) and evaluated on ``test``. Test NDCG@1, 3, 5, 10 and MAP are printed as
mean ± std over the folds, all with ``convention="letor"`` (the official
LETOR 3.0 evaluation script), with the mean seconds per fit. Seeds are fixed,
so a run is reproducible. The protocol itself is
:func:`skrank._compare.run_letor`; a new ranker takes part by registering in
:data:`skrank._compare.RANKERS` and, for a larger grid than the job's, in
:data:`GRIDS` here.

Data: OHSUMED of LETOR 3.0 (QueryLevelNorm), ``Fold1`` .. ``Fold5`` under
``$SKRANK_SHARED_DATA/ohsumed`` or ``../shared/data/ohsumed`` beside the
repository. Run with::

    python benchmarks/letor_ohsumed.py [--rankers Ridge ListNet]
"""

import argparse
import sys
import warnings

from sklearn.exceptions import ConvergenceWarning

from skrank._compare import COLUMNS, RANKERS, format_table, run_letor

from _shared_data import ohsumed_root  # benchmarks/ is the script's folder

#: Grids of this benchmark (rankers not listed use their registered grid).
GRIDS = {
    "Ridge": {"alpha": [0.01, 0.1, 1.0, 10.0, 100.0, 1000.0]},
    "ListNet": {
        "hidden_layer_sizes": [(), (5,), (10,)],
        "alpha": [1e-4, 1e-2],
        "learning_rate_init": [1e-3, 1e-2],
        # NDCG@10 of 21 vali queries is a noisy criterion: keep the best of
        # three initialisations on vali (the restarts of the fit loop)
        "n_restarts": [3],
    },
}

#: Published LETOR 3.0 baselines on OHSUMED (test, mean over the five folds).
GOALS = {"ListNet": {"NDCG@10": 0.441, "MAP": 0.446}}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rankers", nargs="+", default=list(RANKERS), choices=list(RANKERS))
    args = parser.parse_args(argv)
    folds = [ohsumed_root() / f"Fold{k}" for k in range(1, 6)]

    def log(message):
        print(message, file=sys.stderr, flush=True)

    with warnings.catch_warnings():
        # grid points that run to max_iter are legitimate candidates
        warnings.simplefilter("ignore", ConvergenceWarning)
        results = run_letor(args.rankers, folds, log=log, grids=GRIDS)
    print(format_table(results, "OHSUMED, LETOR protocol, test mean ± std over 5 folds"))
    for name, goal in GOALS.items():
        if name in results:
            means = dict(zip(COLUMNS, results[name][0].mean(axis=0)))
            checks = [
                f"{metric} {means[metric]:.4f} >= {target} "
                f"({'met' if means[metric] >= target else 'NOT met'})"
                for metric, target in goal.items()
            ]
            print(f"{name} goal (published LETOR 3.0 baseline): " + ", ".join(checks))


if __name__ == "__main__":
    main()
