"""Pipelines through the ranking helpers with metadata routing off (issue 29).

Oracle: a hand-written loop over the same ``GroupKFold`` splits that
normalises each side with its own query ids, fits the final estimator (with
``qid`` when it takes it) and calls the metric functions directly.
"""

import numpy as np
import pytest
import sklearn
from sklearn.base import clone
from sklearn.linear_model import Ridge
from sklearn.metrics import r2_score
from sklearn.model_selection import GroupKFold as SklearnGroupKFold
from sklearn.model_selection import cross_val_score
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler

from skrank.metrics import get_ranking_scorer, ndcg_score
from skrank.model_selection import RankerRandomizedSearchCV, RankerSearchCV, cross_validate_ranker
from skrank.preprocessing import QueryNormalizer
from skrank.rankers import ListNetRanker
from skrank.utils._routing import fit_qid_params, predict_scores

from tests._data import scaled_queries
from tests._folds import GroupKFold  # the folds of skrank's integer cv
from tests._inputs import TWENTY_EPOCHS

N_FOLDS = 3
#: few iterations, no early stopping: fast, and deterministic given the seed
LISTNET = {"random_state": 0, "max_iter": 30, "early_stopping": False}
ALPHAS = [1e-4, 10.0]


@pytest.fixture(scope="module")
def data():
    """30 queries whose feature scales differ by query."""
    return scaled_queries(30, seed=0)


def _takes_qid(estimator):
    return isinstance(estimator, ListNetRanker)


def _hand_fit(final, X, y, qid):
    """``final`` fitted on ``X`` normalised per query (a clone)."""
    model = clone(final)
    kwargs = {"qid": qid} if _takes_qid(model) else {}
    return model.fit(QueryNormalizer().fit_transform(X, qid=qid), y, **kwargs)


def _hand_predict(model, X, qid):
    kwargs = {"qid": qid} if _takes_qid(model) else {}
    return model.predict(QueryNormalizer().fit_transform(X, qid=qid), **kwargs)


def _hand_fold_scores(final, X, y, qid, metric):
    """``metric(y_test, y_score, qid_test)`` per GroupKFold fold, by hand."""
    scores = []
    for train, test in GroupKFold(n_splits=N_FOLDS).split(X, y, groups=qid):
        model = _hand_fit(final, X[train], y[train], qid[train])
        scores.append(metric(y[test], _hand_predict(model, X[test], qid[test]), qid[test]))
    return np.array(scores)


def _ndcg10(y, y_score, qid):
    return ndcg_score(y, y_score, qid=qid, k=10)


def _r2(y, y_score, qid):
    return r2_score(y, y_score)


FINALS = [Ridge(), ListNetRanker(**LISTNET)]


@pytest.mark.filterwarnings("ignore:.*maximum iterations.*:sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("final", FINALS, ids=["Ridge", "ListNetRanker"])
def test_cross_validate_pipeline_routing_off_equals_hand_loop(data, final):
    # Under the old code this raised "steps that take qid ... metadata routing off".
    X, y, qid = data
    pipe = make_pipeline(QueryNormalizer(), clone(final))
    got = cross_validate_ranker(pipe, X, y, qid=qid, cv=N_FOLDS, scoring=["ndcg@10", "r2"])
    np.testing.assert_allclose(
        got["test_ndcg@10"], _hand_fold_scores(final, X, y, qid, _ndcg10), rtol=1e-12
    )
    # a pointwise scikit-learn scorer reaches the normaliser with qid too
    np.testing.assert_allclose(
        got["test_r2"], _hand_fold_scores(final, X, y, qid, _r2), rtol=1e-12
    )


@pytest.mark.filterwarnings("ignore:.*maximum iterations.*:sklearn.exceptions.ConvergenceWarning")
def test_normalisation_matters_here(data):
    # The oracle above would not tell routed from unrouted normalisation if
    # normalising the test rows as one query gave the same scores.
    X, y, qid = data
    train, test = next(GroupKFold(n_splits=N_FOLDS).split(X, y, groups=qid))
    model = _hand_fit(Ridge(), X[train], y[train], qid[train])
    routed = ndcg_score(y[test], _hand_predict(model, X[test], qid[test]), qid=qid[test], k=10)
    one_query = model.predict(QueryNormalizer().fit_transform(X[test]))
    assert routed != pytest.approx(ndcg_score(y[test], one_query, qid=qid[test], k=10))


@pytest.mark.filterwarnings("ignore:.*maximum iterations.*:sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize(
    "make",
    [
        lambda final: make_pipeline(QueryNormalizer(), "passthrough", final),
        lambda final: Pipeline([
            ("prep", make_pipeline(QueryNormalizer(), None)),
            ("model", final),
        ]),
        lambda final: Pipeline([
            ("prep", make_pipeline("passthrough", QueryNormalizer())),
            ("model", make_pipeline("passthrough", final)),
        ]),
    ],
    ids=["passthrough", "nested-prep", "nested-both"],
)
@pytest.mark.parametrize("final", FINALS, ids=["Ridge", "ListNetRanker"])
def test_passthrough_and_nested_pipelines(data, make, final):
    X, y, qid = data
    got = cross_validate_ranker(make(clone(final)), X, y, qid=qid, cv=N_FOLDS)
    np.testing.assert_allclose(
        got["test_score"], _hand_fold_scores(final, X, y, qid, _ndcg10), rtol=1e-12
    )


@pytest.mark.filterwarnings("ignore:.*maximum iterations.*:sklearn.exceptions.ConvergenceWarning")
def test_search_pipeline_routing_off_equals_hand_loop(data):
    X, y, qid = data
    pipe = make_pipeline(QueryNormalizer(), ListNetRanker(**LISTNET))
    search = RankerSearchCV(pipe, {"listnetranker__alpha": ALPHAS}, cv=N_FOLDS)
    search.fit(X, y, qid=qid)
    expected = [
        _hand_fold_scores(ListNetRanker(**LISTNET, alpha=a), X, y, qid, _ndcg10).mean()
        for a in ALPHAS
    ]
    np.testing.assert_allclose(search.cv_results_["mean_test_score"], expected, rtol=1e-12)
    best = ListNetRanker(**LISTNET, alpha=ALPHAS[int(np.argmax(expected))])
    refit = _hand_fit(best, X, y, qid)
    hand = _hand_predict(refit, X, qid)
    np.testing.assert_allclose(search.predict(X, qid=qid), hand, rtol=1e-12)
    np.testing.assert_allclose(predict_scores(search.best_estimator_, X, qid), hand, rtol=1e-12)
    assert search.score(X, y, qid=qid) == pytest.approx(_ndcg10(y, hand, qid), rel=1e-12)


@pytest.mark.filterwarnings("ignore:.*maximum iterations.*:sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("routing", [False, True], ids=["routing-off", "routing-on"])
def test_search_pipeline_same_with_routing_on_and_off(data, metadata_routing, routing):
    # Routing on, scikit-learn routes qid (QueryNormalizer requests it by
    # default); routing off, skrank walks the steps: the same hand loop.
    X, y, qid = data
    pipe = make_pipeline(QueryNormalizer(), Ridge())
    with metadata_routing(routing):
        search = RankerSearchCV(pipe, {"ridge__alpha": ALPHAS}, cv=N_FOLDS).fit(X, y, qid=qid)
        got_cv = cross_validate_ranker(pipe, X, y, qid=qid, cv=N_FOLDS)["test_score"]
    expected = [
        _hand_fold_scores(Ridge(alpha=a), X, y, qid, _ndcg10).mean() for a in ALPHAS
    ]
    np.testing.assert_allclose(search.cv_results_["mean_test_score"], expected, rtol=1e-12)
    np.testing.assert_allclose(
        got_cv, _hand_fold_scores(Ridge(), X, y, qid, _ndcg10), rtol=1e-12
    )


@pytest.mark.filterwarnings("ignore:.*maximum iterations.*:sklearn.exceptions.ConvergenceWarning")
def test_scorer_walks_a_pipeline_fitted_by_hand(data):
    X, y, qid = data
    pipe = make_pipeline(QueryNormalizer(), ListNetRanker(**LISTNET))
    pipe.fit(X, y, **fit_qid_params(pipe, qid))
    hand = _hand_predict(_hand_fit(ListNetRanker(**LISTNET), X, y, qid), X, qid)
    got = get_ranking_scorer("ndcg@10")(pipe, X, y, qid=qid)
    assert got == pytest.approx(_ndcg10(y, hand, qid), rel=1e-12)


# ----------------------------------------------------------------------------
# A grid that swaps steps, routing off: the qid fit parameters are read from
# the search's estimator and given to every candidate, so a candidate whose
# steps take qid differently is refused before any fit.
#: rows of each _SpyRidge fit (module level: the search fits clones of it)
_SPY_FITS = []


class _SpyRidge(Ridge):
    """A Ridge that records its fits in ``_SPY_FITS``."""

    def fit(self, X, y, sample_weight=None):
        _SPY_FITS.append(len(X))
        return super().fit(X, y, sample_weight=sample_weight)


@pytest.fixture
def spy_fits():
    _SPY_FITS.clear()
    yield _SPY_FITS
    _SPY_FITS.clear()


def _norm_ridge(norm):
    return Pipeline([("norm", norm), ("m", _SpyRidge())])


SEARCHES = [
    lambda pipe, grid: RankerSearchCV(pipe, grid, cv=N_FOLDS),
    lambda pipe, grid: RankerRandomizedSearchCV(
        pipe, grid, n_iter=2, cv=N_FOLDS, random_state=0
    ),
]


@pytest.mark.filterwarnings("ignore:.*maximum iterations.*:sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("search", SEARCHES, ids=["grid", "randomized"])
@pytest.mark.parametrize(
    "norm, grid, match",
    [
        (   # under the old code ListNet was fitted with all rows as one query
            QueryNormalizer(),
            {"m": [_SpyRidge(), ListNetRanker(**LISTNET)]},
            (r"setting m=ListNetRanker\(.*\) gives qid to fit through m__qid, "
             r"norm__qid, while the estimator given to the search takes it through "
             r"norm__qid"),
        ),
        (   # under the old code the normaliser was fitted as one query
            StandardScaler(),
            {"norm": [StandardScaler(), QueryNormalizer()]},
            (r"setting norm=QueryNormalizer\(\) gives qid to fit through norm__qid, "
             r"while the estimator given to the search takes it through no step"),
        ),
        (   # under the old code: TypeError, StandardScaler.fit() got qid
            QueryNormalizer(),
            {"norm": [QueryNormalizer(), StandardScaler()]},
            r"setting norm=StandardScaler\(\) gives qid to fit through no step",
        ),
        (
            QueryNormalizer(),
            [{"m__alpha": ALPHAS}, {"norm": ["passthrough"], "m__alpha": ALPHAS}],
            r"setting norm='passthrough' gives qid to fit through no step",
        ),
    ],
    ids=["ranker-for-ridge", "normaliser-for-scaler", "scaler-for-normaliser",
         "passthrough-in-second-grid"],
)
def test_grid_that_changes_the_qid_steps_is_refused_before_any_fit(
    data, spy_fits, search, norm, grid, match
):
    X, y, qid = data
    with pytest.raises(ValueError, match=match) as info:
        search(_norm_ridge(norm), grid).fit(X, y, qid=qid)
    assert "enable_metadata_routing=True" in str(info.value)
    assert "search each pipeline shape separately" in str(info.value)
    assert spy_fits == []


@pytest.mark.filterwarnings("ignore:.*maximum iterations.*:sklearn.exceptions.ConvergenceWarning")
def test_refusal_names_the_search_and_its_parameter(data, spy_fits):
    X, y, qid = data
    grid = {"norm": [QueryNormalizer(), StandardScaler()]}
    with pytest.raises(ValueError, match=r"^RankerSearchCV: the param_grid setting"):
        SEARCHES[0](_norm_ridge(QueryNormalizer()), grid).fit(X, y, qid=qid)
    with pytest.raises(
        ValueError, match=r"^RankerRandomizedSearchCV: the param_distributions setting"
    ):
        SEARCHES[1](_norm_ridge(QueryNormalizer()), grid).fit(X, y, qid=qid)
    assert spy_fits == []


@pytest.mark.filterwarnings("ignore:.*maximum iterations.*:sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("search", SEARCHES, ids=["grid", "randomized"])
def test_grid_of_steps_taking_qid_alike_runs(data, search):
    # Estimator-valued entries whose steps take qid as the estimator's do, and
    # nested parameters of them: run, and equal the hand loop.
    X, y, qid = data
    pipe = Pipeline([("norm", QueryNormalizer()), ("m", ListNetRanker(**LISTNET))])
    grid = {
        "m": [ListNetRanker(**LISTNET, alpha=a) for a in ALPHAS],
        "m__hidden_layer_sizes": [()],
    }
    got = search(pipe, grid).fit(X, y, qid=qid)
    for params, score in zip(got.cv_results_["params"], got.cv_results_["mean_test_score"]):
        expected = _hand_fold_scores(params["m"], X, y, qid, _ndcg10).mean()
        assert score == pytest.approx(expected, rel=1e-12)


@pytest.mark.filterwarnings("ignore:.*maximum iterations.*:sklearn.exceptions.ConvergenceWarning")
def test_grid_that_swaps_steps_runs_with_routing_on(data, metadata_routing):
    # With routing on each candidate routes qid itself: nothing refused.
    X, y, qid = data
    pipe = Pipeline([("norm", QueryNormalizer()), ("m", Ridge())])
    with metadata_routing():
        search = RankerSearchCV(
            pipe, {"m": [Ridge(), ListNetRanker(**LISTNET)]}, cv=N_FOLDS
        ).fit(X, y, qid=qid)
    expected = [
        _hand_fold_scores(final, X, y, qid, _ndcg10).mean()
        for final in (Ridge(), ListNetRanker(**LISTNET))
    ]
    np.testing.assert_allclose(search.cv_results_["mean_test_score"], expected, rtol=1e-12)


# ----------------------------------------------------------------------------
# transform_input=["X_val"]: scikit-learn transforms X_val with the training qid
@pytest.fixture(scope="module")
def validation():
    return scaled_queries(8, seed=1)


def _early_stopping_ranker():
    return ListNetRanker(
        random_state=0, max_iter=200, early_stopping=True, n_iter_no_change=3
    )


@pytest.mark.filterwarnings("ignore:.*maximum iterations.*:sklearn.exceptions.ConvergenceWarning")
def test_transform_input_x_val_names_the_cause_and_the_recipe(
    data, validation, metadata_routing
):
    X, y, qid = data
    X_val, y_val, qid_val = validation
    with metadata_routing():
        ranker = _early_stopping_ranker().set_fit_request(
            X_val=True, y_val=True, qid_val=True
        )
        pipe = Pipeline(
            [("norm", QueryNormalizer()), ("ranker", ranker)], transform_input=["X_val"]
        )
        with pytest.raises(ValueError) as info:
            pipe.fit(X, y, qid=qid, X_val=X_val, y_val=y_val, qid_val=qid_val)
    message = str(info.value)
    assert f"qid with {len(qid)} entries for X with {len(qid_val)} rows" in message
    assert "transform_input" in message and "not with qid_val" in message
    assert "QueryNormalizer().fit_transform(X_val, qid=qid_val)" in message


@pytest.mark.filterwarnings("ignore:.*maximum iterations.*:sklearn.exceptions.ConvergenceWarning")
def test_transform_input_recipe_is_what_the_pipeline_should_do(
    data, validation, metadata_routing
):
    # The recipe of the message: normalise X_val by hand with qid_val, pass it
    # without transform_input. It equals the fitted pipeline's own transform of
    # X_val with qid_val, and gives the model a hand fit gives.
    X, y, qid = data
    X_val, y_val, qid_val = validation
    X_val_norm = QueryNormalizer().fit_transform(X_val, qid=qid_val)
    with metadata_routing():
        ranker = _early_stopping_ranker().set_fit_request(
            X_val=True, y_val=True, qid_val=True
        )
        pipe = Pipeline([("norm", QueryNormalizer()), ("ranker", ranker)])
        pipe.fit(X, y, qid=qid, X_val=X_val_norm, y_val=y_val, qid_val=qid_val)
        np.testing.assert_array_equal(pipe[:-1].transform(X_val, qid=qid_val), X_val_norm)
    hand = _early_stopping_ranker().fit(
        QueryNormalizer().fit_transform(X, qid=qid), y, qid=qid,
        X_val=X_val_norm, y_val=y_val, qid_val=qid_val,
    )
    np.testing.assert_array_equal(pipe[-1].coef_, hand.coef_)
    # and the validation set did matter: unnormalised, the fit differs
    other = _early_stopping_ranker().fit(
        QueryNormalizer().fit_transform(X, qid=qid), y, qid=qid,
        X_val=X_val, y_val=y_val, qid_val=qid_val,
    )
    assert not np.array_equal(other.coef_, hand.coef_)


# ----------------------------------------------------------------------------
# Routing on
SKLEARN_VERSION = tuple(int(part) for part in sklearn.__version__.split(".")[:2])


def test_pipeline_score_with_routing_on(thirty_queries, metadata_routing):
    X, y, qid = thirty_queries
    with metadata_routing():
        pipe = make_pipeline(QueryNormalizer(), ListNetRanker(**TWENTY_EPOCHS)).fit(X, y, qid=qid)
        expected = ndcg_score(y, pipe.predict(X, qid=qid), qid=qid, k=10)
        assert pipe.score(X, y, qid=qid) == pytest.approx(expected)


@pytest.mark.skipif(SKLEARN_VERSION < (1, 8), reason=(
    "scikit-learn < 1.8: with scoring=None, cross_val_score routes to a Pipeline's score "
    "only what Pipeline.score requests itself (sample_weight), so qid never reaches the "
    "ranker (whose score then refuses, and cross_val_score records NaN)"))
def test_cross_val_score_of_a_pipeline_with_default_scoring_and_routing_on(
        thirty_queries, metadata_routing):
    X, y, qid = thirty_queries
    with metadata_routing():
        scores = cross_val_score(make_pipeline(QueryNormalizer(), ListNetRanker(**TWENTY_EPOCHS)), X, y,
                                 params={"qid": qid, "groups": qid}, cv=SklearnGroupKFold(3))
    assert np.all(np.isfinite(scores)) and np.all(scores > 0.5)
