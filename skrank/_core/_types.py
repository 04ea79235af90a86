"""The seams of the core, as protocols a type checker and a reader can follow.

Four objects meet in a fit, each known to the others only through what is
written here:

* a :class:`Network` maps feature rows to scores and back-propagates the
  gradient of the scores (:mod:`~skrank._core._networks`,
  :mod:`~skrank._core._pairwise_network`);
* a :class:`Loss` maps the scores of whole queries to the mean loss and its
  gradient (every :class:`~skrank.losses.ListwiseLoss`, whose docstring is
  the protocol for writing a loss of one's own);
* a :class:`Problem` is what a solver minimises over a flat parameter
  vector, on all training queries or on mini-batches of them (the monitor
  and the combining of restarts also read its network, state and labels)
  (:class:`~skrank._core._objective.Objective`,
  :class:`~skrank._core._folded_objective.FoldedObjective`);
* a :class:`RunMonitor` tells a solver when to stop
  (:class:`~skrank._core._stopping.Monitor`).

Nothing checks these at run time but the tests
(``tests/core/test_types.py``): they are documentation a tool can read.
"""

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..losses import LossState


@runtime_checkable
class Network(Protocol):
    """Feature rows to scores, and the gradient of the loss back to the parameters.

    Its parameters live in one flat float64 vector (what the solvers see);
    it computes in the dtype of its input rows (float32 stays float32).
    """

    #: Length of the flat parameter vector.
    n_params: int
    #: Whether :meth:`forward` needs the query layout of the rows (a network
    #: that scores the documents of a query jointly).
    needs_query: bool

    def init_params(self, random_state: np.random.RandomState) -> np.ndarray:
        """Initial parameters drawn from ``random_state``."""

    def forward(self, params: np.ndarray, X: Any, layout: Any = None) -> tuple[np.ndarray, Any]:
        """``(scores, cache)``: one score per row of ``X``, and what :meth:`backward` needs."""

    def backward(self, params: np.ndarray, cache: Any, dscores: np.ndarray) -> np.ndarray:
        """The gradient with respect to ``params`` (float64) of a loss whose
        gradient with respect to the scores is ``dscores``."""

    def penalty(self, params: np.ndarray, alpha: float) -> tuple[float, np.ndarray]:
        """The L2 penalty of strength ``alpha`` and its gradient."""

    def export(self, params: np.ndarray) -> Mapping[str, Any]:
        """The fitted attributes of the network (``coef_``, ``coefs_`` ...)."""

    @classmethod
    def restore(cls, attributes: Mapping[str, Any]) -> tuple["Network", np.ndarray]:
        """``(network, params)`` from the attributes :meth:`export` gave."""

    def combine(self, params_list: Sequence[np.ndarray],
                weights: np.ndarray) -> tuple["Network", np.ndarray]:
        """One network scoring the weighted sum of the networks of ``params_list``."""


@runtime_checkable
class Loss(Protocol):
    """A listwise loss as the fit loop uses it, once prepared on the training rows."""

    def check_state(self, state: Any) -> None:
        """Raise unless this loss could have prepared ``state``."""

    def sorted_value_and_grad(self, s_sorted: np.ndarray, state: LossState, *,
                              check_state: bool = True) -> tuple[float, np.ndarray]:
        """Mean loss over the queries of ``state`` and its gradient, scores in sorted order."""

    def logit_form(self, state: LossState) -> Any:
        """The loss as an objective of per-query sample logits, or None."""


@runtime_checkable
class Problem(Protocol):
    """What a solver minimises: an objective over a flat parameter vector."""

    #: Number of training queries (an epoch's mean is over them).
    n_queries: int
    #: Length of the parameter vector.
    n_params: int
    #: The network the parameters are of (the monitor scores the validation
    #: queries with it; restarts are combined by it).
    network: Network
    #: The loss state of the training rows (its layout groups them).
    state: LossState
    #: The labels of the training rows, grouped as ``state.layout``.
    y: np.ndarray

    def value_and_grad(self, params: np.ndarray, batch: Any = None) -> tuple[float, np.ndarray]:
        """The objective on ``batch`` (None: all training queries) and its gradient."""

    def value(self, params: np.ndarray) -> float:
        """The objective on all training queries."""

    def batches(self, batch_size: int, random_state: np.random.RandomState) -> Iterator[Any]:
        """One epoch's mini-batches of ``batch_size`` whole queries, each with
        ``n_queries``; a batch is used before the next is drawn."""

    def train_scores(self, params: np.ndarray) -> np.ndarray:
        """The scores of the training rows (for the training metric)."""


@runtime_checkable
class RunMonitor(Protocol):
    """What a solver reports to after every epoch or iteration."""

    #: Whether the training metric improved at the last update (asked for
    #: by solvers whose step size decays).
    train_improved: bool

    @property
    def n_updates(self) -> int:
        """Updates so far."""

    def update(self, params: np.ndarray, loss: float) -> bool:
        """Record one epoch or iteration; True when the run should stop."""
