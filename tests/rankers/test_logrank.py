"""LogRankRanker (skrank/rankers/_logrank.py): the paper's objective, and its parameters.

The loss is tested in tests/losses/test_logrank.py.
"""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from skrank import LogRankRanker, ndcg_score
from skrank.datasets import make_ranking
from skrank.losses import LogRankLoss
from skrank.model_selection import RankerSearchCV
from skrank.utils import QueryLayout

from tests._inputs import HUGE, fast


# ----------------------------------------------------------------------
# The ranker
@pytest.fixture
def logrank_data():
    return make_ranking(n_queries=25, n_docs=8, n_features=5, random_state=0)


def _objective(ranker, X, y, qid, w):
    """The paper's objective: sum of the query losses + ||w||^2 / C, and its gradient.

    ``C = 2 / (alpha * n)`` on ``n`` queries (``alpha="auto"``: ``C = 1``).
    """
    loss = ranker._make_loss()
    layout = QueryLayout(qid)
    # the fit's first draw from random_state seeds the loss's sample
    seed = np.random.RandomState(ranker.random_state).randint(np.iinfo(np.int32).max)
    state = loss.prepare(y, layout, random_state=seed)
    mean, grad = loss.value_and_grad(X @ w, state)
    n = layout.n_queries
    C = 1.0 if ranker.alpha == "auto" else 2.0 / (ranker.alpha * n)
    return n * mean + w @ w / C, n * (X.T @ grad) + 2 * w / C


@pytest.mark.parametrize("objective, metric", [("convex", "ndcg@10"), ("convex", "auc"),
                                               ("likelihood", "auc"), ("l3", "map")])
def test_convex_objectives_reach_one_optimum_from_any_start(objective, metric, logrank_data, rng):
    X, y, qid = logrank_data
    kwargs = dict(objective=objective, metric=metric, alpha=0.2, tol=1e-12, max_iter=2000,
                  random_state=0, n_rankings=31)
    first = LogRankRanker(**kwargs).fit(X, y, qid=qid)
    ends = []
    for _ in range(5):
        ranker = LogRankRanker(warm_start=True, **kwargs)
        ranker.fit(X, y, qid=qid)  # same random_state: the same sample
        ranker.coef_ = 3.0 * rng.normal(size=X.shape[1])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ranker.fit(X, y, qid=qid)
        ends.append((ranker.loss_curve_[-1], ranker.coef_))
    for value, coef in ends:
        assert_allclose(value, first.loss_curve_[-1], rtol=1e-6)
        assert_allclose(coef, first.coef_, rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("sampler", ["exact", "walk"])
def test_fitted_weights_minimise_the_papers_objective(sampler, logrank_data):
    """coef_ is a stationary point of sum_q L_q + ||w||^2 / C (C as in the paper)."""
    X, y, qid = logrank_data
    for alpha in ("auto", 0.04):  # C = 1 and C = 2 on 25 queries
        ranker = LogRankRanker(objective="convex", metric="auc", sampler=sampler, alpha=alpha,
                               tol=1e-12, max_iter=2000, random_state=0).fit(X, y, qid=qid)
        value, grad = _objective(ranker, X, y, qid, ranker.coef_)
        assert np.abs(grad).max() < 1e-5 * max(1.0, value)
    stronger = LogRankRanker(objective="convex", metric="auc", sampler=sampler, alpha=0.4,
                             tol=1e-12, max_iter=2000, random_state=0).fit(X, y, qid=qid)
    assert np.linalg.norm(stronger.coef_) < np.linalg.norm(ranker.coef_)


def test_expgain_restarts_keep_the_lowest_objective(logrank_data):
    X, y, qid = logrank_data
    one = LogRankRanker(objective="expected_gain", metric="map", random_state=0).fit(X, y, qid=qid)
    many = LogRankRanker(objective="expected_gain", metric="map", n_init=4, random_state=0)
    many.fit(X, y, qid=qid)
    assert many.loss_curve_[-1] <= one.loss_curve_[-1] + 1e-12


def test_hidden_layers_give_an_mlp(logrank_data):
    X, y, qid = logrank_data
    ranker = LogRankRanker(hidden_layer_sizes=(4,), random_state=0, max_iter=50)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ranker.fit(X, y, qid=qid)
    assert [w.shape for w in ranker.coefs_] == [(5, 4), (4, 1)]
    assert not hasattr(ranker, "coef_")
    assert ranker.score(X, y, qid=qid) > 0.7


def test_ranker_rejects_bad_input_by_name(logrank_data):
    X, y, qid = logrank_data
    with pytest.raises(ValueError, match=r"relevance_threshold=10 is above every label"):
        LogRankRanker(relevance_threshold=10).fit(X, y, qid=qid)
    with pytest.raises(ValueError, match="relevance_threshold must be a finite number"):
        LogRankRanker(relevance_threshold=np.inf).fit(X, y, qid=qid)
    with pytest.raises(ValueError, match="sampler='exact' has closed forms"):
        LogRankRanker(sampler="exact", objective="expected_gain", metric="map").fit(X, y, qid=qid)
    with pytest.raises(ValueError, match="The 'alpha' parameter"):
        LogRankRanker(alpha=-1.0).fit(X, y, qid=qid)
    with pytest.raises(ValueError, match="The 'alpha' parameter"):
        LogRankRanker(alpha="paper").fit(X, y, qid=qid)
    with pytest.raises(ValueError, match="^metric must be one of"):
        LogRankRanker(metric="err").fit(X, y, qid=qid)
    # no early stopping, so no validation set
    with pytest.raises(TypeError, match="unexpected keyword argument 'X_val'"):
        LogRankRanker().fit(X, y, qid=qid, X_val=X, y_val=y, qid_val=qid)
    assert not {"X_val", "y_val", "qid_val"} & set(
        LogRankRanker().get_metadata_routing().fit.requests)


def test_ranker_warns_when_no_query_has_a_pair(logrank_data):
    X, y, qid = logrank_data
    with pytest.warns(UserWarning, match="no query has both a good document"):
        LogRankRanker().fit(X, np.ones_like(y), qid=qid)


def test_ranker_search_over_alpha_objective_and_metric(logrank_data):
    X, y, qid = logrank_data
    search = RankerSearchCV(
        LogRankRanker(random_state=0, n_rankings=21),
        {"alpha": ["auto", 1.0], "objective": ["likelihood", "convex"],
         "metric": ["auc", "ndcg@10"]},
        scoring="ndcg@10", cv=3,
    ).fit(X, y, qid=qid)
    assert set(search.best_params_) == {"alpha", "objective", "metric"}
    assert len(search.cv_results_["params"]) == 8
    assert np.isfinite(search.cv_results_["mean_test_score"]).all()
    assert search.score(X, y, qid=qid) > 0.7


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("k", HUGE)
def test_huge_k_of_logrank_is_no_cut_off(k, six_queries):
    # as ndcg_score's k: a cut-off past the longest query cuts nothing
    X, y, qid = six_queries
    longest = np.bincount(qid).max()
    assert ndcg_score(y, X[:, 0], qid=qid, k=k) == ndcg_score(y, X[:, 0], qid=qid, k=None)
    huge = fast(LogRankRanker, metric=f"ndcg@{k}").fit(X, y, qid=qid)
    np.testing.assert_array_equal(
        huge.coef_, fast(LogRankRanker, metric=f"ndcg@{longest}").fit(X, y, qid=qid).coef_)
    np.testing.assert_array_equal(  # and no cut-off at all
        huge.coef_, fast(LogRankRanker, metric="ndcg").fit(X, y, qid=qid).coef_)
    assert huge.metric == f"ndcg@{k}"  # the parameter is kept as given
    # k also shapes the graded restarts of the likelihood
    for objective in ("l3", "likelihood"):
        state = LogRankLoss(objective, metric=f"ndcg@{k}", sampler="walk").prepare(
            y, qid, random_state=0)
        expected = LogRankLoss(objective, metric=f"ndcg@{longest}", sampler="walk").prepare(
            y, qid, random_state=0)
        np.testing.assert_array_equal(state.coef, expected.coef)
        np.testing.assert_array_equal(state.gains, expected.gains)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_query_weights_scale_the_auto_penalty(eight_queries):
    """alpha="auto" is 2 / (total query weight): weights c act as alpha = 2 / (c * n)."""
    X, y, qid = eight_queries
    params = dict(max_iter=50, n_rankings=6, random_state=0)
    weighted = LogRankRanker(**params).fit(X, y, qid=qid, sample_weight=np.full(40, 1e3))
    assert_allclose(weighted.coef_,
                    LogRankRanker(alpha=2 / (1e3 * 8), **params).fit(X, y, qid=qid).coef_,
                    rtol=1e-10)
    # a numeric alpha is the other rankers' penalty: constant weights change nothing
    assert_array_equal(
        LogRankRanker(alpha=0.1, **params).fit(X, y, qid=qid, sample_weight=np.full(40, 1e3)).coef_,
        LogRankRanker(alpha=0.1, **params).fit(X, y, qid=qid).coef_)
    # weights summing beyond the largest float: no penalty, a finite model
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        huge = LogRankRanker(**params).fit(X, y, qid=qid, sample_weight=np.full(40, 1e308))
    assert np.isfinite(huge.coef_).all()
    assert_allclose(huge.coef_, LogRankRanker(alpha=0.0, **params).fit(X, y, qid=qid).coef_,
                    rtol=1e-10)
