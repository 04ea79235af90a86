"""Solvers through their one interface: ``solver.minimize(problem, params, monitor, rs)``."""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from skrank import ListNetRanker
from skrank._core._solvers import LBFGS, SGD, SOLVERS, Adam, DivergenceError

from tests._inputs import THREE_EPOCHS, diverged

TARGET = np.array([1.0, -2.0, 0.5])


class Batch:
    def __init__(self, queries):
        self.queries = queries
        self.n_queries = len(queries)


class QuadraticProblem:
    """Mean over "queries" of ``0.5 * scale_q * ||params - target||^2``.

    The query weights ``scale`` make each batch's value different, so that
    the epoch loss the solver reports can be checked. ``batch_sizes`` and
    ``calls`` record how the solver used the problem.
    """

    def __init__(self, target=TARGET, scale=(1.0, 2.0, 0.5, 1.5, 1.0)):
        self.target = np.asarray(target, dtype=float)
        self.scale = np.asarray(scale, dtype=float)
        self.n_queries = len(self.scale)
        self.n_params = len(self.target)
        self.batch_sizes = []
        self.calls = []

    def value_and_grad(self, params, batch=None):
        scale = self.scale if batch is None else self.scale[batch.queries]
        diff = params - self.target
        value = 0.5 * scale.mean() * float(diff @ diff)
        self.calls.append((params.copy(), batch, value))
        return value, scale.mean() * diff

    def batches(self, batch_size, random_state):
        self.batch_sizes.append(batch_size)
        perm = random_state.permutation(self.n_queries)
        for lo in range(0, self.n_queries, batch_size):
            yield Batch(perm[lo:lo + batch_size])


class LinearProblem:
    """``sum(params)``: a constant gradient of ones, one batch per epoch.

    Each epoch then moves every parameter by (minus) the step size in force,
    for SGD without momentum exactly and for Adam up to its epsilon.
    """

    n_queries = 1

    def __init__(self, n_params=2):
        self.n_params = n_params

    def value_and_grad(self, params, batch=None):
        return float(params.sum()), np.ones_like(params)

    def batches(self, batch_size, random_state):
        yield Batch(np.arange(1))


class Monitor:
    """Records every update; stops after ``stop_after`` updates (None: never).

    ``improved`` scripts ``train_improved`` after each update (True when the
    script runs out).
    """

    def __init__(self, stop_after=None, improved=()):
        self.stop_after = stop_after
        self.improved = list(improved)
        self.params = []
        self.losses = []
        self.train_improved = True

    @property
    def n_updates(self):
        return len(self.losses)

    def update(self, params, loss):
        self.params.append(np.array(params, copy=True))
        self.losses.append(float(loss))
        k = self.n_updates - 1
        self.train_improved = self.improved[k] if k < len(self.improved) else True
        return self.stop_after is not None and self.n_updates >= self.stop_after


STOCHASTIC = {
    "adam": lambda **kw: Adam(learning_rate_init=kw.pop("learning_rate_init", 0.1), **kw),
    "sgd": lambda **kw: SGD(learning_rate_init=kw.pop("learning_rate_init", 0.05),
                            momentum=kw.pop("momentum", 0.5), **kw),
}


def test_registry():
    assert SOLVERS == {"adam": Adam, "sgd": SGD, "lbfgs": LBFGS}


# ----------------------------------------------------------------------
# Stochastic solvers
@pytest.mark.parametrize("name", sorted(STOCHASTIC))
def test_stochastic_solver_minimises_a_quadratic(name):
    solver = STOCHASTIC[name](batch_size=2, max_iter=300)
    problem, monitor = QuadraticProblem(), Monitor()
    start = np.zeros(3)
    params, converged = solver.minimize(problem, start, monitor, np.random.RandomState(0))
    assert_allclose(params, TARGET, atol=1e-3)
    assert params is start  # updated in place
    assert converged is False  # max_iter ran out: the monitor never stopped it
    assert monitor.n_updates == 300  # one update per epoch
    assert set(problem.batch_sizes) == {2} and len(problem.batch_sizes) == 300
    # every epoch visits each query once, in batches of whole queries
    epoch = [c[1] for c in problem.calls[:3]]
    assert [b.n_queries for b in epoch] == [2, 2, 1]
    assert sorted(np.concatenate([b.queries for b in epoch])) == list(range(5))


@pytest.mark.parametrize("name", sorted(STOCHASTIC))
def test_stochastic_solver_reports_the_query_weighted_mean_batch_loss(name):
    solver = STOCHASTIC[name](batch_size=2, max_iter=3)
    problem, monitor = QuadraticProblem(), Monitor()
    solver.minimize(problem, np.zeros(3), monitor, np.random.RandomState(0))
    for epoch in range(3):
        calls = problem.calls[3 * epoch:3 * epoch + 3]
        expected = sum(value * batch.n_queries for _, batch, value in calls) / 5
        assert monitor.losses[epoch] == pytest.approx(expected, rel=1e-14)


@pytest.mark.parametrize("name", sorted(STOCHASTIC))
def test_stochastic_solver_converged_when_the_monitor_stops(name):
    solver = STOCHASTIC[name](batch_size=2, max_iter=50)
    monitor = Monitor(stop_after=4)
    params, converged = solver.minimize(
        QuadraticProblem(), np.zeros(3), monitor, np.random.RandomState(0)
    )
    assert converged is True
    assert monitor.n_updates == 4
    assert_array_equal(params, monitor.params[-1])


@pytest.mark.parametrize("name", sorted(STOCHASTIC))
def test_stochastic_solver_is_seeded_by_random_state(name):
    def fit(seed):
        problem = QuadraticProblem()
        params, _ = STOCHASTIC[name](batch_size=2, max_iter=5).minimize(
            problem, np.zeros(3), Monitor(), np.random.RandomState(seed)
        )
        return params, [tuple(c[1].queries) for c in problem.calls]

    (a, order_a), (b, order_b), (_, order_c) = fit(3), fit(3), fit(4)
    assert_array_equal(a, b)
    assert order_a == order_b
    assert order_a != order_c


@pytest.mark.parametrize("name", sorted(STOCHASTIC))
def test_learning_rate_decay_applies_exactly_when_train_metric_did_not_improve(name):
    """The step of epoch k+1 is decay times that of epoch k iff epoch k did not improve."""
    improved = [True, False, False, True, True, False, True]
    lr, decay = 0.1, 0.5
    kwargs = {"momentum": 0.0} if name == "sgd" else {}
    solver = STOCHASTIC[name](learning_rate_init=lr, batch_size=1, max_iter=len(improved) + 1,
                              learning_rate_decay=decay, **kwargs)
    assert solver.needs_train_metric
    monitor = Monitor(improved=improved)
    solver.minimize(LinearProblem(), np.zeros(2), monitor, np.random.RandomState(0))
    positions = np.vstack([np.zeros(2), *monitor.params])
    steps = -np.diff(positions, axis=0)[:, 0]
    expected = [lr]
    for flag in improved:
        expected.append(expected[-1] * (1.0 if flag else decay))
    assert_allclose(steps, expected, rtol=1e-6)


@pytest.mark.parametrize("name", sorted(STOCHASTIC))
def test_no_decay_keeps_the_step_size(name):
    kwargs = {"momentum": 0.0} if name == "sgd" else {}
    solver = STOCHASTIC[name](learning_rate_init=0.1, batch_size=1, max_iter=4, **kwargs)
    assert not solver.needs_train_metric
    monitor = Monitor(improved=[False, False, False, False])
    solver.minimize(LinearProblem(), np.zeros(2), monitor, np.random.RandomState(0))
    steps = -np.diff(np.vstack([np.zeros(2), *monitor.params]), axis=0)[:, 0]
    assert_allclose(steps, 0.1, rtol=1e-6)


def test_sgd_momentum_is_heavy_ball():
    """velocity <- momentum * velocity - lr * grad; params += velocity."""
    solver = SGD(learning_rate_init=0.1, batch_size=1, max_iter=3, momentum=0.5)
    monitor = Monitor()
    solver.minimize(LinearProblem(), np.zeros(2), monitor, np.random.RandomState(0))
    assert_allclose([p[0] for p in monitor.params], [-0.1, -0.25, -0.425], rtol=1e-14)


def test_adam_first_steps_match_the_paper():
    """Bias-corrected moments in the paper's efficient form (Kingma and Ba, end of §2).

    ``lr_t = lr * sqrt(1 - b2^t) / (1 - b1^t)``, ``x -= lr_t * m / (sqrt(v) + eps)``, as in
    scikit-learn's MLP; the gradient of the problem is ``2 * (x - target)``.
    """
    lr, b1, b2, eps = 0.1, 0.9, 0.999, 1e-8
    problem = QuadraticProblem(scale=[2.0])  # gradient 2 * (x - target), one query
    monitor = Monitor()
    Adam(learning_rate_init=lr, batch_size=1, max_iter=3).minimize(
        problem, np.zeros(3), monitor, np.random.RandomState(0)
    )
    x, m, v = np.zeros(3), np.zeros(3), np.zeros(3)
    for t in range(1, 4):
        g = 2 * (x - TARGET)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        x = x - lr * np.sqrt(1 - b2**t) / (1 - b1**t) * m / (np.sqrt(v) + eps)
        assert_allclose(monitor.params[t - 1], x, rtol=1e-13)


# ----------------------------------------------------------------------
# L-BFGS
def test_lbfgs_reaches_the_minimum_of_a_quadratic():
    problem = QuadraticProblem(target=[3.0, -1.0, 0.5])
    monitor = Monitor()
    params, converged = LBFGS(max_iter=100, tol=1e-10).minimize(problem, np.zeros(3), monitor)
    assert_allclose(params, [3.0, -1.0, 0.5], atol=1e-8)
    assert converged is True
    assert 1 <= monitor.n_updates < 100  # one update per iteration
    assert monitor.losses[-1] == pytest.approx(0.0, abs=1e-14)
    assert all(c[1] is None for c in problem.calls)  # always the full objective


def test_lbfgs_stops_when_the_monitor_says_so():
    problem = QuadraticProblem(target=[3.0, -1.0, 0.5], scale=[1.0, 4.0])
    monitor = Monitor(stop_after=1)
    params, converged = LBFGS(max_iter=100, tol=1e-10).minimize(problem, np.zeros(3), monitor)
    assert converged is True
    assert monitor.n_updates == 1
    assert_array_equal(params, monitor.params[0])
    assert not np.allclose(params, [3.0, -1.0, 0.5])  # stopped before the minimum


def test_lbfgs_not_converged_when_max_iter_runs_out():
    # an ill-conditioned quadratic that two iterations cannot solve
    problem = QuadraticProblem(target=np.arange(1.0, 21.0), scale=[1.0])
    problem.value_and_grad = _ill_conditioned(problem.target)
    monitor = Monitor()
    params, converged = LBFGS(max_iter=2, tol=1e-12).minimize(problem, np.zeros(20), monitor)
    assert converged is False
    assert monitor.n_updates == 2


def _ill_conditioned(target):
    curvature = np.logspace(0, 4, len(target))

    def value_and_grad(params, batch=None):
        diff = params - target
        return 0.5 * float(curvature @ diff**2), curvature * diff

    return value_and_grad


def test_lbfgs_already_converged_records_one_update():
    problem = QuadraticProblem(target=[3.0, -1.0, 0.5])
    monitor = Monitor()
    start = np.array([3.0, -1.0, 0.5])
    params, converged = LBFGS(max_iter=100, tol=1e-6).minimize(problem, start, monitor)
    assert converged is True
    assert monitor.n_updates == 1
    assert monitor.losses == [0.0]
    assert_array_equal(monitor.params[0], start)
    assert_array_equal(params, start)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_lbfgs_refuses_a_gradient_whose_squared_norm_overflows():
    # each entry is finite, the norm is not: inside scipy the step is then NaN
    # or not, by the BLAS kernel; the solver stops the same way on every machine
    problem = LinearProblem(n_params=4)
    problem.value_and_grad = lambda params, batch=None: (float(params.sum()),
                                                         np.full_like(params, 1e155))
    with pytest.raises(DivergenceError, match=r"^the squared gradient norm \(L-BFGS's step "
                                              r"size\) overflowed to inf or NaN"):
        LBFGS(max_iter=5, tol=1e-6).minimize(problem, np.zeros(4), Monitor())
    # the largest gradient whose squared norm is finite is used as it is
    problem.value_and_grad = lambda params, batch=None: (float(params.sum()),
                                                         np.full_like(params, 1e153))
    LBFGS(max_iter=1, tol=1e-6).minimize(problem, np.zeros(4), Monitor())


# ----------------------------------------------------------------------------
# Adam does not stand still when the squared gradient overflows
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("scale, alpha, cause", [
    (1.0, 1e300, r"the penalty \(alpha=1e\+300\)"),
    (1e160, 1e-4, r"the scale of X"),
])
def test_adam_with_an_overflowing_squared_gradient_is_a_divergence(scale, alpha, cause, eight_queries):
    X, y, qid = eight_queries
    with diverged(ListNetRanker, rf"Likely cause: {cause}") as info:
        ListNetRanker(alpha=alpha, **THREE_EPOCHS).fit(X * scale, y, qid=qid)
    assert str(info.value).startswith(
        "ListNetRanker: the squared gradient (Adam's second-moment estimate) overflowed")


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_adam_moves_from_its_initial_weights_on_large_but_finite_gradients(eight_queries):
    X, y, qid = eight_queries
    start = ListNetRanker(**{**THREE_EPOCHS, "max_iter": 1}, learning_rate_init=1e-300).fit(X, y, qid=qid)
    fitted = ListNetRanker(alpha=1e100, **THREE_EPOCHS).fit(X, y, qid=qid)
    assert np.isfinite(fitted.coef_).all()
    # the penalty's gradient dominates: every step pulls the weights towards 0
    assert (np.abs(fitted.coef_) < np.abs(start.coef_)).all()
