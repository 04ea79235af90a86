"""Permutation feature importance scored per query."""

import numpy as np
from sklearn.utils import Bunch, check_array, check_random_state
from sklearn.utils.parallel import Parallel, delayed

from ..metrics._scorer import RankingScorer
from ..model_selection._common import check_n_jobs, check_ranking_scoring
from ..utils._memory import check_memory, format_bytes
from ..utils._qid import resolve_qid
from ..utils._routing import predict_scores
from ..utils._sklearn_compat import MAX_LENGTH
from ..utils._validation import check_feature_dtypes, is_integer

__all__ = ["permutation_importance"]


def _score(scorers, estimator, X, y, qid, sample_weight):
    """Score of each scorer of the dict ``scorers``; one predict for all
    ranking scorers."""
    weights = {} if sample_weight is None else {"sample_weight": sample_weight}
    y_score = None
    scores = {}
    for name, scorer in scorers.items():
        if isinstance(scorer, RankingScorer):
            if y_score is None:
                y_score = predict_scores(estimator, X, qid)
            scores[name] = scorer.score_predictions(y, y_score, qid=qid, **weights)
        else:
            scores[name] = float(scorer(estimator, X, y, qid=qid, **weights))
    return scores


def _check_weighted_scorers(scorers, sample_weight):
    """Refuse ``sample_weight`` for a scorer that says it cannot use it."""
    if sample_weight is None:
        return
    for name, scorer in scorers.items():
        accepts = getattr(scorer, "_accept_sample_weight", None)
        if accepts is not None and not accepts():
            label = "scoring" if name is None else f"scoring[{name!r}]"
            raise ValueError(
                f"sample_weight was given but {label}={scorer!r} does not support "
                "it; pass sample_weight=None or a scorer whose metric takes "
                "sample_weight."
            )


def _permuted_scores(
    estimator, X, y, qid, sample_weight, col, seed, n_repeats, scorers
):
    """Scores of ``n_repeats`` shuffles of column ``col``, shape (n_scorers, n_repeats).

    The draws are those of scikit-learn's ``permutation_importance``: one
    index array, shuffled in place by ``RandomState(seed)`` before each
    repeat, is applied to the column as the previous repeat left it.
    """
    rng = check_random_state(seed)
    # a writable copy: joblib may hand a read-only memory map to a worker
    X_permuted = X.copy()
    shuffling_idx = np.arange(X_permuted.shape[0])
    scores = np.empty((len(scorers), n_repeats))
    for repeat in range(n_repeats):
        rng.shuffle(shuffling_idx)
        if hasattr(X_permuted, "iloc"):
            column = X_permuted.iloc[shuffling_idx, col]
            column.index = X_permuted.index
            X_permuted[X_permuted.columns[col]] = column
        else:
            X_permuted[:, col] = X_permuted[shuffling_idx, col]
        scored = _score(scorers, estimator, X_permuted, y, qid, sample_weight)
        scores[:, repeat] = list(scored.values())
    return scores


def permutation_importance(
    estimator,
    X,
    y,
    *,
    qid=None,
    scoring=None,
    n_repeats=5,
    random_state=None,
    n_jobs=None,
    sample_weight=None,
):
    """Permutation importance of every feature for a ranking metric per query.

    The importance of a feature is the drop of the ranking score (mean over
    queries of, by default, NDCG@10) when the feature's column is shuffled
    across rows, averaged over ``n_repeats`` shuffles. As
    :func:`sklearn.inspection.permutation_importance`, but ``qid`` reaches
    the scorer (which averages per query) and ``predict``.

    Parameters
    ----------
    estimator : object
        A fitted estimator with ``predict``: a skrank ranker, a Pipeline, or
        any regressor. ``predict`` is given ``qid`` when it takes it (see
        Notes).

    X : {ndarray, DataFrame} of shape (n_samples, n_features)
        Rows to score; sparse matrices are not supported.

    y : array-like of shape (n_samples,)
        Relevance label of each row.

    qid : array-like of shape (n_samples,), default=None
        Query id of each row, integers or strings, in any order (the score
        is a mean over queries). None means all rows are one query; with
        more than 100 rows that is more likely a forgotten ``qid``, and it
        warns.

    scoring : str, RankingScorer, callable, list, tuple or dict, default=None
        Metric whose drop is measured, higher being better. None means
        ``"ndcg@10"`` (skrank's default conventions). A name such as
        ``"map"`` or ``"ndcg@5"`` (see
        :func:`skrank.metrics.get_ranking_scorer`), a
        :class:`~skrank.metrics.RankingScorer`, a scikit-learn scorer name
        (``"r2"``, scored over all rows), a callable
        ``scorer(estimator, X, y, *, qid)``, or a list or dict of these for
        several metrics at once, as the ``scoring`` of
        :func:`skrank.model_selection.cross_validate_ranker`.

    n_repeats : int, default=5
        Number of shuffles of each feature.

    random_state : int, RandomState instance or None, default=None
        Seed of the shuffles. Pass an int for the same result on every call;
        the result does not depend on ``n_jobs``.

    n_jobs : int, default=None
        Number of features scored in parallel (joblib). None means 1 unless
        in a :obj:`joblib.parallel_backend` context; -1 means all
        processors. A count above the number of features runs one worker
        per feature, with the same result; 0 and bools are refused.

    sample_weight : array-like of shape (n_samples,), default=None
        Weight of each row's query (the same for all rows of a query),
        passed to the scorer, which then takes the weighted mean over
        queries; the scorer's metric must take ``sample_weight``, as the
        metrics of :mod:`skrank.metrics` do. None weighs queries equally.

    Returns
    -------
    result : :class:`~sklearn.utils.Bunch` or dict of such
        With one metric, a Bunch with the attributes below; with a list or
        dict of metrics, a dict mapping each metric's name to such a Bunch.

        importances_mean : ndarray of shape (n_features,)
            Mean importance of each feature over the repeats.
        importances_std : ndarray of shape (n_features,)
            Standard deviation of the importance over the repeats.
        importances : ndarray of shape (n_features, n_repeats)
            The importance of each feature for each repeat: the score on
            ``X`` minus the score with the feature shuffled.

    Raises
    ------
    TypeError
        If ``n_repeats`` or ``n_jobs`` is not an integer (a
        bool is refused), or ``scoring`` is not a scorer (e.g. a metric
        function such as ``ndcg_score``: wrap it with
        :func:`~skrank.metrics.make_ranking_scorer`).
    ValueError
        If ``qid``, ``y`` or ``sample_weight`` does not have one entry per
        row of ``X``, ``n_repeats`` is below 1, ``n_jobs`` is 0,
        ``random_state`` cannot seed a ``RandomState``, or ``sample_weight``
        is given to a scorer that does not support it.
    MemoryError
        If the scores of ``n_repeats`` repeats would not fit in the memory
        available, raised before any repeat; the message names
        ``n_repeats``.

    See Also
    --------
    sklearn.inspection.permutation_importance : The same without ``qid``.
    skrank.metrics.get_ranking_scorer : Scorers from names such as ``"map"``.

    Notes
    -----
    Only the values of the feature move: rows keep their label and their
    query id, so every query keeps its documents and the score is the mean
    of a per-query metric over the same queries as the baseline. The
    shuffle is over all rows, as in scikit-learn, so a document may receive
    the feature value of a document of another query; the importance
    measures how much the ranking relies on the feature as the model sees
    it across the data set.

    ``estimator.predict(X, qid=qid)`` is called when ``predict`` has a
    ``qid`` parameter (skrank rankers, whose predict may score a query's
    documents jointly), or, with scikit-learn's metadata routing on, when a
    meta-estimator such as a Pipeline routes ``qid`` to ``predict``;
    otherwise ``estimator.predict(X)``.

    The random draws are scikit-learn's, so the two functions agree when
    scikit-learn is given a scorer that closes over ``qid``: one integer
    ``seed = check_random_state(random_state).randint(2**31)`` is drawn,
    and for every feature ``RandomState(seed)`` shuffles one index array
    ``idx = arange(n_samples)`` in place before each repeat, and the column
    becomes ``column[idx]`` of the column as the previous repeat left it.
    Every feature thus sees the same sequence of shuffles (common random
    numbers), and the result does not depend on ``n_jobs``.

    scikit-learn's ``max_samples`` is not offered: drawing rows would split
    queries.

    Examples
    --------
    >>> from sklearn.linear_model import Ridge
    >>> from skrank.datasets import make_ranking
    >>> from skrank.inspection import permutation_importance
    >>> X, y, qid, coef = make_ranking(
    ...     n_queries=20, n_docs=10, n_features=3, return_coef=True,
    ...     random_state=0)
    >>> X[:, 2] = 0.0  # a feature that carries nothing
    >>> model = Ridge().fit(X, y)
    >>> result = permutation_importance(
    ...     model, X, y, qid=qid, n_repeats=3, random_state=0)
    >>> result.importances.shape
    (3, 3)
    >>> bool(result.importances_mean[:2].max() > 0.01)
    True
    >>> float(result.importances_mean[2])
    0.0
    """
    if not is_integer(n_repeats):
        raise TypeError(
            f"n_repeats must be a positive integer, got n_repeats={n_repeats!r}."
        )
    if not 1 <= n_repeats <= MAX_LENGTH:
        raise ValueError(
            f"n_repeats must be a positive integer, got n_repeats={n_repeats!r} "
            f"(at most {MAX_LENGTH}, the longest array)."
        )
    if not hasattr(estimator, "predict"):
        raise TypeError(
            f"estimator must be a fitted estimator with predict, got {estimator!r}."
        )
    check_feature_dtypes(X)
    if not hasattr(X, "iloc"):
        X = check_array(X, ensure_all_finite="allow-nan", dtype=None)
    n_samples = X.shape[0]
    for name, values in (("y", y), ("sample_weight", sample_weight)):
        if values is None and name == "sample_weight":
            continue
        if np.ndim(values) == 0:
            raise TypeError(
                f"{name} must be an array-like with one entry per row of X "
                f"({n_samples}), got {name}={values!r}."
            )
        if len(values) != n_samples:
            raise ValueError(
                f"{name} must have one entry per row of X: X has {n_samples} rows, "
                f"{name} has {len(values)}."
            )
    qid = resolve_qid(qid, n_samples, caller="permutation_importance")
    scorers = check_ranking_scoring(scoring)
    multimetric = isinstance(scorers, dict)
    if not multimetric:
        scorers = {None: scorers}
    _check_weighted_scorers(scorers, sample_weight)
    # one score a repeat, feature and scorer, held three times at the end
    # (each feature's, stacked, the importances): refused before hours of
    # repeats rather than by the kernel once they are written
    n_bytes = 3 * 8 * len(scorers) * X.shape[1] * n_repeats
    check_memory(n_bytes, f"n_repeats={n_repeats!r} needs about {format_bytes(n_bytes)} for "
                 f"the scores of {X.shape[1]} features times {len(scorers)} scorer"
                 f"{'s' * (len(scorers) > 1)} times n_repeats repeats", "lower n_repeats")

    try:
        random_state = check_random_state(random_state)
    except ValueError as error:
        raise ValueError(
            f"random_state must be None, an int in [0, 2**32 - 1] or a "
            f"numpy.random.RandomState, got random_state={random_state!r} ({error})."
        ) from None
    n_jobs = check_n_jobs(n_jobs, X.shape[1])
    seed = random_state.randint(np.iinfo(np.int32).max + 1)

    baseline = _score(scorers, estimator, X, y, qid, sample_weight)
    permuted = Parallel(n_jobs=n_jobs)(
        delayed(_permuted_scores)(
            estimator, X, y, qid, sample_weight, col, seed, n_repeats, scorers
        )
        for col in range(X.shape[1])
    )
    permuted = np.stack(permuted, axis=1)  # (n_scorers, n_features, n_repeats)

    results = {}
    for i, name in enumerate(scorers):
        importances = baseline[name] - permuted[i]
        results[name] = Bunch(
            importances_mean=np.mean(importances, axis=1),
            importances_std=np.std(importances, axis=1),
            importances=importances,
        )
    return results if multimetric else results[None]
