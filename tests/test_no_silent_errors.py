"""No plausible but wrong number without a word (issue 12, items 1-9).

Each test drives one path that used to return a silently wrong result and
checks that it now raises or warns, naming what to fix, while the correct
use keeps working.
"""

import numpy as np
import pytest
import sklearn
from sklearn.exceptions import UnsetMetadataPassedError
from sklearn.linear_model import Ridge
from sklearn.model_selection import GridSearchCV
from sklearn.model_selection import GroupKFold as SklearnGroupKFold
from sklearn.model_selection import cross_val_score
from sklearn.pipeline import make_pipeline

from skrank import (
    ListNetRanker,
    QueryNormalizer,
    RankerSearchCV,
    cross_validate_ranker,
    make_ranking_scorer,
    ndcg_score,
)

from tests._inputs import TWENTY_EPOCHS, no_warnings


@pytest.fixture(scope="module")
def fitted_listnet(thirty_queries):
    X, y, qid = thirty_queries
    return ListNetRanker(**TWENTY_EPOCHS).fit(X, y, qid=qid)


def test_score_without_qid_after_multi_query_fit_raises(thirty_queries, fitted_listnet):
    X, y, qid = thirty_queries
    with pytest.raises(ValueError, match="fitted on 30 queries.*qid=None"):
        fitted_listnet.score(X, y)
    assert fitted_listnet.score(X, y, qid=qid) == pytest.approx(
        ndcg_score(y, fitted_listnet.predict(X), qid=qid, k=10))


def test_score_without_qid_after_one_query_fit_works(thirty_queries):
    X, y, _ = thirty_queries
    X, y = X[:10], y[:10]
    ranker = ListNetRanker(early_stopping=False, **TWENTY_EPOCHS).fit(X, y)
    assert ranker.score(X, y) == pytest.approx(
        ndcg_score(y, ranker.predict(X), qid=np.zeros(len(y)), k=10))


def test_pipeline_score_without_qid_raises_with_routing_off(thirty_queries):
    X, y, qid = thirty_queries
    pipe = make_pipeline(ListNetRanker(**TWENTY_EPOCHS)).fit(X, y, listnetranker__qid=qid)
    with pytest.raises(ValueError, match="qid"):
        pipe.score(X, y)


def test_grid_search_default_scoring_is_nan_and_warns_with_routing_off(thirty_queries):
    # scikit-learn catches the score's error: NaN scores and a warning, not
    # the one-merged-query NDCG; error_score="raise" shows the error
    X, y, qid = thirty_queries
    search = GridSearchCV(ListNetRanker(**TWENTY_EPOCHS), {"alpha": [1e-4]}, cv=SklearnGroupKFold(3))
    with pytest.warns(UserWarning, match="qid"):
        search.fit(X, y, groups=qid, qid=qid)
    assert np.isnan(search.best_score_)
    search.set_params(error_score="raise")
    with pytest.raises(ValueError, match="qid=None"):
        search.fit(X, y, groups=qid, qid=qid)


#: The rows from which fit's docstring says ``qid=None`` warns ("more than 100").
IMPLICIT_QUERY_MAX_ROWS = 100


def test_fit_without_qid_on_many_rows_warns(thirty_queries):
    X, y, _ = thirty_queries
    assert len(y) > IMPLICIT_QUERY_MAX_ROWS
    with pytest.warns(UserWarning, match=f"all {len(y)} rows are treated as ONE query"):
        ListNetRanker(early_stopping=False, **TWENTY_EPOCHS).fit(X, y)


def test_cross_val_score_without_routing_warns_at_fit(thirty_queries):
    X, y, qid = thirty_queries
    with pytest.warns(UserWarning, match="qid=None"):
        cross_val_score(ListNetRanker(early_stopping=False, **TWENTY_EPOCHS), X, y, groups=qid,
                        cv=SklearnGroupKFold(3))


def test_fit_without_qid_on_few_rows_is_quiet(thirty_queries):
    X, y, _ = thirty_queries
    n = IMPLICIT_QUERY_MAX_ROWS
    context = no_warnings()
    try:
        ListNetRanker(early_stopping=False, max_iter=500, random_state=0).fit(X[:n], y[:n])
    finally:
        context.__exit__(None, None, None)


def _nan_metric(y_true, y_score, *, qid, k=None):
    return float("nan")


@pytest.mark.parametrize("case", ["no_relevant", "equal_labels", "single_documents", "nan"])
def test_early_stopping_without_signal_falls_back_to_training_loss(thirty_queries, case):
    X, y, qid = thirty_queries
    y_val, qid_val, scoring = y.copy(), qid.copy(), "ndcg@10"
    if case == "no_relevant":
        y_val[:] = 0
    elif case == "equal_labels":
        y_val[:] = 2
    elif case == "single_documents":
        qid_val = np.arange(len(y))
    else:
        scoring = make_ranking_scorer(_nan_metric)
    params = dict(early_stopping=True, scoring=scoring, n_iter_no_change=2, max_iter=60,
                  random_state=0)
    with pytest.warns(UserWarning, match="training loss decides when to stop"):
        ranker = ListNetRanker(**params).fit(X, y, qid=qid, X_val=X, y_val=y_val,
                                             qid_val=qid_val)
    reference = ListNetRanker(**{**params, "early_stopping": False}).fit(X, y, qid=qid)
    # the same fit as without early stopping, not the first epoch's weights
    np.testing.assert_array_equal(ranker.coef_, reference.coef_)
    assert ranker.n_iter_ == reference.n_iter_ > 3
    assert ranker.best_validation_score_ is None


def test_early_stopping_held_out_without_signal_trains_on_all_queries(thirty_queries):
    X, y, qid = thirty_queries
    scoring = make_ranking_scorer(_nan_metric)
    with pytest.warns(UserWarning, match="held-out queries.*on all queries"):
        ranker = ListNetRanker(early_stopping=True, scoring=scoring, n_iter_no_change=2,
                               max_iter=60, random_state=0).fit(X, y, qid=qid)
    assert ranker.best_validation_score_ is None
    assert ranker.n_iter_ > 3


@pytest.mark.parametrize("case", ["own_query", "equal_labels"])
def test_nothing_to_learn_warns(thirty_queries, case):
    X, y, qid = thirty_queries
    if case == "own_query":
        qid = np.arange(len(y))
    else:
        y = np.ones_like(y)
    with pytest.warns(UserWarning, match="no query has two documents of different relevance"):
        ListNetRanker(early_stopping=False, **TWENTY_EPOCHS).fit(X, y, qid=qid)


def test_search_with_unset_fit_request_raises_instead_of_dropping_qid(thirty_queries, metadata_routing):
    X, y, qid = thirty_queries
    with metadata_routing():
        ranker = ListNetRanker(**TWENTY_EPOCHS).set_fit_request(qid=None)
        with pytest.raises(UnsetMetadataPassedError, match="qid"):
            RankerSearchCV(ranker, {"alpha": [1e-4]}, scoring="r2", cv=3).fit(X, y, qid=qid)
        # a pointwise model with a pointwise scorer still needs no qid request
        search = RankerSearchCV(Ridge(), {"alpha": [1.0]}, scoring="r2", cv=3).fit(X, y,
                                                                                 qid=qid)
    assert np.isfinite(search.best_score_)


def test_search_with_requested_qid_and_pointwise_scorer_trains_per_query(
        thirty_queries, metadata_routing):
    X, y, qid = thirty_queries
    context = no_warnings()
    try:
        with metadata_routing():
            RankerSearchCV(ListNetRanker(early_stopping=False, max_iter=500, random_state=0),
                           {"alpha": [1e-4]}, scoring="r2", cv=3).fit(X, y, qid=qid)
    finally:
        context.__exit__(None, None, None)


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


def test_cross_validate_ranker_with_groups_says_pass_qid(thirty_queries):
    X, y, qid = thirty_queries
    with pytest.raises(TypeError, match="pass qid="):
        cross_validate_ranker(Ridge(), X, y, groups=qid)
    with pytest.raises(ValueError, match=r"^cross_validate_ranker got qid=None, which means all "
                                         r"rows are one query.*one query cannot be split"):
        cross_validate_ranker(Ridge(), X, y)
    with pytest.raises(ValueError, match=r"^RankerSearchCV.fit got qid=None, which means all "
                                         r"rows are one query"):
        RankerSearchCV(Ridge(), {"alpha": [1.0]}).fit(X, y)
