"""Bad and extreme inputs shared by the test files of several modules, and the settings
of the fast fits that feed them.

Text and ragged labels, huge integers, the largest float, and the messages
that name them; fits of three or twenty epochs; the message of a diverged fit.
A test of one module's checks keeps its own inputs in its file.
"""

import warnings

import numpy as np
import pytest

from skrank import BoltzRankRanker, ListNetRanker, LogRankRanker, SoftRankRanker, losses
from skrank.losses import ListwiseLoss

# ----------------------------------------------------------------------------
# Fast fits
RANKERS = [ListNetRanker, SoftRankRanker, BoltzRankRanker, LogRankRanker]
FAST_SETTINGS = {
    ListNetRanker: dict(max_iter=3),
    SoftRankRanker: dict(max_iter=3),
    BoltzRankRanker: dict(max_iter=3, n_rankings=5, n_init=1),
    LogRankRanker: dict(max_iter=3, n_rankings=6),
}


def fast(cls, **params):
    """A ranker of three iterations (few samples, one start), seeded."""
    return cls(random_state=0, **{**FAST_SETTINGS[cls], **params})


#: Settings of a fit of three epochs without a held-out split.
THREE_EPOCHS = dict(max_iter=3, early_stopping=False, random_state=0)
TWENTY_EPOCHS = dict(max_iter=20, random_state=0)

#: Every loss class that skrank.losses exports (the abstract base excepted).
PUBLIC_LOSSES = sorted(
    (obj for obj in map(losses.__dict__.get, losses.__all__)
     if isinstance(obj, type) and issubclass(obj, ListwiseLoss) and obj is not ListwiseLoss),
    key=lambda cls: cls.__name__,
)


def small_queries(rng, qid):
    """Labels 0 to 2 and scores for the rows of ``qid``."""
    y = rng.integers(0, 3, size=len(qid)).astype(float)
    return y, rng.normal(size=len(qid))


# ----------------------------------------------------------------------------
# Text and ragged labels, and the messages that name them
TEXT_LABELS = {
    "str": (lambda y: y.astype(int).astype(str), r"an array of strings \(dtype <U\d+\)"),
    "bytes": (lambda y: y.astype(int).astype(bytes), r"an array of bytes \(dtype \|S\d+\)"),
    "object-str": (lambda y: y.astype(int).astype(str).astype(object),
                   "an object array holding '\\d' of type str"),
}


def text_message(name, got):
    return rf"^{name} must be numeric, got {got}\..* e\.g\. {name}\.astype\(float\)\.$"


RAGGED = [[1], [2, 3]]


def ragged_message(name):
    return (rf"^{name} must be a 1-D array of numbers; got a ragged nested sequence "
            r"\(\[\[1\], \[2, 3\]\]\)\.$")


# ----------------------------------------------------------------------------
# Huge numbers
#: Integers beyond 64 bits.
HUGE = [2**63, 10**23]
LARGEST = np.finfo(np.float64).max
DIVERGED = r"^{}: the [\w ']+(\([^)]*\))? overflowed to inf or NaN: the optimisation diverged\. "


def diverged(cls, message):
    """``pytest.raises`` of the error of a diverged fit of ``cls``, blaming ``message``."""
    return pytest.raises(ValueError, match=DIVERGED.format(cls.__name__) + message)


def loss_id(loss):
    """A test id naming the loss and the parameters that set its computation."""
    params = {name: getattr(loss, name) for name in (
        "objective", "metric", "sampler", "normalize_pairs", "gain_weight", "rank_distribution",
        "sinkhorn_iterations") if hasattr(loss, name)}
    return f"{type(loss).__name__}({', '.join(f'{k}={v!r}' for k, v in params.items())})"


# ----------------------------------------------------------------------------
# Memory
def fail_to_allocate(*args, **kwargs):
    raise MemoryError("Unable to allocate 7.28 TiB for an array")


def array_memory_error():
    """numpy's own MemoryError, from an array of 1 EiB: refused, nothing is allocated."""
    try:
        np.empty(2**60, dtype=np.int8)
    except MemoryError as exc:
        return exc
    pytest.skip("an array of 1 EiB was allocated")


# ----------------------------------------------------------------------------
# Warnings
def no_warnings():
    """Warnings as errors until the returned context's ``__exit__``."""
    context = warnings.catch_warnings()
    context.__enter__()
    warnings.simplefilter("error")
    return context
