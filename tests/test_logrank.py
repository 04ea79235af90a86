"""LogRank (Dubey et al., ICDM 2009): closed forms, the walk, the objectives, the ranker."""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose

from skrank import LogRankRanker
from skrank.datasets import make_ranking
from skrank.model_selection import RankerSearchCV
from skrank.utils import QueryLayout


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
