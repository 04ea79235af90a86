"""The LETOR protocol: fit on train, choose on vali, report test, fold by fold.

:func:`letor_protocol` runs it on a LETOR data set of fold folders, as
``python -m skrank compare --data`` does (the command line calls it), and
returns a :class:`LetorProtocolResult`; :func:`registered_rankers` lists the
rankers it knows by name.
"""

import inspect
import os
import time
import warnings
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import ClassVar

import numpy as np
from joblib import effective_n_jobs
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import ParameterGrid
from sklearn.utils.parallel import Parallel, delayed

from ..datasets import load_letor_fold
from ..datasets._letor import _FOLD_NAMES, _SPLITS, _file_kind, _find_split_file
from ..metrics import CONVENTIONS, make_ranking_scorer, ndcg_score
from ..rankers._base import BaseRanker
from ..rankers._gbdt import ROW_NAMES
from ..rankers._registry import RANKERS, RankerEntry
from ..utils._routing import fit_qid_params, predict_scores
from ..utils._sklearn_compat import Integer, StrOptions, validate_params
from ..utils._validation import check_n_jobs
from ._comparison import (
    COLUMNS,
    DataError,
    _closing,
    _metrics,
    _Progress,
    _ranker_errors,
    _runnable,
    check_labels,
    format_table,
    out_of_memory_text,
    ranker_call,
)

__all__ = ["LetorProtocolResult", "letor_protocol", "registered_rankers"]


def vali_criterion(convention):
    """The LETOR protocol's criterion: NDCG@10 of the vali split with ``convention``.

    The grid point with the best value is chosen, and rankers with early
    stopping monitor it.
    """
    return make_ranking_scorer("ndcg", k=10, convention=convention)


def registered_rankers(*, optional=True):
    """The rankers that :func:`letor_protocol` and ``python -m skrank compare`` know by name.

    Each skrank ranker with the settings of the comparison, a pointwise
    :class:`~sklearn.linear_model.Ridge` baseline, and, where their package
    is installed, the gradient-boosted trees of LightGBM and XGBoost.

    Parameters
    ----------
    optional : bool, default=True
        Include the optional baselines: LightGBM's ``LGBMRanker`` and
        XGBoost's ``XGBRanker`` rows, registered only where the package is
        installed (neither is a dependency of skrank).

    Returns
    -------
    rankers : dict of str to tuple
        In the order of the comparison's table, each name maps to
        ``(estimator, grid)``: a new unfitted estimator with the registered
        settings (``random_state=0``; BoltzRank2's layer sizes) and the
        parameter grid :func:`letor_protocol` searches by default (a dict of
        lists, a copy).

    See Also
    --------
    letor_protocol : Run the LETOR protocol on rankers given by these names.

    Examples
    --------
    >>> from skrank.model_selection import registered_rankers
    >>> rankers = registered_rankers(optional=False)
    >>> list(rankers)
    ['Ridge', 'ListNet', 'SoftRank', 'BoltzRank', 'BoltzRank2', 'LogRank']
    >>> rankers["ListNet"]
    (ListNetRanker(random_state=0), {'hidden_layer_sizes': [(), (5,)], 'alpha': [0.0001, 0.01]})
    """
    return {
        name: (entry.make(), {key: list(values) for key, values in entry.grid.items()})
        for name, entry in RANKERS.items()
        if optional or name not in ROW_NAMES.values()
    }


@dataclass(frozen=True, eq=False)
class LetorProtocolResult:
    """Each ranker's test metrics on each fold of the LETOR protocol.

    What :func:`letor_protocol` returns. :meth:`format_table` writes it as
    ``python -m skrank compare --data`` prints it.

    Parameters
    ----------
    data : pathlib.Path
        The data set folder the protocol ran on.
    folds : tuple of str
        The folds run, in order (``"Fold1"`` .. ``"Fold5"``).
    convention : str
        The metric convention of the whole protocol: the vali NDCG@10 that
        chooses the grid point and the test metrics (see
        :data:`skrank.metrics.CONVENTIONS`).
    test_scores : dict of str to ndarray of shape (n_folds, 7)
        For each ranker, in the order given, the test metrics of the grid
        point chosen on each fold: one row per fold of ``folds``, one column
        per metric of :attr:`columns`. A ranker left out of the protocol
        (its labels check failed, see :func:`letor_protocol`) has no entry.
    fit_times : dict of str to ndarray of shape (n_folds,)
        For each ranker, the mean seconds of one fit (one grid point) on
        each fold.
    best_params : dict of str to list of dict
        For each ranker, the grid point chosen on each fold's vali split.

    Attributes
    ----------
    columns : tuple of str
        The metrics of the columns of ``test_scores``: ``("NDCG@1",
        "NDCG@2", "NDCG@3", "NDCG@4", "NDCG@5", "NDCG@10", "MAP")``. A class
        attribute, also read as ``LetorProtocolResult.columns``.

    See Also
    --------
    letor_protocol : Run the protocol.

    Examples
    --------
    >>> import numpy as np
    >>> from skrank.model_selection import LetorProtocolResult
    >>> result = LetorProtocolResult(
    ...     data="OHSUMED", folds=("Fold1", "Fold2"), convention="letor",
    ...     test_scores={"Ridge": np.full((2, 7), 0.5)}, fit_times={"Ridge": np.ones(2)},
    ...     best_params={"Ridge": [{"alpha": 1.0}, {"alpha": 10.0}]})
    >>> print(result.format_table("Ridge on two folds"))  # doctest: +NORMALIZE_WHITESPACE
    Ridge on two folds
    ranker  NDCG@1  NDCG@2  NDCG@3  NDCG@4  NDCG@5  NDCG@10  MAP  fit s
    Ridge   0.5000 ± 0.0000  0.5000 ± 0.0000  0.5000 ± 0.0000  0.5000 ± 0.0000
            0.5000 ± 0.0000  0.5000 ± 0.0000  0.5000 ± 0.0000  1.00
    """

    #: The metrics of the columns of ``test_scores``.
    columns: ClassVar[tuple] = tuple(COLUMNS)

    data: Path
    folds: tuple
    convention: str
    test_scores: dict
    fit_times: dict
    best_params: dict

    def format_table(self, title=None):
        """The table of ``python -m skrank compare --data``: mean ± std over the folds.

        One row per ranker: the mean and standard deviation over the folds of
        each test metric (:attr:`columns`), and the mean seconds of one fit.

        Parameters
        ----------
        title : str, default=None
            The table's first line. None gives the command line's: ``LETOR
            protocol on <n> fold(s) of <data>, <convention> convention (also
            choosing on vali): test mean ± std over folds``.

        Returns
        -------
        table : str
            The title, a header line and one line per ranker, without a
            final newline.
        """
        if title is None:
            title = (f"LETOR protocol on {len(self.folds)} fold(s) of {self.data}, "
                     f"{self.convention!r} convention (also choosing on vali): "
                     "test mean ± std over folds")
        return format_table({name: (table, self.fit_times[name])
                             for name, table in self.test_scores.items()}, title)


@validate_params(
    {
        "rankers": [list, tuple],
        "data": [str, os.PathLike],
        "grids": [dict, None],
        "convention": [StrOptions(set(CONVENTIONS))],
        "random_state": [Integer(0, 2**32 - 1, closed="both"), None],
        "zero_based": ["boolean"],
        "n_jobs": "no_validation",  # checked by check_n_jobs
        "log": [callable, None],
    },
    prefer_skip_nested_validation=True,
)
def letor_protocol(rankers, data, *, grids=None, convention="letor", random_state=None,
                   zero_based=False, n_jobs=None, log=None):
    """Run the LETOR protocol: fit on train, choose on vali, report test, on every fold.

    The protocol of the LETOR benchmarks, and of ``python -m skrank compare
    --data DATA``, which calls this function. On each fold, each point of a
    ranker's parameter grid is fitted on the fold's ``train`` split (a
    ranker with early stopping monitors the fold's ``vali`` split for it);
    the point with the best NDCG@10 on ``vali`` is kept (the first in grid
    order on a tie) and scored once on ``test``: NDCG@1, @2, @3, @4, @5,
    @10 and MAP. The folds are read one at a time, with
    :func:`~skrank.datasets.load_letor_fold`.

    Parameters
    ----------
    rankers : list of str or (str, estimator) tuples
        The rankers, in the order of the results. A str is a ranker of
        ``python -m skrank compare`` by its name (see
        :func:`registered_rankers`: ``"Ridge"``, ``"ListNet"``, ...), built
        with the registered settings and searched over its registered grid.
        A ``(name, estimator)`` pair names the result of any estimator with
        ``fit`` and ``predict``; it is cloned for each grid point, and its
        grid is ``grids[name]``, or the estimator alone without one. ``fit``
        is given ``qid`` when it takes it, and ``X_val``, ``y_val`` and
        ``qid_val`` (the fold's vali split) when it takes all three and the
        estimator's ``early_stopping`` is True. A skrank ranker's
        ``scoring`` (what its early stopping monitors) is set to the
        protocol's vali NDCG@10, whichever way it was given; another
        estimator's parameters are left as they are.

    data : str or os.PathLike
        A LETOR data set folder holding ``Fold1`` .. ``Fold5`` (the folds
        found there are run), or one fold folder. A fold folder holds
        ``train``, ``vali`` and ``test`` files (``.txt`` or ``.txt.gz``).

    grids : dict of str to dict or list of dict, default=None
        Parameter grids by ranker name, as
        :class:`~sklearn.model_selection.ParameterGrid` takes them; they
        replace the registered grid of a ranker given by name.

    convention : str, default="letor"
        The metric convention of the whole protocol (see
        :data:`skrank.metrics.CONVENTIONS`): the labels are checked with it,
        the vali NDCG@10 that chooses the grid point (and that rankers with
        early stopping monitor, through their ``scoring``) and the test
        metrics use it. ``"letor"`` is the official LETOR 3.0 evaluation
        script's.

    random_state : int, default=None
        The ``random_state`` of every ranker that has one, at every grid
        point (it replaces a grid's). None keeps each ranker's own: 0 for
        the rankers given by name.

    zero_based : bool, default=False
        Whether the feature indices of the files start at 0, as in
        :func:`~skrank.datasets.load_letor_fold`.

    n_jobs : int, default=None
        Number of joblib workers that fit the grid points of a fold (None
        means 1 unless in a :func:`joblib.parallel_backend` context; -1
        means all processors). The results do not depend on it; the fit
        seconds are then measured on a shared machine.

    log : callable, default=None
        Called with each progress line (a str) as it is ready: when a fold
        is read, as each grid point ends (its vali NDCG@10, fit seconds and
        an estimate of the time left), and with the point each ranker
        chose on a fold and its test NDCG@10, in grid order also with
        workers. ``print`` shows them; None logs nothing.

    Returns
    -------
    result : LetorProtocolResult
        The test metrics of each ranker on each fold, its fit seconds and
        the grid points chosen; ``result.format_table()`` is the table of
        ``python -m skrank compare --data``.

    Raises
    ------
    ValueError
        If a ranker name is not registered, given twice, or a ranker is
        neither a name nor a ``(name, estimator)`` pair; if ``grids`` names
        no ranker of ``rankers``; if ``data`` is no folder, holds no fold, a
        fold not named ``Fold1`` .. ``Fold5`` or one without its three
        files (every fold is checked before any is run). If a fold's file
        cannot be read or its labels cannot be scored with ``convention``,
        or a ranker fails on a fold (its fit or predict raises a ValueError,
        a TypeError or a MemoryError), the message names the file, or the
        ranker, its grid point and the fold.

    See Also
    --------
    registered_rankers : The rankers given by name, and their grids.
    cross_validate_ranker : Grouped cross-validation, for data without folds.
    skrank.datasets.load_letor_fold : How a fold is read.

    Notes
    -----
    A ranker whose registered entry cannot run on a fold's train or vali
    labels (the optional boosted trees take integer labels 0 .. 30 only) is
    left out of every fold, with a line in ``log``, and has no entry in the
    result. A grid point that stops at ``max_iter`` is still a candidate:
    its ``ConvergenceWarning`` is not shown.

    Examples
    --------
    Two tiny folds of six queries per split, written as LETOR files, and
    Ridge over a grid of two penalties:

    >>> import tempfile
    >>> from pathlib import Path
    >>> from sklearn.datasets import dump_svmlight_file
    >>> from skrank.datasets import make_ranking
    >>> from skrank.model_selection import letor_protocol
    >>> with tempfile.TemporaryDirectory() as root:
    ...     for fold in ("Fold1", "Fold2"):
    ...         (Path(root) / fold).mkdir()
    ...         for seed, split in enumerate(["train", "vali", "test"]):
    ...             X, y, qid = make_ranking(n_queries=6, n_docs=(10, 14), n_features=3,
    ...                                      random_state=3 * int(fold[-1]) + seed)
    ...             dump_svmlight_file(X, y, str(Path(root) / fold / f"{split}.txt"),
    ...                                query_id=qid, zero_based=False)
    ...     result = letor_protocol(["Ridge"], root, grids={"Ridge": {"alpha": [0.1, 100.0]}})
    >>> result.folds
    ('Fold1', 'Fold2')
    >>> result.best_params["Ridge"]  # chosen on each fold's vali split
    [{'alpha': 0.1}, {'alpha': 0.1}]
    >>> result.test_scores["Ridge"].shape  # (folds, columns)
    (2, 7)
    >>> result.columns[5], result.test_scores["Ridge"][:, 5].round(2)
    ('NDCG@10', array([0.41, 1.  ]))
    """
    entries = _entries(rankers, grids)
    folds = _data_folds(data)
    results = _run(entries, folds, log=_no_log if log is None else log, n_jobs=n_jobs,
                   convention=convention, random_state=random_state, zero_based=zero_based)
    return LetorProtocolResult(
        data=Path(data), folds=tuple(fold.name for fold in folds), convention=convention,
        test_scores={name: np.array(rows) for name, (rows, _, _) in results.items()},
        fit_times={name: np.array(times) for name, (_, times, _) in results.items()},
        best_params={name: chosen for name, (_, _, chosen) in results.items()},
    )


def _no_log(line):
    """The ``log`` of :func:`letor_protocol` when none is given."""


def _clone_with(estimator, **params):
    """A clone of ``estimator`` with ``params`` set (a grid point of a ``(name, estimator)``)."""
    return clone(estimator).set_params(**params)


def _entries(rankers, grids):
    """The registry entry of each ranker of :func:`letor_protocol`, by name, in order.

    A name's entry is the registry's (its grid replaced by ``grids``'s); a
    ``(name, estimator)`` pair's makes clones of the estimator, with
    ``grids``'s grid or none, and runs on any labels.
    """
    grids = {} if grids is None else grids
    entries = {}
    for i, spec in enumerate(rankers):
        if isinstance(spec, str):
            if spec not in RANKERS:
                raise ValueError(
                    f"rankers[{i}]: unknown ranker {spec!r}; the registered rankers are "
                    f"{', '.join(RANKERS)} (or give a (name, estimator) pair)"
                )
            name, entry = spec, RANKERS[spec]
            if name in grids:
                entry = replace(entry, grid=grids[name])
        elif (isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[0], str)
              and not isinstance(spec[1], type) and hasattr(spec[1], "fit")
              and hasattr(spec[1], "get_params")):
            name, estimator = spec
            entry = RankerEntry(partial(_clone_with, estimator), grids.get(name, {}))
        else:
            raise ValueError(
                f"rankers[{i}]: expected a registered ranker's name or a (name, estimator) "
                f"pair; got {spec!r}"
            )
        if name in entries:
            raise ValueError(
                f"rankers[{i}]: the name {name!r} is given twice; each ranker needs its own"
            )
        entries[name] = entry
    if not entries:
        raise ValueError("rankers: expected at least one ranker; got an empty list")
    unknown = [name for name in grids if name not in entries]
    if unknown:
        raise ValueError(
            f"grids: no ranker of rankers is named {unknown[0]!r}; the rankers are "
            f"{', '.join(entries)}"
        )
    return entries


def _data_folds(data):
    """The fold folders of ``data`` for :func:`letor_protocol`; ValueError naming ``data``."""
    if not Path(data).is_dir():
        raise ValueError(
            f"data={os.fspath(data)!r} is not a folder; expected a LETOR fold folder "
            "(train, vali and test files) or a folder holding Fold1 .. Fold5"
        )
    folds = _letor_folds(data)
    if not folds:
        raise ValueError(
            f"data={os.fspath(data)!r} holds no LETOR fold; expected a LETOR fold folder "
            "(train, vali and test files) or a folder holding Fold1 .. Fold5"
        )
    return folds


def _letor_folds(path):
    """Fold folders under ``path`` (a fold folder itself, or a data set with Fold1..Fold5).

    Every fold is checked before any is run: it is named Fold1 .. Fold5 (the
    folders :func:`load_letor_fold` reads) and holds its train, vali and test
    files; ValueError names the folder otherwise. An empty list when
    ``path`` holds no fold.
    """
    path = Path(path)
    if _find_split_file(path, "train")[0] is not None:
        folds = [path.resolve()]  # resolved: "." has no name, a fold has one
    else:
        folds = sorted(p for p in path.glob("Fold*") if p.is_dir())
    for fold in folds:
        if fold.name not in _FOLD_NAMES:
            raise ValueError(
                f"{fold}: a LETOR fold folder is named one of Fold1 .. Fold5; "
                f"got {fold.name!r}"
            )
        _split_files(fold)
    return folds


def _split_files(fold_dir):
    """The train, vali and test files of a fold folder, as :func:`load_letor_fold` picks them.

    Raises ValueError naming the fold and what is missing, or a split's
    path that is not a regular file (a named pipe would block the reading).
    """
    files, missing = [], []
    for split in _SPLITS:
        found, candidates = _find_split_file(fold_dir, split)
        if found is None:
            missing.append(" or ".join(p.name for p in candidates))
        elif (kind := _file_kind(found)) is not None:
            raise ValueError(f"{found} is {kind}, not a regular file; expected a LETOR file")
        files.append(found)
    if missing:
        raise ValueError(f"{fold_dir}: incomplete LETOR fold, no {'; no '.join(missing)}")
    return files


def _run(entries, folds, *, log, n_jobs, convention, random_state, zero_based):
    """The protocol's loop over ``folds``: name -> (test rows, fit seconds, chosen points).

    ``entries`` (name -> registry entry, in order) gives each ranker's maker
    and grid. The folds are read one at a time in the parent process;
    ``n_jobs`` joblib workers fit the grid points of a fold. A fold that
    cannot be read, or a ranker that fails on it, raises :class:`DataError`
    naming the file, or the ranker, its grid point and the fold (the first
    such point in grid order, also with workers; with workers, once the
    fold's other grid points have run).
    """
    names = list(entries)
    points = {name: list(ParameterGrid(entries[name].grid)) for name in names}
    tasks = [(name, params) for name in names for params in points[name]]
    n_jobs = check_n_jobs(n_jobs, len(tasks))
    progress = _Progress({name: len(folds) * len(points[name]) for name in names})
    criterion = vali_criterion(convention)
    ndcg10 = COLUMNS.index("NDCG@10")
    results = {name: ([], [], []) for name in names}
    for fold_dir in folds:
        start = time.perf_counter()
        data = _load_fold(fold_dir, convention=convention, zero_based=zero_based)
        test = data.test
        log(f"[{fold_dir.name}] read " + ", ".join(
            f"{np.unique(part[2]).size} {split} queries"
            for split, part in zip(_SPLITS, (data.train, data.vali, test)))
            + f" in {time.perf_counter() - start:.1f} s")
        runnable = _runnable({name: entries[name] for name in names}, [
            (str(path), part[1]) for path, part in zip(_split_files(fold_dir),
                                                        (data.train, data.vali))], log)
        for name in set(names) - set(runnable):  # its row is left out, all folds
            progress.drop(name)
            del results[name]
        names = runnable
        tasks = [(name, params) for name, params in tasks if name in names]
        progress.resume()
        outputs = Parallel(n_jobs=n_jobs, return_as="generator")(
            delayed(_letor_point)(_make(entries[name], params, criterion, random_state),
                                  ranker_call(name, params), data.train, data.vali, fold_dir,
                                  convention)
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
                results[name][2].append(chosen)
                best, best_vali, seconds = None, -np.inf, []
        if failure is not None:
            raise failure
    return results


def _make(entry, params, criterion, random_state):
    """The ranker of ``entry`` at the grid point ``params``, early stopping on ``criterion``."""
    est = entry.make(**params)
    if random_state is not None and "random_state" in est.get_params():
        est.set_params(random_state=random_state)
    if isinstance(est, BaseRanker) and "scoring" in est.get_params():
        # a skrank ranker's early stopping watches the criterion the grid is
        # chosen by (another estimator's scoring means something else)
        est.set_params(scoring=criterion)
    return est


def _fit(est, train, vali):
    """Fit on the train split (with qid, and vali for early stopping, when accepted)."""
    X, y, qid = train
    kwargs = fit_qid_params(est, qid)
    takes = inspect.signature(est.fit).parameters
    # skrank's way of early stopping on a validation set of queries (another
    # estimator's X_val, without qid_val, is not)
    if ({"X_val", "y_val", "qid_val"} <= set(takes)
            and est.get_params().get("early_stopping") is True):
        kwargs.update(X_val=vali[0], y_val=vali[1], qid_val=vali[2])
    start = time.perf_counter()
    est.fit(X, y, **kwargs)
    return time.perf_counter() - start


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
    """One grid point of :func:`_run`: ``(fitted est, fit seconds, vali NDCG@10)``.

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
