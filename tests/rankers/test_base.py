"""The fit every ranker shares (skrank/rankers/_base.py), run over every ranker.

Determinism, row order, sparse X, pickling, qid=None, predict and score, bad
parameters, divergence, query weights, float32, and the input fit refuses
(text, complex or ragged labels), naming it. What is particular to one ranker
is in its own file; early stopping, restarts, warm start and partial_fit in
the files of their modules (tests/core/test_stopping.py, tests/core/test_runs.py,
tests/rankers/test_continuation.py, tests/rankers/test_neural.py).
"""

import pickle
import tracemalloc
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import sklearn
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV
from sklearn.model_selection import GroupKFold as SklearnGroupKFold
from sklearn.model_selection import cross_val_score
from sklearn.pipeline import make_pipeline

import skrank
import skrank.rankers
from skrank import make_ranking, ndcg_score
from skrank._core import _folded_objective, _networks, _pairwise_network
from skrank.datasets import load_rank_sample
from skrank.losses import LOSSES, BoltzRankLoss, ListNetLoss, LogRankLoss, SoftRankLoss
from skrank.rankers import BoltzRankRanker, ListNetRanker, LogRankRanker, SoftRankRanker

from tests._inputs import (
    RAGGED,
    RANKERS,
    TEXT_LABELS,
    THREE_EPOCHS,
    TWENTY_EPOCHS,
    diverged,
    fast,
    no_warnings,
    ragged_message,
    text_message,
)
from tests._rankers import ALL_RANKERS, NDCG10, fast_ranker, fitted_params, requires


@pytest.fixture
def routing_on():
    """Switch scikit-learn's metadata routing on for one test (restored afterwards)."""
    with sklearn.config_context(enable_metadata_routing=True):
        yield


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_refit_with_another_network_drops_the_old_attributes(ranker_class, forty_queries):
    X, y, qid = forty_queries
    ranker = fast_ranker(ranker_class, hidden_layer_sizes=(3,), early_stopping=False, max_iter=2)
    ranker.fit(X, y, qid=qid).set_params(hidden_layer_sizes=()).fit(X, y, qid=qid)
    assert ranker.coef_.shape == (5,)
    assert not hasattr(ranker, "coefs_") and not hasattr(ranker, "intercepts_")
    ranker.set_params(hidden_layer_sizes=(2,)).fit(X, y, qid=qid)
    assert [c.shape for c in ranker.coefs_] == [(5, 2), (2, 1)]
    assert not hasattr(ranker, "coef_")


@pytest.mark.parametrize(
    "params, given, match",
    [
        ({}, ["X_val"], "X_val and y_val must be given together; got only X_val."),
        ({}, ["y_val"], "X_val and y_val must be given together; got only y_val."),
        ({}, ["qid_val"], "X_val and y_val must be given together; got only qid_val."),
        ({}, ["X_val", "qid_val"], "got only X_val, qid_val."),
        ({"early_stopping": False}, ["X_val", "y_val"],
         r"X_val/y_val are used for early stopping only; got them with early_stopping=False."),
        ({}, ["X_val", "y_val", "short qid_val"],
         "qid_val must have one entry per row: expected 100 entries, got 99."),
        ({}, ["narrow X_val", "y_val"],
         r"^X_val has 1 features, but .* is expecting 5 features as input \(those of X\)\.$"),
    ],
)
def test_bad_validation_set_raises(ranker_class, forty_queries, other_queries, params, given, match):
    requires(ranker_class, "early_stopping")
    X, y, qid = forty_queries
    X_val, y_val, qid_val = other_queries
    values = {
        "X_val": ("X_val", X_val), "y_val": ("y_val", y_val), "qid_val": ("qid_val", qid_val),
        "short qid_val": ("qid_val", qid_val[:-1]), "narrow X_val": ("X_val", X_val[:, :1]),
    }
    kwargs = dict(values[name] for name in given)
    with pytest.raises(ValueError, match=match):
        fast_ranker(ranker_class, **params).fit(X, y, qid=qid, **kwargs)


def test_validation_labels_the_metric_cannot_score(ranker_class, forty_queries, other_queries):
    requires(ranker_class, "early_stopping")
    X, y, qid = forty_queries
    X_val, y_val, qid_val = other_queries
    match = "cannot score the labels y_val: y_true has negative labels"
    with pytest.raises(ValueError, match=match):
        fast_ranker(ranker_class).fit(X, y, qid=qid, X_val=X_val, y_val=y_val - 5, qid_val=qid_val)


# ----------------------------------------------------------------------
# Same input, same model
@pytest.mark.parametrize("hidden", [(), (3,)], ids=str)
def test_same_random_state_same_model(ranker_class, forty_queries, hidden):
    X, y, qid = forty_queries
    a = fast_ranker(ranker_class, hidden_layer_sizes=hidden).fit(X, y, qid=qid)
    b = fast_ranker(ranker_class, hidden_layer_sizes=hidden).fit(X, y, qid=qid)
    assert_array_equal(fitted_params(a), fitted_params(b))
    assert a.loss_curve_ == b.loss_curve_
    other = fast_ranker(ranker_class, hidden_layer_sizes=hidden, random_state=1).fit(X, y, qid=qid)
    assert not np.allclose(fitted_params(other), fitted_params(a))


@pytest.mark.parametrize("hidden", [(), (3,)], ids=str)
def test_row_order_does_not_matter(ranker_class, forty_queries, hidden):
    """Rows are grouped by a stable sort, so shuffled rows give the same model."""
    X, y, qid = forty_queries
    perm = np.random.RandomState(1).permutation(len(y))
    if ranker_class()._make_loss().sampling:
        # a sampling loss draws per place in the query: keep each query's row
        # order and interleave the queries (reordering a query draws anew)
        slots = qid[perm]  # the query of each new place; its rows fill them in order
        perm = np.empty(len(y), dtype=int)
        for q in np.unique(qid):
            perm[slots == q] = np.flatnonzero(qid == q)
    a = fast_ranker(ranker_class, hidden_layer_sizes=hidden).fit(X, y, qid=qid)
    b = fast_ranker(ranker_class, hidden_layer_sizes=hidden).fit(X[perm], y[perm], qid=qid[perm])
    assert a.n_iter_ == b.n_iter_
    # the order of the rows inside a query changes sums at the rounding level only
    assert_allclose(fitted_params(b), fitted_params(a), rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("hidden", [(), (3,)], ids=str)
def test_sparse_X_gives_the_dense_model(ranker_class, forty_queries, hidden):
    X, y, qid = forty_queries
    X = X * (np.random.RandomState(0).random_sample(X.shape) < 0.6)
    dense = fast_ranker(ranker_class, hidden_layer_sizes=hidden).fit(X, y, qid=qid)
    sparse = fast_ranker(ranker_class, hidden_layer_sizes=hidden).fit(sp.csr_matrix(X), y, qid=qid)
    assert sparse.n_iter_ == dense.n_iter_
    assert_allclose(fitted_params(sparse), fitted_params(dense), rtol=1e-10, atol=1e-13)
    assert_allclose(sparse.predict(sp.csr_matrix(X)), dense.predict(X), rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("hidden", [(), (3,)], ids=str)
def test_pickle_round_trip(ranker_class, forty_queries, hidden):
    X, y, qid = forty_queries
    ranker = fast_ranker(ranker_class, hidden_layer_sizes=hidden).fit(X, y, qid=qid)
    clone = pickle.loads(pickle.dumps(ranker))
    assert_array_equal(clone.predict(X), ranker.predict(X))
    assert clone.get_params() == ranker.get_params()


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_qid_none_is_one_query(ranker_class, forty_queries):
    X, y, qid = forty_queries
    rows = qid == qid[0]
    a = fast_ranker(ranker_class, early_stopping=False, max_iter=10).fit(X[rows], y[rows])
    b = fast_ranker(ranker_class, early_stopping=False, max_iter=10).fit(X[rows], y[rows],
                                                                   qid=qid[rows])
    assert_array_equal(a.predict(X), b.predict(X))
    assert a.score(X[rows], y[rows]) == b.score(X[rows], y[rows], qid=qid[rows])


# ----------------------------------------------------------------------
# Predict and score
@pytest.fixture(scope="module")
def fitted(forty_queries):
    """One fitted ranker of each class (scoring only; do not refit)."""
    X, y, qid = forty_queries
    return {cls: fast_ranker(cls).fit(X, y, qid=qid) for cls in ALL_RANKERS}


def test_predict_checks_qid_and_scores_rows_independently(ranker_class, forty_queries, fitted):
    X, y, qid = forty_queries
    ranker = fitted[ranker_class]
    with pytest.raises(ValueError, match="qid must have one entry per row: expected 400"):
        ranker.predict(X, qid=qid[:-1])
    assert_array_equal(ranker.predict(X, qid=qid), ranker.predict(X))
    assert_array_equal(ranker.predict(X[:7]), ranker.predict(X)[:7])


def test_score_is_mean_ndcg_at_10(ranker_class, forty_queries, fitted):
    X, y, qid = forty_queries
    ranker = fitted[ranker_class]
    assert ranker.score(X, y, qid=qid) == pytest.approx(
        np.mean(ndcg_score(y, ranker.predict(X), qid=qid, k=10, average=False)), rel=1e-12
    )


def test_score_weighs_queries_by_sample_weight(ranker_class, forty_queries, fitted):
    X, y, qid = forty_queries
    ranker = fitted[ranker_class]
    perm = np.random.RandomState(2).permutation(len(y))  # rows of a query need not be together
    X, y, qid = X[perm], y[perm], qid[perm]
    unique = np.unique(qid)
    query_weight = 1.0 + (unique % 4)
    sample_weight = query_weight[np.searchsorted(unique, qid)]
    per_query = ndcg_score(y, ranker.predict(X), qid=qid, k=10, average=False)
    expected = np.sum(query_weight * per_query) / np.sum(query_weight)
    assert expected != pytest.approx(np.mean(per_query), rel=1e-6)
    assert ranker.score(X, y, qid=qid, sample_weight=sample_weight) == pytest.approx(
        expected, rel=1e-12
    )
    varying = sample_weight.copy()
    varying[np.flatnonzero(qid == unique[3])[0]] += 1.0
    with pytest.raises(ValueError, match="must be the same for all rows of a query"):
        ranker.score(X, y, qid=qid, sample_weight=varying)


def test_cross_validation_routes_qid_by_default(ranker_class, forty_queries, routing_on):
    """With routing on, fit and score request qid without set_*_request calls."""
    X, y, qid = forty_queries
    ranker = fast_ranker(ranker_class, max_iter=10)
    routing = ranker.get_metadata_routing()
    assert routing.fit.requests["qid"] is True
    assert routing.score.requests["qid"] is True
    # requested only by rankers that may score the documents of a query jointly
    assert routing.predict.requests["qid"] is (ranker_class is skrank.rankers.BoltzRankRanker)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        scores = cross_val_score(ranker, X, y, cv=SklearnGroupKFold(3), scoring=NDCG10,
                                 params={"qid": qid, "groups": qid})
        manual = []
        for train, test in SklearnGroupKFold(3).split(X, y, groups=qid):
            est = sklearn.clone(ranker).fit(X[train], y[train], qid=qid[train])
            manual.append(ndcg_score(y[test], est.predict(X[test]), qid=qid[test], k=10))
    assert_allclose(scores, manual, rtol=1e-12)


# ----------------------------------------------------------------------
# Bad input
@pytest.mark.parametrize(
    "params, match",
    [
        ({"hidden_layer_sizes": (3, 0)},
         r"hidden_layer_sizes must hold positive integers; got \(3, 0\)"),
        ({"scoring": "ndcg@x"}, "scoring='ndcg@x' is not a ranking scorer name"),
        ({"learning_rate_init": 0.0}, "'learning_rate_init' parameter"),
        ({"learning_rate_decay": 1.5}, "'learning_rate_decay' parameter"),
        ({"restarts": "mean"}, "'restarts' parameter"),
        ({"n_init": 0}, "'n_init' parameter"),
    ],
)
def test_bad_parameters_raise(ranker_class, forty_queries, params, match):
    requires(ranker_class, *params)
    X, y, qid = forty_queries
    with pytest.raises(ValueError, match=match):
        ranker_class(**params).fit(X, y, qid=qid)


def test_bad_qid_raises(ranker_class, forty_queries):
    X, y, qid = forty_queries
    with pytest.raises(ValueError, match="qid must have one entry per row: expected 400"):
        ranker_class().fit(X, y, qid=qid[:-1])


@pytest.mark.filterwarnings("ignore:overflow:RuntimeWarning")
@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")
def test_divergence_raises_a_clear_error(ranker_class, forty_queries):
    """A huge step blows the weights up (through the L2 penalty too) until the scores overflow."""
    X, y, qid = forty_queries
    ranker = fast_ranker(ranker_class, solver="sgd", learning_rate_init=1e8, momentum=1.0,
                   hidden_layer_sizes=(5, 5), activation="relu", max_iter=50,
                   n_iter_no_change=50)  # patience must not stop it first
    with pytest.raises(ValueError, match=r"overflowed to inf or NaN: the optimisation diverged\. "
                                         r"Likely cause: the step size \(learning_rate_init="
                                         r"100000000\.0 with solver='sgd'\): lower "
                                         r"learning_rate_init\.$"):
        ranker.fit(X, y, qid=qid)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_extreme_features_stay_finite(ranker_class, forty_queries):
    """Features 1e4 times larger: ListNet's and SoftRank's scores reach 1e4 and beyond.

    A fit that returns has finite scores and losses (the loop raises
    otherwise), so what is checked is that the loss and its gradient stay
    useful out there: the training loss goes down, and the model ranks the
    training queries better than chance (all scores tied: the mean NDCG over
    random orders, 0.60; random scores give 0.60 +- 0.02) by a margin.
    """
    X, y, qid = forty_queries
    ranker = fast_ranker(ranker_class, learning_rate_init=1.0, max_iter=5).fit(X * 1e4, y, qid=qid)
    scores = ranker.predict(X * 1e4)
    assert np.isfinite(scores).all()
    assert np.isfinite(ranker.loss_curve_).all()
    assert ranker.loss_curve_[-1] < ranker.loss_curve_[0], ranker.loss_curve_
    chance = ndcg_score(y, np.zeros_like(scores), qid=qid, k=10)  # about 0.60
    ndcg = ndcg_score(y, scores, qid=qid, k=10)
    assert ndcg > chance + 0.08, (ndcg, chance)


def test_each_ranker_builds_the_loss_of_its_algorithm():
    """A ranker looks its loss up in LOSSES by name: it gets the loss of its algorithm.

    That every loss class is registered is
    tests/losses/test_init.py's test_every_registered_loss_is_public.
    """
    expected = {ListNetRanker: ListNetLoss, SoftRankRanker: SoftRankLoss,
                BoltzRankRanker: BoltzRankLoss, LogRankRanker: LogRankLoss}
    assert set(expected.values()) == set(LOSSES.values())  # every loss has its ranker
    for ranker_class, loss_class in expected.items():
        assert type(ranker_class()._make_loss()) is loss_class, ranker_class.__name__


# ----------------------------------------------------------------------------
# Query weights: sample_weight in fit, as repeated queries
WEIGHT_RANKERS = {
    "listnet": lambda: ListNetRanker(early_stopping=False, solver="lbfgs", max_iter=60,
                                     random_state=0),
    # closed forms: a repeated query has the same loss as the original (a
    # sampling loss draws other rankings for it, so only its expectation agrees)
    "logrank-convex-auc": lambda: LogRankRanker(objective="convex", metric="auc",
                                                max_iter=200, random_state=0),
    "logrank-mle": lambda: LogRankRanker(objective="likelihood", max_iter=200, random_state=0),
}


def _repeated_queries(X, y, qid, weights, unique):
    """Each query repeated as often as its weight, under new ids."""
    rows, new_qid = [], []
    for q, w in zip(unique, weights):
        for r in range(w):
            idx = np.flatnonzero(qid == q)
            rows.append(idx)
            new_qid.append(np.full(len(idx), 100 * q + r))
    rows = np.concatenate(rows)
    return X[rows], y[rows], np.concatenate(new_qid)


def _fit_quiet(make, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return make().fit(*args, **kwargs)


@pytest.mark.parametrize("name", WEIGHT_RANKERS)
def test_integer_query_weights_equal_repeated_queries(weighted_queries, name):
    X, y, qid, weights, sample_weight, unique = weighted_queries
    weighted = _fit_quiet(WEIGHT_RANKERS[name], X, y, qid=qid, sample_weight=sample_weight)
    repeated = _fit_quiet(WEIGHT_RANKERS[name], *_repeated_queries(X, y, qid, weights, unique)[:2],
                    qid=_repeated_queries(X, y, qid, weights, unique)[2])
    np.testing.assert_allclose(weighted.coef_, repeated.coef_, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", WEIGHT_RANKERS)
def test_unit_weights_change_nothing(weighted_queries, name):
    X, y, qid, *_ = weighted_queries
    plain = _fit_quiet(WEIGHT_RANKERS[name], X, y, qid=qid)
    ones = _fit_quiet(WEIGHT_RANKERS[name], X, y, qid=qid, sample_weight=np.ones(len(y)))
    np.testing.assert_allclose(ones.coef_, plain.coef_, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("make", [
    lambda: ListNetRanker(max_iter=2, random_state=0),
    lambda: SoftRankRanker(max_iter=2, random_state=0),
    lambda: BoltzRankRanker(n_rankings=5, n_init=1, max_iter=2, random_state=0),
    lambda: LogRankRanker(n_rankings=6, max_iter=2, random_state=0),
], ids=["ListNet", "SoftRank", "BoltzRank", "LogRank"])
def test_fit_gives_the_weights_of_its_training_rows_to_prepare(weighted_queries, make, monkeypatch):
    """The weights reach the loss through ``prepare``; the ranker writes nothing into the state.

    With early stopping, prepare sees only the training queries' rows, and their weights.
    """
    X, y, qid, weights, sample_weight, unique = weighted_queries
    ranker = make()
    cls = type(ranker._make_loss())
    prepare, calls = cls.prepare, []

    def spy(self, y, layout, **kwargs):
        state = prepare(self, y, layout, **kwargs)
        calls.append((layout, kwargs, state, {k: v.copy() for k, v in state.arrays().items()}))
        return state

    monkeypatch.setattr(cls, "prepare", spy)
    _fit_quiet(lambda: ranker, X, y, qid=qid, sample_weight=sample_weight)
    ((layout, kwargs, state, prepared),) = calls
    weight_of = dict(zip(unique, weights))
    np.testing.assert_array_equal(kwargs["sample_weight"], [weight_of[q] for q in layout.qid])
    assert state.arrays().keys() == prepared.keys()
    for key, value in prepared.items():
        np.testing.assert_array_equal(getattr(state, key), value)


def test_weights_varying_within_a_query_are_refused(weighted_queries):
    X, y, qid, *_ = weighted_queries
    sample_weight = np.arange(len(y), dtype=float)
    with pytest.raises(ValueError, match="sample_weight .*same for all rows of a query"):
        ListNetRanker().fit(X, y, qid=qid, sample_weight=sample_weight)


@pytest.mark.parametrize("bad, match", [
    (-1.0, "non-negative"), (np.nan, "finite"), (0.0, "zero for every query"),
])
def test_bad_weights_are_refused(weighted_queries, bad, match):
    X, y, qid, *_ = weighted_queries
    with pytest.raises(ValueError, match=match):
        ListNetRanker().fit(X, y, qid=qid, sample_weight=np.full(len(y), bad))


def test_boltzrank_and_softrank_accept_query_weights(weighted_queries):
    X, y, qid, _, sample_weight, _ = weighted_queries
    for make in (lambda: BoltzRankRanker(n_init=1, max_iter=3, random_state=0),
                 lambda: SoftRankRanker(max_iter=3, early_stopping=False, random_state=0)):
        plain = _fit_quiet(make, X, y, qid=qid)
        weighted = _fit_quiet(make, X, y, qid=qid, sample_weight=sample_weight)
        assert not np.allclose(weighted.predict(X), plain.predict(X))


# ----------------------------------------------------------------------------
# float32 X: the fit keeps X's dtype
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


# ----------------------------------------------------------------------------
# Long queries within a memory budget
#: Peak bytes traced by a fit on two queries of 3,000 documents (X is 0.24 MB):
#: the per-fit state and the fixed-size work buffers of the losses and the
#: pairwise potential. SoftRank's half-pair arrays alone would take 200 MB.
BUDGET = 100 * 2**20


LONG_QUERY_RANKERS = {
    "ListNet": ListNetRanker(max_iter=1),
    "SoftRank": SoftRankRanker(max_iter=1),
    "BoltzRank": BoltzRankRanker(n_init=1, max_iter=1),
    "BoltzRank2": BoltzRankRanker(n_init=1, max_iter=1, hidden_layer_sizes=(3,),
                                  pairwise_hidden_layer_sizes=(5,)),
    "LogRank": LogRankRanker(max_iter=1),
}


@pytest.mark.parametrize("name", sorted(LONG_QUERY_RANKERS))
def test_queries_of_3000_documents_fit_within_a_memory_budget(name):
    rng = np.random.default_rng(0)
    n_docs, n_queries = 3000, 2
    X = rng.standard_normal((n_docs * n_queries, 5))
    y = (X[:, 0] + rng.standard_normal(len(X)) > 1).astype(float) + (X[:, 1] > 1.5)
    qid = rng.permutation(np.repeat([4, 9], n_docs))
    ranker = LONG_QUERY_RANKERS[name].set_params(random_state=0)
    tracemalloc.start()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # one epoch: not converged
            ranker.fit(X, y, qid=qid)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    scores = ranker.predict(X, qid=qid)
    assert np.isfinite(scores).all() and np.ptp(scores) > 0
    assert peak < BUDGET, f"{name} traced {peak / 2**20:.0f} MiB"


# ----------------------------------------------------------------------------
# Labels, X and sample_weight that fit refuses, naming them
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("kind", sorted(TEXT_LABELS))
@pytest.mark.parametrize("cls", RANKERS, ids=lambda c: c.__name__)
def test_text_labels_are_refused_by_fit_and_score(cls, kind, six_queries):
    X, y, qid = six_queries
    to_text, got = TEXT_LABELS[kind]
    with pytest.raises(TypeError, match=text_message("y", got)):
        fast(cls).fit(X, to_text(y), qid=qid)
    ranker = fast(cls).fit(X, y, qid=qid)
    with pytest.raises(TypeError, match=text_message("y", got)):
        ranker.score(X, to_text(y), qid=qid)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_text_labels_of_the_validation_set_are_refused(six_queries):
    X, y, qid = six_queries
    to_text, got = TEXT_LABELS["str"]
    with pytest.raises(TypeError, match=text_message("y_val", got)):
        fast(ListNetRanker).fit(X, y, qid=qid, X_val=X, y_val=to_text(y), qid_val=qid)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("cls", RANKERS, ids=lambda c: c.__name__)
def test_object_labels_of_numbers_still_fit(cls, six_queries):
    X, y, qid = six_queries
    as_objects = np.array([int(v) for v in y], dtype=object)
    expected = fast(cls).fit(X, y, qid=qid)
    got = fast(cls).fit(X, as_objects, qid=qid)
    np.testing.assert_array_equal(got.predict(X, qid=qid), expected.predict(X, qid=qid))
    assert got.score(X, as_objects, qid=qid) == expected.score(X, y, qid=qid)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_complex_labels_are_refused_by_fit(six_queries):
    X, y, qid = six_queries
    with pytest.raises(ValueError, match=r"Complex data not supported: y must be real"):
        fast(ListNetRanker).fit(X, y + 0j, qid=qid)


@pytest.mark.parametrize("cls", RANKERS)
def test_ragged_labels_are_named_by_fit(cls):
    with pytest.raises(ValueError, match=ragged_message("y")):
        fast(cls).fit(np.ones((2, 2)), RAGGED, qid=[0, 0])


def test_ragged_validation_labels_are_named_by_fit(six_queries):
    X, y, qid = six_queries
    with pytest.raises(ValueError, match=ragged_message("y_val")):
        fast(ListNetRanker, early_stopping=True).fit(
            X, y, qid=qid, X_val=X[:2], y_val=RAGGED, qid_val=[0, 0])


def test_ragged_sample_weight_is_named_by_fit(six_queries):
    X, y, qid = six_queries
    weight = [[1]] + [[1, 2]] * (len(y) - 1)
    with pytest.raises(ValueError, match=r"^sample_weight must be a 1-D array of numbers; "
                                         r"got a ragged nested sequence \(\[\[1\], \[1, 2\]"):
        fast(ListNetRanker).fit(X, y, qid=qid, sample_weight=weight)


# ----------------------------------------------------------------------------
# A diverged fit names the likely cause among the ranker's own settings; the
# validation set's errors name X_val, y_val, qid_val
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("alpha, weight, blamed", [
    (1e300, None, r"the penalty \(alpha=1e\+300\): an extreme strength .*: lower alpha\.$"),
    ("auto", 1e-300, r"the penalty alpha/2 \|\|w\|\|\^2: alpha='auto' with sample_weight "
                     r"summing to 8e-300 over the training queries gives it the strength 2 / "
                     r"\(total query weight\) = 2\.5e\+299, an extreme strength .*: pass a "
                     r"smaller alpha, or rescale sample_weight \(.*\)\.$"),
])
def test_a_logrank_divergence_blames_alpha_and_the_scale_of_sample_weight(alpha, weight, blamed, eight_queries):
    X, y, qid = eight_queries
    sample_weight = None if weight is None else np.full(40, weight)
    with diverged(LogRankRanker, rf"Likely cause: {blamed}") as info:
        LogRankRanker(max_iter=3, alpha=alpha, random_state=0).fit(X, y, qid=qid, sample_weight=sample_weight)
    # LogRank has neither a learning rate nor a choice of solver
    assert "learning_rate_init" not in str(info.value)
    assert "solver=" not in str(info.value)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("cls, params", [
    # a fixed seed: from about 1 start in 80, L-BFGS's first step lands where
    # every sampled ranking's logit gap saturates, the fit converges without
    # overflowing (to a model that ranks as the scaled fit does) and there is
    # no divergence to blame
    (LogRankRanker, dict(max_iter=3, random_state=0)),
    (ListNetRanker, dict(solver="lbfgs", **THREE_EPOCHS)),
    (ListNetRanker, THREE_EPOCHS),
    (BoltzRankRanker, dict(n_rankings=5, n_init=1, hidden_layer_sizes=(), **THREE_EPOCHS)),
], ids=["LogRank", "ListNet-lbfgs", "ListNet-adam", "BoltzRank-adam"])
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_a_divergence_on_huge_features_is_blamed_on_the_scale_of_X(cls, params, sparse, eight_queries):
    import scipy.sparse as sp

    X, y, qid = eight_queries
    X = X * 1e160
    top = f"{np.abs(X).max():.3g}".replace("+", r"\+")
    with diverged(cls, rf"Likely cause: the scale of X \(its largest absolute value is "
                        rf"{top}\): scale the features, e\.g\. with StandardScaler or skrank's "
                        r"QueryNormalizer\.$") as info:
        cls(**params).fit(sp.csr_matrix(X) if sparse else X, y, qid=qid)
    assert "learning_rate_init" not in str(info.value)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("solver", ["lbfgs", "sgd", "adam"])
def test_a_divergence_with_an_extreme_alpha_is_blamed_on_the_penalty(solver, eight_queries):
    X, y, qid = eight_queries
    with diverged(ListNetRanker, r"Likely cause: the penalty \(alpha=1e\+300\): an extreme "
                                  r"strength .*: lower alpha\.$") as info:
        ListNetRanker(solver=solver, alpha=1e300, **THREE_EPOCHS).fit(X, y, qid=qid)
    assert "learning_rate_init" not in str(info.value)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_a_divergence_with_a_huge_step_is_blamed_on_the_learning_rate_of_sgd(eight_queries):
    X, y, qid = eight_queries
    with diverged(ListNetRanker, r"Likely cause: the step size \(learning_rate_init=1e\+200 "
                                  r"with solver='sgd'\): lower learning_rate_init\.$"):
        ListNetRanker(solver="sgd", learning_rate_init=1e200, **THREE_EPOCHS).fit(X, y, qid=qid)


def _with_nan(values, index):
    values = np.array(values, dtype=np.float64)
    values[index] = np.nan
    return values


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("X_val, y_val, qid_val, message", [
    (None, "short", None, r"^y_val must have one label per row of X_val \(40\); got 39\.$"),
    (None, "nan", None, r"^Input y_val contains NaN\.$"),
    (None, "inf", None, r"^Input y_val contains infinity"),
    (None, "2d", None, r"^y_val must be a 1-D array of labels; got shape \(40, 2\)\.$"),
    ("nan", None, None, r"^Input X_val contains NaN"),
    ("empty", "empty", "empty", r"^X_val: Found array with 0 sample\(s\) \(shape=\(0, 3\)\)"),
    ("narrow", None, None, r"^X_val has 2 features, but ListNetRanker is expecting 3 features "
                           r"as input \(those of X\)\.$"),
    ("1d", None, None, r"^X_val: Expected 2D array, got 1D array instead"),
    (None, None, "short", r"^qid_val must have one entry per row: expected 40 entries, got 39"),
], ids=["y_val-short", "y_val-nan", "y_val-inf", "y_val-2d", "X_val-nan", "empty", "X_val-narrow",
        "X_val-1d", "qid_val-short"])
def test_validation_set_errors_name_the_validation_set(X_val, y_val, qid_val, message, eight_queries):
    X, y, qid = eight_queries
    X_val = {None: X, "nan": _with_nan(X, (0, 0)), "empty": X[:0], "narrow": X[:, :2],
             "1d": X[:, 0]}[X_val]
    y_val = {None: y, "short": y[:-1], "nan": _with_nan(y, 0), "empty": y[:0],
             "inf": np.where(y > 0, np.inf, 0.0), "2d": np.c_[y, y]}[y_val]
    qid_val = {None: qid, "short": qid[:-1], "empty": qid[:0]}[qid_val]
    with pytest.raises(ValueError, match=message):
        ListNetRanker(max_iter=2).fit(X, y, qid=qid, X_val=X_val, y_val=y_val, qid_val=qid_val)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_a_good_validation_set_still_fits(eight_queries):
    X, y, qid = eight_queries
    ranker = ListNetRanker(max_iter=2, random_state=0)
    ranker.fit(X, y, qid=qid, X_val=X, y_val=list(y.astype(object)), qid_val=qid)
    assert len(ranker.validation_scores_) == 2


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_huge_but_finite_validation_features_do_not_stop_the_fit(eight_queries):
    """Infinite validation scores still rank; only NaN ones are an error."""
    X, y, qid = eight_queries
    model = ListNetRanker(**THREE_EPOCHS).fit(X, y, qid=qid)
    X_val = X.copy()
    X_val[0] = np.sign(model.coef_) * 1.7e308
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        fitted = ListNetRanker(max_iter=3, random_state=0).fit(
            X, y, qid=qid, X_val=X_val, y_val=y, qid_val=qid
        )
    assert np.isfinite(fitted.coef_).all()


# ----------------------------------------------------------------------------
# qid=None, and nothing to learn: a warning or an error, not a wrong number
@pytest.fixture(scope="module")
def fitted_listnet(thirty_queries):
    X, y, qid = thirty_queries
    return ListNetRanker(**TWENTY_EPOCHS).fit(X, y, qid=qid)


def test_score_without_qid_after_multi_query_fit_raises(thirty_queries, fitted_listnet):
    X, y, qid = thirty_queries
    with pytest.raises(ValueError, match="fitted on 30 queries.*qid=None"):
        fitted_listnet.score(X, y)
    assert fitted_listnet.score(X, y, qid=qid) == pytest.approx(
        ndcg_score(y, fitted_listnet.predict(X), qid=qid, k=10))


def test_score_without_qid_after_one_query_fit_works(thirty_queries):
    X, y, _ = thirty_queries
    X, y = X[:10], y[:10]
    ranker = ListNetRanker(early_stopping=False, **TWENTY_EPOCHS).fit(X, y)
    assert ranker.score(X, y) == pytest.approx(
        ndcg_score(y, ranker.predict(X), qid=np.zeros(len(y)), k=10))


def test_pipeline_score_without_qid_raises_with_routing_off(thirty_queries):
    X, y, qid = thirty_queries
    pipe = make_pipeline(ListNetRanker(**TWENTY_EPOCHS)).fit(X, y, listnetranker__qid=qid)
    with pytest.raises(ValueError, match="qid"):
        pipe.score(X, y)


def test_grid_search_default_scoring_is_nan_and_warns_with_routing_off(thirty_queries):
    # scikit-learn catches the score's error: NaN scores and a warning, not
    # the one-merged-query NDCG; error_score="raise" shows the error
    X, y, qid = thirty_queries
    search = GridSearchCV(ListNetRanker(**TWENTY_EPOCHS), {"alpha": [1e-4]}, cv=SklearnGroupKFold(3))
    with pytest.warns(UserWarning, match="qid"):
        search.fit(X, y, groups=qid, qid=qid)
    assert np.isnan(search.best_score_)
    search.set_params(error_score="raise")
    with pytest.raises(ValueError, match="qid=None"):
        search.fit(X, y, groups=qid, qid=qid)


#: The rows from which fit's docstring says ``qid=None`` warns ("more than 100").
IMPLICIT_QUERY_MAX_ROWS = 100


def test_fit_without_qid_on_many_rows_warns(thirty_queries):
    X, y, _ = thirty_queries
    assert len(y) > IMPLICIT_QUERY_MAX_ROWS
    with pytest.warns(UserWarning, match=f"all {len(y)} rows are treated as ONE query"):
        ListNetRanker(early_stopping=False, **TWENTY_EPOCHS).fit(X, y)


def test_cross_val_score_without_routing_warns_at_fit(thirty_queries):
    X, y, qid = thirty_queries
    with pytest.warns(UserWarning, match="qid=None"):
        cross_val_score(ListNetRanker(early_stopping=False, **TWENTY_EPOCHS), X, y, groups=qid,
                        cv=SklearnGroupKFold(3))


def test_fit_without_qid_on_few_rows_is_quiet(thirty_queries):
    X, y, _ = thirty_queries
    n = IMPLICIT_QUERY_MAX_ROWS
    context = no_warnings()
    try:
        ListNetRanker(early_stopping=False, max_iter=500, random_state=0).fit(X[:n], y[:n])
    finally:
        context.__exit__(None, None, None)


@pytest.mark.parametrize("case", ["own_query", "equal_labels"])
def test_nothing_to_learn_warns(thirty_queries, case):
    X, y, qid = thirty_queries
    if case == "own_query":
        qid = np.arange(len(y))
    else:
        y = np.ones_like(y)
    with pytest.warns(UserWarning, match="no query has two documents of different relevance"):
        ListNetRanker(early_stopping=False, **TWENTY_EPOCHS).fit(X, y, qid=qid)
