"""What the benchmarks share: where the LETOR data is, and how a timing is taken."""

import os
import sys
import time
from pathlib import Path

import numpy as np


def ohsumed_root():
    """Folder holding OHSUMED's ``Fold1`` .. ``Fold5``; exits if not found.

    Looks in ``$SKRANK_SHARED_DATA/ohsumed``, then ``../shared/data/ohsumed``
    relative to the repository root.
    """
    candidates = []
    if os.environ.get("SKRANK_SHARED_DATA"):
        candidates.append(Path(os.environ["SKRANK_SHARED_DATA"]) / "ohsumed")
    repo = Path(__file__).resolve().parent.parent
    candidates.append(repo.parent / "shared" / "data" / "ohsumed")
    for path in candidates:
        if (path / "Fold1").is_dir():
            return path
    sys.exit(
        "OHSUMED (LETOR 3.0) not found; looked in: "
        + ", ".join(str(p) for p in candidates)
        + ". Set SKRANK_SHARED_DATA to the folder that holds ohsumed/Fold1..Fold5."
    )


def median_time(func, repeat):
    """Median wall time of ``func()`` over ``repeat`` runs, after one warm-up."""
    func()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        func()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))
