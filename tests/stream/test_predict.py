"""predict_stream and score_stream (skrank/stream/_predict.py): chunk by chunk."""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from skrank import get_ranking_scorer, make_ranking_scorer
from skrank.stream import predict_stream, score_stream


def test_predict_stream_scores_chunk_by_chunk(fitted_listnet, stream_data):
    X, y, qid = stream_data
    parts = list(predict_stream(fitted_listnet, (X, y, qid), chunk_rows=70))
    assert len(parts) == 12
    assert_array_equal(np.concatenate([s for s, _, _ in parts]), fitted_listnet.predict(X))
    assert_array_equal(np.concatenate([q for _, _, q in parts]), qid)


@pytest.mark.parametrize("scoring", [
    "ndcg@10", "map", "ndcg@3",
    make_ranking_scorer("ndcg", k=5, no_relevant="skip"),
])
def test_score_stream_is_the_in_memory_metric(fitted_listnet, stream_data, scoring):
    X, y, qid = stream_data
    y = y.copy()
    y[qid == qid[0]] = 0  # a query without a relevant document (skipped or 0)
    shuffled = np.random.RandomState(0).permutation(np.unique(qid))
    order = np.concatenate([np.flatnonzero(qid == q) for q in shuffled])
    scorer = get_ranking_scorer(scoring) if isinstance(scoring, str) else scoring
    expected = scorer(fitted_listnet, X, y, qid=qid)
    # chunks in another query order, of uneven sizes: the same number, to the bit
    assert score_stream(fitted_listnet, (X[order], y[order], qid[order]), scoring=scoring,
                        chunk_rows=37) == expected


def test_predict_stream_takes_rows_without_labels(fitted_listnet, stream_data):
    X, _, qid = stream_data
    scores = np.concatenate([s for s, _, _ in predict_stream(fitted_listnet, (X, None, qid))])
    assert_allclose(scores, fitted_listnet.predict(X), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("scoring", [None, 3, len])
def test_score_stream_refuses_a_scoring_that_is_no_scorer(fitted_listnet, train, scoring):
    with pytest.raises(TypeError, match=r"scoring must be a scorer name such as 'ndcg@10' or "
                                        r"a RankingScorer of make_ranking_scorer; got "):
        score_stream(fitted_listnet, train, scoring=scoring)


def test_streams_score_with_an_estimator_whose_predict_takes_no_qid(train):
    from sklearn.linear_model import Ridge

    X, y, qid = train
    ridge = Ridge().fit(X, y)
    scores = np.concatenate([s for s, _, _ in predict_stream(ridge, train, chunk_rows=100)])
    assert_allclose(scores, ridge.predict(X))
    assert score_stream(ridge, train) == pytest.approx(
        get_ranking_scorer("ndcg@10")(ridge, X, y, qid=qid))
