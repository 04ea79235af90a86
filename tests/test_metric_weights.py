"""Query weights (``sample_weight``) in the ranking metrics and scorers.

Ranking weights weigh whole queries (as in LightGBM and XGBoost). Oracles:
``np.average`` of per-query values computed one query at a time in a plain
Python loop, with the weights of each query taken from a dict over qid; and,
for integer weights, the unweighted metric on data where every query is
repeated ``w`` times under new query ids (weight 0 removes the query).
"""

import numpy as np
import pytest
from sklearn.exceptions import UnsetMetadataPassedError
from sklearn.linear_model import Ridge
from sklearn.model_selection import GridSearchCV, GroupKFold, cross_val_score
from sklearn.utils.metadata_routing import get_routing_for_object

from skrank.datasets import make_ranking
from skrank.metrics import (
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

def err_at_grade_3(y_true, y_score, **kwargs):
    """ERR on the 0..3 scale of these data, the same for one query as for all."""
    return err_score(y_true, y_score, max_grade=3, **kwargs)


METRICS = [
    ndcg_score, dcg_score, precision_at_k, average_precision_score, map_score,
    recall_at_k, mrr_score, err_at_grade_3,
]

CONVENTIONS = [
    {},
    {"convention": "letor"},
    {"convention": "sklearn"},
    {"no_relevant": "skip"},
    {"no_relevant": 0.25},
    {"k": 3, "short_queries": "zero"},
    {"k": 3, "short_queries": "pad", "ties": "pessimistic"},
]


def _ids(value):
    if callable(value):
        return value.__name__
    return ",".join(f"{k}={v}" for k, v in value.items()) or "default"


@pytest.fixture(scope="module")
def queries():
    """12 queries of 1 to 7 rows, shuffled, with ties and queries without relevant rows.

    Returns labels, scores, qid and the weight of each query as a dict.
    """
    rng = np.random.default_rng(0)
    sizes = [1, 2, 3, 4, 5, 6, 7, 3, 4, 5, 2, 6]
    qid = np.repeat(np.arange(100, 100 + 12 * 7, 7), sizes)  # not 0..n-1
    y = rng.integers(0, 4, qid.shape[0]).astype(float)
    y[qid == 114] = 0.0  # no relevant document
    y[qid == 142] = 0.0
    score = np.round(rng.normal(size=qid.shape[0]), 1)  # some ties
    score[qid == 121] = 0.5  # one query all tied
    perm = rng.permutation(qid.shape[0])
    y, score, qid = y[perm], score[perm], qid[perm]
    weight_of = {q: float(w) for q, w in zip(
        sorted(set(qid.tolist())), [2, 0, 1, 3, 1, 0, 2, 1, 3, 1, 2, 1]
    )}
    return y, score, qid, weight_of


def _row_weights(qid, weight_of):
    return np.array([weight_of[q] for q in qid.tolist()])


def _loop_weighted_mean(metric, y, score, qid, weight_of, kwargs):
    """Weighted mean of the metric evaluated on each query alone."""
    values, weights = [], []
    for q in sorted(weight_of):
        rows = qid == q
        value = metric(y[rows], score[rows], qid=qid[rows], average=False, **kwargs)
        if not np.isnan(value[0]):  # no_relevant="skip"
            values.append(value[0])
            weights.append(weight_of[q])
    return np.average(values, weights=weights)


def _repeated(y, score, qid, weight_of):
    """Each query's rows repeated weight times, each copy a new query."""
    parts = []
    for q in sorted(weight_of):
        rows = np.flatnonzero(qid == q)  # row order kept (ties="stable")
        for copy in range(int(weight_of[q])):
            parts.append((y[rows], score[rows], np.full(rows.shape, 1000 * q + copy)))
    return tuple(np.concatenate(arrays) for arrays in zip(*parts))


@pytest.mark.parametrize("kwargs", CONVENTIONS, ids=_ids)
@pytest.mark.parametrize("metric", METRICS, ids=_ids)
def test_weighted_mean_equals_per_query_loop(queries, metric, kwargs):
    y, score, qid, weight_of = queries
    weight = _row_weights(qid, weight_of)
    got = metric(y, score, qid=qid, sample_weight=weight, **kwargs)
    expected = _loop_weighted_mean(metric, y, score, qid, weight_of, kwargs)
    assert got == pytest.approx(expected, rel=1e-12)
    # the weights matter on this data (recall of the whole query is always 1)
    if metric is not recall_at_k or kwargs.get("k") is not None:
        assert got != pytest.approx(metric(y, score, qid=qid, **kwargs), rel=1e-6)


@pytest.mark.parametrize("kwargs", CONVENTIONS, ids=_ids)
@pytest.mark.parametrize("metric", METRICS, ids=_ids)
def test_integer_weights_equal_repeated_queries(queries, metric, kwargs):
    y, score, qid, weight_of = queries
    weight = _row_weights(qid, weight_of)
    got = metric(y, score, qid=qid, sample_weight=weight, **kwargs)
    y_rep, score_rep, qid_rep = _repeated(y, score, qid, weight_of)
    expected = metric(y_rep, score_rep, qid=qid_rep, **kwargs)
    assert got == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("kwargs", CONVENTIONS, ids=_ids)
@pytest.mark.parametrize("metric", METRICS, ids=_ids)
def test_weights_only_affect_the_mean(queries, metric, kwargs):
    y, score, qid, weight_of = queries
    ones = np.ones(qid.shape[0])
    assert metric(y, score, qid=qid, sample_weight=ones, **kwargs) == pytest.approx(
        metric(y, score, qid=qid, **kwargs), rel=1e-12
    )
    # constant weights of any scale, as a list, up to the largest float
    for scale in (2.5, 1e-300, 1e308):
        assert metric(
            y, score, qid=qid, sample_weight=[scale] * qid.shape[0], **kwargs
        ) == pytest.approx(metric(y, score, qid=qid, **kwargs), rel=1e-12)
    per_query = metric(
        y, score, qid=qid, average=False,
        sample_weight=_row_weights(qid, weight_of), **kwargs,
    )
    np.testing.assert_array_equal(
        per_query, metric(y, score, qid=qid, average=False, **kwargs)
    )


@pytest.mark.parametrize("metric", METRICS, ids=_ids)
def test_weights_near_the_largest_float_give_the_weighted_mean(queries, metric):
    """A weight of 1e308 beside weights of 1 is the weighted mean, not NaN."""
    y, score, qid, _ = queries
    per_query = metric(y, score, qid=qid, average=False)
    first = np.unique(qid)[0]
    weights = np.where(qid == first, 1e308, 1.0)
    assert metric(y, score, qid=qid, sample_weight=weights) == pytest.approx(
        per_query[0], rel=1e-12
    )


@pytest.mark.parametrize("metric", METRICS, ids=_ids)
def test_zero_weight_drops_the_query(queries, metric):
    y, score, qid, weight_of = queries
    kept = _row_weights(qid, weight_of) > 0
    got = metric(y, score, qid=qid, sample_weight=kept.astype(int))  # 0 or 1
    assert got == pytest.approx(metric(y[kept], score[kept], qid=qid[kept]), rel=1e-12)


@pytest.mark.parametrize("average", [True, False])
@pytest.mark.parametrize("metric", METRICS, ids=_ids)
def test_weights_varying_within_a_query_raise(queries, metric, average):
    y, score, qid, weight_of = queries
    weight = _row_weights(qid, weight_of)
    weight[np.flatnonzero(qid == 135)[0]] += 1.0  # query 135 has 5 rows
    with pytest.raises(ValueError, match="sample_weight.*same for all rows"):
        metric(y, score, qid=qid, sample_weight=weight, average=average)


@pytest.mark.parametrize(
    "weight, error, match",
    [
        (lambda n: -np.ones(n), ValueError, "sample_weight must be finite and non-neg"),
        (lambda n: np.full(n, np.nan), ValueError, "sample_weight must be finite"),
        (lambda n: np.ones(n - 1), ValueError, "sample_weight must be a 1-D array"),
        (lambda n: np.zeros(n), ValueError, "sample_weight is zero for every query"),
        (lambda n: np.array(["a"] * n), TypeError, "sample_weight must hold numbers"),
    ],
    ids=["negative", "nan", "length", "all-zero", "strings"],
)
@pytest.mark.parametrize("metric", METRICS, ids=_ids)
def test_invalid_weights_raise(queries, metric, weight, error, match):
    y, score, qid, _ = queries
    with pytest.raises(error, match=match):
        metric(y, score, qid=qid, sample_weight=weight(qid.shape[0]))


@pytest.mark.parametrize("metric", METRICS, ids=_ids)
def test_skip_with_weight_only_on_skipped_queries_raises(queries, metric):
    # the remaining weight is zero: the weighted mean is undefined
    y, score, qid, _ = queries
    weight = np.isin(qid, [114, 142]).astype(float)  # the no-relevant queries
    with pytest.raises(ValueError, match="sample_weight 0.*weighted mean is undefined"):
        metric(y, score, qid=qid, sample_weight=weight, no_relevant="skip")
    # without "skip" they count, with their no_relevant value
    assert metric(y, score, qid=qid, sample_weight=weight, no_relevant=0.5) == 0.5


def test_sample_weight_reads_the_same_in_every_metric():
    def section(func):
        doc = func.__doc__
        start = doc.index("    sample_weight : ")
        return doc[start:doc.index("\n\n", start)]

    sections = {section(func) for func in METRICS if func is not err_at_grade_3}
    sections.add(section(err_score))
    assert len(sections) == 1
    assert "average=False" in sections.pop()


# ----------------------------------------------------------------------------
# Scorers
@pytest.fixture(scope="module")
def data():
    X, y, qid = make_ranking(
        n_queries=24, n_docs=(3, 9), n_features=4, noise=1.0, random_state=0
    )
    rng = np.random.default_rng(1)
    weight_of = {q: float(rng.integers(0, 4)) for q in np.unique(qid).tolist()}
    weight_of[0] = 0.0
    return X, y, qid, _row_weights(qid, weight_of)


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
def test_scorer_with_sample_weight_equals_metric(data, scorer, metric, kwargs):
    X, y, qid, weight = data
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
def test_cross_val_score_routes_sample_weight(data, fit_weight, metadata_routing):
    X, y, qid, weight = data
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


def test_unrequested_sample_weight_is_an_error_under_routing(data, metadata_routing):
    # as with scikit-learn's scorers: weights are not silently dropped
    X, y, qid, weight = data
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


def test_grid_search_routes_sample_weight(data, metadata_routing):
    X, y, qid, weight = data
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
