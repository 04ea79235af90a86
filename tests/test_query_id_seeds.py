"""What a fit with a fixed ``random_state`` owes to the query ids (issue 29).

Documented in every ranker's ``random_state`` and in the user guide's
"Query ids and random seeds": the validation split and the mini-batches use
the queries' positions in sorted-id order, and the sampled rankings of
BoltzRank and LogRank hash each query's id, so that a query's samples do not
depend on the other queries.
"""

import numpy as np
import pytest

from skrank.datasets import make_ranking
from skrank.losses import BoltzRankLoss, LogRankLoss
from skrank.rankers import BoltzRankRanker, ListNetRanker, LogRankRanker, SoftRankRanker

pytestmark = pytest.mark.filterwarnings(
    "ignore:.*maximum iterations.*:sklearn.exceptions.ConvergenceWarning"
)

FAST = {"max_iter": 15, "random_state": 0}


@pytest.fixture(scope="module")
def data():
    return make_ranking(n_queries=20, n_docs=(4, 8), n_features=4, noise=1.0, random_state=0)


def _renamings(qid):
    """The same grouping of the rows, under other ids."""
    order = np.random.default_rng(5).permutation(qid.max() + 1)
    return {
        "same-order": qid * 7 + 3,
        "same-order-strings": np.array([f"q{q:03d}" for q in qid]),
        "other-order": order[qid] + 100,
    }


def _scores(ranker, X, y, qid):
    return ranker.fit(X, y, qid=qid).predict(X)


@pytest.mark.parametrize("cls", [ListNetRanker, SoftRankRanker], ids=lambda c: c.__name__)
def test_rankers_without_sampled_rankings_see_only_the_order_of_the_ids(data, cls):
    X, y, qid = data
    base = _scores(cls(**FAST), X, y, qid)
    renamed = _renamings(qid)
    for name in ("same-order", "same-order-strings"):
        np.testing.assert_array_equal(_scores(cls(**FAST), X, y, renamed[name]), base)
    # another order of the ids: another validation split (early stopping on by default)
    other = _scores(cls(**FAST), X, y, renamed["other-order"])
    assert np.abs(other - base).max() > 1e-3
    # without early stopping and with L-BFGS nothing is drawn per query: rounding only
    exact = {**FAST, "early_stopping": False, "solver": "lbfgs"}
    np.testing.assert_allclose(
        _scores(cls(**exact), X, y, renamed["other-order"]),
        _scores(cls(**exact), X, y, qid),
        rtol=1e-9, atol=1e-9,
    )


@pytest.mark.parametrize(
    "ranker",
    [LogRankRanker(**FAST), BoltzRankRanker(**FAST, early_stopping=False, solver="lbfgs")],
    ids=["LogRankRanker", "BoltzRankRanker"],
)
@pytest.mark.parametrize("renaming", ["same-order", "same-order-strings", "other-order"])
def test_sampled_rankings_change_when_the_queries_are_renamed(data, ranker, renaming):
    X, y, qid = data
    base = _scores(ranker, X, y, qid)
    renamed = _scores(ranker, X, y, _renamings(qid)[renaming])
    assert np.abs(renamed - base).max() > 1e-3


def test_logrank_exact_sampler_ignores_the_ids(data):
    # the closed form draws nothing: renaming changes nothing beyond rounding
    X, y, qid = data
    ranker = LogRankRanker(**FAST, sampler="exact", metric="auc")
    np.testing.assert_allclose(
        _scores(ranker, X, y, _renamings(qid)["other-order"]),
        _scores(ranker, X, y, qid),
        rtol=1e-9, atol=1e-9,
    )


@pytest.mark.parametrize("loss", [BoltzRankLoss(), LogRankLoss()], ids=lambda l: type(l).__name__)
def test_a_querys_samples_ignore_the_other_queries_but_not_its_id(loss):
    # The property the hashing buys: query 0's loss and gradient are the same
    # whether query 2 is present or not; renaming query 0 draws other samples.
    _, y, qid = make_ranking(n_queries=6, n_docs=(4, 8), n_features=4, noise=1.0,
                             random_state=0)
    scores = np.random.default_rng(0).normal(size=(qid == 0).sum())
    first = np.array([0])  # query 0 is the first query in sorted-id order each time
    full = loss.value_and_grad(scores, loss.prepare(y, qid, random_state=3), queries=first)
    keep = qid != 2
    subset = loss.prepare(y[keep], qid[keep], random_state=3)
    without_2 = loss.value_and_grad(scores, subset, queries=first)
    assert without_2[0] == full[0]
    np.testing.assert_array_equal(without_2[1], full[1])
    renamed = loss.prepare(y, qid * 7 + 3, random_state=3)
    assert loss.value_and_grad(scores, renamed, queries=first)[0] != pytest.approx(full[0])
