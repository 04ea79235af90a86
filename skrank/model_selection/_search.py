"""Grid search for rankers, built on scikit-learn's GridSearchCV."""

from itertools import product

from sklearn import get_config
from sklearn.base import clone
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
from ..utils._routing import fit_qid_params, predict_scores, takes_qid
from ..utils._sklearn_compat import (
    Integer,
    multimetric_scorer,
    refuse_bool_numbers,
    routing_enabled,
    validate_parameter_constraints,
)
from ._common import (
    check_layout,
    check_n_jobs,
    check_ranking_scoring,
    fit_params_for,
    query_splits,
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


def _may_change_steps(value):
    """Whether a grid value can change which steps take qid: a step or a hole."""
    if isinstance(value, str):
        return value == "passthrough"
    return value is None or (
        hasattr(value, "get_params") and not isinstance(value, type)
    )


def _settings(candidate):
    return ", ".join(f"{name}={value!r}" for name, value in candidate.items())


def _qid_keys(keys):
    return ", ".join(keys) if keys else "no step"


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
        qid = params.pop("qid")
        return Bunch(
            estimator=Bunch(fit=fit_params_for(self.estimator, qid, params)),
            splitter=Bunch(split={}),
            scorer=Bunch(score={"qid": qid}),
        )

    def _check_candidates_take_qid_alike(self, qid):
        """ValueError when a candidate takes qid in other steps than the estimator.

        With metadata routing off, ``_get_routed_params_for_fit`` reads the
        ``qid`` fit parameters from ``self.estimator`` and gives them to every
        candidate. Only the entries that set a step (an estimator,
        ``"passthrough"`` or None) can change which steps take ``qid``; each
        combination of them is checked, before any fit.
        """
        expected = sorted(fit_qid_params(self.estimator, qid))
        for choices in self._candidate_choices():
            steps = {
                name: list(values)
                for name, values in choices.items()
                if any(_may_change_steps(value) for value in values)
            }
            for values in product(*steps.values()):
                candidate = dict(zip(steps, values))
                estimator = clone(self.estimator).set_params(
                    **clone(candidate, safe=False)
                )
                got = sorted(fit_qid_params(estimator, qid))
                if got != expected:
                    raise ValueError(
                        f"{type(self).__name__}: the {self._choices_name} setting "
                        f"{_settings(candidate)} "
                        f"gives qid to fit through {_qid_keys(got)}, while the estimator "
                        f"given to the search takes it through {_qid_keys(expected)}. "
                        "With scikit-learn's metadata routing off, the search passes one "
                        "set of fit parameters (read from that estimator) to every "
                        "candidate, so a grid that changes which steps take qid cannot be "
                        "run: a step would be fitted with all rows as one query, or be "
                        "given a qid its fit does not take. Enable routing with "
                        "sklearn.set_config(enable_metadata_routing=True), or search each "
                        "pipeline shape separately, with the estimator given to the search "
                        "built of those steps."
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
            Further parameters of the estimator's ``fit``. Not ``groups``
            (the name scikit-learn's splitters use): the folds group the
            rows by ``qid``, and ``groups=`` raises a TypeError that says to
            pass ``qid=``, as :func:`cross_validate_ranker` does.

        Returns
        -------
        self : RankerSearchCV
            The fitted search.

        Raises
        ------
        TypeError
            If ``groups`` is passed.
        ValueError
            With metadata routing off, before any fit, if a candidate setting
            (of ``param_grid``, or a list of ``param_distributions``) changes
            which steps of the estimator take ``qid`` in ``fit``: every
            candidate is given the ``qid`` fit parameters of ``estimator``.
        """
        if not get_config()["skip_parameter_validation"]:
            # before the splits: a bad n_jobs or cv is named as scikit-learn does
            validate_parameter_constraints(
                self._parameter_constraints,
                self.get_params(deep=False),
                caller_name=type(self).__name__,
            )
        layout = check_layout(
            X, qid, f"{type(self).__name__}.fit", groups=params.pop("groups", None)
        )
        if not routing_enabled():
            self._check_candidates_take_qid_alike(layout.qid)
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
        which get it in ``fit``; a grid that would change them is refused,
        see Raises).

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

    Raises
    ------
    ValueError
        From ``fit``, before any fit, with metadata routing off: if a
        candidate of ``param_grid`` changes which steps take ``qid`` in
        ``fit`` (a grid that swaps ``Ridge`` for a ranker, a
        ``StandardScaler`` for a ``QueryNormalizer`` or the reverse, or a
        step for ``"passthrough"``). The search passes every candidate the
        ``qid`` fit parameters of ``estimator``, so such a candidate would
        be fitted with all rows as one query, or given a ``qid`` its ``fit``
        does not take. Enable metadata routing, or search each pipeline shape
        separately. Grids whose estimators take ``qid`` alike (two
        ``ListNetRanker`` settings) run. Also if ``qid`` is None, or a split
        of ``cv`` puts one query on both sides.

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

    # scikit-learn's, with numbers that refuse bool (n_jobs, pre_dispatch, error_score)
    _parameter_constraints = refuse_bool_numbers({
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

    #: the parameter whose settings ``_candidate_choices`` lists
    _choices_name = "param_grid"

    def _candidate_choices(self):
        """The grid as a list of dicts of parameter name to its values."""
        return ParameterGrid(self.param_grid).param_grid


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
    those of :class:`RankerSearchCV`. As there, with routing off a list of
    ``param_distributions`` whose choices change which steps take ``qid``
    in ``fit`` is refused with a ``ValueError`` before any fit.

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

    # scikit-learn's, with numbers that refuse bool (n_iter, n_jobs, pre_dispatch,
    # error_score)
    _parameter_constraints = refuse_bool_numbers({
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

    _choices_name = "param_distributions"

    def _candidate_choices(self):
        """The lists of ``param_distributions`` (a list of dicts of name to values).

        Distributions (with an ``rvs`` method) are left out: the steps a
        candidate may swap are chosen from lists.
        """
        sampler = ParameterSampler(
            self.param_distributions, self.n_iter, random_state=self.random_state
        )
        return [
            {name: values for name, values in dist.items() if not hasattr(values, "rvs")}
            for dist in sampler.param_distributions
        ]
