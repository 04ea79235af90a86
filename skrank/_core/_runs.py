"""The fit loop shared by every ranker: explicit objects in, fitted runs out.

Nothing here reads an estimator. A ranker's front end builds

* the objective (:func:`~skrank._core._objective.make_objective`): the
  network, the prepared loss, the training rows and the L2 strength (what
  the solvers minimise);
* a solver of :mod:`skrank._core._solvers` (:class:`~skrank._core._solvers.Adam`,
  :class:`~skrank._core._solvers.SGD` or :class:`~skrank._core._solvers.LBFGS`);
* a :class:`~skrank._core._stopping.StoppingRule`: patience, tolerance and
  the monitored metric on the validation queries (or the training objective
  without them);
* :class:`Restarts`: how many runs, how they are combined, how many run in
  parallel;

and calls :func:`fit_runs` with the initial parameter vectors and seeds of
its runs (in parallel through scikit-learn's joblib wrapper), then
:func:`average_runs` or :func:`best_run` to keep one model.

The errors raised here speak of the objects above (the validation queries,
the solver's step), never of an estimator's parameters: a front end
translates them into its own terms.
"""

from dataclasses import dataclass

import numpy as np
from sklearn.utils.parallel import Parallel, delayed

from ..utils._validation import check_n_jobs
from ._solvers import check_finite
from ._stopping import StoppingRule
from ._types import Problem


#: How :class:`Restarts` combines its runs: one network scoring the mean of
#: their standardised scores (:func:`average_runs`), or the best run
#: (:func:`best_run`).
COMBINE = ("average", "best")


@dataclass(frozen=True)
class Restarts:
    """The runs of a fit: their number, how they are combined, how many run at once.

    ``n_init`` runs start from independent initialisations; ``combine`` (one
    of :data:`COMBINE`) keeps one network from them; ``n_jobs`` runs are
    trained in parallel (:func:`fit_runs`).
    """

    n_init: int = 1
    combine: str = "best"
    n_jobs: object = None


@dataclass
class RunResult:
    """What one run leaves: its kept parameters and its history."""

    params: np.ndarray
    n_iter: int
    loss_curve: list
    validation_scores: list
    best_validation_score: float
    converged: bool


def run(objective: Problem, solver, stopping: StoppingRule, params: np.ndarray, seed: int,
        label: str = "Run 0") -> "RunResult":
    """One optimisation from ``params`` (copied); a :class:`RunResult`."""
    monitor = stopping.monitor(objective, label)
    final, converged = solver.minimize(
        objective, params.copy(), monitor, np.random.RandomState(seed)
    )
    kept = final if monitor.best_params is None else monitor.best_params
    check_finite(kept, "weights")
    return RunResult(
        params=np.array(kept),
        n_iter=monitor.n_updates,
        loss_curve=monitor.loss_curve,
        validation_scores=(monitor.validation_scores if stopping.validation is not None
                           else None),
        best_validation_score=(monitor.best_score if stopping.validation is not None
                               else None),
        converged=converged,
    )


def fit_runs(objective: Problem, solver, stopping: StoppingRule, starts, seeds, *,
             n_jobs=None) -> list[RunResult]:
    """:func:`run` from every initial vector of ``starts``, in parallel with joblib.

    Results do not depend on ``n_jobs``: each run has its own seed. More
    workers than runs would idle, so a larger ``n_jobs`` (however large:
    joblib itself fails from about a million) is the number of runs.
    """
    return Parallel(n_jobs=check_n_jobs(n_jobs, len(starts)))(
        delayed(run)(objective, solver, stopping, params, seed, f"Run {i}")
        for i, (params, seed) in enumerate(zip(starts, seeds))
    )


def best_run(objective, runs):
    """The run with the best validation score, or the lowest final training objective."""
    if len(runs) == 1:
        return runs[0]
    if runs[0].best_validation_score is not None:
        return max(runs, key=lambda r: r.best_validation_score)
    return min(runs, key=lambda r: objective.value(r.params))


def average_runs(objective, runs):
    """One network scoring the mean of the runs' standardised scores.

    Each run's scores are divided by their pooled within-query standard
    deviation on the training rows (a shift of a query's scores does not
    change its ranking, so only the scale needs standardising), so that no
    run dominates the average through the scale of its scores; the mean is
    multiplied by the runs' mean scale, so that the combined scores keep the
    scale at which the loss was trained (it matters to SoftRank's smoothing
    and to a warm start). Returns ``(network, params)``.
    """
    layout = objective.state.layout
    scales = []
    for r in runs:
        s = objective.train_scores(r.params)
        centred = s - layout.expand(layout.mean(s))
        scales.append(np.sqrt(float(centred @ centred) / len(s)))
    scales = np.array(scales)
    live = scales > 0
    if not live.any():  # every run scores all documents of a query alike
        weights = np.full(len(runs), 1.0 / len(runs))
    else:
        # each run standardised, the mean rescaled to the runs' mean scale, so
        # the combined scores keep the scale the loss was trained at
        weights = np.where(live, scales[live].mean() / (len(runs) * np.where(live, scales, 1.0)),
                           0.0)
    return objective.network.combine([r.params for r in runs], weights)
