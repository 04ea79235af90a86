"""No plausible but wrong number without a word (issue 12, items 1-9).

Each test drives one path that used to return a silently wrong result and
checks that it now raises or warns, naming what to fix, while the correct
use keeps working.
"""

import warnings

import numpy as np
import pytest
import sklearn
from sklearn.exceptions import UnsetMetadataPassedError
from sklearn.linear_model import Ridge
from sklearn.model_selection import GridSearchCV, GroupKFold, cross_val_score
from sklearn.pipeline import make_pipeline

from skrank import (
    ListNetRanker,
    LogRankRanker,
    QueryNormalizer,
    RankerSearchCV,
    cross_validate_ranker,
    make_ranking,
    make_ranking_scorer,
    ndcg_score,
)
from skrank.losses import SoftRankLoss
from skrank.losses._softrank import EXACT_MAX_DOCS
from skrank.utils import QueryLayout

FAST = dict(max_iter=20, random_state=0)


@pytest.fixture(scope="module")
def data():
    return make_ranking(n_queries=30, n_docs=10, random_state=0)


@pytest.fixture(scope="module")
def fitted(data):
    X, y, qid = data
    return ListNetRanker(**FAST).fit(X, y, qid=qid)


def _no_warnings():
    context = warnings.catch_warnings()
    context.__enter__()
    warnings.simplefilter("error")
    return context


# 1. score without qid after a multi-query fit -------------------------------
def test_score_without_qid_after_multi_query_fit_raises(data, fitted):
    X, y, qid = data
    with pytest.raises(ValueError, match="fitted on 30 queries.*qid=None"):
        fitted.score(X, y)
    assert fitted.score(X, y, qid=qid) == pytest.approx(
        ndcg_score(y, fitted.predict(X), qid=qid, k=10))


def test_score_without_qid_after_one_query_fit_works(data):
    X, y, _ = data
    X, y = X[:10], y[:10]
    ranker = ListNetRanker(early_stopping=False, **FAST).fit(X, y)
    assert ranker.score(X, y) == pytest.approx(
        ndcg_score(y, ranker.predict(X), qid=np.zeros(len(y)), k=10))


def test_pipeline_score_without_qid_raises_with_routing_off(data):
    X, y, qid = data
    pipe = make_pipeline(ListNetRanker(**FAST)).fit(X, y, listnetranker__qid=qid)
    with pytest.raises(ValueError, match="qid"):
        pipe.score(X, y)


def test_grid_search_default_scoring_is_nan_and_warns_with_routing_off(data):
    # scikit-learn catches the score's error: NaN scores and a warning, not
    # the one-merged-query NDCG; error_score="raise" shows the error
    X, y, qid = data
    search = GridSearchCV(ListNetRanker(**FAST), {"alpha": [1e-4]}, cv=GroupKFold(3))
    with pytest.warns(UserWarning, match="qid"):
        search.fit(X, y, groups=qid, qid=qid)
    assert np.isnan(search.best_score_)
    search.set_params(error_score="raise")
    with pytest.raises(ValueError, match="qid=None"):
        search.fit(X, y, groups=qid, qid=qid)


# 2. fit without qid ----------------------------------------------------------
#: The rows from which fit's docstring says ``qid=None`` warns ("more than 100").
IMPLICIT_QUERY_MAX_ROWS = 100


def test_fit_without_qid_on_many_rows_warns(data):
    X, y, _ = data
    assert len(y) > IMPLICIT_QUERY_MAX_ROWS
    with pytest.warns(UserWarning, match=f"all {len(y)} rows are treated as ONE query"):
        ListNetRanker(early_stopping=False, **FAST).fit(X, y)


def test_cross_val_score_without_routing_warns_at_fit(data):
    X, y, qid = data
    with pytest.warns(UserWarning, match="qid=None"):
        cross_val_score(ListNetRanker(early_stopping=False, **FAST), X, y, groups=qid,
                        cv=GroupKFold(3))


def test_fit_without_qid_on_few_rows_is_quiet(data):
    X, y, _ = data
    n = IMPLICIT_QUERY_MAX_ROWS
    context = _no_warnings()
    try:
        ListNetRanker(early_stopping=False, max_iter=500, random_state=0).fit(X[:n], y[:n])
    finally:
        context.__exit__(None, None, None)


@pytest.mark.parametrize("distribution, n, warns", [
    ("binomial", EXACT_MAX_DOCS + 1, True),
    ("binomial", EXACT_MAX_DOCS, False),
    ("hybrid", EXACT_MAX_DOCS + 1, False),
    ("normal", EXACT_MAX_DOCS + 1, False),
])
def test_softrank_exact_on_a_huge_query_warns(distribution, n, warns):
    y = np.arange(n) % 3
    layout = QueryLayout(np.r_[np.zeros(n, dtype=int), [1, 1]])
    loss = SoftRankLoss(rank_distribution=distribution)
    labels = np.r_[y, [0, 1]]
    if warns:
        with pytest.warns(UserWarning, match="rank_distribution='hybrid'"):
            loss.prepare(labels, layout)
    else:
        context = _no_warnings()
        try:
            loss.prepare(labels, layout)
        finally:
            context.__exit__(None, None, None)


# 4. early stopping on a metric with no signal ---------------------------------
def _nan_metric(y_true, y_score, *, qid, k=None):
    return float("nan")


@pytest.mark.parametrize("case", ["no_relevant", "equal_labels", "single_documents", "nan"])
def test_early_stopping_without_signal_falls_back_to_training_loss(data, case):
    X, y, qid = data
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


def test_early_stopping_held_out_without_signal_trains_on_all_queries(data):
    X, y, qid = data
    scoring = make_ranking_scorer(_nan_metric)
    with pytest.warns(UserWarning, match="held-out queries.*on all queries"):
        ranker = ListNetRanker(early_stopping=True, scoring=scoring, n_iter_no_change=2,
                               max_iter=60, random_state=0).fit(X, y, qid=qid)
    assert ranker.best_validation_score_ is None
    assert ranker.n_iter_ > 3


# 5. nothing to learn -----------------------------------------------------------
@pytest.mark.parametrize("case", ["own_query", "equal_labels"])
def test_nothing_to_learn_warns(data, case):
    X, y, qid = data
    if case == "own_query":
        qid = np.arange(len(y))
    else:
        y = np.ones_like(y)
    with pytest.warns(UserWarning, match="no query has two documents of different relevance"):
        ListNetRanker(early_stopping=False, **FAST).fit(X, y, qid=qid)


# 6. mixed int/str qid ----------------------------------------------------------
@pytest.mark.parametrize("qid", [
    [1, 1, "1", "1"],
    np.array([1, 1, "1", "1"], dtype=object),
    ["a", "a", 2, 2],
    [b"a", b"a", "a", "a"],
])
def test_mixed_int_and_str_qid_raise(qid):
    with pytest.raises(TypeError, match="integers or strings of one kind"):
        QueryLayout(qid)
    with pytest.raises(TypeError, match="integers or strings of one kind"):
        ndcg_score([1, 0, 1, 0], [1, 2, 3, 4], qid=qid)


@pytest.mark.parametrize("qid, n_queries", [(["1", "1", "2"], 2), ([b"a", b"b", b"b"], 2),
                                            ([1, 2, 2], 2)])
def test_one_kind_qid_lists_work(qid, n_queries):
    assert QueryLayout(qid).n_queries == n_queries


# 7. RankerSearchCV with routing on and pointwise scorers -----------------------
def test_search_with_unset_fit_request_raises_instead_of_dropping_qid(data, metadata_routing):
    X, y, qid = data
    with metadata_routing():
        ranker = ListNetRanker(**FAST).set_fit_request(qid=None)
        with pytest.raises(UnsetMetadataPassedError, match="qid"):
            RankerSearchCV(ranker, {"alpha": [1e-4]}, scoring="r2", cv=3).fit(X, y, qid=qid)
        # a pointwise model with a pointwise scorer still needs no qid request
        search = RankerSearchCV(Ridge(), {"alpha": [1.0]}, scoring="r2", cv=3).fit(X, y,
                                                                                 qid=qid)
    assert np.isfinite(search.best_score_)


def test_search_with_requested_qid_and_pointwise_scorer_trains_per_query(
        data, metadata_routing):
    X, y, qid = data
    context = _no_warnings()
    try:
        with metadata_routing():
            RankerSearchCV(ListNetRanker(early_stopping=False, max_iter=500, random_state=0),
                           {"alpha": [1e-4]}, scoring="r2", cv=3).fit(X, y, qid=qid)
    finally:
        context.__exit__(None, None, None)


# 8. Pipeline.predict with a QueryNormalizer and no qid ---------------------------
def test_pipeline_predict_without_qid_warns(data, metadata_routing):
    X, y, qid = data
    with metadata_routing():
        pipe = make_pipeline(QueryNormalizer(), ListNetRanker(**FAST)).fit(X, y, qid=qid)
        with pytest.warns(UserWarning, match="QueryNormalizer was fitted on 30 queries"):
            pipe.predict(X)
        expected = pipe[-1].predict(QueryNormalizer().fit_transform(X, qid=qid))
        context = _no_warnings()
        try:
            np.testing.assert_allclose(pipe.predict(X, qid=qid), expected)
        finally:
            context.__exit__(None, None, None)


def test_query_normalizer_fitted_without_qid_transforms_quietly(data):
    X, _, _ = data
    normalizer = QueryNormalizer().fit(X)
    context = _no_warnings()
    try:
        normalizer.transform(X)
    finally:
        context.__exit__(None, None, None)


# 9. a failed refit keeps the fitted model whole ---------------------------------
@pytest.mark.parametrize("make, bad_fit", [
    (lambda: ListNetRanker(**FAST), lambda r, X, y, q: r.fit(X[:, :3], y, qid=q[:-1])),
    (lambda: ListNetRanker(**FAST), lambda r, X, y, q: r.fit(X[:, :3], y, qid=list(q[:-1]) + ["x"])),
    (lambda: LogRankRanker(max_iter=20),
     lambda r, X, y, q: r.set_params(relevance_threshold=99).fit(X[:, :3], y, qid=q)),
    (lambda: QueryNormalizer(), lambda r, X, y, q: r.fit(X[:, :3], qid=q[:-1])),
])
def test_failed_refit_leaves_the_fitted_estimator_intact(data, make, bad_fit):
    X, y, qid = data
    estimator = make()
    estimator.fit(X, y, qid=qid)
    before = dict(vars(estimator))
    with pytest.raises((ValueError, TypeError)):
        bad_fit(estimator, X, y, qid)
    assert estimator.n_features_in_ == X.shape[1]
    for name, value in before.items():
        if name.endswith("_"):
            np.testing.assert_equal(getattr(estimator, name), value)
    out = estimator.transform(X, qid=qid) if hasattr(estimator, "transform") else \
        estimator.predict(X)
    assert out.shape[0] == X.shape[0]


# Routing on: Pipeline.score and cross_val_score with default scoring ------------
SKLEARN_VERSION = tuple(int(part) for part in sklearn.__version__.split(".")[:2])


def test_pipeline_score_with_routing_on(data, metadata_routing):
    X, y, qid = data
    with metadata_routing():
        pipe = make_pipeline(QueryNormalizer(), ListNetRanker(**FAST)).fit(X, y, qid=qid)
        expected = ndcg_score(y, pipe.predict(X, qid=qid), qid=qid, k=10)
        assert pipe.score(X, y, qid=qid) == pytest.approx(expected)


@pytest.mark.skipif(SKLEARN_VERSION < (1, 8), reason=(
    "scikit-learn < 1.8: with scoring=None, cross_val_score routes to a Pipeline's score "
    "only what Pipeline.score requests itself (sample_weight), so qid never reaches the "
    "ranker (whose score then refuses, and cross_val_score records NaN)"))
def test_cross_val_score_of_a_pipeline_with_default_scoring_and_routing_on(
        data, metadata_routing):
    X, y, qid = data
    with metadata_routing():
        scores = cross_val_score(make_pipeline(QueryNormalizer(), ListNetRanker(**FAST)), X, y,
                                 params={"qid": qid, "groups": qid}, cv=GroupKFold(3))
    assert np.all(np.isfinite(scores)) and np.all(scores > 0.5)


def test_cross_validate_ranker_with_groups_says_pass_qid(data):
    X, y, qid = data
    with pytest.raises(TypeError, match="pass qid="):
        cross_validate_ranker(Ridge(), X, y, groups=qid)
    with pytest.raises(ValueError, match=r"^cross_validate_ranker got qid=None, which means all "
                                         r"rows are one query.*one query cannot be split"):
        cross_validate_ranker(Ridge(), X, y)
    with pytest.raises(ValueError, match=r"^RankerSearchCV.fit got qid=None, which means all "
                                         r"rows are one query"):
        RankerSearchCV(Ridge(), {"alpha": [1.0]}).fit(X, y)


@pytest.mark.parametrize("call", [
    lambda X, y: ndcg_score(y, X[:, 0]),
    lambda X, y: ListNetRanker(max_iter=1).fit(X, y),
    lambda X, y: QueryNormalizer().fit(X),
    lambda X, y: SoftRankLoss().rank_distributions(X[:, 0]),
], ids=["metric", "ranker fit", "QueryNormalizer.fit", "loss"])
def test_a_forgotten_qid_warns_at_the_users_line(call):
    """However deep the package warns from (validate_params, _fit_context), the warning
    points at the caller's line, so that it is seen and not merged with others."""
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(150, 3)), rng.integers(0, 3, 150).astype(float)
    with pytest.warns(UserWarning, match="ONE query") as record:
        call(X, y)
    assert {w.filename for w in record if "ONE query" in str(w.message)} == {__file__}
