"""Scorers for ranking metrics, usable as ``scoring=`` anywhere in scikit-learn."""

import inspect
from functools import partial

import numpy as np

from ..utils._routing import predict_scores
from ..utils._sklearn_compat import make_metadata_request
from ..utils._validation import is_integer, shortened_repr
from ._ranking import METRICS as _METRICS
from ._ranking import check_takes_average, parse_metric_name

__all__ = ["RankingScorer", "get_ranking_scorer", "make_ranking_scorer"]


class RankingScorer:
    """A scorer ``scorer(estimator, X, y, *, qid)`` for a per-query ranking metric.

    Create it with :func:`make_ranking_scorer` or :func:`get_ranking_scorer`.
    It requests ``qid`` for scoring by default, so it works in scikit-learn's
    cross-validation and search tools with metadata routing on, and in
    :func:`skrank.model_selection.cross_validate_ranker` and
    :class:`skrank.model_selection.RankerSearchCV` with routing off.

    Query weights (``sample_weight``, the same for all rows of a query) go
    to the metric when it takes them, as every metric of
    :mod:`skrank.metrics` does. As with scikit-learn's scorers they are not
    requested by default: with metadata routing on, request them with
    ``set_score_request(sample_weight=True)``.

    Parameters
    ----------
    metric : callable
        A function ``metric(y_true, y_score, *, qid, k, **kwargs)`` returning
        one number where higher is better, such as :func:`ndcg_score`; with
        ``average=False``, a 1-D array of one number per query.
    k : int or None
        Cutoff passed to ``metric``.
    kwargs : dict
        Further keyword arguments of ``metric`` (the metric conventions).
    name : str
        Short name used in ``repr``.

    Notes
    -----
    The scorer calls ``estimator.predict(X, qid=qid)`` when the estimator's
    ``predict`` takes ``qid`` (models that score the documents of a query
    jointly, and Pipelines that route ``qid`` with metadata routing on), and
    ``estimator.predict(X)`` otherwise, so any regressor can be scored. A
    plain :func:`sklearn.metrics.make_scorer` never passes metadata to
    ``predict``.
    """

    def __init__(self, metric, k, kwargs, name):
        self._metric = metric
        self._k = k
        self._kwargs = dict(kwargs)
        self._name = name
        self._request = _score_request(self, qid=True, sample_weight=None)

    def __call__(self, estimator, X, y_true, *, qid=None, sample_weight=None):
        """Score ``estimator`` on ``X`` against ``y_true``, grouped by ``qid``.

        Parameters
        ----------
        estimator : object
            A fitted estimator with ``predict``.
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Documents to score.
        y_true : array-like of shape (n_samples,)
            Relevance labels.
        qid : array-like of shape (n_samples,)
            Query id of each row. Required.
        sample_weight : array-like of shape (n_samples,), default=None
            Weight of each row's query in the mean (the same for all rows of
            a query), passed to the metric; None weighs queries equally.

        Returns
        -------
        score : float
            The metric's mean over the queries of ``X``. A NaN returned by
            the metric is passed on, as scikit-learn's scorers do.

        Raises
        ------
        ValueError
            If ``qid`` is None, or ``sample_weight`` is given to a scorer
            whose metric takes none.
        TypeError
            If ``estimator`` has no ``predict``, or the metric does not
            return one number.
        """
        if qid is None:
            raise ValueError(
                f"{self!r} needs qid, the query id of each row, and got qid=None. "
                "Pass qid=... when calling the scorer. In cross-validation use "
                "skrank.model_selection.cross_validate_ranker or RankerSearchCV, "
                "or enable metadata routing (sklearn.set_config("
                "enable_metadata_routing=True)) and pass params={'qid': qid}."
            )
        self._check_sample_weight(sample_weight)
        y_score = predict_scores(estimator, X, qid)
        return self.score_predictions(
            y_true, y_score, qid=qid, sample_weight=sample_weight
        )

    def _metric_function(self):
        """This scorer's metric as ``f(y_true, y_score, *, qid, average=True)``.

        A built-in metric comes back as a :func:`functools.partial` of its
        function with ``k`` and the conventions (so that
        :class:`~skrank.losses.BoltzRankLoss` recognises NDCG), any other one
        as :meth:`score_predictions`, after a TypeError if it takes no
        ``average``.
        """
        if self._metric in _METRICS.values():
            return partial(self._metric, k=self._k, **self._kwargs)
        check_takes_average(self._metric, self._name, f"{self!r} as a per-query metric")
        return self.score_predictions

    def score_predictions(
        self, y_true, y_score, *, qid, average=True, sample_weight=None
    ):
        """The metric of already computed scores ``y_score``.

        Parameters
        ----------
        y_true : array-like of shape (n_samples,)
            Relevance label of each row.
        y_score : array-like of shape (n_samples,)
            Score of each row; higher ranks first.
        qid : array-like of shape (n_samples,)
            Query id of each row, in any order.
        average : bool, default=True
            Return the mean over queries; if False, the per-query values
            (in the order of the sorted unique ``qid``), for a metric that
            takes ``average`` (every metric named in
            :func:`make_ranking_scorer`).
        sample_weight : array-like of shape (n_samples,), default=None
            Query weights, passed to the metric when given; they weigh only
            the mean.

        Returns
        -------
        score : float or ndarray of shape (n_queries,)
            The metric's mean over queries, or its per-query values. A NaN
            returned by the metric is passed on, as scikit-learn's scorers
            do (the rankers' early stopping takes a NaN metric for one
            without signal and fits without it).

        Raises
        ------
        TypeError
            If ``average`` is not a bool; with ``average=False``, if the
            metric takes no ``average`` parameter (read from its signature,
            before the call); if the metric returns something other than one
            number (``average=True``) or a 1-D array of one number per query
            (``average=False``).
        ValueError
            If ``sample_weight`` is given to a scorer whose metric takes
            none.
        """
        if not isinstance(average, (bool, np.bool_)):
            # a truthy string such as "no" would be taken for True
            raise TypeError(
                f"average must be True or False; got average={average!r} of type "
                f"{type(average).__name__}."
            )
        self._check_sample_weight(sample_weight)
        kwargs = dict(self._kwargs)
        if sample_weight is not None:
            kwargs["sample_weight"] = sample_weight
        if average:
            return self._one_number(
                self._metric(y_true, y_score, qid=qid, **self._cutoff(), **kwargs)
            )
        check_takes_average(
            self._metric, self._name, f"{self!r}.score_predictions(..., average=False)"
        )
        values = self._metric(
            y_true, y_score, qid=qid, average=False, **self._cutoff(), **kwargs
        )
        if self._metric not in _METRICS.values():  # skrank's own metrics are trusted
            self._check_per_query(values, qid)
        return values

    def _wrong_return(self, what, got):
        return TypeError(
            f"the metric {self._name!r} of {self!r} must return {what}; got {got}."
        )

    def _one_number(self, value):
        """``float(value)`` of a metric's mean, or a TypeError naming the metric.

        NaN and infinities pass, as in scikit-learn's scorers (the rankers'
        early stopping treats a NaN metric as one without signal).
        """
        what = "one number (the mean over queries)"
        if not isinstance(value, (str, bytes, complex, np.complexfloating)) and not (
            isinstance(value, np.ndarray) and (value.dtype.kind in "cUS" or value.ndim > 0)
        ):  # text is not parsed as a number, nor complex cut to its real part; an
            # array of one value is not one number (NumPy 1.26 converts it)
            try:
                return float(value)
            except (TypeError, ValueError, OverflowError) as exc:
                raise self._wrong_return(what, _described(value)) from exc
        raise self._wrong_return(what, _described(value))

    def _check_per_query(self, values, qid):
        """Refuse per-query values that are not one real number per query."""
        what = "a 1-D array of one number per query with average=False"
        try:
            arr = np.asarray(values)
        except ValueError as exc:  # a ragged nested sequence
            raise self._wrong_return(what, _described(values)) from exc
        if arr.dtype.kind == "O":  # Python numbers are numbers; None or text is not
            try:
                arr.astype(np.float64)
            except (TypeError, ValueError) as exc:
                raise self._wrong_return(what, _described(values)) from exc
            if any(v is None or isinstance(v, (str, bytes)) for v in arr.ravel()):
                raise self._wrong_return(what, _described(values))
        elif arr.dtype.kind not in "biuf":
            raise self._wrong_return(what, _described(values))
        if arr.ndim != 1:
            raise self._wrong_return(what, _described(values))
        n_queries = _n_queries(qid)
        if n_queries is not None and arr.shape[0] != n_queries:
            raise self._wrong_return(
                what, f"{_described(values)} for {n_queries} queries"
            )

    def _cutoff(self):
        """``{"k": k}``, or nothing for a callable metric without ``k`` and no cutoff."""
        if self._k is None and not _takes_parameter(self._metric, "k"):
            return {}
        return {"k": self._k}

    def _check_sample_weight(self, sample_weight):
        if sample_weight is not None and not self._accept_sample_weight():
            raise ValueError(
                f"{self!r} does not support sample_weight: its metric takes no "
                f"sample_weight parameter; got sample_weight={_described(sample_weight)}."
            )

    def get_metadata_routing(self):
        """Metadata request of this scorer: ``qid`` for ``score`` by default."""
        return self._request

    def set_score_request(self, *, qid=True, sample_weight=None):
        """Set how ``qid`` and ``sample_weight`` are requested under metadata routing.

        Each call sets both requests.

        Parameters
        ----------
        qid : bool, str or None, default=True
            True requests ``qid``; a string requests it under that alias;
            False or None stops requesting it (the scorer then fails without
            it).
        sample_weight : bool, str or None, default=None
            True requests the query weights ``sample_weight``; a string
            requests them under that alias; False does not request them;
            None (the default, as for scikit-learn's scorers) does not
            request them and makes scikit-learn raise an error when they are
            passed, so that they are not silently ignored. Only a metric
            that takes ``sample_weight`` can request it.

        Returns
        -------
        self : RankingScorer
        """
        self._request = _score_request(self, qid=qid, sample_weight=sample_weight)
        return self

    def _accept_sample_weight(self):
        # Queried by scikit-learn's search classes when sample_weight is given
        # with metadata routing off.
        return _takes_sample_weight(self._metric)

    @property
    def name(self):
        """Short name such as ``"ndcg@10"`` (conventions not included)."""
        return self._name if self._k is None else f"{self._name}@{self._k}"

    def __eq__(self, other):
        # equal scorers score alike: a copy, or one made again from the same
        # metric and conventions (a loss's state compares its gain scorer)
        if not isinstance(other, RankingScorer):
            return NotImplemented
        return (self._metric, self._k, self._name) == (
            other._metric, other._k, other._name
        ) and _same(self._kwargs, other._kwargs)

    def __hash__(self):
        return hash((self._metric, self._k, self._name, tuple(sorted(self._kwargs))))

    def __repr__(self):
        args = [repr(self._name)]
        if self._k is not None:
            args.append(f"k={self._k}")
        args.extend(f"{key}={value!r}" for key, value in self._kwargs.items())
        return f"make_ranking_scorer({', '.join(args)})"


def _described(value):
    """A short description of ``value`` for a message: its type and shape or repr."""
    if isinstance(value, np.ndarray):
        return f"ndarray of shape {value.shape} and dtype {value.dtype}"
    if value is None:
        return "None"
    try:
        text = shortened_repr(value, 60)
    except ValueError:  # an int beyond the str conversion limit
        text = "(no repr)"
    if isinstance(value, (list, tuple)):
        return f"{type(value).__name__} of length {len(value)} {text}"
    return f"{type(value).__name__} {text}"


def _n_queries(qid):
    """The number of distinct ``qid``, or None for a qid only a metric understands.

    Sorted ids (as :class:`~skrank.losses.BoltzRankLoss` passes its
    pseudo-queries, one per query and sample, when it is prepared) are
    counted in one pass, without :func:`numpy.unique`'s sort.
    """
    try:
        qid = np.asarray(qid)
        if qid.ndim == 1 and qid.dtype.kind in "biuUS" and qid.shape[0] > 1:
            if np.all(qid[1:] >= qid[:-1]):
                return 1 + int(np.count_nonzero(qid[1:] != qid[:-1]))
        return int(np.unique(qid).shape[0])
    except (TypeError, ValueError):
        return None


def _same(a, b):
    """Whether two dicts of conventions are equal (array values compared whole)."""
    if a.keys() != b.keys():
        return False
    return all(np.array_equal(a[key], b[key]) if isinstance(a[key], np.ndarray)
               else a[key] == b[key] for key in a)


def _takes_sample_weight(metric):
    """Whether ``metric`` has a ``sample_weight`` parameter."""
    return _takes_parameter(metric, "sample_weight")


def _takes_parameter(metric, name):
    """Whether ``metric`` has a parameter ``name`` (or ``**kwargs``)."""
    try:
        parameters = inspect.signature(metric).parameters
    except (TypeError, ValueError):  # no signature (some builtins)
        return name == "k"  # the cutoff is passed as it always was
    return name in parameters or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()
    )


def _score_request(scorer, *, qid, sample_weight):
    """The ``score`` metadata request of ``scorer``."""
    request = make_metadata_request(scorer)
    request.score.add_request(param="qid", alias=qid)
    if _takes_sample_weight(scorer._metric):
        request.score.add_request(param="sample_weight", alias=sample_weight)
    elif sample_weight not in (None, False):
        raise ValueError(
            f"{scorer!r} cannot request sample_weight={sample_weight!r}: its "
            "metric takes no sample_weight parameter."
        )
    return request


def make_ranking_scorer(metric, *, k=None, **conventions):
    """Make a scorer from a ranking metric and its conventions.

    Parameters
    ----------
    metric : {"ndcg", "dcg", "map", "ap", "precision", "p", "recall", "mrr", \
"err"} or callable
        A metric name, or a function ``metric(y_true, y_score, *, qid, k,
        **conventions)`` that returns one number, the mean over queries
        (higher is better; NaN is passed on); the scorer raises a TypeError
        naming the metric when it returns anything else.
    k : int, default=None
        Cutoff rank passed to the metric (NDCG@k, P@k, ...).
    **conventions : dict
        Keyword arguments of the metric, e.g. ``convention="letor"``,
        ``gain="linear"``, ``ties="stable"``, ``relevance_threshold=2``.

    Returns
    -------
    scorer : RankingScorer
        Callable as ``scorer(estimator, X, y, qid=qid)``; requests ``qid``.

    Raises
    ------
    ValueError
        If the metric name is unknown, ``k`` is not a positive integer, or a
        convention has an invalid value.
    TypeError
        If a convention is not a parameter of the metric.

    See Also
    --------
    get_ranking_scorer : Scorer from a string such as ``"ndcg@10"``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import Ridge
    >>> from skrank.metrics import make_ranking_scorer
    >>> X = np.array([[0.0], [1.0], [2.0], [0.0], [3.0]])
    >>> y = np.array([0, 1, 2, 0, 1])
    >>> qid = np.array([1, 1, 1, 2, 2])
    >>> scorer = make_ranking_scorer("ndcg", k=2, convention="letor")
    >>> scorer(Ridge().fit(X, y), X, y, qid=qid)
    1.0
    """
    if isinstance(metric, str):
        if metric not in _METRICS:
            raise ValueError(
                f"Unknown ranking metric {metric!r}; expected one of "
                f"{sorted(_METRICS)} or a callable."
            )
        name, func = metric, _METRICS[metric]
        params = inspect.signature(func).parameters
        allowed = sorted(
            name for name in params
            if name not in ("y_true", "y_score", "qid", "k", "average", "sample_weight")
        )
        unknown = sorted(set(conventions) - set(allowed))
        if unknown:
            raise TypeError(
                f"make_ranking_scorer({metric!r}) does not take {unknown}; the "
                f"conventions of {func.__name__} are {allowed}."
            )
    elif callable(metric):
        name, func = getattr(metric, "__name__", repr(metric)), metric
        _check_callable_metric(func, k, conventions)
    else:
        raise TypeError(
            f"metric must be a metric name or a callable, got {metric!r}."
        )
    if k is not None and (not is_integer(k) or k < 1):
        raise ValueError(f"k must be a positive integer or None, got {k!r}.")
    if isinstance(metric, str):
        # validate the conventions now rather than at the first scoring
        func([1.0], [0.0], qid=[0], k=k, average=False, **conventions)
    return RankingScorer(func, k, conventions, name)


def _check_callable_metric(metric, k, conventions):
    """Refuse a callable that cannot take ``(y_true, y_score, qid=..., k=..., **conventions)``.

    Checked on the signature when the scorer is made, as the conventions of
    a named metric are; a callable without a signature to read is trusted.
    """
    if "qid" in conventions:
        raise TypeError(
            "make_ranking_scorer takes no qid: the scorer gets the query ids when "
            "it is called, scorer(estimator, X, y, qid=qid)."
        )
    try:
        signature = inspect.signature(metric)
    except (TypeError, ValueError):
        return
    keywords = {"qid": None, **conventions}
    if k is not None or "k" in signature.parameters:
        keywords["k"] = k
    try:
        signature.bind(None, None, **keywords)
    except TypeError as exc:
        call = ", ".join(["y_true", "y_score"] + [f"{key}=..." for key in keywords])
        raise TypeError(
            f"metric {getattr(metric, '__name__', metric)!r} cannot be called as "
            f"metric({call}): {exc}."
        ) from None


def get_ranking_scorer(name):
    """A scorer from a name such as ``"ndcg@10"``, ``"map"`` or ``"precision@5"``.

    Parameters
    ----------
    name : str or RankingScorer
        ``"<metric>"`` or ``"<metric>@<k>"`` with metric one of ``ndcg``,
        ``dcg``, ``map``, ``ap``, ``precision`` (alias ``p``), ``recall``,
        ``mrr``, ``err``, using skrank's default conventions. A :class:`RankingScorer` is returned
        unchanged.

    Returns
    -------
    scorer : RankingScorer

    Raises
    ------
    ValueError
        If the name is not understood, including a ``k`` of more digits
        than Python converts to an int (4300 by default; such a ``k`` is
        beyond every query, like the name without ``@k``).
    TypeError
        If ``name`` is neither a string nor a RankingScorer.

    Examples
    --------
    >>> from skrank.metrics import get_ranking_scorer
    >>> get_ranking_scorer("ndcg@10")
    make_ranking_scorer('ndcg', k=10)
    """
    if isinstance(name, RankingScorer):
        return name
    metric, k = parse_metric_name(name)
    return make_ranking_scorer(metric, k=k)
