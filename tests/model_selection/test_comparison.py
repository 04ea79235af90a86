"""What compare's two protocols share (skrank/model_selection/_comparison.py).

The progress estimate, durations, and the errors of a ranker in a worker.
"""

import numpy as np
import pytest
from sklearn.utils.parallel import Parallel, delayed

from skrank.model_selection._comparison import DataError, _ranker_errors

from tests._inputs import array_memory_error


def test_a_memory_error_in_a_worker_keeps_its_type():
    """joblib re-raises a worker's error as it was: numpy's MemoryError is still one."""
    array_memory_error()  # skips where 1 EiB could be allocated
    match = r"^not enough memory to run R on F: Unable to allocate 1\.00 EiB for an array"
    with pytest.raises(DataError, match=match), _ranker_errors("R", "F"):
        Parallel(n_jobs=2)(delayed(np.empty)(2**60, dtype=np.int8) for _ in range(2))


def test_progress_estimate_extrapolates_each_rankers_steps(monkeypatch):
    """Steps to come cost their ranker's mean so far, or the mean of all steps so far."""
    from skrank.model_selection import _comparison

    clock = iter([0.0, 10.0, 12.0, 42.0, 50.0])
    monkeypatch.setattr(_comparison.time, "perf_counter", lambda: next(clock))
    progress = _comparison._Progress({"A": 2, "B": 2})
    assert progress.step("A") == "; about 30 s left (estimate)"  # 1 x 10 + 2 x 10
    assert progress.step("A") == "; about 12 s left (estimate)"  # 2 x mean(10, 2)
    assert progress.step("B") == "; about 30 s left (estimate)"  # 1 x 30
    assert progress.step("B") == ""  # nothing left


@pytest.mark.parametrize("duration, text", [
    (0.4, "under 1 s"), (1.0, "1 s"), (59.4, "59 s"), (125, "2 min 05 s"),
    (7620, "2 h 07 min"),
])
def test_duration(duration, text):
    """How a duration in seconds is written (a format, not a timing)."""
    from skrank.model_selection._comparison import _duration

    assert _duration(duration) == text
