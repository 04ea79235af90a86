"""Shared fixtures: the LETOR data beside the repository, seeds."""

import os
from pathlib import Path

import numpy as np
import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


def _shared_data_dir():
    env = os.environ.get("SKRANK_SHARED_DATA")
    if env:
        return Path(env)
    return REPO_ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data():
    """Path of ``../shared/data``; fails (not skips) in CI when it is missing."""
    path = _shared_data_dir()
    if not (path / "reference_metrics.json").is_file():
        message = (
            f"LETOR data not found at {path}; set SKRANK_SHARED_DATA or place "
            "shared/data beside the repository."
        )
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.fixture
def rng():
    """A seeded random generator."""
    return np.random.default_rng(0)
