"""When a run stops and which parameters it keeps: patience on held-out queries.

A front end builds a :class:`StoppingRule` (patience, tolerance, the
monitored metric); each run gets a :class:`Monitor` from it, which the
solver updates after every epoch or iteration.
"""

import time
from dataclasses import dataclass, field

import numpy as np

from ._objective import Objective


class UnscorableValidationError(ValueError):
    """The validation queries got NaN scores while the training scores are finite.

    ``largest`` is the largest absolute value of the validation rows; a front
    end re-raises it naming where those rows came from.
    """

    def __init__(self, largest):
        super().__init__(
            "The scores of the validation queries are NaN while the training scores are "
            "finite: the validation rows hold values the model cannot score (their "
            f"largest absolute value is {largest:.3g})."
        )
        self.largest = largest


@dataclass
class StoppingRule:
    """When a run stops, and which of its parameter vectors it keeps.

    A front end builds it with its ``tol``, ``n_iter_no_change``, ``scorer``
    and ``verbose``; the fit then gives it the held-out queries and whether
    the solver needs the training metric (:func:`dataclasses.replace`).

    With ``validation`` (``(X, y, layout)`` of held-out queries), the
    ``scorer`` is computed on them after every epoch; the run stops after
    ``n_iter_no_change`` epochs without an improvement of more than ``tol``
    and keeps the parameters of its best epoch. Without it, the training
    objective decides (an improvement is a decrease of more than ``tol``) and
    the last parameters are kept. ``n_iter_no_change=None`` has no patience:
    the solver alone decides when to stop (L-BFGS's own tolerances).

    ``verbose`` prints one line per epoch; ``train_metric`` (or ``verbose``)
    also scores the training queries after every epoch, for solvers whose
    schedule needs it.
    """

    tol: float
    n_iter_no_change: int | None
    scorer: object = None
    validation: tuple = None
    train_metric: bool = False
    verbose: int = 0

    def monitor(self, objective, label):
        """A fresh :class:`Monitor` of one run."""
        return Monitor(self, objective, label)


@dataclass
class Monitor:
    """Per-epoch bookkeeping of one run: curves, best parameters, the stopping decision."""

    rule: StoppingRule
    objective: Objective
    label: str
    loss_curve: list = field(default_factory=list)
    validation_scores: list = field(default_factory=list)
    best_score: float = -np.inf
    best_loss: float = np.inf
    best_params: np.ndarray = None
    best_train_metric: float = -np.inf
    train_improved: bool = True
    no_change: int = 0
    start: float = field(default_factory=time.perf_counter)

    @property
    def n_updates(self):
        return len(self.loss_curve)

    def _metric(self, scores, y, layout):
        return self.rule.scorer.score_predictions(y, scores, qid=layout.qid)

    def update(self, params, loss):
        """Record one epoch; True when the run should stop."""
        rule = self.rule
        self.loss_curve.append(float(loss))
        line = f"{self.label}, iteration {self.n_updates}, loss = {loss:.6f}"
        if rule.train_metric or rule.verbose:
            objective = self.objective
            train_metric = self._metric(
                objective.train_scores(params), objective.y, objective.state.layout
            )
            line += f", train {rule.scorer.name} = {train_metric:.4f}"
            self.train_improved = train_metric > self.best_train_metric
            self.best_train_metric = max(self.best_train_metric, train_metric)
        if rule.validation is not None:
            X, y, layout = rule.validation
            scores = self.objective.network.forward(params, X, layout)[0]
            if np.isnan(scores).any():  # +-inf is still a ranking; NaN is none
                raise UnscorableValidationError(float(abs(X).max()))
            score = self._metric(scores, y, layout)
            self.validation_scores.append(score)
            line += f", validation {rule.scorer.name} = {score:.4f}"
            improved = score > self.best_score + rule.tol
            if score > self.best_score:
                self.best_score = score
                self.best_params = params.copy()
        else:
            improved = loss < self.best_loss - rule.tol
            self.best_loss = min(self.best_loss, loss)
        if rule.verbose:
            print(f"{line}, {time.perf_counter() - self.start:.2f} s", flush=True)
        self.no_change = 0 if improved else self.no_change + 1
        return rule.n_iter_no_change is not None and self.no_change >= rule.n_iter_no_change
