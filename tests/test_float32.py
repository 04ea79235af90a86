"""float32 end to end: the networks run in X's dtype, nothing copies X to float64."""

import numpy as np
import pytest

from skrank import BoltzRankRanker, ListNetRanker, LogRankRanker, SoftRankRanker
from skrank._core import _folded_objective, _networks, _pairwise_network
from skrank.datasets import load_rank_sample, make_ranking
from skrank.metrics import ndcg_score


FLOAT32_RANKERS = {
    "ListNet": ListNetRanker(max_iter=5, random_state=0),
    "ListNet-mlp-lbfgs": ListNetRanker(hidden_layer_sizes=(4,), solver="lbfgs", max_iter=5,
                                       random_state=0),
    "SoftRank": SoftRankRanker(max_iter=5, random_state=0),
    "BoltzRank": BoltzRankRanker(n_init=2, max_iter=5, random_state=0),
    "BoltzRank2": BoltzRankRanker(n_init=1, hidden_layer_sizes=(3,),
                                  pairwise_hidden_layer_sizes=(2,), max_iter=3, random_state=0),
    "LogRank": LogRankRanker(max_iter=5, random_state=0),
}


@pytest.fixture
def network_inputs(monkeypatch):
    """The dtype of every X the fit hands on: to a network's forward pass, or folded.

    A linear model on a sampled loss may be folded into the samples' feature
    rows (``skrank._core._folded_objective``) instead of being run on X: both the X
    given to the fold and the folded rows are recorded.
    """
    seen = []
    for cls in (_networks.LinearNetwork, _networks.MLPNetwork,
                _pairwise_network.PairwiseNetwork):
        original = cls.forward

        def forward(self, params, X, layout=None, _original=original):
            seen.append(X.dtype)
            return _original(self, params, X, layout)

        monkeypatch.setattr(cls, "forward", forward)
    original_fold = _folded_objective.fold

    def fold(coef, layout, X, *args, **kwargs):
        phi = original_fold(coef, layout, X, *args, **kwargs)
        seen.extend([X.dtype, phi.dtype])
        return phi

    monkeypatch.setattr(_folded_objective, "fold", fold)
    return seen


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("name", sorted(FLOAT32_RANKERS))
def test_fit_on_float32_hands_float32_to_the_network(name, network_inputs):
    X, y, qid = make_ranking(n_queries=12, n_docs=(4, 9), n_features=5, random_state=0)
    ranker = FLOAT32_RANKERS[name]
    ranker.fit(X.astype(np.float32), y, qid=qid)
    assert network_inputs and set(network_inputs) == {np.dtype(np.float32)}
    scores = ranker.predict(X.astype(np.float32), qid=qid)
    assert scores.dtype == np.float32
    # parameters stay float64
    coefs = [ranker.coef_] if hasattr(ranker, "coef_") else ranker.coefs_
    assert all(c.dtype == np.float64 for c in coefs)
    # float64 in, float64 out (and other dtypes become float64)
    network_inputs.clear()
    ranker.fit(X.astype(np.int64), y, qid=qid)
    assert set(network_inputs) == {np.dtype(np.float64)}
    assert ranker.predict(X.astype(np.float32), qid=qid).dtype == np.float32


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("name", ["ListNet", "SoftRank", "BoltzRank", "LogRank"])
def test_float32_ranks_as_well_as_float64_on_the_bundled_sample(name):
    X, y, qid = load_rank_sample(subset="train")
    X_test, y_test, qid_test = load_rank_sample(subset="test")
    ranker = FLOAT32_RANKERS[name]
    quality = {}
    for dtype in (np.float64, np.float32):
        ranker.fit(X.astype(dtype), y, qid=qid)
        quality[dtype] = ndcg_score(y_test, ranker.predict(X_test.astype(dtype)),
                                    qid=qid_test, k=10)
    assert quality[np.float64] > 0.6
    assert abs(quality[np.float32] - quality[np.float64]) < 0.01
