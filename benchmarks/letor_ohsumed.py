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

Two SoftRank studies follow the table (skip them with ``--skip-studies``):

* the paper's central claim, that SoftRank fits NDCG better than a
  top-one-probability loss: SoftRank and ListNet with the same network and
  the same budget (:data:`CLAIM_PARAMS`: ``CLAIM_EPOCHS`` epochs of Adam on
  batches of 8 queries, no early stopping, seed 0) on every fold's train
  split, and the NDCG@10 each reaches on that *training* split;
* the training discount of §4.7: SoftRank (:data:`SWEEP_PARAMS`) with
  ``discount_alpha`` in -1, -0.5, 0, 0.5, 1, early stopping on vali, mean
  vali NDCG@10 over the folds.

Data: OHSUMED of LETOR 3.0 (QueryLevelNorm), ``Fold1`` .. ``Fold5`` under
``$SKRANK_SHARED_DATA/ohsumed`` or ``../shared/data/ohsumed`` beside the
repository. Run with::

    python benchmarks/letor_ohsumed.py [--rankers Ridge ListNet SoftRank] [--n-jobs 2]
                                       [--skip-studies]
"""

import argparse
import sys
import warnings

import numpy as np
from joblib import Parallel, delayed
from sklearn.exceptions import ConvergenceWarning

from skrank import ListNetRanker, SoftRankRanker, load_letor_fold, ndcg_score
from skrank._compare import COLUMNS, LETOR_NDCG10, RANKERS, format_table, run_letor

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
    "SoftRank": {"sigma": [0.01, 0.03, 0.1], "hidden_layer_sizes": [(), (5,)]},
}

#: Published LETOR 3.0 baselines on OHSUMED (test, mean over the five folds).
GOALS = {
    "ListNet": {"NDCG@10": 0.441, "MAP": 0.446},
    "SoftRank": {"NDCG@10": 0.441, "MAP": 0.446},  # at least the LETOR ListNet
}
#: SoftRank must also reach skrank's ListNet of the same run.
AT_LEAST = {"SoftRank": "ListNet"}

#: The claim study: one network size and budget for both losses.
CLAIM_EPOCHS = 30
CLAIM_PARAMS = {"hidden_layer_sizes": (), "solver": "adam", "learning_rate_init": 1e-2,
                "batch_size": 8, "alpha": 1e-4, "max_iter": CLAIM_EPOCHS,
                "early_stopping": False, "random_state": 0}

#: The discount study: SoftRank's settings besides discount_alpha.
SWEEP_ALPHAS = (-1.0, -0.5, 0.0, 0.5, 1.0)
SWEEP_PARAMS = {"random_state": 0, "validation_scoring": LETOR_NDCG10}


def _letor_ndcg10(est, X, y, qid):
    return ndcg_score(y, est.predict(X), qid=qid, k=10, convention="letor")


def _claim_fold(fold):
    """Training NDCG@10 of ListNet and SoftRank with the same network and budget."""
    X, y, qid = load_letor_fold(ohsumed_root(), fold)["train"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # a fixed budget, on purpose
        return [
            _letor_ndcg10(cls(**CLAIM_PARAMS).fit(X, y, qid=qid), X, y, qid)
            for cls in (ListNetRanker, SoftRankRanker)
        ]


def _sweep_fold(fold, discount_alpha):
    """Vali NDCG@10 of SoftRank trained with one discount_alpha (early stopping on vali)."""
    data = load_letor_fold(ohsumed_root(), fold)
    X, y, qid = data.train
    X_val, y_val, qid_val = data.vali
    est = SoftRankRanker(discount_alpha=discount_alpha, **SWEEP_PARAMS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(X, y, qid=qid, X_val=X_val, y_val=y_val, qid_val=qid_val)
    return _letor_ndcg10(est, X_val, y_val, qid_val)


def studies(n_jobs, log):
    """The claim and the discount sweep (both over the five folds)."""
    folds = range(1, 6)
    log(f"[claim] ListNet and SoftRank, {CLAIM_EPOCHS} epochs each, 5 folds ...")
    claim = np.array(Parallel(n_jobs=n_jobs)(delayed(_claim_fold)(f) for f in folds))
    print(f"\nTraining NDCG@10 (LETOR convention), same linear network and budget "
          f"({CLAIM_EPOCHS} epochs of Adam, batches of 8 queries), per fold 1-5:")
    for name, values in zip(("ListNet", "SoftRank"), claim.T):
        print(f"  {name:<9}" + "".join(f"{v:8.4f}" for v in values) + f"   mean {values.mean():.4f}")
    higher = claim[:, 1] > claim[:, 0]
    verdict = "holds" if claim[:, 1].mean() > claim[:, 0].mean() else "does NOT hold"
    print(f"  SoftRank higher on {higher.sum()} of 5 folds; the claim {verdict} on the mean.")

    log("[sweep] SoftRank discount_alpha sweep, 5 folds ...")
    sweep = np.array(Parallel(n_jobs=n_jobs)(
        delayed(_sweep_fold)(f, a) for a in SWEEP_ALPHAS for f in folds
    )).reshape(len(SWEEP_ALPHAS), -1)
    print("\nSoftRank discount_alpha sweep: vali NDCG@10 (LETOR convention), per fold 1-5:")
    for a, values in zip(SWEEP_ALPHAS, sweep):
        print(f"  alpha {a:+.1f}" + "".join(f"{v:8.4f}" for v in values)
              + f"   mean {values.mean():.4f} ± {values.std():.4f}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rankers", nargs="+", default=list(RANKERS), choices=list(RANKERS))
    parser.add_argument("--n-jobs", type=int, default=None, help="joblib workers (folds)")
    parser.add_argument("--skip-studies", action="store_true",
                        help="only the table, not the SoftRank claim and discount sweep")
    args = parser.parse_args(argv)
    folds = [ohsumed_root() / f"Fold{k}" for k in range(1, 6)]

    def log(message):
        print(message, file=sys.stderr, flush=True)

    results = run_letor(args.rankers, folds, log=log, grids=GRIDS, n_jobs=args.n_jobs)
    print(format_table(results, "OHSUMED, LETOR protocol, test mean ± std over 5 folds"))
    means = {name: dict(zip(COLUMNS, table.mean(axis=0))) for name, (table, _) in results.items()}
    for name, goal in GOALS.items():
        if name in means:
            checks = [
                f"{metric} {means[name][metric]:.4f} >= {target} "
                f"({'met' if means[name][metric] >= target else 'NOT met'})"
                for metric, target in goal.items()
            ]
            print(f"{name} goal (published LETOR 3.0 ListNet baseline): " + ", ".join(checks))
    for name, other in AT_LEAST.items():
        if name in means and other in means:
            checks = [
                f"{metric} {means[name][metric]:.4f} >= {means[other][metric]:.4f} "
                f"({'met' if means[name][metric] >= means[other][metric] else 'NOT met'})"
                for metric in GOALS[name]
            ]
            print(f"{name} goal (at least skrank's {other}, same run): " + ", ".join(checks))
    if not args.skip_studies:
        studies(args.n_jobs, log)


if __name__ == "__main__":
    main()
