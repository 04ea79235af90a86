"""Ranking scorers (skrank/metrics/_scorer.py): names, conventions, qid, routing, weights.

Oracles: the metric functions of :mod:`skrank.metrics` called directly on the
predictions, and hand-written per-fold loops over ``GroupKFold`` splits for
scikit-learn's cross-validation and search tools.
"""

import pickle
import re
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.exceptions import UnsetMetadataPassedError
from sklearn.linear_model import Ridge
from sklearn.model_selection import GridSearchCV, GroupKFold, cross_val_score, cross_validate
from sklearn.pipeline import make_pipeline
from sklearn.utils.metadata_routing import get_routing_for_object

import skrank
from skrank import ListNetRanker
from skrank.datasets import make_ranking
from skrank.metrics import (
    RankingScorer,
    average_precision_score,
    dcg_score,
    err_score,
    get_ranking_scorer,
    make_ranking_scorer,
    map_score,
    mrr_score,
    ndcg_score,
    precision_at_k,
    recall_at_k,
)
from skrank.preprocessing import QueryNormalizer

from tests._inputs import fast
from tests.metrics._query_weights import row_weights


@pytest.fixture(scope="module")
def scorer_data():
    """40 queries of 5 to 12 documents; noisy labels so metrics are not saturated."""
    return make_ranking(
        n_queries=40, n_docs=(5, 12), n_features=5, noise=1.0, random_state=0
    )


@pytest.fixture(scope="module")
def fitted_ridge(scorer_data):
    X, y, _ = scorer_data
    return Ridge().fit(X, y)


class QidAwareRanker(RegressorMixin, BaseEstimator):
    """Linear least squares whose ``predict`` takes ``qid`` and records it.

    Without qid it returns the negated scores, so a scorer that forgot to pass
    qid gets a very different metric.
    """

    def fit(self, X, y):
        self.coef_ = np.linalg.lstsq(X, y, rcond=None)[0]
        return self

    def predict(self, X, *, qid=None):
        self.predict_qid_ = qid
        scores = X @ self.coef_
        return scores if qid is not None else -scores


class KwargsRecorder(RegressorMixin, BaseEstimator):
    """``predict(X, **kwargs)`` that records what it was given."""

    def fit(self, X, y):
        self.coef_ = np.linalg.lstsq(X, y, rcond=None)[0]
        return self

    def predict(self, X, **kwargs):
        self.predict_kwargs_ = kwargs
        return X @ self.coef_


def top1_hit_rate(y_true, y_score, *, qid, k, bonus=0.0):
    """Fraction of queries whose top-scored document has the query's top label."""
    hits = []
    for q in np.unique(qid):
        rows = qid == q
        hits.append(y_true[rows][np.argmax(y_score[rows])] == y_true[rows].max())
    return float(np.mean(hits)) * k + bonus


def manual_fold_scores(X, y, qid, metric, *, alpha=1.0, n_splits=5, **kwargs):
    """``metric`` of Ridge(alpha) on each GroupKFold(n_splits) test fold."""
    scores = []
    for train, test in GroupKFold(n_splits=n_splits).split(X, y, groups=qid):
        pred = Ridge(alpha=alpha).fit(X[train], y[train]).predict(X[test])
        scores.append(metric(y[test], pred, qid=qid[test], **kwargs))
    return np.array(scores)


# ----------------------------------------------------------------------------
# Names
@pytest.mark.parametrize(
    "name, metric, kwargs",
    [
        ("ndcg@10", ndcg_score, {"k": 10}),
        ("ndcg", ndcg_score, {}),
        ("map", map_score, {}),
        ("dcg@5", dcg_score, {"k": 5}),
        ("precision@3", precision_at_k, {"k": 3}),
        ("p@3", precision_at_k, {"k": 3}),
        ("ap", average_precision_score, {}),
        (" NDCG@10 ", ndcg_score, {"k": 10}),
        ("mrr", mrr_score, {}),
        ("mrr@3", mrr_score, {"k": 3}),
        ("err@10", err_score, {"k": 10}),
        ("recall@10", recall_at_k, {"k": 10}),
    ],
)
def test_named_scorer_equals_direct_metric(scorer_data, fitted_ridge, name, metric, kwargs):
    X, y, qid = scorer_data
    scorer = get_ranking_scorer(name)
    assert isinstance(scorer, RankingScorer)
    expected = metric(y, fitted_ridge.predict(X), qid=qid, **kwargs)
    assert scorer(fitted_ridge, X, y, qid=qid) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(
    "with_k, without_k",
    [
        ("ndcg@3", "ndcg"), ("dcg@5", "dcg"), ("precision@3", "precision"),
        ("recall@3", "recall"), ("err@2", "err"), ("mrr@1", "mrr"),
    ],
)
def test_cutoff_of_name_is_used(scorer_data, fitted_ridge, with_k, without_k):
    # Guards the test above against a scorer that drops k.
    X, y, qid = scorer_data
    at_k = get_ranking_scorer(with_k)(fitted_ridge, X, y, qid=qid)
    full = get_ranking_scorer(without_k)(fitted_ridge, X, y, qid=qid)
    assert at_k != pytest.approx(full, rel=1e-6)


def test_get_ranking_scorer_returns_a_scorer_unchanged():
    scorer = make_ranking_scorer("ndcg", k=4, gain="linear")
    assert get_ranking_scorer(scorer) is scorer


def test_scorer_repr_names_metric_and_conventions():
    assert repr(get_ranking_scorer("ndcg@10")) == "make_ranking_scorer('ndcg', k=10)"
    assert (
        repr(make_ranking_scorer("map", relevance_threshold=2))
        == "make_ranking_scorer('map', relevance_threshold=2)"
    )


@pytest.mark.parametrize(
    "name, error",
    [
        ("foo@3", ValueError),
        ("foo", ValueError),
        ("ndcg@0", ValueError),
        ("ndcg@x", ValueError),
        ("ndcg@-1", ValueError),
        ("ndcg@", ValueError),
        ("ndcg@3@4", ValueError),
        ("", ValueError),
        (42, TypeError),
        (None, TypeError),
    ],
)
def test_get_ranking_scorer_rejects_unknown_names(name, error):
    with pytest.raises(error, match=re.escape(repr(name))):
        get_ranking_scorer(name)


# ----------------------------------------------------------------------------
# make_ranking_scorer and conventions
@pytest.mark.parametrize(
    "metric_name, metric, k, conventions",
    [
        ("ndcg", ndcg_score, 10, {"convention": "letor"}),
        ("ndcg", ndcg_score, 5, {"gain": "linear"}),
        ("ndcg", ndcg_score, None, {"discount": "letor"}),
        ("dcg", dcg_score, 3, {"convention": "sklearn"}),
        ("map", map_score, None, {"relevance_threshold": 2}),
        ("ap", average_precision_score, 5, {"relevance_threshold": 3}),
        ("precision", precision_at_k, 10, {"short_queries": "pad"}),
        ("map", map_score, 3, {"ap_denominator": "relevant"}),
        ("ndcg", ndcg_score, 10, {"convention": "trec_eval"}),
        ("err", err_score, 5, {"max_grade": 6}),
        ("recall", recall_at_k, 5, {"relevance_threshold": 2}),
        ("mrr", mrr_score, None, {"relevance_threshold": 2}),
    ],
)
def test_conventions_reach_the_metric(
    scorer_data, fitted_ridge, metric_name, metric, k, conventions
):
    X, y, qid = scorer_data
    scorer = make_ranking_scorer(metric_name, k=k, **conventions)
    pred = fitted_ridge.predict(X)
    expected = metric(y, pred, qid=qid, k=k, **conventions)
    assert scorer(fitted_ridge, X, y, qid=qid) == pytest.approx(expected, rel=1e-12)
    # The convention makes a difference on these data, so dropping it fails.
    default = metric(y, pred, qid=qid, k=k)
    assert expected != pytest.approx(default, rel=1e-6)


@pytest.mark.parametrize(
    "metric_name, conventions, bad",
    [
        ("map", {"gain": "linear"}, "gain"),
        ("precision", {"discount": "log2"}, "discount"),
        ("ndcg", {"relevance_threshold": 2}, "relevance_threshold"),
        ("ndcg", {"gian": "linear"}, "gian"),
        ("err", {"relevance_threshold": 2}, "relevance_threshold"),
        ("ndcg", {"ap_denominator": "relevant"}, "ap_denominator"),
    ],
)
def test_convention_not_taken_by_metric_raises(metric_name, conventions, bad):
    with pytest.raises(TypeError, match=bad):
        make_ranking_scorer(metric_name, **conventions)


@pytest.mark.parametrize(
    "metric, error, match",
    [
        ("foo", ValueError, "'foo'"),
        ("NDCG@10", ValueError, "'NDCG@10'"),
        (42, TypeError, "42"),
    ],
)
def test_make_ranking_scorer_rejects_unknown_metric(metric, error, match):
    with pytest.raises(error, match=match):
        make_ranking_scorer(metric)


@pytest.mark.parametrize("k", [0, -1, 2.5, True, "3"])
def test_make_ranking_scorer_rejects_bad_k(k):
    with pytest.raises(ValueError, match=f"k must be .*got {re.escape(repr(k))}"):
        make_ranking_scorer("ndcg", k=k)


def test_callable_metric_gets_k_and_conventions(scorer_data, fitted_ridge):
    X, y, qid = scorer_data
    scorer = make_ranking_scorer(top1_hit_rate, k=2, bonus=0.5)
    expected = top1_hit_rate(y, fitted_ridge.predict(X), qid=qid, k=2, bonus=0.5)
    assert scorer(fitted_ridge, X, y, qid=qid) == pytest.approx(expected)
    assert expected != pytest.approx(top1_hit_rate(y, fitted_ridge.predict(X), qid=qid, k=1))
    assert "top1_hit_rate" in repr(scorer)


def test_score_predictions_equals_call(scorer_data, fitted_ridge):
    X, y, qid = scorer_data
    scorer = get_ranking_scorer("ndcg@5")
    assert scorer.score_predictions(y, fitted_ridge.predict(X), qid=qid) == scorer(
        fitted_ridge, X, y, qid=qid
    )


# ----------------------------------------------------------------------------
# qid and sample_weight
@pytest.mark.parametrize("name", ["ndcg@10", "map", "precision@3"])
def test_scorer_without_qid_raises(scorer_data, fitted_ridge, name):
    X, y, _ = scorer_data
    scorer = get_ranking_scorer(name)
    with pytest.raises(ValueError, match=r"needs qid.*qid=None"):
        scorer(fitted_ridge, X, y)
    with pytest.raises(ValueError, match="needs qid"):
        scorer(fitted_ridge, X, y, qid=None)


def test_scorer_rejects_sample_weight_its_metric_does_not_take(scorer_data, fitted_ridge):
    # skrank's metrics take query weights (tests/metrics/test_ranking.py); a
    # custom metric without a sample_weight parameter still refuses them.
    X, y, qid = scorer_data
    scorer = make_ranking_scorer(top1_hit_rate, k=1)
    assert not scorer._accept_sample_weight()
    with pytest.raises(ValueError, match="sample_weight"):
        scorer(fitted_ridge, X, y, qid=qid, sample_weight=np.ones(len(y)))


@pytest.mark.parametrize("routing", [False, True])
def test_predict_taking_qid_receives_it(scorer_data, routing, metadata_routing):
    X, y, qid = scorer_data
    est = QidAwareRanker().fit(X, y)
    with metadata_routing(routing):
        got = get_ranking_scorer("ndcg@10")(est, X, y, qid=qid)
    np.testing.assert_array_equal(est.predict_qid_, qid)
    assert got == pytest.approx(ndcg_score(y, X @ est.coef_, qid=qid, k=10))
    # Without qid the ranker reverses its ranking: the metric tells them apart.
    assert got != pytest.approx(ndcg_score(y, -(X @ est.coef_), qid=qid, k=10))


@pytest.mark.parametrize("routing", [False, True])
def test_predict_without_qid_parameter_is_called_without_qid(scorer_data, routing, metadata_routing):
    # **kwargs alone is no request for qid: a plain regressor gets predict(X).
    X, y, qid = scorer_data
    est = KwargsRecorder().fit(X, y)
    with metadata_routing(routing):
        got = get_ranking_scorer("map")(est, X, y, qid=qid)
    assert est.predict_kwargs_ == {}
    assert got == pytest.approx(map_score(y, X @ est.coef_, qid=qid))


def test_plain_regressor_is_scored(scorer_data, fitted_ridge):
    # Ridge.predict takes no qid: passing it would raise a TypeError.
    X, y, qid = scorer_data
    got = get_ranking_scorer("ndcg@10")(fitted_ridge, X, y, qid=qid)
    assert got == pytest.approx(ndcg_score(y, fitted_ridge.predict(X), qid=qid, k=10))


# ----------------------------------------------------------------------------
# Metadata routing
def test_scorer_requests_qid_for_score(metadata_routing):
    scorer = get_ranking_scorer("ndcg@10")
    with metadata_routing():
        assert get_routing_for_object(scorer).consumes("score", ["qid"]) == {"qid"}
        assert scorer.set_score_request(qid=False) is scorer
        assert get_routing_for_object(scorer).consumes("score", ["qid"]) == set()
        scorer.set_score_request(qid="query_id")
        routing = get_routing_for_object(scorer)
        assert routing.consumes("score", ["qid", "query_id"]) == {"query_id"}
        scorer.set_score_request(qid=True)
        assert get_routing_for_object(scorer).consumes("score", ["qid"]) == {"qid"}


def test_score_request_false_stops_routing_qid(scorer_data, metadata_routing):
    X, y, qid = scorer_data
    scorer = get_ranking_scorer("ndcg@10").set_score_request(qid=False)
    unrouted = r"unexpected argument\(s\) \{'qid'\}, which are not routed to any object"
    with metadata_routing(), pytest.raises(TypeError, match=unrouted):
        cross_val_score(
            Ridge(),
            X,
            y,
            cv=GroupKFold(5),
            scoring=scorer,
            params={"qid": qid, "groups": qid},
        )


def test_grid_search_with_routing_equals_manual_folds(scorer_data, metadata_routing):
    X, y, qid = scorer_data
    alphas = [0.01, 1000.0]
    with metadata_routing():
        search = GridSearchCV(
            Ridge(),
            {"alpha": alphas},
            cv=GroupKFold(5),
            scoring=get_ranking_scorer("ndcg@10"),
        ).fit(X, y, qid=qid, groups=qid)
    expected = [
        manual_fold_scores(X, y, qid, ndcg_score, alpha=a, k=10) for a in alphas
    ]
    for i in range(5):
        np.testing.assert_allclose(
            search.cv_results_[f"split{i}_test_score"], [e[i] for e in expected]
        )
    np.testing.assert_allclose(
        search.cv_results_["mean_test_score"], [e.mean() for e in expected]
    )
    assert expected[0].mean() != pytest.approx(expected[1].mean())
    best = alphas[int(np.argmax([e.mean() for e in expected]))]
    assert search.best_params_ == {"alpha": best}


def test_cross_val_score_with_routing_equals_manual_folds(scorer_data, metadata_routing):
    X, y, qid = scorer_data
    with metadata_routing():
        got = cross_val_score(
            Ridge(),
            X,
            y,
            cv=GroupKFold(5),
            scoring=get_ranking_scorer("map"),
            params={"qid": qid, "groups": qid},
        )
    np.testing.assert_allclose(got, manual_fold_scores(X, y, qid, map_score))


def test_cross_validate_with_routing_two_scorers(scorer_data, metadata_routing):
    X, y, qid = scorer_data
    scoring = {
        "ndcg": get_ranking_scorer("ndcg@5"),
        "map": make_ranking_scorer("map", relevance_threshold=2),
    }
    with metadata_routing():
        got = cross_validate(
            Ridge(),
            X,
            y,
            cv=GroupKFold(5),
            scoring=scoring,
            params={"qid": qid, "groups": qid},
        )
    np.testing.assert_allclose(
        got["test_ndcg"], manual_fold_scores(X, y, qid, ndcg_score, k=5)
    )
    np.testing.assert_allclose(
        got["test_map"],
        manual_fold_scores(X, y, qid, map_score, relevance_threshold=2),
    )


def _normalized_pipeline_fold_scores(X, y, qid, *, qid_in_predict):
    scores = []
    for train, test in GroupKFold(n_splits=5).split(X, y, groups=qid):
        X_train = QueryNormalizer().fit_transform(X[train], qid=qid[train])
        ridge = Ridge().fit(X_train, y[train])
        test_qid = qid[test] if qid_in_predict else None
        X_test = QueryNormalizer().fit(X[test]).transform(X[test], qid=test_qid)
        scores.append(ndcg_score(y[test], ridge.predict(X_test), qid=qid[test], k=10))
    return np.array(scores)


def test_pipeline_with_routing_gets_qid_in_predict(scorer_data, metadata_routing):
    X, y, qid = scorer_data
    pipe = make_pipeline(QueryNormalizer(), Ridge())
    with metadata_routing():
        got = cross_val_score(
            pipe,
            X,
            y,
            cv=GroupKFold(5),
            scoring=get_ranking_scorer("ndcg@10"),
            params={"qid": qid, "groups": qid},
        )
    expected = _normalized_pipeline_fold_scores(X, y, qid, qid_in_predict=True)
    np.testing.assert_allclose(got, expected)
    unrouted = _normalized_pipeline_fold_scores(X, y, qid, qid_in_predict=False)
    assert not np.allclose(expected, unrouted)


def test_pipeline_without_routing_gets_qid_in_predict(scorer_data):
    # With routing off a Pipeline's predict(X, **params) cannot give qid to its
    # transforms, so the scorer walks the steps itself: QueryNormalizer
    # normalises the test rows query by query, as with routing on.
    X, y, qid = scorer_data
    train, test = next(GroupKFold(n_splits=5).split(X, y, groups=qid))
    pipe = make_pipeline(QueryNormalizer(), Ridge())
    pipe.fit(X[train], y[train], querynormalizer__qid=qid[train])
    got = get_ranking_scorer("ndcg@10")(pipe, X[test], y[test], qid=qid[test])
    expected = _normalized_pipeline_fold_scores(X, y, qid, qid_in_predict=True)[0]
    assert got == pytest.approx(expected, rel=1e-12)
    unrouted = _normalized_pipeline_fold_scores(X, y, qid, qid_in_predict=False)[0]
    assert got != pytest.approx(unrouted)


@pytest.mark.parametrize("error_score", ["raise", np.nan])
def test_routing_off_sklearn_cv_cannot_pass_qid(scorer_data, error_score):
    # With routing off scikit-learn never gives the scorer qid. The scorer
    # raises rather than returning a number; scikit-learn's default
    # error_score=np.nan turns that into NaN scores with a warning. This is why
    # skrank.model_selection.cross_validate_ranker and RankerSearchCV exist.
    X, y, qid = scorer_data
    scorer = get_ranking_scorer("ndcg@10")
    if error_score == "raise":
        with pytest.raises(ValueError, match="needs qid"):
            cross_val_score(
                Ridge(),
                X,
                y,
                groups=qid,
                cv=GroupKFold(5),
                scoring=scorer,
                error_score="raise",
            )
    else:
        with pytest.warns(UserWarning, match="(?s)Scoring failed.*needs qid"):
            got = cross_val_score(
                Ridge(),
                X,
                y,
                groups=qid,
                cv=GroupKFold(5),
                scoring=scorer,
                error_score=error_score,
            )
        assert np.isnan(got).all()


# ----------------------------------------------------------------------------
# Pickling (joblib process backends send scorers to workers)
@pytest.mark.parametrize(
    "scorer",
    [
        get_ranking_scorer("ndcg@10"),
        make_ranking_scorer("map", relevance_threshold=2),
        make_ranking_scorer("ndcg", k=5, convention="letor", gain="linear"),
        make_ranking_scorer(top1_hit_rate, k=1, bonus=0.25),
    ],
    ids=repr,
)
def test_scorer_pickle_round_trip(scorer_data, fitted_ridge, scorer):
    X, y, qid = scorer_data
    clone = pickle.loads(pickle.dumps(scorer))
    assert repr(clone) == repr(scorer)
    assert clone(fitted_ridge, X, y, qid=qid) == scorer(fitted_ridge, X, y, qid=qid)


def test_pickle_keeps_score_request(metadata_routing):
    scorer = get_ranking_scorer("map").set_score_request(qid="query_id")
    clone = pickle.loads(pickle.dumps(scorer))
    with metadata_routing():
        routing = get_routing_for_object(clone)
        assert routing.consumes("score", ["qid", "query_id"]) == {"query_id"}


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"average": False}, TypeError, "does not take"),
        ({"y_true": 1}, TypeError, "does not take"),
        ({"qid": [0]}, TypeError, "does not take"),
        ({"gain": "bogus"}, ValueError, "'gain' parameter"),
        ({"no_relevant": np.nan}, ValueError, "no_relevant"),
    ],
)
def test_make_ranking_scorer_validates_conventions_eagerly(kwargs, error, match):
    with pytest.raises(error, match=match):
        make_ranking_scorer("ndcg", k=3, **kwargs)


def test_zero_cutoff_with_leading_zeros_is_rejected_by_name():
    with pytest.raises(ValueError, match="'ndcg@00'"):
        get_ranking_scorer("ndcg@00")


def test_make_ranking_scorer_accepts_numpy_k_and_skip_with_threshold():
    scorer = make_ranking_scorer("map", k=np.int64(5), relevance_threshold=2,
                                 no_relevant="skip")
    assert scorer._k == 5


@pytest.mark.parametrize(
    "metric, kwargs, match",
    [
        (ndcg_score, {"bogus": 1}, r"metric\(y_true, y_score, qid=\.\.\., bogus=\.\.\., "
                                   r"k=\.\.\.\): got an unexpected keyword argument 'bogus'"),
        (ndcg_score, {"qid": [0, 0]}, "make_ranking_scorer takes no qid"),
        (len, {}, r"'len' cannot be called as metric\(y_true, y_score, qid=\.\.\.\)"),
        (lambda y_true, y_score, *, qid: 0.5, {"k": 3},
         "unexpected keyword argument 'k'"),
    ],
)
def test_callable_metric_is_checked_when_the_scorer_is_made(metric, kwargs, match):
    with pytest.raises(TypeError, match=match):
        make_ranking_scorer(metric, **kwargs)


def test_callable_metric_without_a_cutoff_parameter(scorer_data, fitted_ridge):
    """No k is passed to a metric that takes none when the scorer has none."""
    X, y, qid = scorer_data

    def mean_top_label(y_true, y_score, *, qid):
        return top1_hit_rate(y_true, y_score, qid=qid, k=1)

    scorer = make_ranking_scorer(mean_top_label)
    assert scorer(fitted_ridge, X, y, qid=qid) == pytest.approx(
        top1_hit_rate(y, fitted_ridge.predict(X), qid=qid, k=1)
    )


# ----------------------------------------------------------------------------
# What a callable metric returns, and other bad input
def _returning(value):
    """A metric without k or weights that returns ``value`` whatever it is given."""
    def metric(y_true, y_score, *, qid, average=True):
        return value
    metric.__name__ = "fixed"
    return metric


@pytest.mark.parametrize(
    "value, got",
    [
        (np.ones(2), r"ndarray of shape \(2,\) and dtype float64"),
        (np.ones(1), r"ndarray of shape \(1,\) and dtype float64"),
        (None, "None"),
        ("abc", "str 'abc'"),
        ("0.5", "str '0.5'"),  # text is not parsed as a number
        (np.array("0.5"), r"ndarray of shape \(\) and dtype <U3"),
        ([0.5], r"list of length 1 \[0\.5\]"),
        (1 + 2j, r"complex \(1\+2j\)"),
        (np.complex128(1), "complex128"),
    ],
)
def test_metric_must_return_one_number(scorer_data, fitted_ridge, value, got):
    # numpy's and Python's float() errors leaked out of the scorer
    X, y, qid = scorer_data
    scorer = make_ranking_scorer(_returning(value))
    message = (r"^the metric 'fixed' of make_ranking_scorer\('fixed'\) must return one "
               rf"number \(the mean over queries\); got {got}")
    with pytest.raises(TypeError, match=message):
        scorer(fitted_ridge, X, y, qid=qid)
    with pytest.raises(TypeError, match=message):
        scorer.score_predictions(y, fitted_ridge.predict(X), qid=qid)


@given(value=st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-10**6, 10**6),
    st.booleans(),
    st.floats(width=32).map(np.float32),
    st.integers(-100, 100).map(np.int64),
    st.floats().map(np.array),  # a 0-d array
))
@settings(max_examples=60, deadline=None)
def test_metric_returning_one_number_is_its_float(scorer_data, value):
    # the check keeps every number, NaN and infinities included (as
    # scikit-learn's scorers pass NaN on; early stopping treats a NaN metric
    # as one without signal), and returns float(value) as before
    X, y, qid = scorer_data
    got = make_ranking_scorer(_returning(value)).score_predictions(
        y, np.zeros(len(y)), qid=qid
    )
    assert type(got) is float
    np.testing.assert_array_equal(got, float(value))


@pytest.mark.parametrize(
    "value, got",
    [
        (0.5, "float 0.5"),
        (np.ones(3), r"ndarray of shape \(3,\) and dtype float64 for 40 queries"),
        (np.ones((40, 1)), r"ndarray of shape \(40, 1\)"),
        ([None] * 40, "list of length 40"),
        (["a"] * 40, "list of length 40"),
        ([[1], [2, 3]], "list of length 2"),
    ],
)
def test_metric_without_average_must_return_one_number_per_query(scorer_data, value, got):
    # average=False returned whatever the metric gave
    X, y, qid = scorer_data
    scorer = make_ranking_scorer(_returning(value))
    with pytest.raises(TypeError, match=(
        r"^the metric 'fixed' of make_ranking_scorer\('fixed'\) must return a 1-D array "
        rf"of one number per query with average=False; got {got}"
    )):
        scorer.score_predictions(y, np.zeros(len(y)), qid=qid, average=False)


@pytest.mark.parametrize("qid_kind", ["sorted", "shuffled", "text"])
def test_metric_without_average_one_number_per_query_passes(scorer_data, qid_kind):
    X, y, qid = scorer_data
    if qid_kind == "shuffled":
        qid = qid[::-1]
    elif qid_kind == "text":
        qid = np.array([f"q{q}" for q in qid])
    values = [0.5] * 40
    scorer = make_ranking_scorer(_returning(values))
    assert scorer.score_predictions(y, np.zeros(len(y)), qid=qid, average=False) is values


def _mean_top_label(y_true, y_score, *, qid):
    """A metric without ``average``: only the mean over queries."""
    return top1_hit_rate(y_true, y_score, qid=qid, k=1)


def test_average_false_needs_a_metric_that_takes_average(scorer_data):
    # the callable's own "unexpected keyword argument 'average'" leaked out
    X, y, qid = scorer_data
    scorer = make_ranking_scorer(_mean_top_label)
    message = (r"^make_ranking_scorer\('_mean_top_label'\)\.score_predictions\(\.\.\., "
               r"average=False\) needs a metric that accepts an 'average' parameter "
               r"\(average=False: one value per query, in the order of the sorted unique "
               r"qid\); the metric '_mean_top_label' does not: "
               r"_mean_top_label\(y_true, y_score, \*, qid\)\.$")
    with pytest.raises(TypeError, match=message):
        scorer.score_predictions(y, np.zeros(len(y)), qid=qid, average=False)
    # the mean needs no average parameter
    assert scorer.score_predictions(y, X[:, 0], qid=qid) == pytest.approx(
        _mean_top_label(y, X[:, 0], qid=qid))


def test_average_false_trusts_a_metric_with_kwargs(scorer_data):
    X, y, qid = scorer_data

    def per_query(y_true, y_score, *, qid, **kwargs):
        assert kwargs["average"] is False
        return np.zeros(len(np.unique(qid)))

    scorer = make_ranking_scorer(per_query)
    np.testing.assert_array_equal(
        scorer.score_predictions(y, np.zeros(len(y)), qid=qid, average=False), np.zeros(40))


@pytest.mark.parametrize("average", ["no", None, 0, 1, np.array([True])])
def test_score_predictions_average_must_be_a_bool(scorer_data, average):
    # average="no" was taken for True
    X, y, qid = scorer_data
    with pytest.raises(TypeError, match=r"^average must be True or False; got average="):
        get_ranking_scorer("ndcg").score_predictions(y, y, qid=qid, average=average)


def test_score_predictions_average_takes_a_numpy_bool(scorer_data):
    X, y, qid = scorer_data
    scorer = get_ranking_scorer("ndcg@5")
    score = X[:, 0]
    assert scorer.score_predictions(y, score, qid=qid, average=np.True_) == (
        ndcg_score(y, score, qid=qid, k=5))
    np.testing.assert_array_equal(
        scorer.score_predictions(y, score, qid=qid, average=np.False_),
        ndcg_score(y, score, qid=qid, k=5, average=False))


@pytest.mark.parametrize(
    "sample_weight, got",
    [(2.0, "float 2.0"), (None, None), ([1, 2], r"list of length 2 \[1, 2\]"),
     (np.ones((3, 2)), r"ndarray of shape \(3, 2\)")],
)
def test_sample_weight_refused_by_a_metric_without_it_is_described(scorer_data, fitted_ridge,
                                                                   sample_weight, got):
    # the message called len() on the weights, a TypeError for 2.0
    X, y, qid = scorer_data
    scorer = make_ranking_scorer(lambda y_true, y_score, *, qid: 0.5)
    if sample_weight is None:
        assert scorer(fitted_ridge, X, y, qid=qid, sample_weight=None) == 0.5
        return
    with pytest.raises(ValueError, match=(
        r"does not support sample_weight: its metric takes no sample_weight parameter; "
        rf"got sample_weight={got}"
    )):
        scorer(fitted_ridge, X, y, qid=qid, sample_weight=sample_weight)


@pytest.mark.parametrize("estimator, name", [
    (object(), "object"),
    (make_pipeline(QueryNormalizer()), "Pipeline"),  # its last step has no predict
])
def test_scorer_needs_an_estimator_with_predict(scorer_data, estimator, name):
    # a bare AttributeError came out of the scorer
    X, y, qid = scorer_data
    with pytest.raises(TypeError, match=(
        rf"^Scoring needs a fitted estimator with a predict method; got an estimator of "
        rf"type {name}, which has no predict\.$"
    )):
        get_ranking_scorer("ndcg@10")(estimator, X, y, qid=qid)


def test_name_with_k_beyond_the_int_conversion_limit_is_refused():
    # int() raised "Exceeds the limit (4300 digits)" without the name.
    # Such a k is beyond every query, which the name without @k means.
    digits = sys.get_int_max_str_digits() or 4300
    name = "ndcg@" + "9" * (digits + 700)
    with pytest.raises(ValueError, match=(
        rf"^Unknown ranking scorer 'ndcg@9+\.\.\.9+' \({len(name) + 2} characters\): its k "
        rf"has {digits + 700} digits, more than Python converts to an int .* use 'ndcg'; "
        r"expected '<metric>' or '<metric>@<k>'"
    )):
        get_ranking_scorer(name)


def test_name_with_a_long_k_within_the_limit_is_no_cut_off(scorer_data):
    X, y, qid = scorer_data
    score = np.arange(len(y), dtype=float)
    scorer = get_ranking_scorer("ndcg@" + "9" * 100)
    assert scorer.score_predictions(y, score, qid=qid) == ndcg_score(y, score, qid=qid)


# ----------------------------------------------------------------------------
# Query weights (sample_weight) through the scorers and scikit-learn's tools
# ----------------------------------------------------------------------------
# Scorers
@pytest.fixture(scope="module")
def weighted_ranking():
    X, y, qid = make_ranking(
        n_queries=24, n_docs=(3, 9), n_features=4, noise=1.0, random_state=0
    )
    rng = np.random.default_rng(1)
    weight_of = {q: float(rng.integers(0, 4)) for q in np.unique(qid).tolist()}
    weight_of[0] = 0.0
    return X, y, qid, row_weights(qid, weight_of)


@pytest.mark.parametrize(
    "scorer, metric, kwargs",
    [
        (get_ranking_scorer("ndcg@5"), ndcg_score, {"k": 5}),
        (get_ranking_scorer("dcg"), dcg_score, {}),
        (get_ranking_scorer("precision@3"), precision_at_k, {"k": 3}),
        (get_ranking_scorer("ap"), average_precision_score, {}),
        (make_ranking_scorer("map", no_relevant="skip"), map_score,
         {"no_relevant": "skip"}),
    ],
    ids=repr,
)
def test_scorer_with_sample_weight_equals_metric(weighted_ranking, scorer, metric, kwargs):
    X, y, qid, weight = weighted_ranking
    est = Ridge().fit(X, y)
    expected = metric(y, est.predict(X), qid=qid, sample_weight=weight, **kwargs)
    assert scorer._accept_sample_weight()
    assert scorer(est, X, y, qid=qid, sample_weight=weight) == pytest.approx(
        expected, rel=1e-12
    )
    assert scorer.score_predictions(
        y, est.predict(X), qid=qid, sample_weight=weight
    ) == pytest.approx(expected, rel=1e-12)
    assert expected != pytest.approx(metric(y, est.predict(X), qid=qid, **kwargs))


def test_sample_weight_is_not_a_scorer_convention():
    with pytest.raises(TypeError, match="does not take"):
        make_ranking_scorer("ndcg", sample_weight=[1.0])


def test_score_request_for_sample_weight(metadata_routing):
    scorer = get_ranking_scorer("ndcg@10")
    with metadata_routing():
        routing = get_routing_for_object(scorer)
        assert routing.consumes("score", ["qid", "sample_weight"]) == {"qid"}
        assert scorer.set_score_request(sample_weight=True) is scorer
        routing = get_routing_for_object(scorer)
        assert routing.consumes("score", ["qid", "sample_weight"]) == {
            "qid", "sample_weight"
        }
        scorer.set_score_request(qid="query", sample_weight="w")
        routing = get_routing_for_object(scorer)
        assert routing.consumes("score", ["qid", "sample_weight", "query", "w"]) == {
            "query", "w"
        }
        scorer.set_score_request(qid=True)  # each call sets both requests
        routing = get_routing_for_object(scorer)
        assert routing.consumes("score", ["qid", "sample_weight"]) == {"qid"}


def test_custom_metric_without_sample_weight_cannot_request_it():
    def top_label(y_true, y_score, *, qid, k):
        return float(y_true[np.argmax(y_score)])

    scorer = make_ranking_scorer(top_label)
    assert not scorer._accept_sample_weight()
    with pytest.raises(ValueError, match="sample_weight"):
        scorer.set_score_request(sample_weight=True)
    assert scorer.set_score_request(sample_weight=False) is scorer


def _manual_folds(X, y, qid, weight, metric, *, fit_weight, alpha=1.0, **kwargs):
    scores = []
    for train, test in GroupKFold(n_splits=4).split(X, y, groups=qid):
        fit_params = {"sample_weight": weight[train]} if fit_weight else {}
        pred = Ridge(alpha=alpha).fit(X[train], y[train], **fit_params).predict(X[test])
        scores.append(
            metric(y[test], pred, qid=qid[test], sample_weight=weight[test], **kwargs)
        )
    return np.array(scores)


@pytest.mark.parametrize("fit_weight", [False, True])
def test_cross_val_score_routes_sample_weight(weighted_ranking, fit_weight, metadata_routing):
    X, y, qid, weight = weighted_ranking
    with metadata_routing():
        got = cross_val_score(
            Ridge().set_fit_request(sample_weight=fit_weight),
            X,
            y,
            cv=GroupKFold(4),
            scoring=get_ranking_scorer("ndcg@5").set_score_request(sample_weight=True),
            params={"qid": qid, "groups": qid, "sample_weight": weight},
        )
    expected = _manual_folds(X, y, qid, weight, ndcg_score, fit_weight=fit_weight, k=5)
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    unweighted = [
        ndcg_score(y[test], Ridge().fit(X[train], y[train]).predict(X[test]),
                   qid=qid[test], k=5)
        for train, test in GroupKFold(n_splits=4).split(X, y, groups=qid)
    ]
    assert not np.allclose(got, unweighted)


def test_unrequested_sample_weight_is_an_error_under_routing(weighted_ranking, metadata_routing):
    # as with scikit-learn's scorers: weights are not silently dropped
    X, y, qid, weight = weighted_ranking
    unset = pytest.raises(UnsetMetadataPassedError, match="sample_weight")
    with metadata_routing(), unset:
        cross_val_score(
            Ridge().set_fit_request(sample_weight=True),
            X,
            y,
            cv=GroupKFold(4),
            scoring=get_ranking_scorer("map"),
            params={"qid": qid, "groups": qid, "sample_weight": weight},
        )


def test_grid_search_routes_sample_weight(weighted_ranking, metadata_routing):
    X, y, qid, weight = weighted_ranking
    alphas = [0.01, 1000.0]
    scorer = make_ranking_scorer("map", no_relevant="skip")
    with metadata_routing():
        search = GridSearchCV(
            Ridge().set_fit_request(sample_weight=True),
            {"alpha": alphas},
            cv=GroupKFold(4),
            scoring=scorer.set_score_request(sample_weight=True),
        ).fit(X, y, qid=qid, groups=qid, sample_weight=weight)
    for j, alpha in enumerate(alphas):
        expected = _manual_folds(
            X, y, qid, weight, map_score, fit_weight=True, alpha=alpha,
            no_relevant="skip",
        )
        got = [search.cv_results_[f"split{i}_test_score"][j] for i in range(4)]
        np.testing.assert_allclose(got, expected, rtol=1e-12)


# ----------------------------------------------------------------------------
# A metric returning an array is named by every tool that scores with it
# A callable metric's wrong return and ragged nested sequences gave numpy's or
# Python's message without the name.
_TWO_VALUES = (r"^the metric '<lambda>' of make_ranking_scorer\('<lambda>'\) must return "
               r"one number \(the mean over queries\); got ndarray of shape \(2,\)")


def _two_values_scorer():
    return skrank.metrics.make_ranking_scorer(lambda yt, ys, *, qid: np.ones(2))


def test_metric_returning_an_array_is_named_by_the_scorer(six_queries):
    X, y, qid = six_queries
    with pytest.raises(TypeError, match=_TWO_VALUES):
        _two_values_scorer()(Ridge().fit(X, y), X, y, qid=qid)


def test_metric_returning_an_array_is_named_by_a_rankers_scoring(six_queries):
    X, y, qid = six_queries
    with pytest.raises(TypeError, match=_TWO_VALUES):
        fast(ListNetRanker, early_stopping=True, scoring=_two_values_scorer()).fit(
            X, y, qid=qid, X_val=X, y_val=y, qid_val=qid)


def test_metric_returning_an_array_is_named_by_cross_validate_ranker(six_queries):
    X, y, qid = six_queries
    with pytest.raises(TypeError, match=_TWO_VALUES):
        skrank.model_selection.cross_validate_ranker(
            Ridge(), X, y, qid=qid, scoring=_two_values_scorer(), cv=2)


def test_metric_returning_an_array_is_named_by_permutation_importance(six_queries):
    X, y, qid = six_queries
    with pytest.raises(TypeError, match=_TWO_VALUES):
        skrank.inspection.permutation_importance(
            Ridge().fit(X, y), X, y, qid=qid, scoring=_two_values_scorer())
