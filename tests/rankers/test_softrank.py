"""SoftRankRanker (skrank/rankers/_softrank.py).

The loss is tested in tests/losses/softrank/.
"""

import numpy as np
import pytest
from sklearn.utils._param_validation import InvalidParameterError

from skrank import SoftRankRanker, make_ranking, ndcg_score
from skrank.losses import SoftRankLoss


def test_loss_and_ranker_share_their_defaults():
    """The ranker's loss parameters default to the loss's own: the normal approximation."""
    loss, ranker = SoftRankLoss(), SoftRankRanker()
    assert loss.rank_distribution == "normal"
    for name in SoftRankLoss._parameter_constraints:
        assert getattr(ranker, name) == getattr(loss, name), name


# ----------------------------------------------------------------------
# The ranker
@pytest.fixture(scope="module")
def split_data():
    X, y, qid = make_ranking(n_queries=60, n_docs=12, n_features=6, noise=0.3, random_state=0)
    train = qid < 40
    return (X[train], y[train], qid[train]), (X[~train], y[~train], qid[~train])


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"rank_distribution": "normal"},
        {"rank_distribution": "hybrid", "n_exact": 3, "discount_shape": 0.0},
        # the paper's set-up: small net, SGD one query at a time, x0.8 decay
        {"hidden_layer_sizes": (5,), "solver": "sgd", "batch_size": 1,
         "learning_rate_init": 0.05, "learning_rate_decay": 0.8},
        {"solver": "lbfgs", "sinkhorn_iterations": 2},
    ],
    ids=repr,
)
def test_ranker_learns_to_rank(split_data, params):
    (X, y, qid), (X_test, y_test, qid_test) = split_data
    ranker = SoftRankRanker(random_state=0, **params).fit(X, y, qid=qid)
    chance = np.mean([
        ndcg_score(y_test, np.random.default_rng(i).normal(size=y_test.size), qid=qid_test, k=10)
        for i in range(5)
    ])
    assert ranker.score(X_test, y_test, qid=qid_test) > chance + 0.15


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_ranker_improves_its_training_softndcg(split_data):
    (X, y, qid), _ = split_data
    ranker = SoftRankRanker(random_state=0, early_stopping=False, max_iter=30).fit(X, y, qid=qid)
    assert ranker.loss_curve_[-1] < ranker.loss_curve_[0] - 0.05


@pytest.mark.parametrize(
    "params, name",
    [
        ({"sigma": 0.0}, "sigma"),
        ({"n_exact": -1}, "n_exact"),
        ({"discount_shape": 1.5}, "discount_shape"),
        ({"discount_shape": -1.01}, "discount_shape"),
        ({"truncation": 0}, "truncation"),
        ({"rank_distribution": "exact"}, "rank_distribution"),
        ({"sinkhorn_iterations": -2}, "sinkhorn_iterations"),
    ],
)
def test_ranker_rejects_bad_parameters_by_name(split_data, params, name):
    (X, y, qid), _ = split_data
    with pytest.raises(InvalidParameterError, match=f"'{name}' parameter"):
        SoftRankRanker(**params).fit(X, y, qid=qid)


def test_ranker_rejects_negative_labels(split_data):
    (X, y, qid), _ = split_data
    with pytest.raises(ValueError, match="non-negative"):
        SoftRankRanker(early_stopping=False).fit(X, y - 1.0, qid=qid)
