"""BoltzRank's restarts, batch size and network: quality and fit time, the measurement behind the defaults.

Issue #26, item 5. :class:`skrank.BoltzRankRanker` (BoltzRank1: one hidden
layer of 5 scaled-tanh units, identity output, ``gain_weight=0.9``,
``random_state=0``, every other parameter at its default unless named) is
fitted in the configurations of :data:`CONFIGS`: ``n_init`` in 1, 3, 10
(``restarts="average"``) with one query per step; ``batch_size`` in 1, 4, 16
with ``n_init=3`` (batch 16 also with ``learning_rate_init=0.03``); ``n_init``
10 with batches of 4 and 16, ``n_init=1`` with batches of 4; and one wider network trained once
(``n_init=1``, ``hidden_layer_sizes=(15,)`` and ``(50,)``: the average of
``n_init`` runs is itself one network of ``5 * n_init`` units). Two data sets:

* **OHSUMED** (LETOR 3.0, QueryLevelNorm), the LETOR protocol: each of the
  five folds is fitted on ``train`` with early stopping on the fold's
  ``vali`` (LETOR's NDCG@10, ``convention="letor"``, as
  ``benchmarks/letor_ohsumed.py`` does; no grid: ``gain_weight`` stays 0.9)
  and evaluated on ``test`` (NDCG@1, 3, 5, 10 and MAP, LETOR convention).
  Data from ``$SKRANK_SHARED_DATA/ohsumed`` or ``../shared/data/ohsumed``.
* **the bundled sample** (:func:`skrank.datasets.load_rank_sample`, the
  ``train`` subset, 201 queries): grouped 5-fold cross-validation with
  :func:`skrank.cross_validate_ranker`; every ranker is fully at its
  defaults there (early stopping on a fifth of the training queries, skrank's
  NDCG@10); test NDCG@1, 3, 5, 10 and MAP, skrank convention.

Printed per data set: mean ± std over the folds of the test metrics, the
mean fit seconds and their ratio to the defaults before this study
(``n_init=10``, batch 1; the defaults it chose are ``n_init=3``, batch 4),
and the per-fold difference to the default in NDCG@10 and MAP (mean ± std
of the paired differences). With ``--seeds`` beyond 0, every configuration
is also fitted with those ``random_state`` values and a second table gives
the mean ± std over seeds of the five-fold means (how much the first table
depends on the seed).

``--boltzrank2`` (item 5c) compares on OHSUMED, same protocol: BoltzRank1
at the defaults before this study (``n_init=10``, batch 1); BoltzRank2 at
them (``hidden_layer_sizes=(3,), pairwise_hidden_layer_sizes=(5,)``); the paper's BoltzRank2 (the same plus
``activation="scaled_tanh", output_activation="scaled_tanh", n_init=10,
restarts="best"``) and, as a control, the paper's BoltzRank1 (5 units,
scaled-tanh output, best of 10). Evidence printed for why BoltzRank2 does or
does not beat BoltzRank1:

1. train, vali and test NDCG@10 of each fitted model and its ``n_iter_``
   (over- or underfitting);
2. the restarts: each run of an averaged fit is one block of the combined
   network's hidden units, scored alone by zeroing the other blocks' output
   weights (``coefs_[-1]`` and ``pairwise_coefs_[1]``); for the paper's
   bounded outputs, which cannot be averaged, ten ``n_init=1`` fits with
   ``random_state`` 0-9. Mean ± std over runs, the best run on vali and (for
   the averaged fits) the average;
3. the pairwise potential's share of the scores: a copy with
   ``pairwise_coefs_`` and ``pairwise_intercepts_`` zeroed scores the
   individual potential alone, the difference to ``predict(X, qid=...)`` is
   the pairwise part; their pooled within-query standard deviations on test,
   the correlation of individual and total scores, and the test metrics of
   each part alone;
4. learning curves: ``n_init=1`` runs of ``--curve-epochs`` epochs that
   never stop early (``n_iter_no_change = max_iter``), fitted three times
   with the same seed and ``X_val`` the fold's train, vali and test split in
   turn (the validation set does not change the training trajectory), so
   ``validation_scores_`` is the per-epoch train, vali and test NDCG@10; the
   epoch the default early stopping (patience 10, tol 1e-4) keeps is read
   off the vali curve.

All fits run one after another in this process with BLAS limited to one
thread (the machine is shared; the ratios of fit times are what matter).
Run with::

    python benchmarks/boltzrank_defaults.py [--data ohsumed sample] [--folds 1 2 3 4 5]
                                            [--configs NAME ...] [--seeds 0 1 2]
                                            [--boltzrank2] [--only-boltzrank2]
                                            [--curve-epochs 100] [--max-iter N]

(``--max-iter`` caps every fit, for a quick smoke run.)
"""

import argparse
import copy
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import threadpool_limits

from skrank import (
    BoltzRankRanker,
    cross_validate_ranker,
    load_letor_fold,
    load_rank_sample,
    make_ranking_scorer,
    map_score,
    ndcg_score,
)

from _shared_data import ohsumed_root  # benchmarks/ is the script's folder

#: LETOR's NDCG@10 (the official evaluation script's convention): the early
#: stopping criterion of the LETOR protocol, as
#: :func:`skrank.model_selection.letor_protocol` sets it.
LETOR_NDCG10 = make_ranking_scorer("ndcg", k=10, convention="letor")
CUTOFFS = (1, 3, 5, 10)
METRICS = [f"NDCG@{k}" for k in CUTOFFS] + ["MAP"]
I_NDCG1, I_NDCG10, I_MAP = 0, 3, 4

#: BoltzRank1 configurations: name -> parameters (n_init and batch_size always
#: given, so that the names stay true whatever the defaults).
CONFIGS = {
    "n_init=1 b=1": {"n_init": 1, "batch_size": 1},
    "n_init=1 b=4": {"n_init": 1, "batch_size": 4},
    "n_init=3 b=1": {"n_init": 3, "batch_size": 1},
    "n_init=10 b=1 (old default)": {"n_init": 10, "batch_size": 1},
    "n_init=3 b=4 (default)": {"n_init": 3, "batch_size": 4},
    "n_init=3 b=16": {"n_init": 3, "batch_size": 16},
    "n_init=3 b=16 lr=.03": {"n_init": 3, "batch_size": 16, "learning_rate_init": 0.03},
    "n_init=10 b=4": {"n_init": 10, "batch_size": 4},
    "n_init=10 b=16": {"n_init": 10, "batch_size": 16},
    "n_init=1 (15,)": {"n_init": 1, "batch_size": 1, "hidden_layer_sizes": (15,)},
    "n_init=1 (50,)": {"n_init": 1, "batch_size": 1, "hidden_layer_sizes": (50,)},
}
#: The reference of the ratios and paired differences: the defaults before
#: this study (n_init=10, one query per step).
DEFAULT = "n_init=10 b=1 (old default)"

#: Item 5c: BoltzRank1 and BoltzRank2, ours and the paper's.
PAPER = {"activation": "scaled_tanh", "output_activation": "scaled_tanh",
         "n_init": 10, "restarts": "best"}
BR2 = {"hidden_layer_sizes": (3,), "pairwise_hidden_layer_sizes": (5,)}
BR2_CONFIGS = {
    "BR1 defaults": {"n_init": 10, "batch_size": 1},
    "BR2 defaults": {**BR2, "n_init": 10, "batch_size": 1},
    "BR2 paper": {**BR2, **PAPER},
    "BR1 paper": {"hidden_layer_sizes": (5,), **PAPER},
}
CURVE_EPOCHS = (1, 2, 5, 10, 15, 20, 30, 50, 75, 100, 150, 200)


def _make(params, seed, max_iter, scoring=LETOR_NDCG10):
    params = dict(params)
    if max_iter is not None:
        params["max_iter"] = min(max_iter, params.get("max_iter", 200))
    return BoltzRankRanker(gain_weight=0.9, random_state=seed, scoring=scoring, **params)


def _metrics(y, scores, qid, convention="letor"):
    values = [ndcg_score(y, scores, qid=qid, k=k, convention=convention) for k in CUTOFFS]
    return values + [map_score(y, scores, qid=qid, convention=convention)]


def _ndcg10(y, scores, qid):
    return ndcg_score(y, scores, qid=qid, k=10, convention="letor")


def _fit(est, train, vali):
    X, y, qid = train
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        start = time.perf_counter()
        est.fit(X, y, qid=qid, X_val=vali[0], y_val=vali[1], qid_val=vali[2])
    return est, time.perf_counter() - start


def _score(est, split):
    return est.predict(split[0], qid=split[2])


def _folds(folds):
    for fold in folds:
        yield fold, load_letor_fold(ohsumed_root(), fold)


# ----------------------------------------------------------------------
# Part 1: n_init, batch size, one wider network


def run_ohsumed(configs, folds, seeds, max_iter):
    """(name, seed) -> (per-fold test metrics, fit seconds)."""
    out = {}
    for fold, data in _folds(folds):
        for seed in seeds:
            for name in configs:
                est, seconds = _fit(_make(CONFIGS[name], seed, max_iter), data.train, data.vali)
                row = _metrics(data.test[1], _score(est, data.test), data.test[2])
                rows, times = out.setdefault((name, seed), ([], []))
                rows.append(row)
                times.append(seconds)
                print(f"  [Fold{fold} seed {seed}] {name}: NDCG@10 {row[I_NDCG10]:.4f}, "
                      f"n_iter_ {est.n_iter_}, fit {seconds:.2f} s", flush=True)
    return {key: (np.array(rows), np.array(times)) for key, (rows, times) in out.items()}


def run_sample(configs, seeds, max_iter):
    """(name, seed) -> (per-fold test metrics, fit seconds): grouped 5-fold CV, defaults."""
    X, y, qid = load_rank_sample(subset="train")
    scoring = [f"ndcg@{k}" for k in CUTOFFS] + ["map"]
    out = {}
    for seed in seeds:
        for name in configs:
            est = _make(CONFIGS[name], seed, max_iter, scoring="ndcg@10")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                cv = cross_validate_ranker(est, X, y, qid=qid, cv=5, scoring=scoring, n_jobs=1)
            rows = np.column_stack([cv[f"test_{s}"] for s in scoring])
            out[(name, seed)] = (rows, np.asarray(cv["fit_time"]))
            print(f"  [sample seed {seed}] {name}: NDCG@10 {rows[:, I_NDCG10].mean():.4f}, "
                  f"fit {np.mean(cv['fit_time']):.2f} s/fold", flush=True)
    return out


def _cells(rows):
    return "".join(f"{m:.4f} ± {s:.4f}".rjust(17) for m, s in zip(rows.mean(0), rows.std(0)))


def report(title, results, configs, seeds):
    width = max(len(n) for n in configs) + 2
    seed = seeds[0]
    base_rows, base_times = results.get((DEFAULT, seed), (None, None))
    print(f"\n{title}, random_state={seed}: test, mean ± std over folds")
    print("config".ljust(width) + "".join(m.rjust(17) for m in METRICS)
          + "fit s".rjust(9) + "x default".rjust(10))
    for name in configs:
        rows, times = results[(name, seed)]
        ratio = f"{times.mean() / base_times.mean():10.2f}" if base_times is not None else ""
        print(name.ljust(width) + _cells(rows) + f"{times.mean():9.2f}" + ratio)
    if base_rows is not None:
        print(f"\nPaired per-fold difference to {DEFAULT} (random_state={seed}): mean ± std")
        print("config".ljust(width) + "dNDCG@1".rjust(19) + "dNDCG@10".rjust(19)
              + "dMAP".rjust(19) + "  folds better (NDCG@10)")
        for name in configs:
            diff = results[(name, seed)][0] - base_rows
            better = int((diff[:, I_NDCG10] > 0).sum())
            print(name.ljust(width) + "".join(
                f"{diff[:, i].mean():+.4f} ± {diff[:, i].std():.4f}".rjust(19)
                for i in (I_NDCG1, I_NDCG10, I_MAP)) + f"  {better} of {len(diff)}")
    if len(seeds) > 1:
        print(f"\n{title}: mean ± std over random_state {list(seeds)} of the fold means "
              "(fit s: mean over all fits)")
        print("config".ljust(width) + "".join(m.rjust(17) for m in METRICS) + "fit s".rjust(9)
              + "x default".rjust(10))
        base = np.mean([results[(DEFAULT, s)][1].mean() for s in seeds]) if (
            (DEFAULT, seed) in results) else None
        for name in configs:
            means = np.array([results[(name, s)][0].mean(0) for s in seeds])
            secs = np.mean([results[(name, s)][1].mean() for s in seeds])
            ratio = f"{secs / base:10.2f}" if base is not None else ""
            print(name.ljust(width) + _cells(means) + f"{secs:9.2f}" + ratio)


# ----------------------------------------------------------------------
# Part 2 (item 5c): BoltzRank2


def _within_query_std(values, qid):
    _, inverse = np.unique(qid, return_inverse=True)
    means = np.bincount(inverse, values) / np.bincount(inverse)
    centred = values - means[inverse]
    return float(np.sqrt(np.mean(centred ** 2))), centred


def _member(est, r, n_runs):
    """The averaged fit's run ``r`` alone: the other runs' output weights zeroed."""
    member = copy.deepcopy(est)
    last = np.array(member.coefs_[-1])
    h = last.shape[0] // n_runs
    keep = np.zeros(last.shape[0], bool)
    keep[r * h:(r + 1) * h] = True
    last[~keep] = 0.0
    member.coefs_[-1] = last
    if getattr(member, "pairwise_coefs_", None) is not None:
        W, v = (np.array(a) for a in member.pairwise_coefs_)
        hp = v.shape[0] // n_runs
        keep = np.zeros(v.shape[0], bool)
        keep[r * hp:(r + 1) * hp] = True
        v[~keep] = 0.0
        member.pairwise_coefs_ = [W, v]
    return member


def _individual(est):
    """The fitted model with its pairwise potential zeroed: the individual potential alone."""
    alone = copy.deepcopy(est)
    alone.pairwise_coefs_ = [np.zeros_like(a) for a in alone.pairwise_coefs_]
    alone.pairwise_intercepts_ = [np.zeros_like(a) for a in alone.pairwise_intercepts_]
    return alone


def _stopped_epoch(vali_curve, patience=10, tol=1e-4):
    """(epochs run, kept epoch) of the default early stopping on a vali curve (1-based)."""
    best, no_change, kept = -np.inf, 0, 0
    for i, score in enumerate(vali_curve):
        improved = score > best + tol
        if score > best:
            best, kept = score, i
        no_change = 0 if improved else no_change + 1
        if no_change >= patience:
            return i + 1, kept + 1
    return len(vali_curve), kept + 1


def run_boltzrank2(folds, max_iter, curve_epochs, curve_seeds):
    names = list(BR2_CONFIGS)
    table = {n: ([], []) for n in names}
    fits = {n: [] for n in names}           # per fold: train, vali, test NDCG@10, n_iter_
    runs = {n: [] for n in names}           # per fold: runs' (vali, test NDCG@10, test NDCG@1, test MAP)
    combined = {n: [] for n in names}       # per fold: best-on-vali run's and the fit's test row
    pairwise = {n: [] for n in names if "BR2" in n}
    curves = {n: [] for n in ("BR1 defaults", "BR2 defaults", "BR2 paper")}
    for fold, data in _folds(folds):
        train, vali, test = data.train, data.vali, data.test
        for name in names:
            params = BR2_CONFIGS[name]
            est, seconds = _fit(_make(params, 0, max_iter), train, vali)
            row = _metrics(test[1], _score(est, test), test[2])
            table[name][0].append(row)
            table[name][1].append(seconds)
            fits[name].append([_ndcg10(s[1], _score(est, s), s[2]) for s in (train, vali, test)]
                              + [est.n_iter_])
            print(f"  [Fold{fold}] {name}: NDCG@1 {row[I_NDCG1]:.4f} NDCG@10 {row[I_NDCG10]:.4f} "
                  f"MAP {row[I_MAP]:.4f}, train/vali NDCG@10 {fits[name][-1][0]:.4f}/"
                  f"{fits[name][-1][1]:.4f}, n_iter_ {est.n_iter_}, fit {seconds:.2f} s",
                  flush=True)

            # the restarts, one by one
            if params.get("restarts", "average") == "average":
                n_runs = params.get("n_init", 10)
                members = [_member(est, r, n_runs) for r in range(n_runs)]
            else:  # bounded output: ten single fits (seeds 0-9)
                members = [_fit(_make({**params, "n_init": 1}, s, max_iter), train, vali)[0]
                           for s in range(params["n_init"])]
            per_run = []
            for m in members:
                t = _metrics(test[1], _score(m, test), test[2])
                per_run.append([_ndcg10(vali[1], _score(m, vali), vali[2]),
                                t[I_NDCG10], t[I_NDCG1], t[I_MAP]])
            per_run = np.array(per_run)
            runs[name].append(per_run)
            best = per_run[np.argmax(per_run[:, 0])]
            combined[name].append([best[1], best[2], best[3]])

            # the pairwise potential's share
            if name in pairwise:
                total = _score(est, test)
                indiv = _score(_individual(est), test)
                pair = total - indiv
                s_ind, c_ind = _within_query_std(indiv, test[2])
                s_pair, c_pair = _within_query_std(pair, test[2])
                s_tot, _ = _within_query_std(total, test[2])
                corr = float(c_ind @ (c_ind + c_pair) / np.sqrt((c_ind @ c_ind)
                             * ((c_ind + c_pair) @ (c_ind + c_pair)) + 1e-300))
                m_ind = _metrics(test[1], indiv, test[2])
                m_pair = _metrics(test[1], pair, test[2])
                pairwise[name].append([s_ind, s_pair, s_tot, corr,
                                       m_ind[I_NDCG1], m_ind[I_NDCG10], m_ind[I_MAP],
                                       m_pair[I_NDCG1], m_pair[I_NDCG10], m_pair[I_MAP]])

        # learning curves
        for name in curves:
            params = {**BR2_CONFIGS[name], "n_init": 1, "max_iter": curve_epochs,
                      "n_iter_no_change": curve_epochs}
            params.pop("restarts", None)
            for seed in curve_seeds:
                three = []
                for split in (train, vali, test):
                    est, _ = _fit(_make(params, seed, None), train, split)
                    three.append(np.array(est.validation_scores_))
                curves[name].append(np.array(three))
                ran, kept = _stopped_epoch(three[1])
                print(f"  [Fold{fold} curve seed {seed}] {name}: early stopping would run {ran} "
                      f"epochs and keep {kept}: train/vali/test NDCG@10 "
                      + "/".join(f"{c[kept - 1]:.4f}" for c in three), flush=True)
    return names, table, fits, runs, combined, pairwise, curves


def report_boltzrank2(names, table, fits, runs, combined, pairwise, curves):
    width = max(len(n) for n in names) + 2
    n_folds = len(table[names[0]][0])
    print(f"\nBoltzRank1 and BoltzRank2 on OHSUMED (LETOR protocol, gain_weight=0.9, "
          f"random_state=0): test, mean ± std over {n_folds} folds")
    print("config".ljust(width) + "".join(m.rjust(17) for m in METRICS) + "fit s".rjust(9))
    for name in names:
        rows, times = (np.array(a) for a in table[name])
        print(name.ljust(width) + _cells(rows) + f"{times.mean():9.2f}")
    print("paper, Table 2: BR1 NDCG@1 .554 NDCG@3 .518 NDCG@5 .488 MAP .452; "
          "BR2 NDCG@1 .568 NDCG@3 .518 NDCG@5 .491 MAP .460")

    print("\n(1) Fit on train, NDCG@10 (LETOR) of the fitted model on train / vali / test, "
          "and n_iter_ (epochs of the best run), mean over folds [per fold train-vali gap]")
    for name in names:
        f = np.array(fits[name])
        print(f"  {name:<14} train {f[:, 0].mean():.4f}  vali {f[:, 1].mean():.4f}  "
              f"test {f[:, 2].mean():.4f}  n_iter_ {f[:, 3].mean():5.1f}  "
              f"[{' '.join(f'{g:+.3f}' for g in f[:, 0] - f[:, 1])}]")

    print("\n(2) Restarts, test (vali for selection): mean ± std over the runs, averaged over "
          "folds; the run best on vali; the fitted model (average, or best of 10)")
    print("  " + "config".ljust(14) + "runs: vali N@10".rjust(18) + "test N@10".rjust(18)
          + "test N@1".rjust(18) + "test MAP".rjust(18) + "   best-on-vali N@10/N@1/MAP"
          + "   fitted N@10/N@1/MAP")
    for name in names:
        per_fold = runs[name]
        mean = np.mean([r.mean(0) for r in per_fold], axis=0)
        std = np.mean([r.std(0) for r in per_fold], axis=0)
        best = np.mean(combined[name], axis=0)
        fitted = np.array(table[name][0]).mean(0)
        kind = "(10 fits, seeds 0-9)" if "paper" in name else "(members of the average)"
        print("  " + name.ljust(14) + "".join(f"{m:.4f} ± {s:.4f}".rjust(18)
                                             for m, s in zip(mean, std))
              + f"   {best[0]:.4f}/{best[1]:.4f}/{best[2]:.4f}"
              + f"   {fitted[I_NDCG10]:.4f}/{fitted[I_NDCG1]:.4f}/{fitted[I_MAP]:.4f}  {kind}")

    print("\n(3) The pairwise potential on test: pooled within-query std of the individual "
          "part, of the pairwise part and of the total; correlation (within queries) of "
          "individual and total; test NDCG@1/NDCG@10/MAP of each part alone; mean over folds")
    for name, values in pairwise.items():
        v = np.array(values).mean(0)
        print(f"  {name:<14} std indiv {v[0]:.4g}  pair {v[1]:.4g}  total {v[2]:.4g}  "
              f"(pair/indiv {v[1] / v[0]:.3g})  corr {v[3]:.3f}  "
              f"indiv alone {v[4]:.4f}/{v[5]:.4f}/{v[6]:.4f}  "
              f"pair alone {v[7]:.4f}/{v[8]:.4f}/{v[9]:.4f}")
        per_fold = np.array(values)
        print(f"  {'':<14} per fold pair/indiv std: "
              + " ".join(f"{a / b:.3g}" for a, b in zip(per_fold[:, 1], per_fold[:, 0])))

    print("\n(4) Learning curves (n_init=1, no early stop): NDCG@10 (LETOR) after each epoch, "
          "mean over folds and seeds; then the epoch the default early stopping keeps")
    for name, values in curves.items():
        c = np.array(values)  # (fold x seed, 3, epochs)
        epochs = [e for e in CURVE_EPOCHS if e <= c.shape[2]]
        print(f"  {name}")
        print("    epoch  " + "".join(f"{e:>7}" for e in epochs))
        for i, split in enumerate(("train", "vali", "test")):
            print(f"    {split:<6} " + "".join(f"{c[:, i, e - 1].mean():7.4f}" for e in epochs))
        stops = [_stopped_epoch(run[1]) for run in c]
        kept = np.array([k for _, k in stops])
        at_kept = np.array([run[:, k - 1] for run, k in zip(c, kept)])
        peak_vali = np.array([run[1].max() for run in c])
        print(f"    early stopping (patience 10): runs {np.mean([r for r, _ in stops]):.1f} "
              f"epochs, keeps epoch {kept.mean():.1f} (range {kept.min()}-{kept.max()}): "
              f"train/vali/test {at_kept[:, 0].mean():.4f}/{at_kept[:, 1].mean():.4f}/"
              f"{at_kept[:, 2].mean():.4f}; best vali over all epochs {peak_vali.mean():.4f}; "
              f"test at the last epoch {c[:, 2, -1].mean():.4f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", nargs="+", choices=["ohsumed", "sample"],
                        default=["ohsumed", "sample"])
    parser.add_argument("--folds", nargs="+", type=int, default=[1, 2, 3, 4, 5])
    parser.add_argument("--configs", nargs="+", choices=list(CONFIGS), default=list(CONFIGS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--boltzrank2", action="store_true", help="also item 5c (OHSUMED)")
    parser.add_argument("--only-boltzrank2", action="store_true", help="only item 5c")
    parser.add_argument("--curve-epochs", type=int, default=100)
    parser.add_argument("--curve-seeds", nargs="+", type=int, default=[0, 1])
    parser.add_argument("--max-iter", type=int, default=None, help="cap (smoke runs)")
    args = parser.parse_args()
    started = time.perf_counter()
    with threadpool_limits(1):
        if not args.only_boltzrank2:
            if "ohsumed" in args.data:
                print(f"OHSUMED, folds {args.folds}, seeds {args.seeds} ...")
                report("OHSUMED (LETOR 3.0), LETOR protocol",
                       run_ohsumed(args.configs, args.folds, args.seeds, args.max_iter),
                       args.configs, args.seeds)
            if "sample" in args.data:
                print(f"\nbundled sample, grouped 5-fold CV of the train subset, seeds {args.seeds} ...")
                report("Bundled sample (train subset, grouped 5-fold CV, defaults, skrank convention)",
                       run_sample(args.configs, args.seeds, args.max_iter),
                       args.configs, args.seeds)
        if args.boltzrank2 or args.only_boltzrank2:
            print(f"\nBoltzRank2 study, OHSUMED folds {args.folds} ...")
            report_boltzrank2(*run_boltzrank2(args.folds, args.max_iter, args.curve_epochs,
                                              args.curve_seeds))
    print(f"\ntotal wall time {(time.perf_counter() - started) / 60:.1f} min")


if __name__ == "__main__":
    main()
