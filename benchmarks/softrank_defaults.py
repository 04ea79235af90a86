"""SoftRank's rank distribution and truncation: quality and fit time, the measurement behind the defaults.

Every combination of ``rank_distribution`` in ("binomial", "hybrid",
"normal") and ``truncation`` in (None, 10, 20, 50) is fitted with every other
parameter of :class:`skrank.SoftRankRanker` at its default (``random_state=0``),
next to :class:`skrank.ListNetRanker` (defaults) and LightGBM's
``LGBMRanker`` (lambdarank, 1000 trees at most, early stopping after 50
rounds without improvement of NDCG@10; only if ``lightgbm`` is installed, it
is not a dependency of skrank), on two data sets:

* **OHSUMED** (LETOR 3.0, QueryLevelNorm), the LETOR protocol: each of the
  five folds is fitted on ``train`` with early stopping on ``vali`` (LETOR's
  NDCG@10, ``convention="letor"``) and evaluated on ``test``. Data from
  ``$SKRANK_SHARED_DATA/ohsumed`` or ``../shared/data/ohsumed``.
* **the bundled sample** (:func:`skrank.datasets.load_rank_sample`, LightGBM's
  lambdarank example, queries of 1-27 documents): for each seed 0-4, a fifth
  of the training queries is held out (``GroupShuffleSplit`` with that seed),
  every ranker is fitted on the other training queries with early stopping on
  the held-out ones (the seed is also the rankers' ``random_state``) and
  evaluated on the test part. The spread is over seeds, not folds.

Printed per data set: test NDCG@1, NDCG@5, NDCG@10 and MAP (mean ± std over
folds or seeds, LETOR convention) and mean fit seconds, all fits run one
after another in this process (one core for skrank; LightGBM uses its default
threads). The last lines give the ratio of the fit time of the default
SoftRank to LightGBM's (of the means, then split by split: on OHSUMED the
first is Fold1, where the goal is a ratio of at most 10) and the fold-to-fold
spread of the NDCG@10 of the configuration that was the default before
truncation was fast (binomial, no truncation). Run with::

    python benchmarks/softrank_defaults.py [--data ohsumed sample]
                                           [--configs binomial:None hybrid:10 ...]
"""

import argparse
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GroupShuffleSplit

from skrank import ListNetRanker, SoftRankRanker, load_letor_fold, load_rank_sample
from skrank.metrics import make_ranking_scorer, map_score, ndcg_score

from _shared_data import ohsumed_root  # benchmarks/ is the script's folder

#: The early-stopping metric of the LETOR protocol (as ``python -m skrank compare``).
LETOR_NDCG10 = make_ranking_scorer("ndcg", k=10, convention="letor")

DISTRIBUTIONS = ("binomial", "hybrid", "normal")
TRUNCATIONS = (None, 10, 20, 50)
METRICS = ("NDCG@1", "NDCG@5", "NDCG@10", "MAP")
SEEDS = range(5)
#: The configuration that was SoftRankRanker's default before this study.
PREVIOUS_DEFAULT = ("binomial", None)

try:
    import lightgbm
except ImportError:  # not a dependency: the comparison is skipped
    lightgbm = None


def _metrics(y, scores, qid):
    ndcg = [ndcg_score(y, scores, qid=qid, k=k, convention="letor") for k in (1, 5, 10)]
    return ndcg + [map_score(y, scores, qid=qid, convention="letor")]


def _sizes(qid):
    """Group sizes of rows grouped by query (LETOR files are)."""
    change = np.flatnonzero(np.diff(qid)) + 1
    return np.diff(np.concatenate([[0], change, [len(qid)]]))


def _fit_skrank(est, train, vali):
    X, y, qid = train
    kwargs = {"qid": qid, "X_val": vali[0], "y_val": vali[1], "qid_val": vali[2]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        # the small truncations are measured on purpose (their warning says they may fail)
        warnings.filterwarnings("ignore", message="truncation=.*below a quarter")
        start = time.perf_counter()
        est.fit(X, y, **kwargs)
    return est, time.perf_counter() - start


def _fit_lightgbm(train, vali, seed):
    X, y, qid = train
    Xv, yv, qv = vali
    est = lightgbm.LGBMRanker(n_estimators=1000, random_state=seed, verbose=-1)
    with warnings.catch_warnings():  # eval_set is deprecated in lightgbm 4.7, still works
        warnings.filterwarnings("ignore", message=".*eval_set.*deprecated")
        start = time.perf_counter()
        est.fit(X, y, group=_sizes(qid), eval_set=[(Xv, yv)], eval_group=[_sizes(qv)],
                eval_at=[10], callbacks=[lightgbm.early_stopping(50, verbose=False)])
    return est, time.perf_counter() - start


def _makers(configs):
    makers = {}
    for rd, trunc in configs:
        makers[f"SoftRank {rd} R={trunc}"] = (
            lambda seed, rd=rd, trunc=trunc: SoftRankRanker(
                rank_distribution=rd, truncation=trunc, random_state=seed, scoring=LETOR_NDCG10))
    makers["ListNet"] = lambda seed: ListNetRanker(random_state=seed, scoring=LETOR_NDCG10)
    return makers


def ohsumed_splits():
    """(train, vali, test, seed) of the five OHSUMED folds."""
    for fold in range(1, 6):
        data = load_letor_fold(ohsumed_root(), fold)
        yield data.train, data.vali, data.test, 0


def sample_splits():
    """(train, vali, test, seed) of the bundled sample: a fifth of train held out per seed."""
    X, y, qid = load_rank_sample(subset="train")
    test = load_rank_sample(subset="test")
    for seed in SEEDS:
        split = GroupShuffleSplit(1, test_size=0.2, random_state=seed)
        fit_idx, val_idx = (np.sort(i) for i in next(split.split(X, y, qid)))
        yield ((X[fit_idx], y[fit_idx], qid[fit_idx]), (X[val_idx], y[val_idx], qid[val_idx]),
               test, seed)


def run(splits, makers):
    """name -> (rows of test metrics, fit seconds) over the splits."""
    results = {}
    for train, vali, test, seed in splits:
        names = list(makers) + (["LightGBM"] if lightgbm is not None else [])
        for name in names:
            if name == "LightGBM":
                est, seconds = _fit_lightgbm(train, vali, seed)
            else:
                est, seconds = _fit_skrank(makers[name](seed), train, vali)
            row = _metrics(test[1], est.predict(test[0]), test[2])
            rows, times = results.setdefault(name, ([], []))
            rows.append(row)
            times.append(seconds)
            print(f"  [{name}] seed {seed}: NDCG@10 {row[2]:.4f}, fit {seconds:.2f} s", flush=True)
    return {name: (np.array(rows), np.array(times)) for name, (rows, times) in results.items()}


def report(title, results, default_name):
    width = max(len(n) for n in results) + 2
    print(f"\n{title}")
    print("ranker".ljust(width) + "".join(m.rjust(17) for m in METRICS) + "fit s".rjust(9))
    for name, (rows, times) in results.items():
        cells = "".join(f"{m:.4f} ± {s:.4f}".rjust(17)
                        for m, s in zip(rows.mean(axis=0), rows.std(axis=0)))
        print(name.ljust(width) + cells + f"{times.mean():9.2f}")
    previous = "SoftRank {} R={}".format(*PREVIOUS_DEFAULT)
    if previous in results:
        spread = results[previous][0][:, 2].std()
        print(f"spread (std over splits) of {previous}'s NDCG@10: {spread:.4f}")
    if default_name in results and "LightGBM" in results:
        ratio = results[default_name][1].mean() / results["LightGBM"][1].mean()
        print(f"fit time of the default ({default_name}) / LightGBM: {ratio:.1f}")
        each = results[default_name][1] / results["LightGBM"][1]
        print("  per split (first = OHSUMED Fold1; goal there <= 10): "
              + ", ".join(f"{r:.1f}" for r in each))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", nargs="+", choices=["ohsumed", "sample"],
                        default=["ohsumed", "sample"])
    parser.add_argument("--configs", nargs="+", default=None,
                        help="distribution:truncation pairs, e.g. binomial:None hybrid:10")
    args = parser.parse_args()
    if args.configs is None:
        configs = [(rd, t) for rd in DISTRIBUTIONS for t in TRUNCATIONS]
    else:
        configs = [(c.split(":")[0], None if c.split(":")[1] == "None" else int(c.split(":")[1]))
                   for c in args.configs]
    defaults = SoftRankRanker().get_params()
    default_name = f"SoftRank {defaults['rank_distribution']} R={defaults['truncation']}"
    if lightgbm is None:
        print("lightgbm is not installed: its column is skipped")
    makers = _makers(configs)
    if "ohsumed" in args.data:
        print("OHSUMED, five folds (train / vali / test) ...")
        report("OHSUMED (LETOR 3.0), test, mean ± std over 5 folds",
               run(ohsumed_splits(), makers), default_name)
    if "sample" in args.data:
        print("bundled sample, five seeds ...")
        report("Bundled sample (LightGBM lambdarank example), test, mean ± std over 5 seeds",
               run(sample_splits(), makers), default_name)


if __name__ == "__main__":
    main()
