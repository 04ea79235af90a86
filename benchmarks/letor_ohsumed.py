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
:func:`skrank.model_selection.letor_protocol` (run by :func:`letor`, one fold
per worker), that of ``python -m skrank compare --data``; a new ranker takes
part by registering for ``compare`` (the rankers of
:func:`skrank.model_selection.registered_rankers`) and, for a larger grid than
the command's, in :data:`GRIDS` here.

LogRank (Dubey et al., ICDM 2009) takes part as its ten models: MLE and the
three other objectives (ExpGain, L3, ConvexLoss) with each of the gains AUC,
MAP and NDCG (:data:`LOGRANK_MODELS`, given to the protocol as estimators
named ``LogRank-MLE``, ``LogRank-ExpGain-AUC`` .. ``LogRank-Convex-NDCG``,
``alpha`` chosen on vali from :data:`LOGRANK_GRID`); the table is followed by
their goals (:data:`LOGRANK_GOALS`). The paper's own OHSUMED figures (§5) are
on cleaned, binarised data (§5.1.1) and are not comparable with the LETOR
protocol.

``--seeds 0 1 2 3 4`` runs the table once per seed (every ranker's
``random_state``; a seed other than 0 replaces the registered 0) and checks
the goals on the mean over the seeds of each five-fold mean, printing each
seed's figure and the seeds' standard deviation: a goal that compares two
rankers within a few thousandths (BoltzRank and SoftRank against ListNet) is
otherwise decided by the seed. The table (and ``--report``) is that of the
first seed. Each goal that compares two rankers also prints their
difference and its paired standard error over the five folds (each fold's
test figures averaged over the seeds first): what the choice of test
queries alone moves, which more seeds do not shrink.

``--restarts-study`` runs only the study behind the ``restarts`` default: a
single run, the best of 10 initialisations on vali, and their average, for
linear and small MLP networks, on OHSUMED and on the bundled LightGBM sample.

Two SoftRank studies follow the table (skip them with ``--skip-studies``):

* the paper's central claim, that SoftRank fits NDCG better than a
  top-one-probability loss: SoftRank and ListNet with the same network and
  the same budget (:data:`CLAIM_PARAMS`: ``CLAIM_EPOCHS`` epochs of Adam on
  batches of 8 queries, no early stopping, seed 0) on every fold's train
  split, and the NDCG@10 each reaches on that *training* split;
* the training discount of §4.7: SoftRank (:data:`SWEEP_PARAMS`) with
  ``discount_shape`` in -1, -0.5, 0, 0.5, 1, early stopping on vali, mean
  vali NDCG@10 over the folds.

Data: OHSUMED of LETOR 3.0 (QueryLevelNorm), ``Fold1`` .. ``Fold5`` under
``$SKRANK_SHARED_DATA/ohsumed`` or ``../shared/data/ohsumed`` beside the
repository. Run with::

    python benchmarks/letor_ohsumed.py [--rankers Ridge ListNet SoftRank BoltzRank BoltzRank2
                                                  LogRank LogRank-MLE LogRank-ExpGain-AUC ...]
                                       [--n-jobs 2]
                                       [--skip-studies] [--seeds 0 1 2 3 4]
                                       [--grid "BoltzRank={'gain_weight': [0.5, 0.9]}"]
                                       [--report doc/user_guide/ohsumed_table.rst]
                                       [--restarts-study [ListNet] [SoftRank]]

(``--rankers`` defaults to all of them: those of ``python -m skrank compare``
and the ten LogRank models; ``--grid NAME=GRID`` replaces one ranker's grid
of :data:`GRIDS` for the run, GRID a Python dict literal of lists.)
``--report PATH`` also writes the table, next to the papers' published
OHSUMED numbers (:data:`PUBLISHED`), as a reStructuredText file: the
documentation's *Reproducing the papers* page includes
``doc/user_guide/ohsumed_table.rst``, written this way and never by hand.
"""

import argparse
import ast
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.parallel import Parallel, delayed

from skrank import (
    ListNetRanker,
    LogRankRanker,
    SoftRankRanker,
    cross_validate_ranker,
    load_letor_fold,
    load_rank_sample,
    make_ranking_scorer,
    map_score,
    ndcg_score,
)
from skrank.model_selection import LetorProtocolResult, letor_protocol, registered_rankers
from skrank.utils import write_atomically

from _shared_data import ohsumed_root  # benchmarks/ is the script's folder

#: LogRank's ten models: name -> (objective, metric); MLE does not use the metric.
LOGRANK_MODELS = {"LogRank-MLE": ("likelihood", "auc")}
LOGRANK_MODELS.update({
    f"LogRank-{label}-{tag}": (objective, metric)
    for objective, label in (("expected_gain", "ExpGain"), ("l3", "L3"), ("convex", "Convex"))
    for metric, tag in (("auc", "AUC"), ("map", "MAP"), ("ndcg@10", "NDCG"))
})
#: LogRank's penalty alpha and the feature map's 1/(n+ n-) factor, chosen on
#: vali as the paper chose them: its C from 1e-4 to 1e4 (the penalty ||w||^2 / C
#: on the sum of the query losses) is alpha = 2 / (C n) on n training queries,
#: taken at the folds' 63 to 64 (within 1% of each fold's own n). The
#: normalised map needs a smaller alpha.
LOGRANK_GRID = {"alpha": [2.0 / (C * 63.5) for C in (1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0,
                                                     1e3, 1e4)],
                "normalize_pairs": [False, True]}


def logrank_model(name):
    """LogRank's model ``name`` of :data:`LOGRANK_MODELS`, with ``random_state=0``."""
    objective, metric = LOGRANK_MODELS[name]
    return LogRankRanker(random_state=0, objective=objective, metric=metric)


#: The rankers of the table, by name: those of ``python -m skrank compare``
#: (:func:`skrank.model_selection.registered_rankers`), then LogRank's ten models.
RANKERS = [*registered_rankers(), *LOGRANK_MODELS]
#: Those run by default: the optional boosted trees only when asked for (the
#: table of the docs is the same whether or not they are installed).
DEFAULT_RANKERS = [*registered_rankers(optional=False), *LOGRANK_MODELS]
#: The table's columns: NDCG@1, 2, 3, 4, 5, 10 and MAP.
COLUMNS = list(LetorProtocolResult.columns)
#: The protocol's vali criterion (early stopping of the studies below monitors it).
LETOR_NDCG10 = make_ranking_scorer("ndcg", k=10, convention="letor")

#: Grids of this benchmark (rankers not listed use their registered grid).
GRIDS = {
    "Ridge": {"alpha": [0.01, 0.1, 1.0, 10.0, 100.0, 1000.0]},
    "ListNet": {
        "hidden_layer_sizes": [(), (5,), (10,)],
        "alpha": [1e-4, 1e-2],
        "learning_rate_init": [1e-3, 1e-2],
        # NDCG@10 of 21 vali queries is a noisy criterion: average three
        # initialisations (restarts="average", the default; see --restarts-study)
        "n_init": [3],
    },
    "SoftRank": {"sigma": [0.01, 0.03, 0.1], "hidden_layer_sizes": [(), (5,)]},
    # λ chosen on vali; the network and restarts are the defaults (see
    # BoltzRankRanker's Notes for the measurements behind them)
    "BoltzRank": {"gain_weight": [0.5, 0.9]},
    "BoltzRank2": {"gain_weight": [0.5, 0.9]},
    # the defaults, on the grid of the ten models
    "LogRank": LOGRANK_GRID,
    **{name: LOGRANK_GRID for name in LOGRANK_MODELS},
}

#: BoltzRank's Table 2 on OHSUMED (Volkovs and Zemel 2009): NDCG@1..5, MAP.
BOLTZRANK_TABLE2 = {
    "BoltzRank1": (0.554, 0.530, 0.518, 0.503, 0.488, 0.452),
    "BoltzRank2": (0.568, 0.541, 0.518, 0.502, 0.491, 0.460),
}
#: Published OHSUMED figures set beside the table of ``--report``: name ->
#: (source, {column: value}). LETOR 3.0's own ListNet baseline (the same
#: protocol and data; NDCG@10 and MAP) and BoltzRank's Table 2 (NDCG@1..5,
#: MAP). SoftRank (Taylor et al. 2008) reports no OHSUMED figures; LogRank's
#: (Dubey et al. 2009, §5) are on cleaned, binarised data, not comparable.
PUBLISHED = {
    "ListNet": ("LETOR 3.0 baseline", dict(zip(("NDCG@10", "MAP"), (0.441, 0.446)))),
    "BoltzRank": ("Volkovs and Zemel 2009, Table 2 (BoltzRank1)",
                  dict(zip(COLUMNS[:5] + ["MAP"], BOLTZRANK_TABLE2["BoltzRank1"]))),
    "BoltzRank2": ("Volkovs and Zemel 2009, Table 2 (BoltzRank2)",
                   dict(zip(COLUMNS[:5] + ["MAP"], BOLTZRANK_TABLE2["BoltzRank2"]))),
}
#: The better of BoltzRank1/2 must reach these, and beat ListNet on the mean
#: of NDCG@1..5 in the same run.
BOLTZRANK_GOALS = {"NDCG@1": 0.54, "MAP": 0.448}

#: Published LETOR 3.0 baselines on OHSUMED (test, mean over the five folds).
GOALS = {
    "ListNet": {"NDCG@10": 0.441, "MAP": 0.446},
    "SoftRank": {"NDCG@10": 0.441, "MAP": 0.446},  # at least the LETOR ListNet
}
#: SoftRank must also reach skrank's ListNet of the same run.
AT_LEAST = {"SoftRank": "ListNet"}
#: LogRank: the best of the ten models (by NDCG@10) must reach the published
#: LETOR 3.0 ListNet, and every one of them LightGBM's lambdarank under this
#: protocol.
LOGRANK_GOALS = {"best": {"NDCG@10": 0.441, "MAP": 0.446},
                 "every": {"NDCG@10": 0.426, "MAP": 0.430}}

#: The claim study: one network size and budget for both losses.
CLAIM_EPOCHS = 30
CLAIM_PARAMS = {"hidden_layer_sizes": (), "solver": "adam", "learning_rate_init": 1e-2,
                "batch_size": 8, "alpha": 1e-4, "max_iter": CLAIM_EPOCHS,
                "early_stopping": False, "random_state": 0}

#: The discount study: SoftRank's settings besides discount_shape.
SWEEP_SHAPES = (-1.0, -0.5, 0.0, 0.5, 1.0)
SWEEP_PARAMS = {"random_state": 0, "scoring": LETOR_NDCG10}


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


def _sweep_fold(fold, discount_shape):
    """Vali NDCG@10 of SoftRank trained with one discount_shape (early stopping on vali)."""
    data = load_letor_fold(ohsumed_root(), fold)
    X, y, qid = data.train
    X_val, y_val, qid_val = data.vali
    est = SoftRankRanker(discount_shape=discount_shape, **SWEEP_PARAMS)
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

    log("[sweep] SoftRank discount_shape sweep, 5 folds ...")
    sweep = np.array(Parallel(n_jobs=n_jobs)(
        delayed(_sweep_fold)(f, shape) for shape in SWEEP_SHAPES for f in folds
    )).reshape(len(SWEEP_SHAPES), -1)
    print("\nSoftRank discount_shape sweep: vali NDCG@10 (LETOR convention), per fold 1-5:")
    for shape, values in zip(SWEEP_SHAPES, sweep):
        print(f"  shape {shape:+.1f}" + "".join(f"{v:8.4f}" for v in values)
              + f"   mean {values.mean():.4f} ± {values.std():.4f}")


#: The restarts study: networks, and how many initialisations.
RESTART_NETWORKS = {
    "linear": {"hidden_layer_sizes": ()},
    "tanh (5,)": {"hidden_layer_sizes": (5,)},
    "tanh (10,)": {"hidden_layer_sizes": (10,)},
    "scaled_tanh (5,)": {"hidden_layer_sizes": (5,), "activation": "scaled_tanh"},
}
RESTART_N_INIT = 10
RESTART_MODES = {"single run": {"n_init": 1},
                 "best on vali": {"n_init": RESTART_N_INIT, "restarts": "best"},
                 "average": {"n_init": RESTART_N_INIT, "restarts": "average"}}
RESTART_COLUMNS = ("NDCG@3", "NDCG@10", "MAP")


def _restarts_fold(fold, cls, network):
    """Test NDCG@3, NDCG@10 and MAP of each way of combining restarts on one fold."""
    data = load_letor_fold(ohsumed_root(), fold)
    X, y, qid = data.train
    X_val, y_val, qid_val = data.vali
    X_test, y_test, qid_test = data.test
    out = []
    for mode in RESTART_MODES.values():
        est = cls(random_state=0, scoring=LETOR_NDCG10, **network, **mode)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            est.fit(X, y, qid=qid, X_val=X_val, y_val=y_val, qid_val=qid_val)
        scores = est.predict(X_test)
        out.append([ndcg_score(y_test, scores, qid=qid_test, k=3, convention="letor"),
                    ndcg_score(y_test, scores, qid=qid_test, k=10, convention="letor"),
                    map_score(y_test, scores, qid=qid_test, convention="letor")])
    return out


def restarts_study(n_jobs, log, rankers=("ListNet",)):
    """Single run, best of RESTART_N_INIT on vali, and their average, per network."""
    classes = {"ListNet": ListNetRanker, "SoftRank": SoftRankRanker}
    print(f"\nRestarts: {RESTART_N_INIT} initialisations kept by best vali NDCG@10 or averaged "
          "(standardised scores), against a single run; early stopping on vali; test, "
          "LETOR convention, mean over 5 folds:")
    print(f"  {'ranker, network':<28}{'mode':<14}" + "".join(f"{c:>9}" for c in RESTART_COLUMNS))
    for name in rankers:
        for label, network in RESTART_NETWORKS.items():
            log(f"[restarts] {name} {label} ...")
            folds = np.array(Parallel(n_jobs=n_jobs)(
                delayed(_restarts_fold)(f, classes[name], network) for f in range(1, 6)
            ))  # (fold, mode, metric)
            for mode, values in zip(RESTART_MODES, folds.mean(axis=0)):
                print(f"  {name + ', ' + label:<28}{mode:<14}"
                      + "".join(f"{v:9.4f}" for v in values))

    # a second data set: the bundled LightGBM sample, grouped 5-fold CV, the
    # early-stopping holdout drawn from the training queries
    X, y, qid = load_rank_sample(subset="all")
    print("\nThe same on the bundled LightGBM sample (grouped 5-fold CV, 20 % of the training "
          "queries held out for early stopping; skrank convention), mean over folds:")
    print(f"  {'ranker, network':<28}{'mode':<14}" + "".join(f"{c:>9}" for c in RESTART_COLUMNS))
    for name in rankers:
        for label, network in RESTART_NETWORKS.items():
            log(f"[restarts] bundled sample, {name} {label} ...")
            for mode, params in RESTART_MODES.items():
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    cv = cross_validate_ranker(
                        classes[name](random_state=0, **network, **params), X, y, qid=qid,
                        cv=5, scoring=["ndcg@3", "ndcg@10", "map"], n_jobs=n_jobs,
                    )
                values = [cv[f"test_{m}"].mean() for m in ("ndcg@3", "ndcg@10", "map")]
                print(f"  {name + ', ' + label:<28}{mode:<14}"
                      + "".join(f"{v:9.4f}" for v in values))


def _letor_worker(rankers, fold, grids, seed):
    """One worker's share of :func:`letor`: the protocol on one fold, log lines kept."""
    messages = []
    result = letor_protocol(rankers, fold, grids=grids, random_state=seed,
                            log=messages.append)
    return result, messages


def letor(names, folds, *, log, grids, n_jobs, seed=0):
    """:func:`skrank.model_selection.letor_protocol` on ``folds``, one fold per worker.

    The rankers ``names`` are those of :data:`RANKERS`: LogRank's models are
    given as estimators, the others by name; ``grids`` holds the grids of
    :data:`GRIDS` and more (those of the rankers run are passed on).
    ``seed`` is every ranker's ``random_state``. The same results and log as
    one ``letor_protocol`` call on the folds, each fold run by a worker
    (the protocol's own workers fit one fold's grid points).
    """
    rankers = [(name, logrank_model(name)) if name in LOGRANK_MODELS else name for name in names]
    grids = {name: grid for name, grid in grids.items() if name in names}
    parts = Parallel(n_jobs=n_jobs)(delayed(_letor_worker)(rankers, fold, grids, seed)
                                    for fold in folds)
    scores, times, chosen = {}, {}, {}
    for part, messages in parts:
        for message in messages:
            log(message)
        for name, table in part.test_scores.items():
            scores.setdefault(name, []).append(table)
            times.setdefault(name, []).append(part.fit_times[name])
            chosen.setdefault(name, []).extend(part.best_params[name])
    return LetorProtocolResult(
        data=folds[0].parent, folds=tuple(fold for part, _ in parts for fold in part.folds),
        convention="letor", test_scores={name: np.concatenate(t) for name, t in scores.items()},
        fit_times={name: np.concatenate(t) for name, t in times.items()}, best_params=chosen,
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rankers", nargs="+", choices=RANKERS, default=DEFAULT_RANKERS)
    parser.add_argument("--n-jobs", type=int, default=None, help="joblib workers (folds)")
    parser.add_argument("--skip-studies", action="store_true",
                        help="only the table, not the SoftRank claim and discount sweep")
    parser.add_argument("--report", type=Path, default=None, metavar="PATH",
                        help="also write the table as reStructuredText to PATH "
                             "(doc/user_guide/ohsumed_table.rst)")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0],
                        help="run the table once per random_state and check the goals on "
                             "the mean over the seeds (the table is the first seed's)")
    parser.add_argument("--grid", action="append", default=[], metavar="NAME=GRID",
                        type=parse_grid,
                        help="replace a ranker's grid for this run, GRID a Python dict "
                             "literal, e.g. \"BoltzRank={'gain_weight': [0.5, 0.9], "
                             "'hidden_layer_sizes': [(5,), (10,)]}\" (repeatable)")
    parser.add_argument("--restarts-study", nargs="*", choices=["ListNet", "SoftRank"],
                        help="only the restarts study (best of n_init on vali against "
                             "their average) for these rankers (default ListNet)")
    args = parser.parse_args(argv)
    grids = {**GRIDS, **dict(args.grid)}
    for name, _ in args.grid:
        if name not in RANKERS:
            parser.error(f"--grid: unknown ranker {name!r}; choose from {', '.join(RANKERS)}")
    folds = [ohsumed_root() / f"Fold{k}" for k in range(1, 6)]

    def log(message):
        print(message, file=sys.stderr, flush=True)

    if args.restarts_study is not None:
        restarts_study(args.n_jobs, log, args.restarts_study or ("ListNet",))
        return

    per_seed = []
    fold_tables = []  # per seed: name -> (fold, column) test table
    for seed in args.seeds:
        started = time.perf_counter()
        results = letor(args.rankers, folds, log=log, grids=grids, n_jobs=args.n_jobs, seed=seed)
        log(f"seed {seed}: {time.perf_counter() - started:.0f} s")
        if not per_seed:
            print(results.format_table("OHSUMED, LETOR protocol, test mean ± std over 5 folds"
                                       + (f" (seed {seed})" if len(args.seeds) > 1 else "")))
            if args.report is not None:
                command = "python benchmarks/letor_ohsumed.py " + " ".join(argv or sys.argv[1:])
                report = rst_report(results, command, time.perf_counter() - started)
                write_atomically(args.report, lambda f: f.write(report))
                log(f"wrote {args.report}")
        per_seed.append({name: dict(zip(COLUMNS, table.mean(axis=0)))
                         for name, table in results.test_scores.items()})
        fold_tables.append(dict(results.test_scores))
    means = {name: {c: np.mean([s[name][c] for s in per_seed]) for c in COLUMNS}
             for name in per_seed[0]}
    # each fold's test figures, averaged over the seeds: (fold, column)
    folds_mean = {name: np.mean([t[name] for t in fold_tables], axis=0)
                  for name in fold_tables[0]}
    if len(args.seeds) > 1:
        print(seed_table(per_seed, args.seeds))
        print(f"The goals below are checked on the mean over seeds {args.seeds}.")
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
                f"({'met' if means[name][metric] >= means[other][metric] else 'NOT met'}; "
                + paired_difference(folds_mean, name, other, [metric]) + ")"
                for metric in GOALS[name]
            ]
            print(f"{name} goal (at least skrank's {other}, same run): " + ", ".join(checks))
    boltzrank_goals(means, folds_mean)
    logrank_goals(means)
    if not args.skip_studies:
        studies(args.n_jobs, log)


def parse_grid(text):
    """``NAME=GRID`` of ``--grid``: ``(NAME, dict)``, each value a non-empty list."""
    name, sep, literal = text.partition("=")
    try:
        grid = ast.literal_eval(literal) if sep else None
    except (ValueError, SyntaxError):
        grid = None
    if not (isinstance(grid, dict) and grid
            and all(isinstance(v, list) and v for v in grid.values())):
        raise argparse.ArgumentTypeError(
            f"expected NAME={{'param': [value, ...], ...}} (a dict literal of non-empty "
            f"lists); got {text!r}")
    return name.strip(), grid


def seed_table(per_seed, seeds):
    """Each ranker's five-fold mean NDCG@1..5 (their mean), NDCG@10 and MAP per seed.

    With the mean and standard deviation over the seeds: how much of a
    difference between two rankers of one run the seed alone makes.
    """
    top5 = [f"NDCG@{k}" for k in range(1, 6)]
    figures = {"NDCG@1..5": lambda row: np.mean([row[c] for c in top5]),
               "NDCG@10": lambda row: row["NDCG@10"], "MAP": lambda row: row["MAP"]}
    width = max(len(name) for name in per_seed[0]) + 2
    lines = [f"Five-fold means per seed ({', '.join(map(str, seeds))}), then mean ± std over "
             "the seeds:"]
    for name in per_seed[0]:
        for label, figure in figures.items():
            values = np.array([figure(s[name]) for s in per_seed])
            lines.append(f"  {name:<{width}}{label:<10}" + " ".join(f"{v:.4f}" for v in values)
                         + f"   {values.mean():.4f} ± {values.std():.4f}")
    return "\n".join(lines)


def _cell(mean, std=None):
    return f"{mean:.4f}" if std is None else f"{mean:.4f} ± {std:.4f}"


def rst_report(results, command, seconds):
    """The table of :func:`letor` as reStructuredText, with :data:`PUBLISHED` beside it.

    One row per ranker (mean ± std of the five test folds, LETOR convention;
    mean seconds per fit), each followed by its published row where
    :data:`PUBLISHED` has one ("—" for a column the paper does not report).
    """
    import platform

    import skrank

    header = ["ranker"] + COLUMNS + ["fit s"]
    rows = []
    for name, table in results.test_scores.items():
        rows.append([name] + [_cell(m, s) for m, s in zip(table.mean(axis=0), table.std(axis=0))]
                    + [f"{np.mean(results.fit_times[name]):.2f}"])
        if name in PUBLISHED:
            source, values = PUBLISHED[name]
            rows.append([f"*{name}, published: {source}*"] + [_cell(values[c]) if c in values else "—"
                                           for c in COLUMNS] + [""])
    lines = [
        ".. This file is written by benchmarks/letor_ohsumed.py --report; do not edit it.",
        "",
        f"Generated by ``{command.strip()}`` with skrank {skrank.__version__} "
        f"(Python {platform.python_version()}, {seconds / 60:.1f} min on this machine). "
        "Protocol: LETOR 3.0 on OHSUMED (QueryLevelNorm), five folds; each point of a "
        "ranker's grid is fit on ``train`` (early stopping on ``vali`` where the ranker "
        "has it), the point with the best ``vali`` NDCG@10 is evaluated on ``test``, all "
        "metrics with ``convention=\"letor\"`` (the official evaluation script). "
        "Cells are the mean ± standard deviation over the five test folds; rows in "
        "italics are the published figures.",
        "",
        ".. list-table:: OHSUMED, LETOR protocol, test mean ± std over 5 folds",
        "   :header-rows: 1",
        "   :class: ohsumed-table",
        "",
    ]
    for row in [header] + rows:
        lines.append(f"   * - {row[0]}")
        lines.extend(f"     - {cell}" for cell in row[1:])
    return "\n".join(lines) + "\n"


def paired_difference(folds_mean, name, other, columns):
    """``name`` minus ``other`` on the mean of ``columns``, with its standard error over the folds.

    The difference of the two rankers' five-fold means, and the standard
    error of that mean from the five per-fold differences (each fold's
    figures averaged over the seeds first), paired because both rankers are
    scored on the same test queries: how far a goal that compares two
    rankers of one run is from what the choice of test queries alone moves.
    """
    index = [COLUMNS.index(c) for c in columns]
    diff = folds_mean[name][:, index].mean(axis=1) - folds_mean[other][:, index].mean(axis=1)
    se = diff.std(ddof=1) / np.sqrt(len(diff))
    return f"difference {diff.mean():+.4f}, paired s.e. over the folds {se:.4f}"


def boltzrank_goals(means, folds_mean):
    """BoltzRank against the paper's Table 2, its goals, and ListNet's NDCG@1..5."""
    names = [n for n in ("BoltzRank", "BoltzRank2") if n in means]
    if not names:
        return
    top5 = [f"NDCG@{k}" for k in range(1, 6)]
    print("BoltzRank, paper's Table 2 (OHSUMED):")
    for name, row in BOLTZRANK_TABLE2.items():
        print(f"  {name:<12}" + " ".join(f"{v:.3f}" for v in row[:5]) + f"  MAP {row[5]:.3f}")
    for name in names:
        row = means[name]
        print(f"  skrank {name:<12}" + " ".join(f"{row[c]:.3f}" for c in top5)
              + f"  MAP {row['MAP']:.3f}  mean NDCG@1..5 {np.mean([row[c] for c in top5]):.4f}")
    best = max(names, key=lambda n: np.mean([means[n][c] for c in top5]))
    checks = [f"{metric} {means[best][metric]:.4f} >= {target} "
              f"({'met' if means[best][metric] >= target else 'NOT met'})"
              for metric, target in BOLTZRANK_GOALS.items()]
    if "ListNet" in means:
        ours = np.mean([means[best][c] for c in top5])
        theirs = np.mean([means["ListNet"][c] for c in top5])
        checks.append(f"mean NDCG@1..5 {ours:.4f} > ListNet's {theirs:.4f} "
                      f"({'met' if ours > theirs else 'NOT met'}; "
                      + paired_difference(folds_mean, best, "ListNet", top5) + ")")
    print(f"BoltzRank goal (better of BoltzRank1/2: {best}): " + ", ".join(checks))


def logrank_goals(means):
    """LogRank's ten models against the LETOR ListNet (the best) and LightGBM (every one)."""
    names = [n for n in LOGRANK_MODELS if n in means]
    if not names:
        return

    def checks(name, goal):
        return ", ".join(
            f"{metric} {means[name][metric]:.4f} >= {target} "
            f"({'met' if means[name][metric] >= target else 'NOT met'})"
            for metric, target in goal.items()
        )

    best = max(names, key=lambda n: means[n]["NDCG@10"])
    print(f"LogRank goals ({len(names)} of the {len(LOGRANK_MODELS)} models in this run):")
    print(f"  best by NDCG@10, {best} (published LETOR 3.0 ListNet baseline): "
          + checks(best, LOGRANK_GOALS["best"]))
    for name in names:
        print(f"  {name:<22} (at least LightGBM lambdarank): "
              + checks(name, LOGRANK_GOALS["every"]))
    every = all(means[n][m] >= t for n in names for m, t in LOGRANK_GOALS["every"].items())
    print(f"  every model at least LightGBM lambdarank: {'met' if every else 'NOT met'}")


if __name__ == "__main__":
    main()
