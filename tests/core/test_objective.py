"""The objective of a fit (skrank/_core/_objective.py): batches and the rows they read.

A batch refuses a state its loss could not have prepared and has the
objective of its layout; overflows are named; the training rows are read
without a copy, or copied grouped by query when memory allows, with the same
fit either way.
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.exceptions import ConvergenceWarning

import skrank.rankers
from skrank import make_ranking
from skrank._core._network_factory import make_network
from skrank._core._networks import LinearNetwork
from skrank._core._objective import Objective
from skrank.losses import LOSSES
from skrank.utils import QueryLayout


def _listnet_objective(forty_queries, alpha=0.0, scale=1.0):
    X, y, qid = forty_queries
    loss = LOSSES["listnet"]()
    return Objective(LinearNetwork(X.shape[1]), loss, loss.prepare(y, QueryLayout(qid)), y,
                     X * scale, None, alpha)


def test_batches_refuse_a_state_their_loss_could_not_have_prepared(forty_queries):
    """The batches' states are not checked one by one: their common state is, once per epoch."""
    X, y, qid = forty_queries
    objective = _listnet_objective(forty_queries)
    objective.state = LOSSES["softrank"]().prepare(y, QueryLayout(qid))
    with pytest.raises(TypeError, match=r"^state must be the LossState returned by this "
                                        r"loss's prepare .* prepared by SoftRankLoss\.$"):
        next(objective.batches(4, np.random.RandomState(0)))


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_a_batch_has_the_objective_of_its_checked_layout(name, forty_queries):
    """Every loss on the loop's unchecked batch layouts: the objective of checked layouts."""
    from dataclasses import replace

    from skrank._core._objective import Batch

    X, y, qid = forty_queries
    full = QueryLayout(qid)
    keep = full.to_rows(full.index_in_query) < 2 + full.codes % 9  # 2 to 10 rows a query
    X, y, qid = X[keep], y[keep], qid[keep]
    perm = np.random.RandomState(0).permutation(len(qid))  # rows gathered from X
    X, y, layout = X[perm], y[perm], QueryLayout(qid[perm])
    rows = layout.order
    weights = layout.expand(np.random.RandomState(1).uniform(0.5, 2.0, layout.n_queries))
    loss = LOSSES[name]()
    state = loss.prepare(y[rows], QueryLayout(qid[perm][rows]), sample_weight=weights,
                         random_state=0)
    network = make_network(X.shape[1], (3,))
    objective = Objective(network, loss, state, y[rows], X, rows, 1e-3)
    params = network.init_params(np.random.RandomState(2))
    for batch in objective.batches(3, np.random.RandomState(3)):
        sizes = batch.state.layout.sizes  # the batch's queries numbered 0, 1, ... as qid
        checked = QueryLayout(np.repeat(np.arange(len(sizes)), sizes))
        checked = Batch(batch.X, replace(batch.state, layout=checked))
        value, grad = objective.value_and_grad(params, batch)
        expected_value, expected_grad = objective.value_and_grad(params, checked)
        assert value == expected_value
        assert_array_equal(grad, expected_grad)


@pytest.mark.filterwarnings("ignore:overflow:RuntimeWarning")
@pytest.mark.parametrize("what, alpha, scale, weight", [
    ("scores", 0.0, 1e300, 1e10),
    ("objective", 1e308, 1.0, 2.0),  # alpha / 2 * w^2 = 2e308
    ("gradient", 1.5e308, 1.0, 1.5),  # alpha * w = 2.25e308; alpha / 2 * w^2 = 1.69e308
])
@pytest.mark.parametrize("batch_size", [None, 1, 4], ids=["all", "one", "four"])
def test_a_batch_names_what_overflowed(forty_queries, what, alpha, scale, weight, batch_size):
    """Mini-batches skip the checks of what the loop built, not the divergence checks."""
    from skrank._core._solvers import DivergenceError

    objective = _listnet_objective(forty_queries, alpha, scale)
    params = np.zeros(objective.n_params)
    params[0] = weight
    batch = (None if batch_size is None
             else next(objective.batches(batch_size, np.random.RandomState(0))))
    with pytest.raises(DivergenceError, match=rf"^the {what} overflowed to inf or NaN: the "
                                              r"optimisation diverged\.$"):
        objective.value_and_grad(params, batch)
    # with a finite first weight, the same batch is finite
    params[0] = 1e-3
    value, grad = objective.value_and_grad(params, batch)
    assert np.isfinite(value) and np.isfinite(grad).all()


# ----------------------------------------------------------------------
# No copy of the training rows
@pytest.mark.parametrize("pairwise", [None, (3,)], ids=["unary", "pairwise"])
def test_train_scores_and_batches_without_a_copy_of_the_rows(rng, monkeypatch, pairwise):
    """Scattered training rows are scored (by chunks of queries) and batched from X itself."""
    from skrank._core import _objective

    qid = rng.permutation(np.repeat(np.arange(9), rng.integers(2, 12, size=9)))
    X = rng.normal(size=(len(qid), 4))
    y = rng.integers(0, 3, size=len(qid)).astype(float)
    layout = QueryLayout(qid)
    train = np.array([0, 2, 3, 5, 6, 8])
    positions, train_layout = layout.select(train)
    rows = layout.order[positions]
    network = make_network(4, (3,), pairwise_hidden_layer_sizes=pairwise)
    params = network.init_params(np.random.RandomState(0))
    loss = LOSSES["listnet"]()
    state = loss.prepare(y[rows], train_layout)

    def objective():
        return Objective(network, loss, state, y[rows], X, rows, 0.0)

    gathered = objective()
    gathered.gather()
    expected = gathered.train_scores(params)
    monkeypatch.setattr(_objective, "TRAIN_CHUNK_ROWS", 7)  # a few queries at a time
    scattered = objective()
    assert_allclose(scattered.train_scores(params), expected, rtol=1e-13)
    assert scattered._X_train is None  # no copy of the rows was kept
    for a, b in zip(scattered.batches(2, np.random.RandomState(1)),
                    gathered.batches(2, np.random.RandomState(1))):
        assert_array_equal(a.X, b.X)
        assert_array_equal(a.state.target, b.state.target)
    assert scattered._X_train is None


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
def test_scattered_rows_are_copied_grouped_when_memory_allows(rng, monkeypatch, sparse):
    """A stochastic fit copies scattered training rows once, grouped, if the copy is
    small beside the memory available; the batches are the same either way."""
    from skrank._core import _objective

    sizes = rng.integers(2, 12, size=9)
    qid = np.repeat(np.arange(9), sizes)
    X = rng.normal(size=(len(qid), 4))
    y = rng.integers(0, 3, size=len(qid)).astype(float)
    train = np.array([0, 2, 3, 5, 6, 8])
    network = make_network(4, ())
    loss = LOSSES["listnet"]()

    def objective(perm):
        Xp = X[perm]
        layout = QueryLayout(qid[perm])
        positions, train_layout = layout.select(train)
        rows = positions if layout.order is None else layout.order[positions]
        state = loss.prepare(y[perm][rows], train_layout)
        Xp = sp.csr_matrix(Xp) if sparse else Xp
        return Objective(network, loss, state, y[perm][rows], Xp, rows, 0.0)

    shuffled = rng.permutation(len(qid))
    monkeypatch.setattr(_objective, "available_memory", lambda: 10**12)  # as on a large machine
    copied = objective(shuffled)
    assert copied.gather_scattered() is True
    assert copied.rows is None and copied.X.shape == (sizes[train].sum(), 4)
    # rows grouped by query: each query's rows are one range of X, nothing to copy
    grouped = objective(np.arange(len(qid)))
    assert grouped.gather_scattered() is False and grouped.rows is not None
    # too large beside the memory available (or more than the given share): no copy
    monkeypatch.setattr(_objective, "available_memory", lambda: 1)
    kept = objective(shuffled)
    assert kept.gather_scattered() is False and kept.rows is not None
    monkeypatch.setattr(_objective, "available_memory", lambda: None)  # unknown: no copy
    assert kept.gather_scattered() is False and kept.rows is not None
    monkeypatch.setattr(_objective, "available_memory", lambda: 10**9)
    assert kept.gather_scattered(memory_share=1e-9) is False and kept.rows is not None
    assert kept.gather_scattered() is True

    for a, b in zip(copied.batches(2, np.random.RandomState(1)),
                    objective(shuffled).batches(2, np.random.RandomState(1))):
        dense = [m.toarray() if sparse else m for m in (a.X, b.X)]
        assert_array_equal(dense[0], dense[1])
        assert_array_equal(a.state.target, b.state.target)

    # a dense batch of queries that are ranges of X is copied a block per
    # query (a view for one query) where the queries are large enough: the
    # same rows as copied one by one
    assert objective(np.arange(len(qid)))._query_blocks() is None  # tiny: row by row
    monkeypatch.setattr(_objective, "BLOCK_COPY_MIN_BYTES", 1)
    for perm in (np.arange(len(qid)), shuffled):
        by_block, row_by_row = objective(perm), objective(perm)
        if perm is shuffled:
            by_block.gather()
            row_by_row.gather()
        monkeypatch.setattr(row_by_row, "_query_blocks", lambda: None)
        assert (by_block._query_blocks() is None) == sparse
        for batch_size, n_batches in ((3, 2), (1, 6)):
            compared = 0  # (a batch's buffer is reused by the next one: compare as drawn)
            for a, b in zip(by_block.batches(batch_size, np.random.RandomState(2)),
                            row_by_row.batches(batch_size, np.random.RandomState(2))):
                dense = [m.toarray() if sparse else m for m in (a.X, b.X)]
                assert_array_equal(dense[0], dense[1])
                compared += 1
            assert compared == n_batches


def test_a_fit_is_the_same_with_or_without_the_grouped_copy(monkeypatch):
    """The grouped copy changes where the rows come from, not the fit."""
    from skrank._core import _objective

    X, y, qid = make_ranking(n_queries=30, n_docs=(5, 20), n_features=4, random_state=0)
    perm = np.random.RandomState(0).permutation(len(y))
    fits, gathered = {}, []
    gather = _objective.Objective.gather
    monkeypatch.setattr(_objective.Objective, "gather",
                        lambda self: gathered.append(True) or gather(self))
    for name, memory in (("copied", 10**12), ("not copied", 0)):
        monkeypatch.setattr(_objective, "available_memory", lambda: memory)
        ranker = skrank.ListNetRanker(hidden_layer_sizes=(3,), max_iter=5, random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            fits[name] = ranker.fit(X[perm], y[perm], qid=qid[perm])
    for a, b in zip(fits["copied"].coefs_, fits["not copied"].coefs_):
        assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    assert fits["copied"].n_iter_ == fits["not copied"].n_iter_ == 5
    assert gathered == [True]  # once, in the fit that had the memory
