"""The comparison behind ``python -m skrank compare``.

Grouped cross-validation and the LETOR protocol over the rankers of
:data:`skrank.rankers._registry.RANKERS`, and the table they print. The
command line itself is in :mod:`skrank._cli`, which imports this module.
"""

import inspect
import time
import warnings
from contextlib import contextmanager

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import ParameterGrid
from sklearn.utils.parallel import Parallel, delayed

from .datasets import load_letor_fold
from .metrics import make_ranking_scorer, map_score, ndcg_score
from .model_selection import cross_validate_ranker
from .rankers._registry import RANKERS
from .utils._routing import accepts_qid, predict_scores

CUTOFFS = (1, 2, 3, 4, 5, 10)
LETOR_NDCG10 = make_ranking_scorer("ndcg", k=10, convention="letor")
COLUMNS = [f"NDCG@{k}" for k in CUTOFFS] + ["MAP"]

#: The fold folders :func:`skrank.datasets.load_letor_fold` reads.
FOLD_NAMES = tuple(f"Fold{k}" for k in range(1, 6))
_SPLITS = ("train", "vali", "test")


class DataError(ValueError):
    """Data of a comparison that cannot be read or scored; the message names the file."""


def ranker_call(name, params):
    """``name(key=value, ...)``: a ranker with the parameters it was built with."""
    return f"{name}({', '.join(f'{k}={v!r}' for k, v in params.items())})"


def out_of_memory_text(what, exc, advice):
    """The message of a MemoryError while doing ``what``, with ``advice``.

    numpy's ``_ArrayMemoryError`` says what it could not allocate ("Unable to
    allocate 37.3 GiB for an array with shape ..."); a bare MemoryError says
    nothing (issue 27, cause 8).
    """
    reason = f": {exc}" if str(exc) else ""
    return f"not enough memory to {what}{reason}; {advice}"


@contextmanager
def _ranker_errors(what, where):
    """Raise :class:`DataError` naming the ranker ``what`` and ``where`` when it fails.

    A ranker's fit or scores fail on the data with the library's input
    errors: ValueError (NaN or infinite features, labels the ranker cannot
    fit, a :class:`~skrank._core._solvers.DivergenceError`) or TypeError; a
    MemoryError when its sizes or the data do not fit in memory. Their
    message is kept; any other error is a bug and propagates (issue 27,
    cause 8).
    """
    try:
        yield
    except (ValueError, TypeError) as exc:
        raise DataError(f"{what} on {where} failed: {exc}") from exc
    except MemoryError as exc:  # numpy's _ArrayMemoryError among them
        raise DataError(out_of_memory_text(f"run {what} on {where}", exc,
                                           "use a smaller file or fewer --n-jobs")) from exc


def check_labels(y, qid, *, convention, where):
    """Raise :class:`DataError` naming ``where`` unless the table's metrics accept ``y``.

    The metrics of the table are computed once with ``convention`` on
    constant scores, so the labels are checked by the very rules they are
    scored with (finite; within [0, 1000] for the exponential gain).
    """
    try:
        _metrics(y, np.zeros(y.shape[0]), qid, convention)
    except ValueError as exc:  # y and qid are read and checked: the labels are at fault
        raise DataError(
            f"{where}: its labels cannot be scored (convention {convention!r}): {exc}"
        ) from None


def _metrics(y, scores, qid, convention):
    """Test metrics of one model, in ``COLUMNS`` order."""
    values = [ndcg_score(y, scores, qid=qid, k=k, convention=convention) for k in CUTOFFS]
    return values + [map_score(y, scores, qid=qid, convention=convention)]


def _fit(est, train, vali):
    """Fit on the train split (with qid, and vali for early stopping, when accepted)."""
    X, y, qid = train
    kwargs = {"qid": qid} if accepts_qid(est, "fit") else {}
    if "X_val" in inspect.signature(est.fit).parameters and est.get_params().get(
            "early_stopping", False):
        kwargs.update(X_val=vali[0], y_val=vali[1], qid_val=vali[2])
    start = time.perf_counter()
    est.fit(X, y, **kwargs)
    return time.perf_counter() - start


def run_cv(names, X, y, qid, *, cv, n_jobs, log, where="the data"):
    """Grouped cross-validation of each ranker with its default parameters.

    A ranker that fails on the data (``where`` names them) raises
    :class:`DataError` naming it, also when its folds ran in joblib workers
    (which re-raise the original error).
    """
    scoring = [f"ndcg@{k}" for k in CUTOFFS] + ["map"]
    results = {}
    for name in names:
        log(f"[{name}] {cv}-fold grouped cross-validation ...")
        entry = RANKERS[name]
        with _ranker_errors(name, where):
            out = cross_validate_ranker(
                entry.make(), X, y, qid=qid, cv=cv, scoring=scoring, n_jobs=n_jobs
            )
        table = np.column_stack([out[f"test_{s}"] for s in scoring])
        results[name] = (table, out["fit_time"])
        log(f"[{name}] done: NDCG@10 {table[:, COLUMNS.index('NDCG@10')].mean():.4f}, fit {out['fit_time'].mean():.2f} s/fold")
    return results


def run_letor(names, folds, *, log, grids=None, n_jobs=None):
    """The LETOR protocol: fit on train, choose on vali, report test (LETOR convention).

    ``grids`` (name -> parameter grid) overrides the registered grids; the
    folds run in parallel with ``n_jobs`` joblib workers (fit seconds are then
    measured on a shared machine). Returns name -> (per-fold test metrics in
    ``COLUMNS`` order, mean fit seconds per grid point of each fold).

    A fold that cannot be read, or a ranker that fails on it, raises
    :class:`DataError` naming the file, or the ranker, its grid point and
    the fold.
    """
    grids = grids or {}
    per_fold = Parallel(n_jobs=n_jobs)(
        delayed(_letor_fold)(names, fold_dir, grids) for fold_dir in folds
    )
    results = {}
    for fold_dir, fold in zip(folds, per_fold):
        for name, (row, seconds, chosen) in fold.items():
            log(f"[{fold_dir.name}] {name}: chose {chosen} on vali; test NDCG@10 {row[COLUMNS.index('NDCG@10')]:.4f}")
            rows, times = results.setdefault(name, ([], []))
            rows.append(row)
            times.append(seconds)
    return {name: (np.array(rows), np.array(times)) for name, (rows, times) in results.items()}


def _load_fold(fold_dir):
    """:func:`load_letor_fold` of a fold folder, its labels checked.

    A file that cannot be read, or labels the protocol cannot fit or score,
    raise :class:`DataError` naming the file.
    """
    files = _split_files(fold_dir)
    try:
        data = load_letor_fold(fold_dir.parent, fold_dir.name)
    except (ValueError, OSError) as exc:  # the loader's messages name the file
        raise DataError(f"cannot read the LETOR fold {fold_dir}: {exc}") from None
    y_train = data.train[1]
    if not np.isfinite(y_train).all():
        raise DataError(
            f"{files[0]}: {int((~np.isfinite(y_train)).sum())} of {y_train.shape[0]} "
            "labels are NaN or infinite; labels must be finite"
        )
    for path, (_, y, qid) in zip(files[1:], (data.vali, data.test)):
        check_labels(y, qid, convention="letor", where=path)
    return data


def _letor_fold(names, fold_dir, grids):
    """One fold of :func:`run_letor`: name -> (test row, mean fit seconds, chosen point)."""
    data = _load_fold(fold_dir)
    vali, test = data.vali, data.test
    out = {}
    for name in names:
        entry = RANKERS[name]
        best, best_vali, seconds = None, -np.inf, []
        for params in ParameterGrid(grids.get(name, entry.grid)):
            est = entry.make(**params)
            if "scoring" in est.get_params():
                # early stopping watches the criterion the grid is chosen by
                est.set_params(scoring=LETOR_NDCG10)
            with _ranker_errors(ranker_call(name, params), fold_dir):
                with warnings.catch_warnings():
                    # a grid point that runs to max_iter is still a legitimate candidate
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    seconds.append(_fit(est, data.train, vali))
                score = ndcg_score(vali[1], predict_scores(est, vali[0], vali[2]),
                                   qid=vali[2], k=10, convention="letor")
            if score > best_vali:
                best, best_vali, chosen = est, score, params
        with _ranker_errors(ranker_call(name, chosen), fold_dir):
            row = _metrics(test[1], predict_scores(best, test[0], test[2]), test[2], "letor")
        out[name] = (row, float(np.mean(seconds)), chosen)
    return out


def format_table(results, title):
    """The comparison table: mean ± std per metric, and mean fit seconds."""
    width = max(len(name) for name in results) + 2
    lines = [title, "ranker".ljust(width) + "".join(c.rjust(17) for c in COLUMNS) + "fit s".rjust(9)]
    for name, (table, times) in results.items():
        cells = "".join(
            f"{m:.4f} ± {s:.4f}".rjust(17) for m, s in zip(table.mean(axis=0), table.std(axis=0))
        )
        lines.append(name.ljust(width) + cells + f"{np.mean(times):9.2f}")
    return "\n".join(lines)


def _split_files(fold_dir):
    """The train, vali and test files of a fold folder, as :func:`load_letor_fold` picks them.

    Raises ValueError naming the fold and what is missing.
    """
    files, missing = [], []
    for split in _SPLITS:
        candidates = [fold_dir / f"{split}{suffix}" for suffix in (".txt", ".txt.gz")]
        found = next((p for p in candidates if p.is_file()), None)
        if found is None:
            missing.append(" or ".join(p.name for p in candidates))
        files.append(found)
    if missing:
        raise ValueError(f"{fold_dir}: incomplete LETOR fold, no {'; no '.join(missing)}")
    return files


def _letor_folds(path):
    """Fold folders under ``path`` (a fold folder itself, or a data set with Fold1..Fold5).

    Every fold is checked before any is run: it is named Fold1 .. Fold5 (the
    folders :func:`load_letor_fold` reads) and holds its train, vali and test
    files; ValueError names the folder otherwise.
    """
    if (path / "train.txt").exists() or (path / "train.txt.gz").exists():
        folds = [path.resolve()]  # resolved: "." has no name, a fold has one
    else:
        folds = sorted(p for p in path.glob("Fold*") if p.is_dir())
    if not folds:
        raise ValueError(
            f"{path}: expected a LETOR file, a LETOR fold folder (train/vali/test files) "
            "or a folder holding Fold1..Fold5."
        )
    for fold in folds:
        if fold.name not in FOLD_NAMES:
            raise ValueError(
                f"{fold}: a LETOR fold folder is named one of Fold1 .. Fold5; "
                f"got {fold.name!r}"
            )
        _split_files(fold)
    return folds
