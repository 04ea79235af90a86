"""Grid search for rankers, built on scikit-learn's GridSearchCV."""

from sklearn import get_config
from sklearn.model_selection import (
    GridSearchCV,
    ParameterGrid,
    ParameterSampler,
    RandomizedSearchCV,
)
from sklearn.utils import Bunch
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from ..metrics._scorer import RankingScorer
from ..utils._routing import predict_scores
from ..utils._sklearn_compat import (
    Integer,
    multimetric_scorer,
    refuse_bool_integers,
    routing_enabled,
    validate_parameter_constraints,
)
from ._common import (
    check_layout,
    check_n_jobs,
    check_ranking_scoring,
    fit_params_for,
    query_splits,
    takes_qid,
)

__all__ = ["RankerRandomizedSearchCV", "RankerSearchCV"]


def _check_refit(search, attr):
    """Raise scikit-learn's AttributeError for ``attr`` of a search with refit=False."""
    if not search.refit:
        raise AttributeError(
            f"This {type(search).__name__} instance was initialized with "
            f"`refit=False`. {attr} is available only after refitting on the best "
            "parameters. You can refit an estimator manually using the "
            "`best_params_` attribute"
        )


def _refitted_has(attr):
    """``available_if`` check of a method delegated to the refitted best estimator.

    As scikit-learn's searches: the method exists only with ``refit`` set,
    and when the best (or, before fit, the given) estimator has it.
    """

    def check(self):
        _check_refit(self, attr)
        estimator = getattr(self, "best_estimator_", self.estimator)
        getattr(estimator, attr)  # an AttributeError if it has no such method
        return True

    return check


#: n_jobs as joblib takes it: None, a count of workers, or -1, -2, ... for all
#: CPUs (but one, ...); 0 has no meaning and bools are refused.
_N_JOBS = [Integer(None, -1, closed="right"), Integer(1, None, closed="left"), None]


class _RankerSearchMixin:
    """What the grouped searches add to scikit-learn's: whole queries, qid routed.

    Built on two of ``BaseSearchCV``'s overridable hooks, ``_get_scorers``
    and ``_get_routed_params_for_fit``.
    """

    def _get_scorers(self):
        scorers = check_ranking_scoring(self.scoring)
        if not isinstance(scorers, dict):
            return scorers, "score"
        self._check_refit_for_multimetric(scorers)
        return (
            multimetric_scorer(scorers, raise_exc=(self.error_score == "raise")),
            self.refit,
        )

    def _get_routed_params_for_fit(self, params):
        if routing_enabled():
            return super()._get_routed_params_for_fit(params)
        params = dict(params)
        params.pop("groups", None)
        qid = params.pop("qid")
        return Bunch(
            estimator=Bunch(fit=fit_params_for(self.estimator, qid, params)),
            splitter=Bunch(split={}),
            scorer=Bunch(score={"qid": qid}),
        )

    def fit(self, X, y, *, qid=None, **params):
        """Run the search: every candidate parameter setting on every grouped fold.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Document features.
        y : array-like of shape (n_samples,)
            Relevance labels.
        qid : array-like of shape (n_samples,), default=None
            Query id of each row, in any order. None means all rows are one
            query, which no fold can split: a ValueError.
        **params : dict
            Further parameters of the estimator's ``fit``.

        Returns
        -------
        self : RankerSearchCV
            The fitted search.
        """
        if not get_config()["skip_parameter_validation"]:
            # before the splits: a bad n_jobs or cv is named as scikit-learn does
            validate_parameter_constraints(
                self._parameter_constraints,
                self.get_params(deep=False),
                caller_name=type(self).__name__,
            )
        layout = check_layout(X, qid, f"{type(self).__name__}.fit")
        splits = query_splits(self.cv, X, y, layout)
        # GridSearchCV reads the splits from self.cv and the workers from
        # self.n_jobs; give it the checked grouped splits, and at most one
        # worker per fit, for the duration of the search.
        cv, n_jobs = self.cv, self.n_jobs
        capped = n_jobs
        if check_n_jobs(n_jobs, len(splits)) != n_jobs:  # more workers than folds
            capped = check_n_jobs(n_jobs, len(splits) * self._n_candidates())
        self.cv, self.n_jobs = splits, capped
        try:
            params = dict(params, qid=layout.qid)
            if (
                routing_enabled()
                and not self.get_metadata_routing().consumes("fit", ["qid"])
                and not takes_qid(self.estimator)
            ):
                # nothing requests qid and nothing could (only pointwise
                # scorers and a pointwise model): routing would reject it. An
                # estimator that takes qid but has not said whether it wants
                # it gets it, so that scikit-learn raises
                # UnsetMetadataPassedError instead of fitting one giant query.
                del params["qid"]
            super().fit(X, y, **params)
        finally:
            self.cv, self.n_jobs = cv, n_jobs
        return self

    @available_if(_refitted_has("predict"))
    def predict(self, X, *, qid=None):
        """Scores of the best estimator (given ``qid`` if its predict takes it).

        A Pipeline's steps get ``qid`` in ``transform`` and ``predict`` where
        they take it, also with metadata routing off.

        Only available if ``refit`` is set (as in scikit-learn's searches:
        with ``refit=False`` it raises an ``AttributeError``).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Documents to score.
        qid : array-like of shape (n_samples,), default=None
            Query ids, for rankers that score a query's documents jointly.

        Returns
        -------
        y_score : ndarray of shape (n_samples,)
        """
        check_is_fitted(self, "best_estimator_")
        if qid is None:
            return self.best_estimator_.predict(X)
        return predict_scores(self.best_estimator_, X, qid)

    def score(self, X, y, *, qid):
        """The refit metric of the best estimator on ``X``, grouped by ``qid``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Documents.
        y : array-like of shape (n_samples,)
            Relevance labels.
        qid : array-like of shape (n_samples,)
            Query id of each row.

        Returns
        -------
        score : float

        Raises
        ------
        AttributeError
            If the search was made with ``refit=False`` (scikit-learn's
            message): there is no best estimator to score.
        """
        _check_refit(self, "score")
        check_is_fitted(self, "best_estimator_")
        scorer = self.scorer_
        if isinstance(scorer, dict):  # multi-metric: scikit-learn keeps a dict
            scorer = scorer[self.refit]
        if isinstance(scorer, RankingScorer):
            y_score = predict_scores(self.best_estimator_, X, qid)
            return scorer.score_predictions(y, y_score, qid=qid)
        return float(scorer(self.best_estimator_, X, y, qid=qid))



class RankerSearchCV(_RankerSearchMixin, GridSearchCV):
    """Exhaustive search over ranker hyperparameters with grouped folds.

    A :class:`~sklearn.model_selection.GridSearchCV` that understands query
    ids without metadata routing: ``fit(X, y, *, qid)`` splits whole queries
    (``GroupKFold`` by default), passes ``qid`` to the estimator's ``fit``
    when it takes it, and to the ranking scorers. Everything else (``cv_results_``,
    ``best_params_``, refitting, parallelism through joblib) is
    scikit-learn's. It is the helper for tuning a ranker's hyperparameters,
    e.g. ``SoftRankRanker``'s ``sigma`` and the number of hidden units.

    Parameters
    ----------
    estimator : estimator object
        A ranker (``fit(X, y, *, qid)``), any regressor, or a
        :class:`~sklearn.pipeline.Pipeline` of them: with metadata routing
        off, ``qid`` reaches the pipeline's steps as in
        :func:`cross_validate_ranker` (the steps of this estimator decide
        which get it in ``fit``, whatever the grid sets).

    param_grid : dict or list of dicts
        Parameter names mapped to lists of values, as in ``GridSearchCV``.

    scoring : str, callable, list, tuple or dict, default="ndcg@10"
        Ranking scorer names (``"ndcg@10"``, ``"map"``), scorers from
        :func:`skrank.metrics.make_ranking_scorer`, scikit-learn scorer
        names, or a list/dict of them (then ``refit`` names the one used to
        pick the best parameters).

    n_jobs : int, default=None
        Number of fits run in parallel through joblib (-1 means all
        processors). A count above the number of fits (candidates times
        folds) runs one worker per fit; 0 and bools are refused.

    refit : bool, str or callable, default=True
        Refit the best parameters on all data, as in ``GridSearchCV``. With
        ``refit=False``, ``predict`` and ``score`` raise scikit-learn's
        ``AttributeError``.

    cv : int, cross-validation generator or iterable, default=5
        An int is the number of ``GroupKFold`` folds over queries; a
        splitter is called with ``groups=qid``; an iterable yields
        ``(train, test)`` pairs of row indices or of boolean masks. Splits
        that put one query on both sides, have an empty side or indices out
        of range, or a ``cv`` that gives no split, raise ``ValueError``.

    verbose : int, default=0
        Verbosity, as in ``GridSearchCV``.

    pre_dispatch : int or str, default="2*n_jobs"
        Passed to :class:`joblib.Parallel`.

    error_score : "raise" or float, default="raise"
        Re-raise fit failures (default) or record this score.

    return_train_score : bool, default=False
        Include training scores in ``cv_results_``.

    Attributes
    ----------
    cv_results_, best_estimator_, best_score_, best_params_, best_index_,
    scorer_, n_splits_, refit_time_, multimetric_ :
        As in :class:`~sklearn.model_selection.GridSearchCV`.

    See Also
    --------
    cross_validate_ranker : Grouped cross-validation of one estimator.

    Notes
    -----
    With metadata routing off, a Pipeline's steps that take ``qid`` get it
    in ``fit`` (``<step>__qid``), and the scorers, ``predict(X, qid=qid)``
    and ``score`` walk the refitted pipeline's steps to give it to each
    ``transform`` and to the final ``predict`` that take it.

    With scikit-learn's metadata routing on, ``fit(X, y, qid=qid)`` uses the
    routing instead: the ranking scorers request ``qid`` by default, and an
    estimator whose ``fit`` takes ``qid`` must say whether it wants it
    (``set_fit_request(qid=True)``), or scikit-learn raises
    ``UnsetMetadataPassedError``.

    The search is built on scikit-learn's ``GridSearchCV`` through two of
    its overridable hooks, ``_get_scorers`` and
    ``_get_routed_params_for_fit`` (present from scikit-learn 1.4 to at least
    1.9, and exercised by the tests).

    Examples
    --------
    >>> from sklearn.linear_model import Ridge
    >>> from skrank.datasets import make_ranking
    >>> from skrank.model_selection import RankerSearchCV
    >>> X, y, qid = make_ranking(n_queries=20, n_docs=10, random_state=0)
    >>> search = RankerSearchCV(Ridge(), {"alpha": [0.1, 10.0]}, cv=4)
    >>> search = search.fit(X, y, qid=qid)
    >>> sorted(search.best_params_)
    ['alpha']
    """

    # scikit-learn's, with integers that refuse bool (n_jobs, pre_dispatch)
    _parameter_constraints = refuse_bool_integers({
        **GridSearchCV._parameter_constraints,
        "scoring": [str, callable, list, tuple, dict, None],
        "n_jobs": _N_JOBS,
    })

    def __init__(
        self,
        estimator,
        param_grid,
        *,
        scoring="ndcg@10",
        n_jobs=None,
        refit=True,
        cv=5,
        verbose=0,
        pre_dispatch="2*n_jobs",
        error_score="raise",
        return_train_score=False,
    ):
        super().__init__(
            estimator=estimator,
            param_grid=param_grid,
            scoring=scoring,
            n_jobs=n_jobs,
            refit=refit,
            cv=cv,
            verbose=verbose,
            pre_dispatch=pre_dispatch,
            error_score=error_score,
            return_train_score=return_train_score,
        )

    def _n_candidates(self):
        """The number of parameter settings the search tries."""
        return len(ParameterGrid(self.param_grid))



class RankerRandomizedSearchCV(_RankerSearchMixin, RandomizedSearchCV):
    """Randomised search over ranker hyperparameters with grouped folds.

    The :class:`~sklearn.model_selection.RandomizedSearchCV` counterpart of
    :class:`RankerSearchCV`: ``n_iter`` settings drawn from
    ``param_distributions`` (lists are sampled uniformly, distributions
    such as ``scipy.stats.loguniform`` through their ``rvs``), each scored on
    folds that keep every query whole, with ``qid`` passed to the
    estimator's ``fit`` when it takes it and to the ranking scorers, without
    metadata routing. Suited to continuous hyperparameters, e.g. LogRank's
    ``C`` or BoltzRank's ``gain_weight``.

    Parameters
    ----------
    estimator : estimator object
        A ranker (``fit(X, y, *, qid)``), any regressor, or a Pipeline of
        them, as in :class:`RankerSearchCV`.
    param_distributions : dict or list of dicts
        Parameter names mapped to distributions (with an ``rvs`` method) or
        lists of values, as in ``RandomizedSearchCV``.
    n_iter : int, default=10
        Number of parameter settings drawn.
    scoring : str, callable, list, tuple or dict, default="ndcg@10"
        As in :class:`RankerSearchCV`.
    n_jobs : int, default=None
        Number of fits run in parallel through joblib, as in
        :class:`RankerSearchCV`.
    refit : bool, str or callable, default=True
        Refit the best parameters on all data, as in ``RandomizedSearchCV``.
        With ``refit=False``, ``predict`` and ``score`` raise scikit-learn's
        ``AttributeError``.
    cv : int, cross-validation generator or iterable, default=5
        As in :class:`RankerSearchCV`: whole queries per fold, custom
        splits checked.
    verbose : int, default=0
        Verbosity, as in ``RandomizedSearchCV``.
    pre_dispatch : int or str, default="2*n_jobs"
        Passed to :class:`joblib.Parallel`.
    random_state : int, RandomState instance or None, default=None
        Seed of the draws of parameter settings.
    error_score : "raise" or float, default="raise"
        Re-raise fit failures (default) or record this score.
    return_train_score : bool, default=False
        Include training scores in ``cv_results_``.

    Attributes
    ----------
    cv_results_, best_estimator_, best_score_, best_params_, best_index_,
    scorer_, n_splits_, refit_time_, multimetric_ :
        As in :class:`~sklearn.model_selection.RandomizedSearchCV`.

    See Also
    --------
    RankerSearchCV : Exhaustive search over a grid.
    cross_validate_ranker : Grouped cross-validation of one estimator.

    Notes
    -----
    Metadata routing, scorers and the scikit-learn hooks it relies on are
    those of :class:`RankerSearchCV`.

    Examples
    --------
    >>> from scipy.stats import loguniform
    >>> from sklearn.linear_model import Ridge
    >>> from skrank.datasets import make_ranking
    >>> from skrank.model_selection import RankerRandomizedSearchCV
    >>> X, y, qid = make_ranking(n_queries=20, n_docs=10, random_state=0)
    >>> search = RankerRandomizedSearchCV(
    ...     Ridge(), {"alpha": loguniform(1e-2, 1e2)}, n_iter=3, cv=4, random_state=0)
    >>> search = search.fit(X, y, qid=qid)
    >>> len(search.cv_results_["params"])
    3
    """

    # scikit-learn's, with integers that refuse bool (n_iter, n_jobs, pre_dispatch)
    _parameter_constraints = refuse_bool_integers({
        **RandomizedSearchCV._parameter_constraints,
        "scoring": [str, callable, list, tuple, dict, None],
        "n_jobs": _N_JOBS,
    })

    def __init__(
        self,
        estimator,
        param_distributions,
        *,
        n_iter=10,
        scoring="ndcg@10",
        n_jobs=None,
        refit=True,
        cv=5,
        verbose=0,
        pre_dispatch="2*n_jobs",
        random_state=None,
        error_score="raise",
        return_train_score=False,
    ):
        super().__init__(
            estimator=estimator,
            param_distributions=param_distributions,
            n_iter=n_iter,
            scoring=scoring,
            n_jobs=n_jobs,
            refit=refit,
            cv=cv,
            verbose=verbose,
            pre_dispatch=pre_dispatch,
            random_state=random_state,
            error_score=error_score,
            return_train_score=return_train_score,
        )

    def _n_candidates(self):
        """The number of parameter settings the search draws (at most n_iter)."""
        return len(ParameterSampler(
            self.param_distributions, self.n_iter, random_state=self.random_state
        ))
