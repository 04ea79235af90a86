"""Sizes of the rank samples (skrank/losses/_sizing.py).

n_rankings beyond an array, beyond the memory available or failing to
allocate is refused naming n_rankings (and n_draws behind it).
"""

import pytest

from skrank.losses import BoltzRankLoss, LogRankLoss

from tests._inputs import fail_to_allocate

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


@pytest.mark.parametrize("make", [lambda n: BoltzRankLoss(n),
                                  lambda n: LogRankLoss(n_rankings=n, sampler="walk")])
def test_n_rankings_beyond_an_array_is_a_value_error(make):
    """numpy's 'array is too big' named no parameter (checked before allocating)."""
    with pytest.raises(ValueError, match=r"^n_rankings must be at most \d+: the rank samples "
                                         r"of 2 rows in 1 query \(\d+ bytes per ranking\) "
                                         r".* got n_rankings=4611686018427387904\.$"):
        make(2**62).prepare([0, 1], [0, 0])


@pytest.mark.parametrize("make, target", [
    (lambda n: BoltzRankLoss(n), "skrank.losses._boltzrank._samples"),
    (lambda n: LogRankLoss(n_rankings=n, sampler="walk"), "skrank.losses._logrank._walk_block"),
])
def test_failed_allocation_names_n_rankings(monkeypatch, make, target):
    """A MemoryError named no parameter (the allocation is faked here)."""
    monkeypatch.setattr(target, fail_to_allocate)
    with pytest.raises(MemoryError, match=r"^n_rankings=10 needs about [\d.]+ (bytes|KiB|MiB) for the rank "
                                          r"samples of 8 rows in 1 query \(\d+ bytes per "
                                          r"ranking\); lower n_rankings\.$") as info:
        make(10).prepare([0, 1] * 4, [0] * 8, random_state=0)
    assert "Unable to allocate" in str(info.value.__cause__)


@pytest.mark.parametrize("make", [lambda n: BoltzRankLoss(n),
                                  lambda n: LogRankLoss(n_rankings=n, sampler="walk")])
def test_rank_samples_beyond_the_memory_available_are_refused(memory_available, make):
    """The kernel promised them and killed the process at their first write: refused first."""
    y, qid = [0, 1] * 4, [0] * 8
    memory_available(1_000_000)  # the samples take 16 or 25 bytes a ranking, 1.5 MiB or more
    with pytest.raises(MemoryError, match=r"^n_rankings=100000 needs about [12]\.\d MiB for the "
                                          r"rank samples of 8 rows in 1 query \(\d+ bytes per "
                                          r"ranking\), more than the 976\.6 KiB of memory "
                                          r"available now; lower n_rankings\.$"):
        make(100_000).prepare(y, qid, random_state=0)
    # the samples fit, not the 64-bit draws behind them: n_rankings is still named
    memory_available(3_000_000)
    with pytest.raises(MemoryError, match=r"^n_rankings=100000 \(n_draws=\d+ of its draws\) "
                                          r"needs about [\d.]+ (bytes|KiB|MiB) for \d+ (rows|queries) times "
                                          r"n_draws 64-bit draws, more than the 2\.9 MiB of "
                                          r"memory available now; lower n_rankings\.$"):
        make(100_000).prepare(y, qid, random_state=0)
    memory_available(None)  # unknown: nothing is refused
    make(100_000).prepare(y, qid, random_state=0)
