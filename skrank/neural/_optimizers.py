"""Optimizers over a flat parameter vector.

They never see the loss or the network: the stochastic ones get a gradient
per step, L-BFGS gets a function returning ``(value, gradient)``.
"""

import numpy as np
from scipy.optimize import minimize


class _Stochastic:
    """A step rule with a learning rate that can be decayed."""

    learning_rate = None

    def decay(self, factor):
        """Multiply the learning rate by ``factor``."""
        self.learning_rate *= factor


class Adam(_Stochastic):
    """Adam (Kingma and Ba, 2015) with bias-corrected moment estimates."""

    def __init__(self, n_params, learning_rate, beta_1=0.9, beta_2=0.999, epsilon=1e-8):
        self.learning_rate = learning_rate
        self.beta_1, self.beta_2, self.epsilon = beta_1, beta_2, epsilon
        self.t = 0
        self.m = np.zeros(n_params)
        self.v = np.zeros(n_params)

    def step(self, params, grad):
        """Update ``params`` in place."""
        self.t += 1
        self.m *= self.beta_1
        self.m += (1.0 - self.beta_1) * grad
        self.v *= self.beta_2
        self.v += (1.0 - self.beta_2) * grad * grad
        lr = (
            self.learning_rate
            * np.sqrt(1.0 - self.beta_2**self.t)
            / (1.0 - self.beta_1**self.t)
        )
        params -= lr * self.m / (np.sqrt(self.v) + self.epsilon)


class SGD(_Stochastic):
    """Stochastic gradient descent with (heavy-ball) momentum."""

    def __init__(self, n_params, learning_rate, momentum=0.9):
        self.learning_rate = learning_rate
        self.momentum = momentum
        self.velocity = np.zeros(n_params)

    def step(self, params, grad):
        """Update ``params`` in place."""
        self.velocity *= self.momentum
        self.velocity -= self.learning_rate * grad
        params += self.velocity


def lbfgs(fun, x0, *, max_iter, tol, callback=None):
    """Minimise ``fun(x) -> (value, grad)`` with scipy's L-BFGS-B.

    ``callback(intermediate_result)`` is called after every iteration and may
    raise ``StopIteration`` to end the run early. Returns scipy's
    ``OptimizeResult``.
    """
    return minimize(
        fun,
        x0,
        method="L-BFGS-B",
        jac=True,
        callback=callback,
        options={"maxiter": max_iter, "maxfun": 20 * max_iter, "gtol": tol},
    )


#: Stochastic solvers, name -> class.
STOCHASTIC_SOLVERS = {"adam": Adam, "sgd": SGD}
