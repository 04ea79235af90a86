"""The folded objective of a linear model on a loss of sample logits (LogRank's walk, BoltzRank).

Its value and gradient are those of the unfolded fit objective (scores
``X @ w``, the loss, ``X.T @ dscores``) up to rounding, for every sampled
objective, with query weights, on data whose queries vary in size (some of
one document, some without a pair); the gradient also against finite
differences; a fit through it gives the model of a fit without it.
"""

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.exceptions import ConvergenceWarning

from skrank import BoltzRankRanker, LogRankRanker
from skrank._core import _objective
from skrank._core._objective import Objective, make_objective
from skrank._core._folded_objective import FoldedObjective, fold, fold_cost
from skrank._core._networks import LinearNetwork, MLPNetwork
from skrank.losses import BoltzRankLoss, LogRankLoss
from skrank.rankers import _base
from skrank.utils import QueryLayout

LOSSES = {
    "logrank-l3-ndcg": lambda: LogRankLoss("l3", metric="ndcg@10", n_rankings=20),
    "logrank-convex-auc": lambda: LogRankLoss("convex", metric="auc", sampler="walk",
                                              n_rankings=20),
    "logrank-expgain-map": lambda: LogRankLoss("expected_gain", metric="map", n_rankings=20,
                                               walk_restart="two"),
    "logrank-mle-walk": lambda: LogRankLoss("likelihood", sampler="walk", n_rankings=20,
                                            normalize_pairs=False),
    "boltzrank-expected-gain": lambda: BoltzRankLoss(20),
    "boltzrank-likelihood": lambda: BoltzRankLoss(20, objective="likelihood"),
}


@pytest.fixture(params=sorted(LOSSES))
def loss(request):
    return LOSSES[request.param]()


@pytest.fixture
def problem():
    """30 queries of 1 to 25 documents, interleaved rows, 6 features, graded labels.

    Returns ``(X, y, qid, rows, layout)``: all rows, and the training rows
    (every row but those of three queries) grouped by query, as the fit
    loop addresses them.
    """
    rng = np.random.default_rng(0)
    sizes = rng.integers(1, 26, size=30)
    sizes[:2] = 1  # single-document queries: no pair, scale 0
    qid = rng.permutation(np.repeat(np.arange(30), sizes))
    y = rng.integers(0, 3, size=len(qid)).astype(float)
    y[qid == 2] = 0.0  # no good document: no pair
    X = rng.normal(size=(len(qid), 6))
    full = QueryLayout(qid)
    positions, layout = full.select(np.setdiff1d(np.arange(30), [5, 11, 17]))
    return X, y, qid, full.order[positions], layout


def _query_weights(layout):
    """Random query weights, one per row of ``layout`` (whose rows are grouped)."""
    return layout.expand(np.random.default_rng(1).uniform(0.0, 2.0, layout.n_queries))


def _objectives(loss, problem, *, weights=True, alpha=0.3, X=None):
    X_all, y, _, rows, layout = problem
    X = X_all if X is None else X
    sample_weight = _query_weights(layout) if weights else None
    state = loss.prepare(y[rows], layout, sample_weight=sample_weight, random_state=0)
    network = LinearNetwork(X.shape[1])
    return (Objective(network, loss, state, y[rows], X, rows, alpha),
            FoldedObjective(network, loss, state, y[rows], X, rows, alpha))


@pytest.mark.parametrize("weights", [False, True])
def test_folded_equals_unfolded(loss, problem, weights):
    unfolded, folded = _objectives(loss, problem, weights=weights)
    for seed in range(3):
        w = np.random.default_rng(seed).normal(scale=3.0, size=6)
        value, grad = folded.value_and_grad(w)
        expected_value, expected_grad = unfolded.value_and_grad(w)
        assert grad.dtype == np.float64
        assert_allclose(value, expected_value, rtol=1e-12)
        assert_allclose(grad, expected_grad, rtol=1e-10, atol=1e-12 * np.abs(expected_grad).max())
        assert_allclose(folded.value(w), expected_value, rtol=1e-12)
        assert_array_equal(folded.train_scores(w), unfolded.train_scores(w))


@pytest.mark.parametrize("batch_size", [1, 4])
def test_folded_batches_are_the_unfolded_batches(loss, problem, batch_size):
    """The same batches, including those of queries without logits only (batch_size=1)."""
    unfolded, folded = _objectives(loss, problem)
    w = np.random.default_rng(0).normal(size=6)
    n_batches = 0
    # a batch is used before the next is drawn (both reuse one buffer per epoch)
    for a, b in zip(unfolded.batches(batch_size, np.random.RandomState(3)),
                    folded.batches(batch_size, np.random.RandomState(3)), strict=True):
        n_batches += 1
        assert a.n_queries == b.n_queries
        value, grad = folded.value_and_grad(w, b)
        expected_value, expected_grad = unfolded.value_and_grad(w, a)
        assert_allclose(value, expected_value, rtol=1e-12)
        assert_allclose(grad, expected_grad, rtol=1e-10,
                        atol=1e-12 * max(np.abs(expected_grad).max(), 1.0))
    assert n_batches == -(-folded.n_queries // batch_size)


def test_folded_gradient_matches_finite_differences(loss, problem):
    _, folded = _objectives(loss, problem)
    w = np.random.default_rng(2).normal(size=6)
    _, grad = folded.value_and_grad(w)
    eps = 1e-6
    numeric = np.array([
        (folded.value(w + eps * e) - folded.value(w - eps * e)) / (2 * eps)
        for e in np.eye(6)
    ])
    assert_allclose(grad, numeric, rtol=1e-6, atol=1e-8)


def test_queries_without_logits_get_no_rows(problem):
    """Single-document queries and queries without a pair have scale 0: no rows of phi."""
    _, folded = _objectives(LogRankLoss(n_rankings=20), problem)
    live = np.count_nonzero(folded.form.scale)
    assert live < folded.n_queries  # the fixture has such queries
    assert folded.phi.shape == (live * folded.k, 6)


@pytest.mark.parametrize("sparse", [False, True])
def test_chunked_folding_equals_one_chunk_bit_for_bit(problem, sparse):
    X, y, _, rows, layout = problem
    X = sp.csr_matrix(X * (X > 0)) if sparse else X
    state = LogRankLoss(n_rankings=21).prepare(y[rows], layout, random_state=0)
    coef, queries = state.coef, np.arange(layout.n_queries)
    whole = fold(coef, layout, X, rows, queries, max_cells=10**9)
    for max_cells in (1, 100, 700):  # one query at a time (budget below any query), a few
        assert_array_equal(fold(coef, layout, X, rows, queries, max_cells=max_cells), whole)
    # each query's block is C_q^T X_q
    dense = X.toarray() if sparse else X
    for q in (0, 7, layout.n_queries - 1):
        block = slice(layout.offsets[q], layout.offsets[q + 1])
        expected = coef[block].T.astype(float) @ dense[rows[block]]
        assert_allclose(whole[q * 21:(q + 1) * 21], expected, rtol=1e-13, atol=1e-13)


def test_folding_beyond_the_memory_available_names_n_rankings(problem, memory_available):
    """phi may be a few times the samples' size, which the loss checked: it is checked too."""
    X, y, _, rows, layout = problem
    state = LogRankLoss(n_rankings=21).prepare(y[rows], layout, random_state=0)
    coef, queries = state.coef, np.arange(layout.n_queries)
    memory_available(27 * 21 * 6 * 8 - 1)  # phi is 27 queries x 21 rankings x 6 features
    with pytest.raises(MemoryError, match=r"^n_rankings=21 needs about 26\.6 KiB for the 21 rank "
                                          r"samples of each of 27 queries folded with the 6 "
                                          r"features of X, more than the 26\.6 KiB of memory "
                                          r"available now; lower n_rankings\.$"):
        fold(coef, layout, X, rows, queries)
    memory_available(27 * 21 * 6 * 8)
    assert fold(coef, layout, X, rows, queries).shape == (27 * 21, 6)


def test_float32_X_gives_float32_phi_and_a_float64_gradient(loss, problem):
    unfolded, _ = _objectives(loss, problem)
    _, folded = _objectives(loss, problem, X=problem[0].astype(np.float32))
    assert folded.phi.dtype == np.float32
    w = np.random.default_rng(0).normal(size=6)
    value, grad = folded.value_and_grad(w)
    expected_value, expected_grad = unfolded.value_and_grad(w)
    assert isinstance(value, float) and grad.dtype == np.float64
    assert_allclose(value, expected_value, rtol=1e-5)
    assert_allclose(grad, expected_grad, rtol=1e-4, atol=1e-5 * np.abs(expected_grad).max())


def test_logit_form_is_the_loss(loss, problem):
    """The loss of the logits a_q C_q^T s_q, and by the chain rule its score gradient."""
    _, y, _, rows, layout = problem
    state = loss.prepare(y[rows], layout, sample_weight=_query_weights(layout), random_state=0)
    form = loss.logit_form(state)
    s = np.random.default_rng(3).normal(size=layout.n_samples)
    coef = form.coef.astype(float)
    logits = np.array([form.scale[q] * s[a:b] @ coef[a:b] for q, (a, b)
                       in enumerate(zip(layout.offsets[:-1], layout.offsets[1:]))])
    value, dlogits = form.mean_value_and_grad(logits)
    expected_value, expected_grad = loss.sorted_value_and_grad(s, state)
    assert_allclose(value, expected_value, rtol=1e-12)
    grad = np.concatenate([coef[a:b] @ (form.scale[q] * dlogits[q]) for q, (a, b)
                           in enumerate(zip(layout.offsets[:-1], layout.offsets[1:]))])
    assert_allclose(grad, expected_grad, rtol=1e-10, atol=1e-14)
    # a subset of the queries is the mean over them
    some = np.array([3, 9, 20])
    value, _ = form.mean_value_and_grad(logits[some], some)
    _, sub = state.take(some)
    positions, _ = layout.select(some)
    assert_allclose(value, loss.sorted_value_and_grad(s[positions], sub)[0], rtol=1e-12)


def test_exact_sums_have_no_logit_form(problem):
    _, y, _, rows, layout = problem
    loss = LogRankLoss("convex", metric="auc")  # sampler="auto": the closed form
    assert loss.logit_form(loss.prepare(y[rows], layout)) is None


def test_make_objective_folds_where_it_is_cheaper(problem):
    X, y, _, rows, layout = problem
    args = (y[rows], X, rows, 0.1)
    loss = LogRankLoss(n_rankings=20)
    state = loss.prepare(y[rows], layout, random_state=0)
    folded, unfolded = fold_cost(loss.logit_form(state), X)
    # ~12 documents a query, 21 samples, 6 features: folding is cheaper
    assert folded < unfolded
    assert isinstance(make_objective(LinearNetwork(6), loss, state, *args), FoldedObjective)
    # an MLP, or the closed forms: unfolded
    assert type(make_objective(MLPNetwork(6, (3,)), loss, state, *args)) is Objective
    exact = LogRankLoss("likelihood")
    assert type(make_objective(LinearNetwork(6), exact, exact.prepare(y[rows], layout),
                               *args)) is Objective
    # many samples of short queries with many features: unfolded
    wide = np.random.default_rng(0).normal(size=(len(y), 300))
    many = LogRankLoss(n_rankings=200)
    state = many.prepare(y[rows], layout, random_state=0)
    folded, unfolded = fold_cost(many.logit_form(state), wide)
    assert folded > unfolded
    assert type(make_objective(LinearNetwork(300), many, state, y[rows], wide, rows,
                               0.1)) is Objective


def test_folded_objective_copies_no_rows_and_pickles(problem):
    """phi holds what the objective needs of X: no copy of the rows, even for L-BFGS."""
    X_all, y, _, rows, layout = problem
    loss = LogRankLoss(n_rankings=20)
    state = loss.prepare(y[rows], layout, random_state=0)
    folded = make_objective(LinearNetwork(X_all.shape[1]), loss, state, y[rows], X_all, rows,
                            0.3, full_batch=True)
    assert type(folded) is FoldedObjective
    assert folded.X is X_all and folded.rows is rows and not hasattr(folded, "X_train")
    w = np.random.default_rng(0).normal(size=6)
    clone = pickle.loads(pickle.dumps(folded))
    assert clone.value_and_grad(w)[0] == folded.value_and_grad(w)[0]


def test_folded_objective_raises_on_overflow(problem):
    _, folded = _objectives(LogRankLoss(n_rankings=20), problem)
    with np.errstate(over="ignore", invalid="ignore"):
        with pytest.raises(ValueError, match="overflowed to inf or NaN"):
            folded.value_and_grad(np.full(6, 1e307))


# ----------------------------------------------------------------------
# Through the rankers: the folded fit is the unfolded one
@pytest.fixture
def spy(monkeypatch):
    """The objective each fit hands the solvers."""
    seen = []

    def fit_runs(objective, *args, **kwargs):
        seen.append(objective)
        return original(objective, *args, **kwargs)

    original = _base.fit_runs
    monkeypatch.setattr(_base, "fit_runs", fit_runs)
    return seen


def _fit_both(monkeypatch, spy, make, X, y, qid, **fit_params):
    models = []
    for ratio, kind in ((np.inf, FoldedObjective), (0.0, Objective)):
        monkeypatch.setattr(_objective, "FOLD_RATIO", ratio)
        models.append(make().fit(X, y, qid=qid, **fit_params))
        assert type(spy[-1]) is kind
    return models


@pytest.mark.parametrize("objective, gain", [("l3", "ndcg"), ("convex", "map"),
                                             ("expected_gain", "auc")])
@pytest.mark.parametrize("case", ["grouped", "interleaved-weighted", "sparse"])
def test_logrank_fit_is_the_same_folded_or_not(monkeypatch, spy, problem, objective, gain,
                                               case):
    X, y, qid, _, _ = problem
    fit_params = {}
    if case == "grouped":
        order = np.argsort(qid, kind="stable")
        X, y, qid = X[order], y[order], qid[order]
    elif case == "interleaved-weighted":
        # the weight of each row's query (query ids are 0..29)
        fit_params["sample_weight"] = np.random.default_rng(4).uniform(0.5, 2.0, 30)[qid]
    else:
        X = sp.csr_matrix(X * (X > 0))

    def make():
        return LogRankRanker(objective=objective, metric=gain, sampler="walk", n_rankings=30,
                             alpha=0.2, tol=1e-10, max_iter=300, random_state=0)

    folded, unfolded = _fit_both(monkeypatch, spy, make, X, y, qid, **fit_params)
    assert folded.n_iter_ == unfolded.n_iter_
    assert_allclose(folded.coef_, unfolded.coef_, rtol=1e-10, atol=1e-12)
    assert_allclose(folded.loss_curve_, unfolded.loss_curve_, rtol=1e-12)


def test_boltzrank_linear_fit_is_the_same_folded_or_not(monkeypatch, spy, problem):
    """A stochastic solver: the folded batches are the unfolded ones."""
    X, y, qid, _, _ = problem

    def make():
        return BoltzRankRanker(hidden_layer_sizes=(), n_rankings=20, solver="adam",
                               batch_size=4, max_iter=5, early_stopping=False,
                               random_state=0)

    with pytest.warns(ConvergenceWarning):  # max_iter reached
        folded, unfolded = _fit_both(monkeypatch, spy, make, X, y, qid)
    assert_allclose(folded.coef_, unfolded.coef_, rtol=1e-9, atol=1e-12)
    assert_allclose(folded.loss_curve_, unfolded.loss_curve_, rtol=1e-10)


def test_default_logrank_folds_ohsumed_sized_queries(spy):
    """Queries of ~100 documents, 45 features, 101 samples: the default fit folds."""
    rng = np.random.default_rng(0)
    qid = np.repeat(np.arange(8), 100)
    X = rng.normal(size=(800, 45))
    y = (X[:, 0] + rng.normal(size=800) > 1).astype(float)
    LogRankRanker(random_state=0).fit(X, y, qid=qid)
    assert isinstance(spy[-1], FoldedObjective)
