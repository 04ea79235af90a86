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
from joblib import effective_n_jobs
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import ParameterGrid
from sklearn.utils.parallel import Parallel, delayed

from .datasets import load_letor_fold
from .datasets._letor import _file_kind
from .metrics import make_ranking_scorer, map_score, ndcg_score
from .model_selection import cross_validate_ranker
from .model_selection._common import check_layout, query_splits
from .rankers._registry import RANKERS
from .utils._memory import NotEnoughMemoryError
from .utils._routing import fit_qid_params, predict_scores
from .utils._validation import check_n_jobs

CUTOFFS = (1, 2, 3, 4, 5, 10)
COLUMNS = [f"NDCG@{k}" for k in CUTOFFS] + ["MAP"]


def vali_criterion(convention):
    """The LETOR protocol's criterion: NDCG@10 of the vali split with ``convention``.

    The grid point with the best value is chosen, and rankers with early
    stopping monitor it.
    """
    return make_ranking_scorer("ndcg", k=10, convention=convention)


LETOR_NDCG10 = vali_criterion("letor")

#: The fold folders :func:`skrank.datasets.load_letor_fold` reads.
FOLD_NAMES = tuple(f"Fold{k}" for k in range(1, 6))
_SPLITS = ("train", "vali", "test")


class DataError(ValueError):
    """Data of a comparison that cannot be read or scored; the message names the file."""


def ranker_call(name, params):
    """``name(key=value, ...)``: a ranker with the parameters it was built with."""
    return f"{name}({', '.join(f'{k}={v!r}' for k, v in params.items())})"


def changed_params(est):
    """The parameters of ``est`` whose value is not its class's default, by name.

    What ``python -m skrank fit`` shows of the ranker it fits: the registry's
    settings (``random_state=0``, BoltzRank2's layer sizes) and those of
    ``--param``. A parameter without a default is always shown.
    """
    signature = inspect.signature(type(est).__init__).parameters
    return {
        name: value for name, value in est.get_params(deep=False).items()
        if name not in signature or signature[name].default is inspect.Parameter.empty
        or not _same_value(value, signature[name].default)
    }


def _same_value(value, default):
    """Whether a parameter's ``value`` is its ``default``.

    ``==`` decides where it gives one bool (numbers, strings, tuples; NaN
    equals NaN); arrays are compared element-wise, estimators by their repr
    (which lists the parameters they change), anything else by its repr.
    """
    if isinstance(value, np.ndarray) or isinstance(default, np.ndarray):
        return np.array_equal(value, default)
    if hasattr(value, "get_params") or hasattr(default, "get_params"):
        return type(value) is type(default) and repr(value) == repr(default)
    if isinstance(value, float) and isinstance(default, float) and np.isnan(value):
        return bool(np.isnan(default))
    try:
        equal = value == default
    except (ValueError, TypeError):  # e.g. a tuple holding arrays
        equal = None
    if isinstance(equal, (bool, np.bool_)):
        return bool(equal)
    return repr(value) == repr(default)


def _duration(seconds):
    """``under 1 s``, ``42 s``, ``3 min 05 s`` or ``2 h 07 min``."""
    seconds = int(round(seconds))
    if seconds < 1:
        return "under 1 s"
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


class _Progress:
    """How much of a comparison is left, after each step (a fold, a grid point).

    ``steps`` maps each ranker's name to its number of steps. The estimate
    extrapolates the wall time so far: each step still to run costs the mean
    wall time between the results of its ranker's steps so far, or of all
    steps so far for a ranker not yet run. With joblib workers the results
    arrive close together and these means are per worker, not per step; the
    estimate stays an estimate.
    """

    def __init__(self, steps):
        self.left = dict(steps)
        self.seconds = {name: [] for name in steps}
        self.last = time.perf_counter()

    def drop(self, name):
        """Forget the steps ``name`` has left (its row is left out)."""
        self.left[name] = 0

    def resume(self):
        """Charge the time since the last step to no step (a fold just read, logged apart)."""
        self.last = time.perf_counter()

    def step(self, name):
        """Record a step of ``name`` just finished; ``"; about ... left (estimate)"`` or ``""``."""
        now = time.perf_counter()
        self.seconds[name].append(now - self.last)
        self.last = now
        self.left[name] -= 1
        if not any(self.left.values()):
            return ""
        overall = np.mean([s for times in self.seconds.values() for s in times])
        rest = sum(n * (np.mean(self.seconds[other]) if self.seconds[other] else overall)
                   for other, n in self.left.items())
        text = _duration(rest)
        return f"; {text if text.startswith('under') else 'about ' + text} left (estimate)"


def out_of_memory_text(what, exc, advice):
    """The message of a MemoryError while doing ``what``, with ``advice``.

    numpy's ``_ArrayMemoryError`` says what it could not allocate ("Unable to
    allocate 37.3 GiB for an array with shape ..."); a bare MemoryError says
    nothing. A refusal of skrank's (:class:`~skrank.utils._memory.NotEnoughMemoryError`)
    says what would not fit and what to do: ``advice`` is not added to it.
    """
    if isinstance(exc, NotEnoughMemoryError):
        return f"not enough memory to {what}: {exc}"
    reason = f": {exc}" if str(exc) else ""
    return f"not enough memory to {what}{reason}; {advice}"


@contextmanager
def _ranker_errors(what, where):
    """Raise :class:`DataError` naming the ranker ``what`` and ``where`` when it fails.

    A ranker's fit or scores fail on the data with the library's input
    errors: ValueError (NaN or infinite features, labels the ranker cannot
    fit, a :class:`~skrank._core._solvers.DivergenceError`) or TypeError; a
    MemoryError when its sizes or the data do not fit in memory. Their
    message is kept; any other error is a bug and propagates.
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
    kwargs = fit_qid_params(est, qid)
    if "X_val" in inspect.signature(est.fit).parameters and est.get_params().get(
            "early_stopping", False):
        kwargs.update(X_val=vali[0], y_val=vali[1], qid_val=vali[2])
    start = time.perf_counter()
    est.fit(X, y, **kwargs)
    return time.perf_counter() - start


def _runnable(names, labels, log):
    """``names`` less the rankers that cannot run on ``labels``, each logged as absent.

    ``labels`` is a list of ``(name, y)``; a ranker's registry entry says
    what it cannot run on (the optional boosted trees: labels other than
    small integers, a package that fails to load), so that its row is left
    out with a note rather than failing the comparison after the others ran.
    """
    kept = []
    for name in names:
        unusable = RANKERS[name].unusable
        reason = None if unusable is None else unusable(labels)
        if reason is None:
            kept.append(name)
        else:
            log(f"[{name}] row absent: {reason}")
            last = f"{name}: {reason}"
    if names and not kept:
        raise DataError(f"no ranker left to compare ({last})")
    return kept


def cv_scoring(convention):
    """The scorers of the cross-validation's table, in ``COLUMNS`` order, by name."""
    scoring = {f"ndcg@{k}": make_ranking_scorer("ndcg", k=k, convention=convention)
               for k in CUTOFFS}
    scoring["map"] = make_ranking_scorer("map", convention=convention)
    return scoring


def _cv_fold(est, X, y, qid, split, scoring):
    """One fold of :func:`run_cv`: :func:`cross_validate_ranker` on that one split."""
    return cross_validate_ranker(est, X, y, qid=qid, cv=[split], scoring=scoring)


def run_cv(names, X, y, qid, *, cv, n_jobs, log, where="the data", convention="skrank"):
    """Grouped cross-validation of each ranker with its default parameters.

    The folds are those of ``cross_validate_ranker(..., cv=cv)``, each run
    by :func:`cross_validate_ranker` on its split, so the results are the
    same; ``n_jobs`` joblib workers run a ranker's folds. ``log`` gets a line
    as each fold ends, in fold order, with its NDCG@10, fit seconds and an
    estimate of the time left. Returns name -> (per-fold metrics with
    ``convention`` in ``COLUMNS`` order, fit seconds of each fold).

    A ranker whose registry entry cannot run on ``y`` (the optional boosted
    trees: labels other than small integers) is left out, with a line in
    ``log``. A ranker that fails on the data (``where`` names them) raises
    :class:`DataError` naming it, also when its folds ran in joblib workers
    (which re-raise the original error).
    """
    scoring = cv_scoring(convention)
    splits = query_splits(cv, X, y, check_layout(X, qid, "compare"))
    names = _runnable(names, [(where, y)], log)
    n_jobs = check_n_jobs(n_jobs, len(splits))
    progress = _Progress({name: len(splits) for name in names})
    ndcg10 = COLUMNS.index("NDCG@10")
    results = {}
    for name in names:
        log(f"[{name}] {len(splits)}-fold grouped cross-validation ...")
        est = RANKERS[name].make()
        folds = Parallel(n_jobs=n_jobs, return_as="generator")(
            delayed(_cv_fold)(est, X, y, qid, split, scoring) for split in splits
        )
        rows, times = [], []
        with _ranker_errors(name, where), _closing(folds):
            for i, out in enumerate(folds, start=1):
                rows.append([out[f"test_{s}"][0] for s in scoring])
                times.append(out["fit_time"][0])
                log(f"[{name}] fold {i}/{len(splits)}: NDCG@10 {rows[-1][ndcg10]:.4f}, "
                    f"fit {times[-1]:.2f} s{progress.step(name)}")
        table = np.array(rows)
        results[name] = (table, np.array(times))
        log(f"[{name}] done: NDCG@10 {table[:, ndcg10].mean():.4f}, "
            f"fit {np.mean(times):.2f} s/fold")
    return results


def run_letor(names, folds, *, log, grids=None, n_jobs=None, convention="letor",
              zero_based=False):
    """The LETOR protocol: fit on train, choose on vali, report test.

    One ``convention`` governs the whole protocol: the labels are checked
    with it, the grid point with the best vali NDCG@10 in it is chosen (and
    rankers with early stopping monitor that criterion), and the test
    metrics use it. ``grids`` (name -> parameter grid) overrides the
    registered grids. The folds are read one at a time (with ``zero_based``)
    in the parent process; ``n_jobs`` joblib workers fit the grid points of
    a fold (fit seconds are then measured on a shared machine). ``log`` gets
    a line as each grid point ends, in grid order, with its fit seconds, its
    vali NDCG@10 and an estimate of the time left, and one with the chosen
    point and its test NDCG@10 as each ranker's grid ends. Returns name ->
    (per-fold test metrics in ``COLUMNS`` order, mean fit seconds per grid
    point of each fold).

    A ranker whose registry entry cannot run on a fold's train or vali labels
    (the optional boosted trees) is left out of every fold, with a line in
    ``log``. A fold that cannot be read, or a ranker that fails on it, raises
    :class:`DataError` naming the file, or the ranker, its grid point and
    the fold (the first such point in grid order, also with workers; with
    workers, once the fold's other grid points have run).
    """
    grids = grids or {}
    points = {name: list(ParameterGrid(grids.get(name, RANKERS[name].grid))) for name in names}
    tasks = [(name, params) for name in names for params in points[name]]
    n_jobs = check_n_jobs(n_jobs, len(tasks))
    progress = _Progress({name: len(folds) * len(points[name]) for name in names})
    criterion = vali_criterion(convention)
    ndcg10 = COLUMNS.index("NDCG@10")
    results = {name: ([], []) for name in names}
    for fold_dir in folds:
        start = time.perf_counter()
        data = _load_fold(fold_dir, convention=convention, zero_based=zero_based)
        test = data.test
        log(f"[{fold_dir.name}] read " + ", ".join(
            f"{np.unique(part[2]).size} {split} queries"
            for split, part in zip(_SPLITS, (data.train, data.vali, test)))
            + f" in {time.perf_counter() - start:.1f} s")
        runnable = _runnable(names, [(str(path), part[1]) for path, part in zip(
            _split_files(fold_dir), (data.train, data.vali))], log)
        for name in set(names) - set(runnable):  # its row is left out, all folds
            progress.drop(name)
            del results[name]
        names = runnable
        tasks = [(name, params) for name, params in tasks if name in names]
        progress.resume()
        outputs = Parallel(n_jobs=n_jobs, return_as="generator")(
            delayed(_letor_point)(_make(name, params, criterion), ranker_call(name, params),
                                  data.train, data.vali, fold_dir, convention)
            for name, params in tasks
        )
        best, best_vali, seconds, failure = None, -np.inf, [], None
        with _closing(outputs):
            for (name, params), out in zip(tasks, outputs):
                if failure is None and isinstance(out, DataError):
                    failure = out  # the first failure in grid order
                    if effective_n_jobs(n_jobs) == 1:
                        break
                if failure is not None:
                    # with workers the fold's other points run to their end:
                    # stopping loky's workers while tasks wait can fail in
                    # its manager thread, a traceback after the error line
                    continue
                est, fit_seconds, score = out
                seconds.append(fit_seconds)
                log(f"[{fold_dir.name}] {ranker_call(name, params)} "
                    f"{len(seconds)}/{len(points[name])}: vali NDCG@10 {score:.4f}, "
                    f"fit {fit_seconds:.2f} s{progress.step(name)}")
                if best is None or score > best_vali:  # the first of equal points
                    best, best_vali, chosen = est, score, params
                if len(seconds) < len(points[name]):
                    continue
                with _ranker_errors(ranker_call(name, chosen), fold_dir):
                    row = _metrics(test[1], predict_scores(best, test[0], test[2]), test[2],
                                   convention)
                log(f"[{fold_dir.name}] {name}: chose {chosen} on vali; "
                    f"test NDCG@10 {row[ndcg10]:.4f}")
                results[name][0].append(row)
                results[name][1].append(float(np.mean(seconds)))
                best, best_vali, seconds = None, -np.inf, []
        if failure is not None:
            raise failure
    return {name: (np.array(rows), np.array(times)) for name, (rows, times) in results.items()}


@contextmanager
def _closing(outputs):
    """Close the joblib result generator ``outputs`` on leaving, also before its end.

    On an error the tasks still running are cancelled, and joblib's warning
    that some results were not used, which would follow the error being
    reported (or come at garbage collection), is not shown.
    """
    try:
        yield outputs
    finally:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            outputs.close()


def _make(name, params, criterion):
    """The ranker ``name`` at the grid point ``params``, early stopping on ``criterion``."""
    est = RANKERS[name].make(**params)
    if "scoring" in est.get_params():
        # early stopping watches the criterion the grid is chosen by
        est.set_params(scoring=criterion)
    return est


def _load_fold(fold_dir, *, convention="letor", zero_based=False):
    """:func:`load_letor_fold` of a fold folder, its labels checked with ``convention``.

    A file that cannot be read, or labels the protocol cannot fit or score,
    raise :class:`DataError` naming the file.
    """
    files = _split_files(fold_dir)
    try:
        data = load_letor_fold(fold_dir.parent, fold_dir.name, zero_based=zero_based)
    except (ValueError, OSError) as exc:  # the loader's messages name the file
        raise DataError(f"cannot read the LETOR fold {fold_dir}: {exc}") from None
    except MemoryError as exc:  # a dense X too large, refused before it is made
        raise DataError(out_of_memory_text(f"read the LETOR fold {fold_dir}", exc,
                                           "use smaller files")) from None
    y_train = data.train[1]
    if not np.isfinite(y_train).all():
        raise DataError(
            f"{files[0]}: {int((~np.isfinite(y_train)).sum())} of {y_train.shape[0]} "
            "labels are NaN or infinite; labels must be finite"
        )
    for path, (_, y, qid) in zip(files[1:], (data.vali, data.test)):
        check_labels(y, qid, convention=convention, where=path)
    return data


def _letor_point(est, shown, train, vali, fold_dir, convention):
    """One grid point of :func:`run_letor`: ``(fitted est, fit seconds, vali NDCG@10)``.

    A failure of the ranker on the fold is returned as a :class:`DataError`
    naming ``shown`` and the fold, so that the parent reports the first one
    in grid order whichever worker ends first.
    """
    try:
        with _ranker_errors(shown, fold_dir):
            with warnings.catch_warnings():
                # a grid point that runs to max_iter is still a legitimate candidate
                warnings.simplefilter("ignore", ConvergenceWarning)
                seconds = _fit(est, train, vali)
            score = ndcg_score(vali[1], predict_scores(est, vali[0], vali[2]),
                               qid=vali[2], k=10, convention=convention)
    except DataError as exc:
        return exc
    return est, seconds, score


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

    Raises ValueError naming the fold and what is missing, or a split's
    path that is not a regular file (a named pipe would block the reading).
    """
    files, missing = [], []
    for split in _SPLITS:
        candidates = [fold_dir / f"{split}{suffix}" for suffix in (".txt", ".txt.gz")]
        found = next((p for p in candidates if p.exists()), None)
        if found is None:
            missing.append(" or ".join(p.name for p in candidates))
        elif (kind := _file_kind(found)) is not None:
            raise ValueError(f"{found} is {kind}, not a regular file; expected a LETOR file")
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
