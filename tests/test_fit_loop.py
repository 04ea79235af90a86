"""The fit loop every ranker shares: early stopping, restarts, warm start, solvers, I/O.

Each test runs over every ranker of :mod:`skrank.rankers`; what is particular
to one loss stays in that ranker's own test module.
"""

import pickle
import warnings

import joblib
import numpy as np
import pytest
import scipy.sparse as sp
import sklearn
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GroupKFold, cross_val_score

import skrank.rankers
from skrank import get_ranking_scorer, make_ranking, ndcg_score
from skrank._core._network_factory import make_network, restore_network
from skrank._core._objective import Objective
from skrank._core._runs import RunResult, average_runs, fit_runs
from skrank._core._stopping import UnscorableValidationError
from skrank._core._networks import LinearNetwork
from skrank.losses import LOSSES
from skrank.rankers import _base
from skrank.utils import QueryLayout

RANKERS = [getattr(skrank.rankers, name) for name in skrank.rankers.__all__]
N_QUERIES = 40
NDCG10 = get_ranking_scorer("ndcg@10")


@pytest.fixture(params=RANKERS, ids=lambda cls: cls.__name__)
def ranker_class(request):
    return request.param


@pytest.fixture(scope="module")
def data():
    """40 queries of 10 documents; noise=0.5 keeps the validation NDCG below 1 all along."""
    return make_ranking(n_queries=N_QUERIES, n_docs=10, n_features=5, noise=0.5, random_state=0)


@pytest.fixture(scope="module")
def other_queries():
    """10 more queries from another seed (an explicit validation set)."""
    return make_ranking(n_queries=10, n_docs=10, n_features=5, noise=0.5, random_state=1)


@pytest.fixture
def captured(monkeypatch):
    """What the front end hands the fit loop (objective, initial vectors) and the runs it gets."""
    record = {}

    def spy(objective, solver, stopping, starts, seeds, **kwargs):
        runs = fit_runs(objective, solver, stopping, starts, seeds, **kwargs)
        record.update(objective=objective, starts=[s.copy() for s in starts], runs=runs)
        return runs

    monkeypatch.setattr(_base, "fit_runs", spy)
    return record


@pytest.fixture
def metadata_routing():
    """Switch scikit-learn's metadata routing on for one test (restored afterwards)."""
    with sklearn.config_context(enable_metadata_routing=True):
        yield


def _fast(ranker_class, **params):
    """A ranker with settings that fit the 40 queries in a fraction of a second.

    One initialisation unless asked for more (BoltzRank's default is 10). A
    test that sets a parameter the ranker does not have (LogRank has no
    early stopping and no stochastic solver) does not apply to it: skipped.
    """
    accepted = ranker_class().get_params()
    # a ranker without these parameters always does what they ask for
    params = {k: v for k, v in params.items()
              if k in accepted or _ALWAYS.get(k, object()) != v}
    _requires(ranker_class, *params)
    defaults = {"random_state": 0, "max_iter": 30, "n_iter_no_change": 3, "n_init": 1}
    return ranker_class(**{**{k: v for k, v in defaults.items() if k in accepted}, **params})


#: What a ranker without the parameter always does (LogRank: L-BFGS, no
#: early stopping).
_ALWAYS = {"early_stopping": False, "solver": "lbfgs"}


def _requires(ranker_class, *names):
    """Skip a test about parameters (e.g. early stopping) the ranker does not have."""
    missing = sorted(set(names) - set(ranker_class().get_params()))
    if missing:
        pytest.skip(f"{ranker_class.__name__} has no {', '.join(missing)}")


def _fit_quietly(ranker, *args, **kwargs):
    """Fit, ignoring the ConvergenceWarning of runs that stop at max_iter on purpose."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return ranker.fit(*args, **kwargs)


def _params(ranker):
    """The fitted weights as the fit loop's flat vector."""
    return restore_network(vars(ranker))[1]


def _validation_rows(qid, random_state=0, fraction=0.2):
    """Rows of the queries the front end holds out with an int ``random_state``.

    The front end's RandomState first draws the seed of the loss, then a
    permutation of the query numbers; the first ``round(fraction *
    n_queries)`` are held out.
    """
    rng = np.random.RandomState(random_state)
    rng.randint(np.iinfo(np.int32).max)  # the loss seed
    unique = np.unique(qid)
    held_out = np.sort(rng.permutation(len(unique))[: round(fraction * len(unique))])
    return np.isin(qid, unique[held_out])


def _patience_stop(scores, tol, n_iter_no_change):
    """Epoch (1-based) at which the patience rule stops a run with these validation scores."""
    best, no_change = -np.inf, 0
    for epoch, score in enumerate(scores, 1):
        no_change = 0 if score > best + tol else no_change + 1
        best = max(best, score)
        if no_change >= n_iter_no_change:
            return epoch
    return None


# ----------------------------------------------------------------------
# Early stopping
# (seeds whose last epoch is not the best one, so that re-scoring tells them apart)
@pytest.mark.parametrize("solver, random_state", [("adam", 0), ("lbfgs", 6)])
def test_early_stopping_keeps_the_best_epoch(ranker_class, data, solver, random_state):
    X, y, qid = data
    ranker = _fast(ranker_class, solver=solver, max_iter=200, n_iter_no_change=2,
                   random_state=random_state)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)  # the patience rule stops it
        ranker.fit(X, y, qid=qid)
    scores = ranker.validation_scores_
    # one score per epoch (per L-BFGS iteration), and the run stopped exactly
    # when n_iter_no_change epochs in a row did not improve on the best by tol
    assert len(scores) == ranker.n_iter_ == len(ranker.loss_curve_)
    assert ranker.n_iter_ == _patience_stop(scores, ranker.tol, 2)
    assert ranker.best_validation_score_ == max(scores)
    assert scores[-1] < max(scores)
    # the kept weights are those of the best epoch: re-score the held-out queries
    rows = _validation_rows(qid, random_state)
    assert NDCG10(ranker, X[rows], y[rows], qid=qid[rows]) == pytest.approx(
        ranker.best_validation_score_, rel=1e-12
    )


def test_without_early_stopping_the_last_epoch_is_kept(ranker_class, data, captured):
    X, y, qid = data
    ranker = _fit_quietly(_fast(ranker_class, early_stopping=False, max_iter=5), X, y, qid=qid)
    assert ranker.validation_scores_ is None and ranker.best_validation_score_ is None
    (run,) = captured["runs"]
    assert_array_equal(_params(ranker), run.params)
    assert captured["objective"].n_queries == N_QUERIES  # no query held out
    assert ranker.n_iter_ == 5 == len(ranker.loss_curve_)


def test_max_iter_reached_warns(ranker_class, data):
    X, y, qid = data
    ranker = _fast(ranker_class, early_stopping=False, max_iter=3, tol=0.0)
    match = rf"{ranker_class.__name__}: maximum iterations \(3\) reached"
    with pytest.warns(ConvergenceWarning, match=match):
        ranker.fit(X, y, qid=qid)
    assert ranker.n_iter_ == 3 == len(ranker.loss_curve_)
    assert ranker.loss_curve_[-1] < ranker.loss_curve_[0]


def test_without_validation_the_training_loss_decides(ranker_class, data):
    """Without early stopping, patience counts epochs whose loss did not drop by tol."""
    X, y, qid = data
    ranker = _fast(ranker_class, early_stopping=False, tol=1e3, n_iter_no_change=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        ranker.fit(X, y, qid=qid)
    assert ranker.n_iter_ == 1 + 3  # only the first epoch improves on +inf by tol


def test_lbfgs_converged_at_start_records_one_point(ranker_class, data):
    X, y, qid = data
    ranker = _fast(ranker_class, solver="lbfgs", early_stopping=False, max_iter=5, warm_start=True)
    _fit_quietly(ranker, X, y, qid=qid)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)  # converged: no warning
        ranker.set_params(tol=1e3).fit(X, y, qid=qid)  # the gradient is already below tol
    assert ranker.n_iter_ == 1 and len(ranker.loss_curve_) == 1
    assert np.isfinite(ranker.loss_curve_[0])


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_single_query_early_stopping_warns_and_uses_training_loss(ranker_class, data):
    _requires(ranker_class, "early_stopping")
    X, y, qid = data
    X, y = X[qid < 3], y[qid < 3]  # qid=None: one query of 30 documents
    with pytest.warns(UserWarning, match="needs at least 2 queries; got 1"):
        ranker = _fast(ranker_class, max_iter=5).fit(X, y)
    assert ranker.validation_scores_ is None and ranker.best_validation_score_ is None


def test_scoring_names_the_monitored_metric(ranker_class, data):
    X, y, qid = data
    ranker = _fast(ranker_class, scoring="map").fit(X, y, qid=qid)
    rows = _validation_rows(qid)
    assert ranker.best_validation_score_ == pytest.approx(
        get_ranking_scorer("map")(ranker, X[rows], y[rows], qid=qid[rows]), rel=1e-12
    )
    assert ranker.best_validation_score_ != pytest.approx(NDCG10(ranker, X[rows], y[rows],
                                                                 qid=qid[rows]))


def test_verbose_prints_one_line_per_epoch(ranker_class, data, capsys):
    X, y, qid = data
    _fit_quietly(_fast(ranker_class, verbose=1, max_iter=4, n_iter_no_change=10), X, y, qid=qid)
    lines = capsys.readouterr().out.strip().splitlines()
    assert [line.split(",")[:2] for line in lines] == [
        ["Run 0", f" iteration {i}"] for i in range(1, 5)
    ]
    assert "loss = " in lines[0] and "train ndcg@10 = " in lines[0]
    assert "validation ndcg@10 = " in lines[0] and lines[0].endswith(" s")


# ----------------------------------------------------------------------
# Restarts
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_restarts_best_keeps_the_run_with_the_best_validation_score(ranker_class, data, captured):
    X, y, qid = data
    # seeds whose best run is the middle one
    seed = 8 if ranker_class is skrank.rankers.BoltzRankRanker else 3
    ranker = _fast(ranker_class, n_init=3, restarts="best", random_state=seed).fit(X, y, qid=qid)
    runs = captured["runs"]
    scores = [run.best_validation_score for run in runs]
    best = int(np.argmax(scores))
    assert len(set(scores)) == 3 and best not in (0, 2)  # neither the first nor the last run
    assert_array_equal(_params(ranker), runs[best].params)
    assert ranker.best_validation_score_ == scores[best]
    assert ranker.n_iter_ == runs[best].n_iter
    assert ranker.loss_curve_ == runs[best].loss_curve
    assert ranker.validation_scores_ == runs[best].validation_scores


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_restarts_best_without_validation_keeps_the_lowest_objective(ranker_class, data,
                                                                      captured):
    X, y, qid = data
    # a seed whose lowest objective is the middle run: neither the first nor
    # the last run kept by mistake would pass
    for seed in range(1, 30):
        ranker = _fast(ranker_class, n_init=3, restarts="best", early_stopping=False,
                       max_iter=10, random_state=seed).fit(X, y, qid=qid)
        runs, objective = captured["runs"], captured["objective"]
        values = [objective.value(run.params) for run in runs]
        best = int(np.argmin(values))
        if best == 1:
            break
    assert best == 1
    assert_array_equal(_params(ranker), runs[best].params)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("hidden", [(), (3,)], ids=str)
def test_restarts_average_is_the_mean_of_the_standardised_runs(ranker_class, data, captured,
                                                               hidden):
    """Each run's scores divided by their pooled within-query std on the training rows."""
    X, y, qid = data
    ranker = _fast(ranker_class, hidden_layer_sizes=hidden, n_init=3, restarts="average")
    ranker.fit(X, y, qid=qid)
    runs = captured["runs"]
    network = make_network(5, hidden, ranker.activation)
    train = ~_validation_rows(qid)
    standardised, scales = [], []
    for run in runs:
        scores = network.forward(run.params, X)[0]
        s, q = scores[train], qid[train]
        means = {k: s[q == k].mean() for k in np.unique(q)}
        centred = s - np.array([means[k] for k in q])
        scales.append(np.sqrt(np.mean(centred**2)))
        standardised.append(scores / scales[-1])
    assert np.ptp(scales) > 0.05 * np.mean(scales)  # a plain mean would differ
    # the mean of the standardised runs, at the runs' mean scale
    assert_allclose(ranker.predict(X), np.mean(scales) * np.mean(standardised, axis=0),
                    rtol=1e-10, atol=1e-12)
    if hidden:
        assert [c.shape for c in ranker.coefs_] == [(5, 9), (9, 1)]
        assert not hasattr(ranker, "coef_")
    else:
        assert ranker.coef_.shape == (5,)
        assert not hasattr(ranker, "coefs_")
    # the validation score is that of the averaged model; the curves of the best run
    rows = ~train
    assert ranker.best_validation_score_ == pytest.approx(
        NDCG10(ranker, X[rows], y[rows], qid=qid[rows]), rel=1e-12
    )
    best = int(np.argmax([run.best_validation_score for run in runs]))
    assert ranker.validation_scores_ == runs[best].validation_scores


def test_average_runs_gives_no_weight_to_a_run_with_constant_scores(data):
    """Scale 0 (every document of a query scored alike): weight 0; all such: equal weights."""
    X, y, qid = data
    X = np.column_stack([X, QueryLayout(qid).expand(np.arange(N_QUERIES, dtype=float))])
    loss = LOSSES["listnet"]()
    objective = Objective(LinearNetwork(6), loss, loss.prepare(y, QueryLayout(qid)), y, X,
                          None, 0.0)

    def run(params):
        return RunResult(np.asarray(params, dtype=float), 1, [0.0], None, None, True)

    w = np.array([1.0, -2.0, 0.5, 0.0, 3.0, 0.0])
    constant = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 1.0])  # the per-query constant column
    network, params = average_runs(objective, [run(w), run(constant)])
    assert isinstance(network, LinearNetwork)
    # the live run alone, standardised and brought back to its own (the mean live) scale
    assert_allclose(params, w / 2, rtol=1e-12)
    network, params = average_runs(objective, [run(constant), run(2 * constant)])
    assert_allclose(params, 1.5 * constant, rtol=1e-15)


# ----------------------------------------------------------------------
# Warm start
def test_warm_start_continues_from_the_current_weights(ranker_class, data, captured):
    X, y, qid = data
    ranker = _fit_quietly(_fast(ranker_class, early_stopping=False, max_iter=5, warm_start=True),
                          X, y, qid=qid)
    before, first_curve = _params(ranker), ranker.loss_curve_
    _fit_quietly(ranker.set_params(max_iter=1, n_init=3), X, y, qid=qid)
    (start,) = captured["starts"]  # one run (n_init is ignored), from the fitted weights
    assert_array_equal(start, before)
    step = np.linalg.norm(_params(ranker) - before)
    assert 0 < step < 0.2 * np.linalg.norm(before)  # one more epoch: a small change
    assert ranker.loss_curve_[0] < first_curve[-1]  # the objective goes on decreasing
    cold = _fit_quietly(_fast(ranker_class, early_stopping=False, max_iter=1), X, y, qid=qid)
    assert np.linalg.norm(_params(cold) - before) > 3 * step


def test_warm_start_after_averaged_restarts_keeps_the_wide_network(ranker_class, data, captured):
    X, y, qid = data
    ranker = _fit_quietly(
        _fast(ranker_class, hidden_layer_sizes=(3,), n_init=2, restarts="average",
              early_stopping=False, max_iter=5, warm_start=True),
        X, y, qid=qid,
    )
    assert [c.shape for c in ranker.coefs_] == [(5, 6), (6, 1)]
    before, scores_before = _params(ranker), ranker.predict(X)
    _fit_quietly(ranker.set_params(max_iter=1), X, y, qid=qid)
    assert [c.shape for c in ranker.coefs_] == [(5, 6), (6, 1)]
    assert_array_equal(captured["starts"][0], before)
    assert 0 < np.abs(ranker.predict(X) - scores_before).max() < 0.2 * np.ptp(scores_before)


@pytest.mark.parametrize(
    "fitted, asked, match",
    [
        ((), (2,),
         r"continues the fitted linear network, but hidden_layer_sizes=\(2,\) asks for an MLP"),
        ((3,), (),
         r"continues the fitted MLP network, but hidden_layer_sizes=\(\) asks for a linear"),
    ],
    ids=["linear to MLP", "MLP to linear"],
)
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_warm_start_with_another_kind_of_network_raises(ranker_class, data, fitted, asked, match):
    X, y, qid = data
    ranker = _fast(ranker_class, hidden_layer_sizes=fitted, early_stopping=False, max_iter=2,
                   warm_start=True)
    ranker.fit(X, y, qid=qid).set_params(hidden_layer_sizes=asked)
    with pytest.raises(ValueError, match=match):
        ranker.fit(X, y, qid=qid)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_refit_with_another_network_drops_the_old_attributes(ranker_class, data):
    X, y, qid = data
    ranker = _fast(ranker_class, hidden_layer_sizes=(3,), early_stopping=False, max_iter=2)
    ranker.fit(X, y, qid=qid).set_params(hidden_layer_sizes=()).fit(X, y, qid=qid)
    assert ranker.coef_.shape == (5,)
    assert not hasattr(ranker, "coefs_") and not hasattr(ranker, "intercepts_")
    ranker.set_params(hidden_layer_sizes=(2,)).fit(X, y, qid=qid)
    assert [c.shape for c in ranker.coefs_] == [(5, 2), (2, 1)]
    assert not hasattr(ranker, "coef_")


# ----------------------------------------------------------------------
# An explicit validation set
def test_explicit_validation_set(ranker_class, data, other_queries, captured):
    """X_val replaces the query holdout: all queries of X train, validation_fraction is ignored."""
    X, y, qid = data
    X_val, y_val, qid_val = other_queries
    ranker = _fast(ranker_class, validation_fraction=0.5)
    ranker.fit(X, y, qid=qid, X_val=X_val, y_val=y_val, qid_val=qid_val)
    assert captured["objective"].n_queries == N_QUERIES
    assert captured["objective"].state.layout.n_samples == len(y)
    assert len(ranker.validation_scores_) == ranker.n_iter_
    assert ranker.best_validation_score_ == max(ranker.validation_scores_)
    assert ranker.best_validation_score_ == pytest.approx(
        NDCG10(ranker, X_val, y_val, qid=qid_val), rel=1e-12
    )


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
def test_bad_validation_set_raises(ranker_class, data, other_queries, params, given, match):
    _requires(ranker_class, "early_stopping")
    X, y, qid = data
    X_val, y_val, qid_val = other_queries
    values = {
        "X_val": ("X_val", X_val), "y_val": ("y_val", y_val), "qid_val": ("qid_val", qid_val),
        "short qid_val": ("qid_val", qid_val[:-1]), "narrow X_val": ("X_val", X_val[:, :1]),
    }
    kwargs = dict(values[name] for name in given)
    with pytest.raises(ValueError, match=match):
        _fast(ranker_class, **params).fit(X, y, qid=qid, **kwargs)


def test_validation_labels_the_metric_cannot_score(ranker_class, data, other_queries):
    _requires(ranker_class, "early_stopping")
    X, y, qid = data
    X_val, y_val, qid_val = other_queries
    match = "cannot score the labels y_val: y_true has negative labels"
    with pytest.raises(ValueError, match=match):
        _fast(ranker_class).fit(X, y, qid=qid, X_val=X_val, y_val=y_val - 5, qid_val=qid_val)


# ----------------------------------------------------------------------
# Same input, same model
@pytest.mark.parametrize("hidden", [(), (3,)], ids=str)
def test_same_random_state_same_model(ranker_class, data, hidden):
    X, y, qid = data
    a = _fast(ranker_class, hidden_layer_sizes=hidden).fit(X, y, qid=qid)
    b = _fast(ranker_class, hidden_layer_sizes=hidden).fit(X, y, qid=qid)
    assert_array_equal(_params(a), _params(b))
    assert a.loss_curve_ == b.loss_curve_
    other = _fast(ranker_class, hidden_layer_sizes=hidden, random_state=1).fit(X, y, qid=qid)
    assert not np.allclose(_params(other), _params(a))


@pytest.mark.parametrize("backend", ["loky", "threading"])
def test_n_jobs_does_not_change_the_model(ranker_class, data, backend):
    X, y, qid = data
    params = {"hidden_layer_sizes": (3,), "n_init": 4, "restarts": "average"}
    serial = _fast(ranker_class, **params).fit(X, y, qid=qid)
    with joblib.parallel_backend(backend):
        parallel = _fast(ranker_class, n_jobs=2, **params).fit(X, y, qid=qid)
    for a, b in zip(serial.coefs_ + serial.intercepts_, parallel.coefs_ + parallel.intercepts_):
        assert_array_equal(a, b)
    assert serial.loss_curve_ == parallel.loss_curve_


@pytest.mark.parametrize("hidden", [(), (3,)], ids=str)
def test_row_order_does_not_matter(ranker_class, data, hidden):
    """Rows are grouped by a stable sort, so shuffled rows give the same model."""
    X, y, qid = data
    perm = np.random.RandomState(1).permutation(len(y))
    if ranker_class()._make_loss().sampling:
        # a sampling loss draws per place in the query: keep each query's row
        # order and interleave the queries (reordering a query draws anew)
        slots = qid[perm]  # the query of each new place; its rows fill them in order
        perm = np.empty(len(y), dtype=int)
        for q in np.unique(qid):
            perm[slots == q] = np.flatnonzero(qid == q)
    a = _fast(ranker_class, hidden_layer_sizes=hidden).fit(X, y, qid=qid)
    b = _fast(ranker_class, hidden_layer_sizes=hidden).fit(X[perm], y[perm], qid=qid[perm])
    assert a.n_iter_ == b.n_iter_
    # the order of the rows inside a query changes sums at the rounding level only
    assert_allclose(_params(b), _params(a), rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("hidden", [(), (3,)], ids=str)
def test_sparse_X_gives_the_dense_model(ranker_class, data, hidden):
    X, y, qid = data
    X = X * (np.random.RandomState(0).random_sample(X.shape) < 0.6)
    dense = _fast(ranker_class, hidden_layer_sizes=hidden).fit(X, y, qid=qid)
    sparse = _fast(ranker_class, hidden_layer_sizes=hidden).fit(sp.csr_matrix(X), y, qid=qid)
    assert sparse.n_iter_ == dense.n_iter_
    assert_allclose(_params(sparse), _params(dense), rtol=1e-10, atol=1e-13)
    assert_allclose(sparse.predict(sp.csr_matrix(X)), dense.predict(X), rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("hidden", [(), (3,)], ids=str)
def test_pickle_round_trip(ranker_class, data, hidden):
    X, y, qid = data
    ranker = _fast(ranker_class, hidden_layer_sizes=hidden).fit(X, y, qid=qid)
    clone = pickle.loads(pickle.dumps(ranker))
    assert_array_equal(clone.predict(X), ranker.predict(X))
    assert clone.get_params() == ranker.get_params()


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_qid_none_is_one_query(ranker_class, data):
    X, y, qid = data
    rows = qid == qid[0]
    a = _fast(ranker_class, early_stopping=False, max_iter=10).fit(X[rows], y[rows])
    b = _fast(ranker_class, early_stopping=False, max_iter=10).fit(X[rows], y[rows],
                                                                   qid=qid[rows])
    assert_array_equal(a.predict(X), b.predict(X))
    assert a.score(X[rows], y[rows]) == b.score(X[rows], y[rows], qid=qid[rows])


# ----------------------------------------------------------------------
# Predict and score
@pytest.fixture(scope="module")
def fitted(data):
    """One fitted ranker of each class (scoring only; do not refit)."""
    X, y, qid = data
    return {cls: _fast(cls).fit(X, y, qid=qid) for cls in RANKERS}


def test_predict_checks_qid_and_scores_rows_independently(ranker_class, data, fitted):
    X, y, qid = data
    ranker = fitted[ranker_class]
    with pytest.raises(ValueError, match="qid must have one entry per row: expected 400"):
        ranker.predict(X, qid=qid[:-1])
    assert_array_equal(ranker.predict(X, qid=qid), ranker.predict(X))
    assert_array_equal(ranker.predict(X[:7]), ranker.predict(X)[:7])


def test_score_is_mean_ndcg_at_10(ranker_class, data, fitted):
    X, y, qid = data
    ranker = fitted[ranker_class]
    assert ranker.score(X, y, qid=qid) == pytest.approx(
        np.mean(ndcg_score(y, ranker.predict(X), qid=qid, k=10, average=False)), rel=1e-12
    )


def test_score_weighs_queries_by_sample_weight(ranker_class, data, fitted):
    X, y, qid = data
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


def test_cross_validation_routes_qid_by_default(ranker_class, data, metadata_routing):
    """With routing on, fit and score request qid without set_*_request calls."""
    X, y, qid = data
    ranker = _fast(ranker_class, max_iter=10)
    routing = ranker.get_metadata_routing()
    assert routing.fit.requests["qid"] is True
    assert routing.score.requests["qid"] is True
    # requested only by rankers that may score the documents of a query jointly
    assert routing.predict.requests["qid"] is (ranker_class is skrank.rankers.BoltzRankRanker)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        scores = cross_val_score(ranker, X, y, cv=GroupKFold(3), scoring=NDCG10,
                                 params={"qid": qid, "groups": qid})
        manual = []
        for train, test in GroupKFold(3).split(X, y, groups=qid):
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
def test_bad_parameters_raise(ranker_class, data, params, match):
    _requires(ranker_class, *params)
    X, y, qid = data
    with pytest.raises(ValueError, match=match):
        ranker_class(**params).fit(X, y, qid=qid)


def test_bad_qid_raises(ranker_class, data):
    X, y, qid = data
    with pytest.raises(ValueError, match="qid must have one entry per row: expected 400"):
        ranker_class().fit(X, y, qid=qid[:-1])


@pytest.mark.filterwarnings("ignore:overflow:RuntimeWarning")
@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")
def test_divergence_raises_a_clear_error(ranker_class, data):
    """A huge step blows the weights up (through the L2 penalty too) until the scores overflow."""
    X, y, qid = data
    ranker = _fast(ranker_class, solver="sgd", learning_rate_init=1e8, momentum=1.0,
                   hidden_layer_sizes=(5, 5), activation="relu", max_iter=50,
                   n_iter_no_change=50)  # patience must not stop it first
    with pytest.raises(ValueError, match=r"overflowed to inf or NaN: the optimisation diverged\. "
                                         r"Likely cause: the step size \(learning_rate_init="
                                         r"100000000\.0 with solver='sgd'\): lower "
                                         r"learning_rate_init\.$"):
        ranker.fit(X, y, qid=qid)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_extreme_features_stay_finite(ranker_class, data):
    """Features 1e4 times larger: ListNet's and SoftRank's scores reach 1e4 and beyond.

    A fit that returns has finite scores and losses (the loop raises
    otherwise), so what is checked is that the loss and its gradient stay
    useful out there: the training loss goes down, and the model ranks the
    training queries better than chance (all scores tied: the mean NDCG over
    random orders, 0.60; random scores give 0.60 +- 0.02) by a margin.
    """
    X, y, qid = data
    ranker = _fast(ranker_class, learning_rate_init=1.0, max_iter=5).fit(X * 1e4, y, qid=qid)
    scores = ranker.predict(X * 1e4)
    assert np.isfinite(scores).all()
    assert np.isfinite(ranker.loss_curve_).all()
    assert ranker.loss_curve_[-1] < ranker.loss_curve_[0], ranker.loss_curve_
    chance = ndcg_score(y, np.zeros_like(scores), qid=qid, k=10)  # about 0.60
    ndcg = ndcg_score(y, scores, qid=qid, k=10)
    assert ndcg > chance + 0.08, (ndcg, chance)


def _listnet_objective(data, alpha=0.0, scale=1.0):
    X, y, qid = data
    loss = LOSSES["listnet"]()
    return Objective(LinearNetwork(X.shape[1]), loss, loss.prepare(y, QueryLayout(qid)), y,
                     X * scale, None, alpha)


def test_batches_refuse_a_state_their_loss_could_not_have_prepared(data):
    """The batches' states are not checked one by one: their common state is, once per epoch."""
    X, y, qid = data
    objective = _listnet_objective(data)
    objective.state = LOSSES["softrank"]().prepare(y, QueryLayout(qid))
    with pytest.raises(TypeError, match=r"^state must be the LossState returned by this "
                                        r"loss's prepare .* prepared by SoftRankLoss\.$"):
        next(objective.batches(4, np.random.RandomState(0)))


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_a_batch_has_the_objective_of_its_checked_layout(name, data):
    """Every loss on the loop's unchecked batch layouts: the objective of checked layouts."""
    from dataclasses import replace

    from skrank._core._objective import Batch

    X, y, qid = data
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
def test_a_batch_names_what_overflowed(data, what, alpha, scale, weight, batch_size):
    """Mini-batches skip the checks of what the loop built, not the divergence checks."""
    from skrank._core._solvers import DivergenceError

    objective = _listnet_objective(data, alpha, scale)
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
        assert_array_equal(a.state.per_row["target"], b.state.per_row["target"])
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
        assert_array_equal(a.state.per_row["target"], b.state.per_row["target"])

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


@pytest.mark.parametrize("given", [True, False], ids=["X_val", "held-out"])
def test_nan_validation_scores_are_told_in_the_rankers_terms(data, monkeypatch, given):
    """The core raises in its own terms (the validation rows); the ranker names X_val,
    or the held-out queries of X and early_stopping."""
    X, y, qid = data

    def unscorable(*args, **kwargs):
        raise UnscorableValidationError(1e300)

    monkeypatch.setattr(_base, "fit_runs", unscorable)
    with pytest.raises(UnscorableValidationError, match=r"the validation rows hold values"):
        unscorable()
    ranker = skrank.ListNetRanker(max_iter=2, random_state=0)
    if given:
        match = (r"^The scores of the validation queries are NaN .*: X_val holds values the "
                 r"model cannot score \(its largest absolute value is 1e\+300\)\. Scale X_val")
        with pytest.raises(ValueError, match=match):
            ranker.fit(X[qid >= 10], y[qid >= 10], qid=qid[qid >= 10],
                       X_val=X[qid < 10], y_val=y[qid < 10], qid_val=qid[qid < 10])
    else:
        match = r"1e\+300\)\. They are held-out queries of X \(early_stopping=True\): scale X"
        with pytest.raises(ValueError, match=match):
            ranker.fit(X, y, qid=qid)


# ----------------------------------------------------------------------
# partial_fit: one pass over whole queries, continuing the model
STOCHASTIC = [cls for cls in RANKERS if "solver" in cls().get_params()]


@pytest.fixture(params=STOCHASTIC, ids=lambda cls: cls.__name__)
def stochastic_class(request):
    return request.param


@pytest.fixture
def scattered(rng):
    """24 queries of 2-9 rows with ids in random order, their rows interleaved."""
    sizes = rng.integers(2, 10, size=24)
    qid = np.repeat(rng.permutation(1000)[:24], sizes)
    X = rng.normal(size=(len(qid), 5))
    y = rng.integers(0, 3, size=len(qid)).astype(float)
    shuffle = rng.permutation(len(qid))
    return X[shuffle], y[shuffle], qid[shuffle]


def _epoch_order(ranker, X, y, qid, monkeypatch, **fit_params):
    """``ranker`` fitted for one epoch; the query ids in the order of its mini-batches."""
    from skrank._core import _folded_objective, _objective

    orders = []
    for cls in (_objective.Objective, _folded_objective.FoldedObjective):
        def spy(self, batch_size, perm, _original=cls.ordered_batches):
            orders.append(perm.copy())
            return _original(self, batch_size, perm)
        monkeypatch.setattr(cls, "ordered_batches", spy)
    _fit_quietly(ranker, X, y, qid=qid, **fit_params)
    monkeypatch.undo()
    (order,) = orders
    return np.unique(qid)[order]


def _rows_of(qid, queries):
    """Rows of ``queries``, query by query in that order (each query's rows in file order)."""
    return np.concatenate([np.flatnonzero(qid == q) for q in queries])


@pytest.mark.parametrize("hidden", [(), (4,)], ids=["linear", "mlp"])
@pytest.mark.parametrize("solver", ["adam", "sgd"])
def test_partial_fit_in_fit_order_gives_the_fit(stochastic_class, scattered, hidden, solver,
                                                 monkeypatch):
    """Chunks of whole queries in the order of fit's batches: the weights of a 1-epoch fit."""
    X, y, qid = scattered
    params = dict(hidden_layer_sizes=hidden, solver=solver, batch_size=3, max_iter=1,
                  early_stopping=False)
    fitted = _fast(stochastic_class, **params)
    order = _epoch_order(fitted, X, y, qid, monkeypatch)
    streamed = _fast(stochastic_class, **params)
    for lo in range(0, len(order), 6):  # 4 calls of 2 batches each
        rows = _rows_of(qid, order[lo:lo + 6])
        streamed.partial_fit(X[rows], y[rows], qid=qid[rows])
    assert_allclose(_params(streamed), _params(fitted), rtol=0, atol=1e-12)
    assert streamed.n_iter_ == 4 and len(streamed.loss_curve_) == 4
    assert streamed.t_ == fitted.t_ == 24
    # and not by chance: another order of the same chunks gives other weights
    other = _fast(stochastic_class, **params)
    for lo in reversed(range(0, len(order), 6)):
        rows = _rows_of(qid, order[lo:lo + 6])
        other.partial_fit(X[rows], y[rows], qid=qid[rows])
    assert np.abs(_params(other) - _params(fitted)).max() > 1e-6


def test_partial_fit_weights_of_one_call_are_fit_weights(stochastic_class, scattered, monkeypatch):
    """One call with all queries weighs them as fit does (relative to their mean)."""
    X, y, qid = scattered
    weight = np.unique(qid, return_inverse=True)[1] % 3 + 1.0
    params = dict(batch_size=4, max_iter=1, early_stopping=False)
    fitted = _fast(stochastic_class, **params)
    order = _epoch_order(fitted, X, y, qid, monkeypatch, sample_weight=weight)
    rows = _rows_of(qid, order)
    streamed = _fast(stochastic_class, **params).partial_fit(
        X[rows], y[rows], qid=qid[rows], sample_weight=weight[rows])
    assert_allclose(_params(streamed), _params(fitted), rtol=0, atol=1e-12)
    # weights are relative to the first call's mean: constant ones change nothing
    plain = _fast(stochastic_class, **params).partial_fit(X[rows], y[rows], qid=qid[rows])
    constant = _fast(stochastic_class, **params).partial_fit(
        X[rows], y[rows], qid=qid[rows], sample_weight=np.full(len(rows), 7.0))
    assert_array_equal(_params(constant), _params(plain))


def test_partial_fit_carries_the_solver_state_over(stochastic_class, scattered):
    """Two calls of whole batches are one call over both: the moments carry over."""
    X, y, qid = scattered
    queries = pd_unique(qid)
    whole = _fast(stochastic_class, batch_size=4).partial_fit(X, y, qid=qid)
    halves = _fast(stochastic_class, batch_size=4)
    for part in (queries[:12], queries[12:]):
        rows = np.isin(qid, part)
        halves.partial_fit(X[rows], y[rows], qid=qid[rows])
    assert_allclose(_params(halves), _params(whole), rtol=0, atol=1e-12)
    assert halves.t_ == whole.t_ == 24 and halves.n_iter_ == 2 and whole.n_iter_ == 1
    # a solver state started afresh at the second call would step otherwise
    fresh = _fast(stochastic_class, batch_size=4)
    rows = np.isin(qid, queries[:12])
    fresh.partial_fit(X[rows], y[rows], qid=qid[rows])
    del fresh._solver_memory
    fresh.partial_fit(X[~rows], y[~rows], qid=qid[~rows])
    assert np.abs(_params(fresh) - _params(whole)).max() > 1e-6


def pd_unique(values):
    """The distinct values in the order of their first appearance."""
    _, first = np.unique(values, return_index=True)
    return values[np.sort(first)]


def test_partial_fit_continues_a_fit_and_fit_starts_afresh(stochastic_class, data):
    X, y, qid = data
    ranker = _fit_quietly(_fast(stochastic_class, max_iter=2, early_stopping=False), X, y,
                          qid=qid)
    before = _params(ranker)
    last = qid == qid[-1]
    ranker.partial_fit(X[last], y[last], qid=qid[last])
    assert ranker.n_iter_ == 3 and ranker.t_ == 2 * N_QUERIES + 1
    assert np.abs(_params(ranker) - before).max() > 0
    # a new fit forgets the stream: its last query may open the next call
    _fit_quietly(ranker, X, y, qid=qid)
    ranker.partial_fit(X[last], y[last], qid=qid[last])
    assert ranker.n_iter_ == 3


def test_partial_fit_refuses_a_query_split_across_calls(stochastic_class, data):
    X, y, qid = data
    ranker = _fast(stochastic_class)
    first = np.flatnonzero(qid == qid[0])
    ranker.partial_fit(X[:first[-1]], y[:first[-1]], qid=qid[:first[-1]])
    fitted = _params(ranker)
    with pytest.raises(ValueError, match=rf"qid={qid[0].item()!r} continues a query of the previous "
                                         rf"partial_fit call \(its last row there was row "
                                         rf"{first[-2]}; here it starts at row 0\)"):
        ranker.partial_fit(X[first[-1]:], y[first[-1]:], qid=qid[first[-1]:])
    assert_array_equal(_params(ranker), fitted)  # the failed call changed nothing


def test_partial_fit_without_qid_twice_names_qid_none(stochastic_class, data):
    # qid=None is one query of id 0 in every call: the message must not show an id never given
    X, y, _ = data
    ranker = _fast(stochastic_class).partial_fit(X[:20], y[:20])
    with pytest.raises(ValueError, match=r"qid=None makes the rows of a call one query, and "
                                         r"the previous partial_fit call's last query had the "
                                         r"same id \(0\).* Pass qid"):
        ranker.partial_fit(X[20:40], y[20:40])


@pytest.mark.parametrize("params, match", [
    ({"learning_rate_decay": 0.5}, r"learning_rate_decay=0\.5 decays the step size .* "
                                   r"partial_fit sees no epochs"),
])
def test_partial_fit_refuses_what_a_stream_cannot_do(stochastic_class, data, params, match):
    X, y, qid = data
    with pytest.raises(ValueError, match=match):
        _fast(stochastic_class, **params).partial_fit(X, y, qid=qid)


def test_partial_fit_trains_one_network_whatever_n_init(stochastic_class, scattered):
    """Restarts are fit's: partial_fit continues the first of its initialisations."""
    X, y, qid = scattered
    one = _fast(stochastic_class, n_init=1).partial_fit(X, y, qid=qid)
    three = _fast(stochastic_class, n_init=3, restarts="average").partial_fit(X, y, qid=qid)
    assert_array_equal(_params(three), _params(one))


def test_partial_fit_refuses_another_number_of_features(stochastic_class, data):
    X, y, qid = data
    ranker = _fast(stochastic_class).partial_fit(X[:20], y[:20], qid=qid[:20])
    with pytest.raises(ValueError, match=r"X has 4 features, but \w+ is expecting 5"):
        ranker.partial_fit(X[20:, :4], y[20:], qid=qid[20:])


def test_partial_fit_is_not_there_for_full_batch_fits(ranker_class):
    """solver="lbfgs" hides partial_fit and says why, as scikit-learn's MLP does;
    LogRank, whose fit is L-BFGS only, has none at all (as Ridge has none)."""
    if ranker_class.__name__ == "LogRankRanker":
        assert "partial_fit" not in dir(ranker_class)
        assert not hasattr(ranker_class(), "partial_fit")
        return
    ranker = ranker_class(solver="lbfgs")
    assert not hasattr(ranker, "partial_fit")
    with pytest.raises(AttributeError, match="has no attribute 'partial_fit'") as raised:
        ranker.partial_fit
    assert "only available for the stochastic solvers" in str(raised.value.__cause__)


@pytest.mark.filterwarnings("ignore:overflow:RuntimeWarning")
@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")
def test_partial_fit_divergence_leaves_the_model_as_it_was(stochastic_class, data):
    X, y, qid = data
    ranker = _fast(stochastic_class, solver="sgd", momentum=1.0, hidden_layer_sizes=(5, 5),
                   activation="relu").partial_fit(X[:50], y[:50], qid=qid[:50])
    ranker.set_params(learning_rate_init=1e8)
    with pytest.raises(ValueError, match=r"diverged\. Likely cause: the step size"):
        for _ in range(20):
            fitted, memory = _params(ranker), ranker._solver_memory[1].copy()
            n_iter, t = ranker.n_iter_, ranker.t_
            ranker.partial_fit(X[50:], y[50:], qid=qid[50:])
    # the model and the solver state are those of the last call that succeeded
    assert_array_equal(_params(ranker), fitted)
    assert_array_equal(ranker._solver_memory[1], memory)
    assert (ranker.n_iter_, ranker.t_) == (n_iter, t)


def test_partial_fit_repeated_over_the_same_queries(stochastic_class, data):
    """The scikit-learn loop over epochs: every call a new pass over the same queries."""
    X, y, qid = data
    ranker = _fast(stochastic_class)
    for _ in range(3):
        ranker.partial_fit(X, y, qid=qid)
    assert ranker.n_iter_ == 3 and ranker.t_ == 3 * N_QUERIES


def test_partial_fit_weighs_each_call_in_the_first_call_s_unit(data):
    """Weights 10 in a later call step 10 times as far as weights 1 (SGD, no momentum, no
    penalty): they are not scaled to mean 1 within their call."""
    from skrank import ListNetRanker

    X, y, qid = data
    params = dict(solver="sgd", momentum=0.0, alpha=0.0, batch_size=N_QUERIES)
    first, second = qid < 20, qid >= 20
    steps = []
    for weight in (1.0, 10.0):
        ranker = _fast(ListNetRanker, **params).partial_fit(
            X[first], y[first], qid=qid[first], sample_weight=np.ones(first.sum()))
        before = _params(ranker)
        ranker.partial_fit(X[second], y[second], qid=qid[second],
                           sample_weight=np.full(second.sum(), weight))
        steps.append(_params(ranker) - before)
    assert_allclose(steps[1], 10 * steps[0], rtol=1e-10)
    # after a weighted fit, the unit is that fit's mean query weight
    ranker = _fit_quietly(_fast(ListNetRanker, max_iter=1, early_stopping=False, **params),
                          X[first], y[first], qid=qid[first],
                          sample_weight=np.full(first.sum(), 150.0))
    before = _params(ranker)
    ranker.partial_fit(X[second], y[second], qid=qid[second],
                       sample_weight=np.full(second.sum(), 150.0))
    assert_allclose(_params(ranker) - before, steps[0], rtol=1e-10)


def test_partial_fit_with_another_solver_starts_its_state_afresh(stochastic_class, data):
    X, y, qid = data
    ranker = _fast(stochastic_class, solver="adam").partial_fit(X[:50], y[:50], qid=qid[:50])
    ranker.set_params(solver="sgd").partial_fit(X[50:], y[50:], qid=qid[50:])
    assert ranker._solver_memory[0] == "sgd" and ranker.n_iter_ == 2


def test_partial_fit_refuses_another_network(stochastic_class, data):
    X, y, qid = data
    ranker = _fast(stochastic_class).partial_fit(X[:50], y[:50], qid=qid[:50])
    ranker.set_params(hidden_layer_sizes=(3,))
    # partial_fit continues whatever warm_start says: the message must not blame it
    with pytest.raises(ValueError, match=r"partial_fit continues the fitted .*hidden_layer_sizes"
                                         r"=\(3,\) .*call fit, or partial_fit on "
                                         r"sklearn\.base\.clone\(ranker\)"):
        ranker.partial_fit(X[50:], y[50:], qid=qid[50:])


def test_partial_fit_keeps_float32(stochastic_class, data):
    X, y, qid = data
    ranker = _fast(stochastic_class).partial_fit(X.astype(np.float32), y, qid=qid)
    assert ranker.predict(X.astype(np.float32)).dtype == np.float32
