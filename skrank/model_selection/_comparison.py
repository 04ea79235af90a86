"""What the comparisons of ``python -m skrank compare`` share.

The grouped cross-validation (:mod:`skrank._compare`) and the LETOR protocol
(:mod:`skrank.model_selection._letor_protocol`) print one table: its columns
and their metrics, its format, the progress lines as each step ends, and the
errors that name the ranker and the data it failed on.
"""

import time
import warnings
from contextlib import contextmanager

import numpy as np

from ..metrics import map_score, ndcg_score
from ..utils._memory import NotEnoughMemoryError

CUTOFFS = (1, 2, 3, 4, 5, 10)
COLUMNS = [f"NDCG@{k}" for k in CUTOFFS] + ["MAP"]


class DataError(ValueError):
    """Data of a comparison that cannot be read or scored; the message names the file."""


def ranker_call(name, params):
    """``name(key=value, ...)``: a ranker with the parameters it was built with."""
    return f"{name}({', '.join(f'{k}={v!r}' for k, v in params.items())})"


def _duration(seconds):
    """``under 1 s``, ``42 s``, ``3 min 05 s`` or ``2 h 07 min``."""
    seconds = int(round(seconds))
    if seconds < 1:
        return "under 1 s"
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


class _Progress:
    """How much of a comparison is left, after each step (a fold, a grid point).

    ``steps`` maps each ranker's name to its number of steps. The estimate
    extrapolates the wall time so far: each step still to run costs the mean
    wall time between the results of its ranker's steps so far, or of all
    steps so far for a ranker not yet run. With joblib workers the results
    arrive close together and these means are per worker, not per step; the
    estimate stays an estimate.
    """

    def __init__(self, steps):
        self.left = dict(steps)
        self.seconds = {name: [] for name in steps}
        self.last = time.perf_counter()

    def drop(self, name):
        """Forget the steps ``name`` has left (its row is left out)."""
        self.left[name] = 0

    def resume(self):
        """Charge the time since the last step to no step (a fold just read, logged apart)."""
        self.last = time.perf_counter()

    def step(self, name):
        """Record a step of ``name`` just finished; ``"; about ... left (estimate)"`` or ``""``."""
        now = time.perf_counter()
        self.seconds[name].append(now - self.last)
        self.last = now
        self.left[name] -= 1
        if not any(self.left.values()):
            return ""
        overall = np.mean([s for times in self.seconds.values() for s in times])
        rest = sum(n * (np.mean(self.seconds[other]) if self.seconds[other] else overall)
                   for other, n in self.left.items())
        text = _duration(rest)
        return f"; {text if text.startswith('under') else 'about ' + text} left (estimate)"


def out_of_memory_text(what, exc, advice):
    """The message of a MemoryError while doing ``what``, with ``advice``.

    numpy's ``_ArrayMemoryError`` says what it could not allocate ("Unable to
    allocate 37.3 GiB for an array with shape ..."); a bare MemoryError says
    nothing. A refusal of skrank's (:class:`~skrank.utils._memory.NotEnoughMemoryError`)
    says what would not fit and what to do: ``advice`` is not added to it.
    """
    if isinstance(exc, NotEnoughMemoryError):
        return f"not enough memory to {what}: {exc}"
    reason = f": {exc}" if str(exc) else ""
    return f"not enough memory to {what}{reason}; {advice}"


@contextmanager
def _ranker_errors(what, where):
    """Raise :class:`DataError` naming the ranker ``what`` and ``where`` when it fails.

    A ranker's fit or scores fail on the data with the library's input
    errors: ValueError (NaN or infinite features, labels the ranker cannot
    fit, a :class:`~skrank._core._solvers.DivergenceError`) or TypeError; a
    MemoryError when its sizes or the data do not fit in memory. Their
    message is kept; any other error is a bug and propagates.
    """
    try:
        yield
    except (ValueError, TypeError) as exc:
        raise DataError(f"{what} on {where} failed: {exc}") from exc
    except MemoryError as exc:  # numpy's _ArrayMemoryError among them
        raise DataError(out_of_memory_text(f"run {what} on {where}", exc,
                                           "use a smaller file or fewer --n-jobs")) from exc


def check_labels(y, qid, *, convention, where):
    """Raise :class:`DataError` naming ``where`` unless the table's metrics accept ``y``.

    The metrics of the table are computed once with ``convention`` on
    constant scores, so the labels are checked by the very rules they are
    scored with (finite; within [0, 1000] for the exponential gain).
    """
    try:
        _metrics(y, np.zeros(y.shape[0]), qid, convention)
    except ValueError as exc:  # y and qid are read and checked: the labels are at fault
        raise DataError(
            f"{where}: its labels cannot be scored (convention {convention!r}): {exc}"
        ) from None


def _metrics(y, scores, qid, convention):
    """Test metrics of one model, in ``COLUMNS`` order."""
    values = [ndcg_score(y, scores, qid=qid, k=k, convention=convention) for k in CUTOFFS]
    return values + [map_score(y, scores, qid=qid, convention=convention)]


def _runnable(entries, labels, log):
    """The names of ``entries`` less the rankers that cannot run on ``labels``, each logged.

    ``entries`` maps each name to its registry entry
    (:class:`~skrank.rankers._registry.RankerEntry`); ``labels`` is a list
    of ``(name, y)``. An entry says what its ranker cannot run on (the
    optional boosted trees: labels other than small integers, a package that
    fails to load), so that its row is left out with a note rather than
    failing the comparison after the others ran.
    """
    kept = []
    for name, entry in entries.items():
        reason = None if entry.unusable is None else entry.unusable(labels)
        if reason is None:
            kept.append(name)
        else:
            log(f"[{name}] row absent: {reason}")
            last = f"{name}: {reason}"
    if entries and not kept:
        raise DataError(f"no ranker left to compare ({last})")
    return kept


@contextmanager
def _closing(outputs):
    """Close the joblib result generator ``outputs`` on leaving, also before its end.

    On an error the tasks still running are cancelled, and joblib's warning
    that some results were not used, which would follow the error being
    reported (or come at garbage collection), is not shown.
    """
    try:
        yield outputs
    finally:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            outputs.close()


def format_table(results, title):
    """The comparison table: mean ± std per metric, and mean fit seconds.

    ``results`` maps each ranker's name to its per-fold metrics in
    ``COLUMNS`` order and its fit seconds per fold.
    """
    width = max(len(name) for name in results) + 2
    lines = [title, "ranker".ljust(width) + "".join(c.rjust(17) for c in COLUMNS) + "fit s".rjust(9)]
    for name, (table, times) in results.items():
        cells = "".join(
            f"{m:.4f} ± {s:.4f}".rjust(17) for m, s in zip(table.mean(axis=0), table.std(axis=0))
        )
        lines.append(name.ljust(width) + cells + f"{np.mean(times):9.2f}")
    return "\n".join(lines)
