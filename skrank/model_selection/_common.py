"""Pieces shared by the ranking cross-validation and search tools."""

import inspect
from collections.abc import Iterable

import numpy as np
from sklearn.metrics import get_scorer

from ..metrics._scorer import RankingScorer, get_ranking_scorer
from ..utils._query_layout import QueryLayout
from ..utils._routing import (
    fit_qid_params,
    through_transforms,
)
from ..utils._sklearn_compat import make_metadata_request
from ..utils._validation import check_feature_dtypes, check_n_jobs, is_integer

__all__ = ["check_n_jobs", "check_ranking_scoring", "query_splits"]


def query_splits(cv, X, y, layout):
    """Materialise the splits of ``cv`` and check each of them.

    Parameters
    ----------
    cv : int, cross-validation generator or iterable
        An int means the folds of ``GroupKFold(n_splits=cv)`` over the
        queries (:func:`group_folds`); a splitter is called with
        ``groups=qid``; an iterable yields ``(train, test)`` pairs of row
        indices or of boolean masks over the rows.
    X, y : array-like
        The data, passed to ``cv.split``.
    layout : QueryLayout
        The query layout of the rows.

    Returns
    -------
    splits : list of (train, test) tuples
        Each side an integer array of row indices (a boolean mask becomes
        the indices of its True entries).

    Raises
    ------
    TypeError
        If ``cv`` is a bool, or neither an int, a splitter nor an iterable.
    ValueError
        If ``cv`` asks for fewer than 2 folds or more folds than there are
        queries, gives no splits, gives a split that is not a (train, test)
        pair, whose indices are not integers in ``[0, n_samples)`` or whose
        mask does not have one entry per row, with an empty side, or that
        puts rows of one query on both sides.
    """
    if isinstance(cv, (bool, np.bool_, str, bytes)) or not (
        is_integer(cv)
        or hasattr(cv, "split")
        or isinstance(cv, Iterable)
    ):
        raise TypeError(
            f"cv must be an int (the number of folds), a splitter or an iterable "
            f"of (train, test) index arrays, got cv={cv!r}."
        )
    if is_integer(cv):
        if cv < 2:
            raise ValueError(f"cv must be at least 2 folds, got cv={cv}.")
        if cv > layout.n_queries:
            raise ValueError(
                f"cv={cv} folds need at least {cv} queries, got "
                f"{layout.n_queries}."
            )
        given = f"cv={cv}"
        splits = list(group_folds(layout, int(cv)))
    elif hasattr(cv, "split"):
        given = f"cv={cv!r}"
        splits = list(cv.split(X, y, groups=layout.qid))
    else:
        given = "the cv iterable"
        splits = list(cv)
    if not splits:
        raise ValueError(
            f"cv gave no splits: {given} yielded no (train, test) pair; give at "
            "least one split."
        )
    checked = []
    for i, split in enumerate(splits):
        where = f"Split {i} of {given}"
        train, test = _split_pair(split, where)
        train = _split_rows(train, "training", where, layout.n_samples)
        test = _split_rows(test, "test", where, layout.n_samples)
        if not _check_disjoint(layout, train, test):
            raise ValueError(
                f"{where} puts rows of the same query in both the training and "
                "the test set; use a group-aware splitter such as GroupKFold "
                "(it receives groups=qid)."
            )
        checked.append((train, test))
    return checked


def group_folds(layout, n_splits):
    """The ``(train, test)`` row indices of scikit-learn's ``GroupKFold`` over the queries.

    Queries are dealt largest first, each to the fold with the fewest rows so
    far (the first such fold on a tie); queries of equal size are dealt in
    the reverse order of their ids. ``GroupKFold`` does the same, but older
    releases of scikit-learn (1.6 among them) order equal sizes with numpy's
    default sort, which is not stable: which of two queries of equal size
    comes first depends on numpy's version and on the CPU's vector
    instructions, so the folds (and every cross-validated score) differ
    between machines. Here they are the same on every machine and every
    supported scikit-learn, and equal to ``GroupKFold``'s where it sorts
    stably (scikit-learn 1.9 does).

    Parameters
    ----------
    layout : QueryLayout
        The queries of the rows.
    n_splits : int
        Number of folds, from 2 to ``layout.n_queries``.

    Yields
    ------
    train, test : ndarray of int
        Row indices in increasing order; fold ``f``'s test rows are the rows
        of the queries dealt to it.
    """
    sizes = layout.sizes.tolist()
    rows_in = [0] * n_splits
    fold_of_query = np.empty(layout.n_queries, dtype=np.intp)
    for q in np.argsort(layout.sizes, kind="stable")[::-1].tolist():
        fold = rows_in.index(min(rows_in))
        rows_in[fold] += sizes[q]
        fold_of_query[q] = fold
    fold_of_row = layout.to_rows(layout.expand(fold_of_query))
    for fold in range(n_splits):
        yield np.flatnonzero(fold_of_row != fold), np.flatnonzero(fold_of_row == fold)


def _split_pair(split, where):
    """``split`` unpacked as ``(train, test)``, or a ValueError saying what it is."""
    try:
        n_sides = len(split)
    except TypeError:
        n_sides = None
    if n_sides != 2 or isinstance(split, (str, bytes)):
        if n_sides is None:
            got = repr(split)
        else:
            got = f"a {type(split).__name__} of length {n_sides}"
        raise ValueError(
            f"{where} must be a (train, test) pair of index arrays, got {got}."
        )
    train, test = split
    return train, test


def _split_rows(rows, side, where, n_samples):
    """The row indices of one side of a split, checked against ``n_samples`` rows.

    ``rows`` holds integer indices in ``[0, n_samples)`` or is a boolean
    mask with one entry per row; anything else is a ValueError naming the
    split, the side and what was wrong.
    """
    arr = np.asarray(rows)
    if arr.ndim != 1:
        raise ValueError(
            f"{where}: the {side} indices must be a 1-d array, got an array of "
            f"shape {arr.shape}."
        )
    if arr.dtype == bool:
        if arr.shape[0] != n_samples:
            raise ValueError(
                f"{where}: the {side} mask must have one entry per row of X "
                f"({n_samples}), got {arr.shape[0]} entries."
            )
        arr = np.flatnonzero(arr)
    elif arr.size and arr.dtype.kind not in "iu":
        raise ValueError(
            f"{where}: the {side} indices must be integers (row numbers) or a "
            f"boolean mask, got an array of dtype {arr.dtype} "
            f"(first entries {arr[:5].tolist()})."
        )
    if arr.size == 0:
        raise ValueError(f"{where} has an empty {side} set.")
    bad = arr[(arr < 0) | (arr >= n_samples)]
    if bad.size:
        shown = ", ".join(str(v) for v in bad[:5])
        if bad.size > 5:
            shown += f" and {bad.size - 5} more"
        raise ValueError(
            f"{where}: the {side} indices must be row numbers in [0, {n_samples}), "
            f"got {bad.size} outside: {shown}."
        )
    return arr.astype(np.intp, copy=False)


def _check_disjoint(layout, rows_a, rows_b):
    """True when no query of ``layout`` has rows in both ``rows_a`` and ``rows_b``.

    Each is an array of row indices in ``[0, layout.n_samples)`` or a
    boolean mask over the rows.
    """

    def indices(rows):
        rows = np.asarray(rows)
        return np.flatnonzero(rows) if rows.dtype == bool else rows.astype(np.intp)

    in_a = np.zeros(layout.n_queries, dtype=bool)
    in_a[layout.codes[indices(rows_a)]] = True
    return not in_a[layout.codes[indices(rows_b)]].any()


class _PointwiseScorer:
    """Adapter giving a qid-unaware scorer (e.g. ``"r2"``) the ranking call."""

    def __init__(self, scorer, name):
        self._scorer = scorer
        self._name = name
        self._request = make_metadata_request(self)

    def __call__(self, estimator, X, y_true, *, qid=None):
        # a Pipeline with steps taking qid (routing off): score its final
        # estimator on X transformed with qid, as routing would
        estimator, X = through_transforms(estimator, X, qid)
        return self._scorer(estimator, X, y_true)

    def get_metadata_routing(self):
        return self._request

    def _accept_sample_weight(self):
        return False

    def __repr__(self):
        return f"pointwise scorer {self._name!r}"


def _one_scorer(scoring, name="scoring"):
    if isinstance(scoring, RankingScorer):
        return scoring
    if isinstance(scoring, str):
        try:
            return get_ranking_scorer(scoring)
        except ValueError as ranking_error:
            try:
                return _PointwiseScorer(get_scorer(scoring), scoring)
            except ValueError:
                raise ValueError(
                    f"{name}={scoring!r} is neither a ranking scorer name nor a "
                    f"scikit-learn scorer name. {ranking_error}"
                ) from None
    if callable(scoring):
        try:
            signature = inspect.signature(scoring)
        except (TypeError, ValueError):  # no signature to read: trust the callable
            signature = None
        takes_qid = signature is not None and "qid" in signature.parameters
        if signature is not None:
            _check_scorer_signature(scoring, signature, takes_qid, name)
        if takes_qid:
            return scoring
        # e.g. sklearn.metrics.make_scorer(...): its **kwargs refuse qid
        # unless metadata routing is on
        return _PointwiseScorer(scoring, getattr(scoring, "__name__", repr(scoring)))
    raise TypeError(
        f"{name} must be a scorer name, a callable or a list/dict of them, "
        f"got {scoring!r}."
    )


def _check_scorer_signature(scoring, signature, takes_qid, name):
    """Refuse a callable that cannot be called as ``scorer(estimator, X, y, qid=...)``.

    A metric function such as ``ndcg_score(y_true, y_score, *, qid)`` is the
    usual mistake: it takes two positional arguments, not three, and would
    fail deep inside with "too many positional arguments". A callable whose
    first parameter is ``y_true`` or ``y`` is a metric even if it could bind
    three.
    """
    args = (None, None, None)
    try:
        if takes_qid:
            signature.bind(*args, qid=None)
        else:
            signature.bind(*args)
    except TypeError:
        pass
    else:
        if next(iter(signature.parameters), None) not in ("y_true", "y"):
            return
    parameters = list(signature.parameters.values())
    shown = str(signature.replace(parameters=parameters[:3]))
    if len(parameters) > 3:
        shown = shown[:-1] + ", ...)"
    label = getattr(scoring, "__name__", None) or type(scoring).__name__
    if parameters and parameters[0].name in ("y_true", "y"):
        maker = "make_ranking_scorer" if takes_qid else "sklearn.metrics.make_scorer"
        hint = f"a metric function: make it a scorer with {maker}({label})"
    else:
        hint = "which cannot be called that way"
    raise TypeError(
        f"{name} must be a scorer, called as scorer(estimator, X, y, qid=qid), such "
        f"as get_ranking_scorer('ndcg@10') or make_ranking_scorer(ndcg_score); got "
        f"{name}={label} with signature {shown}, {hint}."
    )


def check_ranking_scoring(scoring):
    """Turn ``scoring`` into one scorer or a dict of named scorers.

    Every returned scorer is called as ``scorer(estimator, X, y, qid=qid)``:
    ranking names (``"ndcg@10"``) give :class:`RankingScorer`, scikit-learn
    names (``"r2"``) and qid-unaware callables are wrapped so that they
    ignore ``qid``.

    Parameters
    ----------
    scoring : str, callable, list, tuple, dict or None
        None means ``"ndcg@10"``.

    Returns
    -------
    scorer : callable or dict of str to callable

    Raises
    ------
    TypeError
        If ``scoring`` (or an entry of it) is neither a name nor a callable,
        or is a callable that cannot be called as ``scorer(estimator, X, y,
        qid=qid)``, such as a metric function ``ndcg_score(y_true, y_score,
        *, qid)``.
    ValueError
        If a name is unknown, or a list or dict is empty or repeats a name.
    """
    if scoring is None:
        scoring = "ndcg@10"
    if isinstance(scoring, (str, RankingScorer)) or callable(scoring):
        return _one_scorer(scoring)
    if isinstance(scoring, (list, tuple, set)):
        names = list(scoring)
        if not names or not all(isinstance(n, str) for n in names):
            raise ValueError(
                f"scoring as a list must hold one or more metric names, got {scoring!r}."
            )
        if len(set(names)) != len(names):
            raise ValueError(f"scoring has duplicate names: {scoring!r}.")
        return {n: _one_scorer(n, f"scoring[{n!r}]") for n in names}
    if isinstance(scoring, dict):
        if not scoring:
            raise ValueError("scoring is an empty dict.")
        return {
            str(n): _one_scorer(s, f"scoring[{n!r}]") for n, s in scoring.items()
        }
    raise TypeError(
        f"scoring must be a scorer name, a callable or a list/dict of them, "
        f"got {scoring!r}."
    )


def check_layout(X, qid, caller, *, groups=None):
    """A :class:`QueryLayout` for ``qid`` checked against the rows of ``X``.

    ``qid=None`` means one query, as everywhere in the package; the folds of
    ``caller`` keep queries whole, so one query cannot be split: a
    ValueError says so. ``groups`` (the name scikit-learn's splitters give
    the query ids) is refused with a TypeError that says to pass ``qid=``:
    the folds group the rows by ``qid``, and a ``groups=`` passed instead
    would otherwise be dropped, leaving ``qid=None``. Date and duration
    columns of ``X`` are refused by name
    (:func:`~skrank.utils._validation.check_feature_dtypes`) before any fold
    is fitted, whatever the estimator.
    """
    if groups is not None:
        raise TypeError(
            f"{caller} takes the query ids as qid=..., not groups=...: pass "
            "qid=<your groups>; the folds then keep every query whole."
        )
    if qid is None:
        raise ValueError(
            f"{caller} got qid=None, which means all rows are one query, and its folds "
            "keep every query whole: one query cannot be split into folds. Pass qid, "
            "the query id of each row."
        )
    check_feature_dtypes(X)
    n_samples = X.shape[0] if hasattr(X, "shape") else len(X)
    return QueryLayout(qid, n_samples=n_samples)


def fit_params_for(estimator, qid, params):
    """Fit parameters: ``params`` plus what hands ``qid`` to ``estimator.fit``.

    ``qid=qid`` when ``fit`` takes it; with metadata routing off, a
    Pipeline gets ``<step>__qid=qid`` for each step that takes it
    (:func:`skrank.utils._routing.fit_qid_params`).

    Raises
    ------
    ValueError
        If ``estimator`` is a meta-estimator other than a Pipeline (or has
        one as a step) with steps that take ``qid`` while metadata routing is
        off: ``qid`` cannot reach them, and they would silently treat all
        rows as one query.
    """
    return {**dict(params or {}), **fit_qid_params(estimator, qid)}
