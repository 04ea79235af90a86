"""Grouped cross-validation of rankers that works with metadata routing off."""

import numbers
import time
import warnings

import numpy as np
from sklearn.base import clone
from sklearn.exceptions import FitFailedWarning
from sklearn.utils import indexable
from sklearn.utils.parallel import Parallel, delayed

from ..metrics._scorer import RankingScorer
from ..utils._routing import predict_scores
from ..utils._sklearn_compat import safe_indexing
from ..utils._validation import is_real
from ._common import (
    check_layout,
    check_n_jobs,
    check_ranking_scoring,
    fit_params_for,
    query_splits,
)

__all__ = ["cross_validate_ranker"]


def _slice_params(params, indices, n_samples):
    """Row-slice the array-like fit parameters that have one entry per row."""
    out = {}
    for key, value in params.items():
        if hasattr(value, "__len__") and not isinstance(value, (str, dict)):
            try:
                n = len(value)
            except TypeError:
                n = None
            if n == n_samples:
                out[key] = safe_indexing(value, indices)
                continue
        out[key] = value
    return out


def _score_all(estimator, X, y, qid, scorers):
    """Scores of ``estimator`` on one data set; predicts once for ranking scorers."""
    scores = {}
    y_score = None
    for name, scorer in scorers.items():
        if isinstance(scorer, RankingScorer):
            if y_score is None:
                y_score = predict_scores(estimator, X, qid)
            scores[name] = scorer.score_predictions(y, y_score, qid=qid)
        else:
            scores[name] = scorer(estimator, X, y, qid=qid)
        if not isinstance(scores[name], numbers.Number):
            raise ValueError(
                f"Scorer {name!r} returned {scores[name]!r}; a number is required."
            )
    return scores


def _fit_and_score_ranker(
    estimator, X, y, qid, train, test, scorers, params, return_train_score,
    error_score, verbose, split_index,
):
    """Fit on ``train`` and score on ``test`` (and ``train``) for one split."""
    X_train, y_train, q_train = (safe_indexing(a, train) for a in (X, y, qid))
    X_test, y_test, q_test = (safe_indexing(a, test) for a in (X, y, qid))
    fit_params = fit_params_for(
        estimator, q_train, _slice_params(params, train, len(qid))
    )
    result = {"estimator": estimator, "score_time": 0.0}

    def record_failure(stage, exc, category):
        if error_score == "raise":
            raise exc
        failed = {name: float(error_score) for name in scorers}
        result["test_scores"] = failed
        if return_train_score:
            result["train_scores"] = dict(failed)
        warnings.warn(
            f"{stage} failed on split {split_index}; its scores are set to "
            f"error_score={error_score!r}. Details: {type(exc).__name__}: {exc}",
            category,
        )

    start = time.perf_counter()
    try:
        estimator.fit(X_train, y_train, **fit_params)
    except Exception as exc:
        result["fit_time"] = time.perf_counter() - start
        record_failure("Fitting", exc, FitFailedWarning)
        return result
    result["fit_time"] = time.perf_counter() - start
    start = time.perf_counter()
    try:
        result["test_scores"] = _score_all(estimator, X_test, y_test, q_test, scorers)
        if return_train_score:
            result["train_scores"] = _score_all(
                estimator, X_train, y_train, q_train, scorers
            )
    except Exception as exc:
        record_failure("Scoring", exc, UserWarning)
    result["score_time"] = time.perf_counter() - start
    if verbose > 0:
        shown = ", ".join(f"{k}={v:.4f}" for k, v in result["test_scores"].items())
        print(
            f"[CV] split {split_index}: {shown}, fit {result['fit_time']:.2f}s"
        )
    return result


def cross_validate_ranker(
    estimator,
    X,
    y,
    *,
    qid=None,
    cv=5,
    scoring="ndcg@10",
    n_jobs=None,
    verbose=0,
    params=None,
    pre_dispatch="2*n_jobs",
    return_train_score=False,
    return_estimator=False,
    return_indices=False,
    error_score="raise",
    groups=None,
):
    """Cross-validate a ranker (or any regressor) with whole queries per fold.

    The counterpart of :func:`sklearn.model_selection.cross_validate` for
    ranking: it needs no metadata routing. Folds never split a query, ``qid``
    is sliced with the rows and passed to ``fit`` when the estimator accepts
    it, and always to the scorers.

    Parameters
    ----------
    estimator : estimator object
        Object with ``fit`` and ``predict``; cloned for each fold. ``fit`` is
        given ``qid`` when it has a ``qid`` parameter (or, with metadata
        routing on, when the estimator routes ``qid`` to ``fit``). With
        routing off, a :class:`~sklearn.pipeline.Pipeline` (nested ones
        included) gets ``<step>__qid`` for each step whose ``fit`` (last
        step) or ``fit_transform`` takes ``qid``, and is scored by walking
        its steps, each ``transform`` and the final ``predict`` given ``qid``
        when they take it: e.g. ``make_pipeline(QueryNormalizer(), Ridge())``
        normalises each fold's rows query by query. Another meta-estimator
        holding a step that takes ``qid`` raises a ``ValueError`` with
        routing off.

    X : {array-like, sparse matrix} of shape (n_samples, n_features)
        Document features.

    y : array-like of shape (n_samples,)
        Relevance labels.

    qid : array-like of shape (n_samples,), default=None
        Query id of each row, in any order. None means all rows are one
        query, which no fold can split: a ValueError.

    cv : int, cross-validation generator or iterable, default=5
        An int is the number of :class:`~sklearn.model_selection.GroupKFold`
        folds over queries. A splitter is called with ``groups=qid``; an
        iterable yields ``(train, test)`` pairs of row indices (integers in
        ``[0, n_samples)``) or of boolean masks over the rows. A split that
        puts one query on both sides, has an empty side or indices out of
        range, or a ``cv`` that gives no split, raises ``ValueError``.

    scoring : str, callable, list, tuple or dict, default="ndcg@10"
        Ranking scorer names (``"ndcg@10"``, ``"map"``, ``"precision@5"``;
        see :func:`skrank.metrics.get_ranking_scorer`), scorers from
        :func:`skrank.metrics.make_ranking_scorer`, scikit-learn scorer
        names (``"r2"``), callables ``scorer(estimator, X, y, *, qid)``, or a
        list/dict of these for several metrics.

    n_jobs : int, default=None
        Number of folds run in parallel through joblib (None means 1 unless
        in a :func:`joblib.parallel_backend` context, e.g. ``"dask"``; -1
        means all processors). A count above the number of folds runs one
        worker per fold, with the same results; 0 and bools are refused.

    verbose : int, default=0
        Print one line per fold when > 0; also passed to joblib.

    params : dict, default=None
        Further parameters for ``fit``; arrays with one entry per row are
        sliced with the rows.

    pre_dispatch : int or str, default="2*n_jobs"
        Passed to :class:`joblib.Parallel`.

    return_train_score : bool, default=False
        Also score each fold's training set.

    return_estimator : bool, default=False
        Return the fitted estimator of each fold.

    return_indices : bool, default=False
        Return the train and test indices of each fold.

    error_score : "raise" or float, default="raise"
        What happens when fitting or scoring a fold fails: re-raise (default,
        so that a failure is never hidden as NaN), or record this value with
        a :class:`~sklearn.exceptions.FitFailedWarning` (fit) or a
        ``UserWarning`` (scoring), as scikit-learn does.

    groups : None
        Not used: the folds group the rows by ``qid``. Passing it (the name
        scikit-learn's splitters use) raises a ``TypeError`` that says to
        pass ``qid=`` instead.

    Returns
    -------
    scores : dict of str to ndarray
        The keys of :func:`sklearn.model_selection.cross_validate`:
        ``fit_time``, ``score_time``, ``test_score`` (one metric) or
        ``test_<name>`` (several), ``train_*`` when ``return_train_score``,
        ``estimator`` and ``indices`` when requested.

    See Also
    --------
    RankerSearchCV : Grid search over ranker hyperparameters.
    sklearn.model_selection.cross_validate : Needs routing on to pass ``qid``.

    Examples
    --------
    >>> from sklearn.linear_model import Ridge
    >>> from skrank.datasets import make_ranking
    >>> from skrank.model_selection import cross_validate_ranker
    >>> X, y, qid = make_ranking(n_queries=20, n_docs=10, random_state=0)
    >>> result = cross_validate_ranker(Ridge(), X, y, qid=qid, cv=4,
    ...                                scoring=["ndcg@10", "map"])
    >>> sorted(result)
    ['fit_time', 'score_time', 'test_map', 'test_ndcg@10']
    >>> result["test_ndcg@10"].shape
    (4,)
    """
    if not (is_real(error_score)
            or (isinstance(error_score, str) and error_score == "raise")):
        raise ValueError(
            f"error_score must be 'raise' or a number (not a bool), got {error_score!r}."
        )
    layout = check_layout(X, qid, "cross_validate_ranker", groups=groups)
    if len(y) != layout.n_samples:
        raise ValueError(
            f"y must have one entry per row of X: {layout.n_samples} rows, got "
            f"{len(y)}."
        )
    X, y = indexable(X, y)
    qid = layout.qid
    scorers = check_ranking_scoring(scoring)
    multimetric = isinstance(scorers, dict)
    if not multimetric:
        scorers = {"score": scorers}
    splits = query_splits(cv, X, y, layout)
    params = {} if params is None else dict(params)
    if "qid" in params:
        raise ValueError("Pass qid as the qid argument, not inside params.")

    n_jobs = check_n_jobs(n_jobs, len(splits))
    parallel = Parallel(n_jobs=n_jobs, verbose=verbose, pre_dispatch=pre_dispatch)
    results = parallel(
        delayed(_fit_and_score_ranker)(
            clone(estimator), X, y, qid, train, test, scorers, params,
            return_train_score, error_score, verbose, i,
        )
        for i, (train, test) in enumerate(splits)
    )

    out = {
        "fit_time": np.array([r["fit_time"] for r in results]),
        "score_time": np.array([r["score_time"] for r in results]),
    }
    if return_estimator:
        out["estimator"] = [r["estimator"] for r in results]
    if return_indices:
        out["indices"] = {
            "train": [train for train, _ in splits],
            "test": [test for _, test in splits],
        }
    sides = ["test"] + (["train"] if return_train_score else [])
    for side in sides:
        for name in scorers:
            key = f"{side}_{name}" if multimetric else f"{side}_score"
            out[key] = np.array([r[f"{side}_scores"][name] for r in results])
    return out
