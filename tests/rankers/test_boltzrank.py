"""BoltzRankRanker (skrank/rankers/_boltzrank.py).

The loss is tested in tests/losses/test_boltzrank.py.
"""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV, GroupKFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skrank import BoltzRankRanker, RankerSearchCV, get_ranking_scorer, make_ranking, ndcg_score


# ----------------------------------------------------------------------
# The ranker
@pytest.fixture(scope="module")
def split_data():
    X, y, qid = make_ranking(n_queries=60, n_docs=12, n_features=6, noise=0.3, random_state=0)
    train = qid < 40
    return (X[train], y[train], qid[train]), (X[~train], y[~train], qid[~train])


def _chance(y, qid):
    return np.mean([ndcg_score(y, np.random.default_rng(i).normal(size=y.size), qid=qid, k=10)
                    for i in range(5)])


@pytest.mark.parametrize(
    "params",
    [
        {},  # BoltzRank1
        {"output_activation": "scaled_tanh", "restarts": "best"},  # the paper's set-up
        {"hidden_layer_sizes": (3,), "pairwise_hidden_layer_sizes": (5,)},  # BoltzRank2
        {"hidden_layer_sizes": (), "output_activation": "identity", "restarts": "average"},
        {"objective": "likelihood", "metric": "map"},
        {"solver": "sgd", "batch_size": 1, "learning_rate_init": 0.01, "momentum": 0.0},
    ],
    ids=repr,
)
def test_ranker_learns_to_rank(split_data, params):
    (X, y, qid), (X_test, y_test, qid_test) = split_data
    ranker = BoltzRankRanker(n_init=2, random_state=0, **params).fit(X, y, qid=qid)
    assert ranker.score(X_test, y_test, qid=qid_test) > _chance(y_test, qid_test) + 0.15


@pytest.fixture(scope="module")
def pairwise_ranker(split_data):
    (X, y, qid), _ = split_data
    return BoltzRankRanker(hidden_layer_sizes=(3,), pairwise_hidden_layer_sizes=(4,),
                           n_init=1, max_iter=5, random_state=0).fit(X, y, qid=qid)


def test_pairwise_fit_with_the_factored_activation_is_the_direct_one(
        split_data, pairwise_ranker, monkeypatch):
    """BoltzRank2's pairwise tanh through one exponential per document (see
    PairwiseNetwork's Notes): the same fit, to within 1e-10, as tanh on every pair."""
    from skrank._core import _pairwise_network

    (X, y, qid), (X_test, _, qid_test) = split_data
    scores = pairwise_ranker.predict(X_test, qid=qid_test)  # factored
    assert np.ptp(scores) > 0.1
    monkeypatch.setattr(_pairwise_network, "FACTORED_ACTIVATIONS", {})  # np.tanh on every pair
    direct = clone(pairwise_ranker).fit(X, y, qid=qid)
    assert direct.n_iter_ == pairwise_ranker.n_iter_ == 5
    assert_allclose(direct.predict(X_test, qid=qid_test), scores, rtol=0, atol=1e-10)
    assert not np.array_equal(direct.predict(X_test, qid=qid_test), scores)  # two paths


def test_pairwise_predict_scores_each_query_alone(split_data, pairwise_ranker, rng):
    _, (X, y, qid) = split_data
    scores = pairwise_ranker.predict(X, qid=qid)
    first = qid == qid[0]
    assert_allclose(pairwise_ranker.predict(X[first], qid=qid[first]), scores[first],
                    rtol=1e-12)
    perm = rng.permutation(len(qid))
    assert_allclose(pairwise_ranker.predict(X[perm], qid=qid[perm]), scores[perm], rtol=1e-12)
    # without qid all rows are one query: the other documents change the scores,
    # and after a fit on several queries that earns a warning
    with pytest.warns(UserWarning, match=f"predict got qid=None, which treats all {len(y)} rows as one"):
        assert not np.allclose(pairwise_ranker.predict(X), scores)
    with pytest.warns(UserWarning, match="was fitted on 40 queries, but predict got qid=None"):
        assert_allclose(pairwise_ranker.predict(X[first]), scores[first], rtol=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        one_query = clone(pairwise_ranker).fit(X[first], y[first])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pairwise_ranker.predict(X[:1])  # one row: nothing to mix up
        one_query.predict(X[first])  # fitted on one query: qid=None is that query


def test_individual_potential_ignores_qid(split_data):
    (X, y, qid), (X_test, _, qid_test) = split_data
    ranker = BoltzRankRanker(n_init=1, max_iter=3, random_state=0).fit(X, y, qid=qid)
    assert_allclose(ranker.predict(X_test, qid=qid_test), ranker.predict(X_test))


def test_routing_pipeline_passes_qid_to_predict(split_data, pairwise_ranker, metadata_routing):
    (X, y, qid), (X_test, y_test, qid_test) = split_data
    with metadata_routing():
        pipe = make_pipeline(StandardScaler(), clone(pairwise_ranker)).fit(X, y, qid=qid)
        scaled = pipe[0].transform(X_test)
        expected = pipe[-1].predict(scaled, qid=qid_test)
        # no set_predict_request: the ranker requests qid for predict by default
        assert_allclose(pipe.predict(X_test, qid=qid_test), expected, rtol=1e-12)
        with pytest.warns(UserWarning, match="predict got qid=None"):
            assert not np.allclose(pipe[-1].predict(scaled), expected)
        scores = cross_val_score(pipe, X, y, cv=GroupKFold(3),
                                 scoring=get_ranking_scorer("ndcg@10"),
                                 params={"qid": qid, "groups": qid})
        search = GridSearchCV(pipe, {"boltzrankranker__gain_weight": [0.5, 0.9]},
                              cv=GroupKFold(2), scoring=get_ranking_scorer("ndcg@10"))
        search.fit(X, y, qid=qid, groups=qid)
        best = search.best_estimator_
        assert_allclose(best.predict(X_test, qid=qid_test),
                        best[-1].predict(best[0].transform(X_test), qid=qid_test), rtol=1e-12)
    assert np.isfinite(scores).all()
    assert np.isfinite(search.cv_results_["mean_test_score"]).all()


def test_search_over_gain_weight_and_hidden_units(split_data):
    (X, y, qid), (X_test, y_test, qid_test) = split_data
    search = RankerSearchCV(
        BoltzRankRanker(n_init=1, max_iter=20, random_state=0),
        {"gain_weight": [0.5, 0.9], "hidden_layer_sizes": [(3,), (5,)]},
        scoring="ndcg@10", cv=3,
    ).fit(X, y, qid=qid)
    assert set(search.best_params_) == {"gain_weight", "hidden_layer_sizes"}
    assert len(search.cv_results_["mean_test_score"]) == 4
    assert search.score(X_test, y_test, qid=qid_test) > _chance(y_test, qid_test) + 0.1


@pytest.mark.parametrize(
    "params, match",
    [
        ({"gain_weight": 1.5}, "'gain_weight' parameter"),
        ({"n_rankings": 1}, "'n_rankings' parameter"),
        ({"objective": "kl"}, "'objective' parameter"),
        ({"output_activation": "relu"}, "'output_activation' parameter"),
        ({"metric": "ndgc@10"}, "metric must be a ranking metric name"),
        ({"pairwise_hidden_layer_sizes": (5, 5)}, "pairwise_hidden_layer_sizes must be"),
        ({"hidden_layer_sizes": (), "output_activation": "scaled_tanh"},
         "output_activation must be 'identity'"),
        ({"output_activation": "scaled_tanh", "n_init": 2}, "restarts='average' averages"),
    ],
)
def test_ranker_rejects_bad_parameters_by_name(split_data, params, match):
    (X, y, qid), _ = split_data
    with pytest.raises(ValueError, match=match):
        BoltzRankRanker(**params).fit(X, y, qid=qid)
