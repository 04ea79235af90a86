"""Random draws keyed by query (skrank/losses/_query_random.py).

query_uniforms depends only on the seed, the query's id and the place in the
query: a query's samples ignore the other queries but not its id, so a fit
with a fixed random_state depends on the ids as documented. Numbers of draws
no array or memory can hold are refused naming n_draws.
"""

import numpy as np
import pytest

from skrank.datasets import make_ranking
from skrank.losses import BoltzRankLoss, LogRankLoss, query_uniforms
from skrank.losses._query_random import query_bits
from skrank.rankers import BoltzRankRanker, ListNetRanker, LogRankRanker, SoftRankRanker
from skrank.utils import QueryLayout

from tests._inputs import fail_to_allocate


@pytest.mark.parametrize("ids", ["int", "str"])
def test_query_uniforms_depend_only_on_seed_query_and_place(rng, ids):
    sizes = [3, 1, 4, 2]
    names = np.array([11, 5, 42, 7]) if ids == "int" else np.array(["b", "a", "zz", "c"])
    qid = np.repeat(names, sizes)
    base = query_uniforms(QueryLayout(qid), 3, n_draws=4)
    assert base.shape == (qid.size, 4)
    assert ((base >= 0) & (base < 1)).all()  # true of any bits, so also:
    # spread over [0, 1) as uniforms are: 40 distinct values that pass a
    # Kolmogorov-Smirnov test at 1e-3 (p = 0.73 and 0.12 for the two kinds of id)
    from scipy.stats import kstest

    assert np.unique(base).size == base.size
    assert kstest(base.ravel(), "uniform").pvalue > 1e-3
    # interleaving the queries' rows (each query's rows are interchangeable here,
    # all drawn per place in the query) changes nothing: results are in sorted order
    shuffled = qid[rng.permutation(qid.size)]
    np.testing.assert_array_equal(query_uniforms(QueryLayout(shuffled), 3, 4), base)
    # a subset of the queries gets the same draws
    keep = np.isin(qid, names[[0, 2]])
    np.testing.assert_array_equal(query_uniforms(QueryLayout(qid[keep]), 3, 4),
                                  base[np.isin(QueryLayout(qid).to_sorted(qid), names[[0, 2]])])
    # the bits behind them, transposed on request (one draw per row of the result)
    bits = query_bits(QueryLayout(shuffled), 3, 4)
    np.testing.assert_array_equal((bits >> np.uint64(11)) * 2.0**-53, base)
    np.testing.assert_array_equal(query_bits(QueryLayout(shuffled), 3, 4, draws_first=True),
                                  bits.T)
    # another seed, other draws; a RandomState seed is one draw from it
    assert not np.allclose(query_uniforms(QueryLayout(qid), 4, 4), base)
    seed = np.random.RandomState(0).randint(np.iinfo(np.int32).max)
    np.testing.assert_array_equal(
        query_uniforms(QueryLayout(qid), np.random.RandomState(0), 4),
        query_uniforms(QueryLayout(qid), seed, 4),
    )


def test_query_uniforms_are_uniform_and_independent():
    layout = QueryLayout(np.repeat(np.arange(200), 50))
    u = query_uniforms(layout, 0, n_draws=3)
    from scipy.stats import kstest

    for d in range(3):
        assert kstest(u[:, d], "uniform").pvalue > 1e-3
    assert abs(np.corrcoef(u[:-1, 0], u[1:, 0])[0, 1]) < 0.05
    assert abs(np.corrcoef(u[:, 0], u[:, 1])[0, 1]) < 0.05


@pytest.mark.parametrize("n_draws", [0, -1, 2.5, True])
def test_query_uniforms_rejects_bad_n_draws(n_draws):
    with pytest.raises(ValueError, match=f"n_draws must be a positive integer; got {n_draws!r}"):
        query_uniforms(QueryLayout(np.array([0, 0, 1])), 0, n_draws)


# ----------------------------------------------------------------------------
# What a fit with a fixed random_state owes to the query ids: the sampled rankings
# of BoltzRank and LogRank hash each query's id (the user guide's "Query ids and
# random seeds")
FIFTEEN_EPOCHS = {"max_iter": 15, "random_state": 0}


@pytest.fixture(scope="module")
def twenty_queries():
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


@pytest.mark.filterwarnings("ignore:.*maximum iterations.*:sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("cls", [ListNetRanker, SoftRankRanker], ids=lambda c: c.__name__)
def test_rankers_without_sampled_rankings_see_only_the_order_of_the_ids(twenty_queries, cls):
    X, y, qid = twenty_queries
    base = _scores(cls(**FIFTEEN_EPOCHS), X, y, qid)
    renamed = _renamings(qid)
    for name in ("same-order", "same-order-strings"):
        np.testing.assert_array_equal(_scores(cls(**FIFTEEN_EPOCHS), X, y, renamed[name]), base)
    # another order of the ids: another validation split (early stopping on by default)
    other = _scores(cls(**FIFTEEN_EPOCHS), X, y, renamed["other-order"])
    assert np.abs(other - base).max() > 1e-3
    # without early stopping and with L-BFGS nothing is drawn per query: rounding only
    exact = {**FIFTEEN_EPOCHS, "early_stopping": False, "solver": "lbfgs"}
    np.testing.assert_allclose(
        _scores(cls(**exact), X, y, renamed["other-order"]),
        _scores(cls(**exact), X, y, qid),
        rtol=1e-9, atol=1e-9,
    )


@pytest.mark.filterwarnings("ignore:.*maximum iterations.*:sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize(
    "ranker",
    [LogRankRanker(**FIFTEEN_EPOCHS), BoltzRankRanker(**FIFTEEN_EPOCHS, early_stopping=False, solver="lbfgs")],
    ids=["LogRankRanker", "BoltzRankRanker"],
)
@pytest.mark.parametrize("renaming", ["same-order", "same-order-strings", "other-order"])
def test_sampled_rankings_change_when_the_queries_are_renamed(twenty_queries, ranker, renaming):
    X, y, qid = twenty_queries
    base = _scores(ranker, X, y, qid)
    renamed = _scores(ranker, X, y, _renamings(qid)[renaming])
    assert np.abs(renamed - base).max() > 1e-3


@pytest.mark.filterwarnings("ignore:.*maximum iterations.*:sklearn.exceptions.ConvergenceWarning")
def test_logrank_exact_sampler_ignores_the_ids(twenty_queries):
    # the closed form draws nothing: renaming changes nothing beyond rounding
    X, y, qid = twenty_queries
    ranker = LogRankRanker(**FIFTEEN_EPOCHS, sampler="exact", metric="auc")
    np.testing.assert_allclose(
        _scores(ranker, X, y, _renamings(qid)["other-order"]),
        _scores(ranker, X, y, qid),
        rtol=1e-9, atol=1e-9,
    )


@pytest.mark.filterwarnings("ignore:.*maximum iterations.*:sklearn.exceptions.ConvergenceWarning")
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


# ----------------------------------------------------------------------------
# query_uniforms on a plain qid; numbers of draws no array or memory can hold
def test_query_uniforms_on_a_plain_qid_equals_them_on_its_layout():
    qid = np.array([5, 3, 5, 3, 3, 9])
    for per_query in (False, True):
        np.testing.assert_array_equal(
            query_uniforms(qid, 0, 3, per_query=per_query),
            query_uniforms(QueryLayout(qid), 0, 3, per_query=per_query))
    with pytest.raises(TypeError, match=r"^layout must be an array of query ids"):
        query_uniforms({"qid": qid}, 0, 3)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("n_draws", [2**60, 2**63, 2**64 - 1, 10**30])
@pytest.mark.parametrize("per_query, n, what", [(False, 40, "rows"), (True, 8, "queries")])
def test_too_many_draws_is_a_value_error_naming_n_draws(eight_queries, n_draws, per_query, n, what):
    X, y, qid = eight_queries
    largest = (2**63 - 1) // (8 * n)
    with pytest.raises(ValueError, match=rf"^n_draws must be at most {largest}: {n} {what} "
                                         rf"times n_draws .* got n_draws={n_draws}\.$"):
        query_uniforms(QueryLayout(qid), 0, n_draws, per_query=per_query)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_a_few_draws_still_work(eight_queries):
    X, y, qid = eight_queries
    assert query_uniforms(QueryLayout(qid), 0, 3).shape == (40, 3)
    assert query_uniforms(qid, 0, 2, per_query=True).shape == (8, 2)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_failed_allocation_names_n_draws(monkeypatch, memory_available):
    """query_uniforms(layout, 0, 10**12) gave numpy's MemoryError (faked here)."""
    memory_available(None)  # unknown: the allocation is tried, and fails
    monkeypatch.setattr("skrank.losses._query_random._mix", fail_to_allocate)
    with pytest.raises(MemoryError, match=r"^n_draws=1000000000000 needs about 58\.2 TiB "
                                          r"for 8 rows times n_draws 64-bit draws; lower "
                                          r"n_draws\.$"):
        query_uniforms(QueryLayout(np.zeros(8, dtype=int)), 0, 10**12)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_draws_beyond_any_memory_are_refused_before_allocating():
    """1e12 draws of 8 rows take 64 TB: more than any machine has, refused at once."""
    with pytest.raises(MemoryError, match=r"^n_draws=1000000000000 needs about 58\.2 TiB "
                                          r"for 8 rows times n_draws 64-bit draws, more than "
                                          r"the [\d.]+ [KMGT]iB of memory available now; lower "
                                          r"n_draws\.$"):
        query_uniforms(QueryLayout(np.zeros(8, dtype=int)), 0, 10**12)
