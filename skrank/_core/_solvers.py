"""Solvers over a flat parameter vector, all with one interface.

A solver never sees the loss or the network. It is given a *problem*
(:class:`~skrank._core._types.Problem`: ``n_queries``, ``n_params``,
``value_and_grad(params, batch=None)`` and ``batches(batch_size,
random_state)``) and a *monitor* (:class:`~skrank._core._types.RunMonitor`,
the stopping rule: ``monitor.update(params, loss)`` after every epoch or
iteration, True to stop; ``monitor.train_improved`` when asked for with
``needs_train_metric``), and runs::

    params, converged = solver.minimize(problem, params, monitor, random_state)

``converged`` is False exactly when ``max_iter`` ran out before the monitor
(or L-BFGS itself) stopped the run. A front end builds the solver it needs
with keyword arguments (``Adam(learning_rate_init=..., batch_size=...,
max_iter=...)``); :data:`SOLVERS` maps names to classes.

A run that overflows raises :class:`DivergenceError` (what overflowed, and
where); the stochastic solvers check the parameters after every step,
Adam its second-moment estimate (a squared gradient beyond the largest float
would otherwise make every step 0, and the run would silently keep its
initial weights), and L-BFGS the squared norm of every gradient.
"""

import math

import numpy as np
from scipy.optimize import minimize

from ._types import Problem, RunMonitor


class DivergenceError(ValueError):
    """The optimisation diverged: a value of the fit overflowed to inf or NaN.

    Raised by the fit loop and the solvers with what overflowed; a ranker's
    front end re-raises it with the likely causes among its own settings.
    """


def check_finite(values, what):
    """Raise :class:`DivergenceError` unless every value is finite.

    ``what`` names the values in the message (e.g. ``"scores"``).
    """
    # a float (an objective, a squared norm) without numpy's per-call cost
    finite = math.isfinite(values) if isinstance(values, float) else np.isfinite(values).all()
    if not finite:
        raise DivergenceError(f"the {what} overflowed to inf or NaN: the optimisation diverged.")


class _StochasticSolver:
    """Steps on mini-batches of whole queries, one epoch per monitor update.

    ``learning_rate_decay < 1`` multiplies the step size by that factor after
    every epoch in which the monitored *training* metric did not improve
    (SoftRank's schedule, Taylor et al. 2008, §4.5).
    """

    full_batch = False

    def __init__(self, *, learning_rate_init, batch_size, max_iter, learning_rate_decay=1.0):
        self.learning_rate_init = learning_rate_init
        self.batch_size = batch_size
        self.max_iter = max_iter
        self.learning_rate_decay = learning_rate_decay

    @property
    def needs_train_metric(self):
        """Whether the monitor must score the training queries after each epoch."""
        return self.learning_rate_decay < 1.0

    def minimize(self, problem: Problem, params: np.ndarray, monitor: RunMonitor,
                 random_state: np.random.RandomState) -> tuple[np.ndarray, bool]:
        """Minimise ``problem`` from ``params`` (updated in place); ``(params, converged)``.

        The step rule's state (moments, velocity) lives in this call only, so
        one solver object can serve concurrent runs (e.g. on threads).
        """
        memory = self.start(problem.n_params)
        learning_rate = self.learning_rate_init
        n_queries = problem.n_queries
        for _ in range(self.max_iter):
            total = self.pass_over(problem, problem.batches(self.batch_size, random_state),
                                   params, memory, learning_rate)
            if monitor.update(params, total / n_queries):
                return params, True
            if self.needs_train_metric and not monitor.train_improved:
                learning_rate *= self.learning_rate_decay
        return params, False

    def start(self, n_params):
        """The step rule's initial state (moments, velocity) for ``n_params`` parameters.

        :meth:`pass_over` updates it in place; kept between calls, it lets
        a stream of batches continue where the previous one stopped (a
        ranker's ``partial_fit``).
        """
        return self._start(n_params)

    def pass_over(self, problem: Problem, batches, params: np.ndarray, memory,
                  learning_rate: float) -> float:
        """One step per batch of ``batches``, in their order; the summed batch objectives.

        ``params`` and ``memory`` (from :meth:`start`) are updated in place.
        Returns the sum over the batches of their objective times their
        number of queries (the epoch's mean objective times its queries).
        """
        total = 0.0
        for batch in batches:
            value, grad = problem.value_and_grad(params, batch)
            self._step(memory, params, grad, learning_rate)
            check_finite(params, "weights")
            total += value * batch.n_queries
        return total


class Adam(_StochasticSolver):
    """Adam (Kingma and Ba, 2015) with bias-corrected moment estimates."""

    def __init__(self, *, learning_rate_init, batch_size, max_iter, learning_rate_decay=1.0,
                 beta_1=0.9, beta_2=0.999, epsilon=1e-8):
        super().__init__(learning_rate_init=learning_rate_init, batch_size=batch_size,
                         max_iter=max_iter, learning_rate_decay=learning_rate_decay)
        self.beta_1, self.beta_2, self.epsilon = beta_1, beta_2, epsilon

    def _start(self, n_params):
        return {"t": 0, "m": np.zeros(n_params), "v": np.zeros(n_params),
                "buffer": np.empty(n_params)}

    def _step(self, memory, params, grad, learning_rate):
        memory["t"] += 1
        t, m, v, buf = memory["t"], memory["m"], memory["v"], memory["buffer"]
        m *= self.beta_1
        np.multiply(grad, 1.0 - self.beta_1, out=buf)
        m += buf
        v *= self.beta_2
        np.multiply(grad, grad, out=buf)
        buf *= 1.0 - self.beta_2
        v += buf
        # a squared gradient beyond the largest float makes v inf and the step
        # m / sqrt(v) silently 0
        check_finite(v, "squared gradient (Adam's second-moment estimate)")
        step = (
            learning_rate
            * np.sqrt(1.0 - self.beta_2**t)
            / (1.0 - self.beta_1**t)
        )
        np.sqrt(v, out=buf)
        buf += self.epsilon
        np.divide(m, buf, out=buf)
        buf *= step
        params -= buf


class SGD(_StochasticSolver):
    """Stochastic gradient descent with (heavy-ball) momentum."""

    def __init__(self, *, learning_rate_init, batch_size, max_iter, learning_rate_decay=1.0,
                 momentum=0.9):
        super().__init__(learning_rate_init=learning_rate_init, batch_size=batch_size,
                         max_iter=max_iter, learning_rate_decay=learning_rate_decay)
        self.momentum = momentum

    def _start(self, n_params):
        return np.zeros(n_params)

    def _step(self, velocity, params, grad, learning_rate):
        velocity *= self.momentum
        velocity -= learning_rate * grad
        params += velocity


class LBFGS:
    """L-BFGS-B (scipy) on the full objective; one monitor update per iteration.

    Parameters
    ----------
    max_iter : int
        Maximum number of L-BFGS iterations (function evaluations are capped
        at 20 times that).
    tol : float
        Gradient tolerance (scipy's ``gtol``).
    ftol : float, default=None
        Relative decrease of the objective in one iteration below which the
        run stops (scipy's ``ftol``); None keeps scipy's default (about
        2.2e-9).
    """

    needs_train_metric = False
    full_batch = True

    def __init__(self, *, max_iter, tol, ftol=None):
        self.max_iter = max_iter
        self.tol = tol
        self.ftol = ftol

    def minimize(self, problem: Problem, params: np.ndarray, monitor: RunMonitor,
                 random_state=None) -> tuple[np.ndarray, bool]:
        """Minimise ``problem`` from ``params``; ``(params, converged)``."""
        stopped = False

        def callback(intermediate_result):
            nonlocal stopped
            if monitor.update(intermediate_result.x, intermediate_result.fun):
                stopped = True
                raise StopIteration

        def value_and_grad(params):
            value, grad = problem.value_and_grad(params)
            # L-BFGS works with the gradient's norm and inner products: past the
            # largest float they are inf or NaN inside scipy, and whether a run
            # then stops on a NaN step or goes on with a finite one depends on
            # the BLAS kernel (some compute the norm in extended precision).
            # The sum of squares in NumPy decides the same way on every machine.
            check_finite(np.square(grad).sum(), "squared gradient norm (L-BFGS's step size)")
            return value, grad

        result = minimize(
            value_and_grad,
            params,
            method="L-BFGS-B",
            jac=True,
            callback=callback,
            options={"maxiter": self.max_iter, "maxfun": 20 * self.max_iter, "gtol": self.tol,
                     **({} if self.ftol is None else {"ftol": self.ftol})},
        )
        if monitor.n_updates == 0:  # converged before the first iteration
            stopped = monitor.update(result.x, result.fun) or stopped
        # status 1: the iteration or evaluation budget ran out; 0 converged,
        # 2 stopped on its own (e.g. the line search could not improve further)
        return result.x, stopped or result.status != 1


#: The solvers, name -> class. Stochastic ones take ``learning_rate_init``,
#: ``batch_size``, ``max_iter``, ``learning_rate_decay`` (and SGD ``momentum``);
#: L-BFGS takes ``max_iter`` and ``tol``.
SOLVERS = {"adam": Adam, "sgd": SGD, "lbfgs": LBFGS}
