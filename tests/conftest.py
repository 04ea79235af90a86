"""Shared fixtures: the LETOR data beside the repository, seeds, metadata routing."""

import os
from pathlib import Path

import numpy as np
import pytest
import sklearn

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


@pytest.fixture(scope="session")
def pytrec_eval():
    """The ``pytrec_eval`` module (trec_eval); fails (not skips) in CI without it."""
    try:
        import pytrec_eval
    except ImportError:
        message = (
            "pytrec_eval is not installed; install the test extra "
            "(pip install '.[test]') to compare the metrics with trec_eval."
        )
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    return pytrec_eval


@pytest.fixture
def rng():
    """A seeded random generator."""
    return np.random.default_rng(0)


def _query_id_cases(rng):
    """qid arrays covering every code path of the query layout."""
    uniform_sorted = np.repeat(np.arange(6), 5)
    uniform_shuffled = rng.permutation(uniform_sorted)
    sizes = np.array([1, 2, 3, 7, 8, 16, 17, 33, 1, 5])
    variable_sorted = np.repeat(np.arange(len(sizes)) * 3 + 10, sizes)
    variable_shuffled = rng.permutation(variable_sorted)
    strings = np.array([f"q{v}" for v in variable_shuffled])
    return {
        "uniform_sorted": uniform_sorted,
        "uniform_shuffled": uniform_shuffled,
        "variable_sorted": variable_sorted,
        "variable_shuffled": variable_shuffled,
        "strings": strings,
        "one_query": np.zeros(9, dtype=int),
    }


@pytest.fixture(params=list(_query_id_cases(np.random.default_rng(0))))
def query_ids(request):
    """Query ids of sorted or shuffled rows, of equal or varied sizes, strings, one query."""
    return _query_id_cases(np.random.default_rng(0))[request.param]


@pytest.fixture
def metadata_routing():
    """Context manager factory for scikit-learn's metadata routing.

    ``with metadata_routing():`` turns routing on for the block, and
    ``with metadata_routing(routing):`` sets it to a parametrised value. The
    previous setting comes back when the block exits
    (``sklearn.config_context``). Tests turn routing on only for the block that
    needs it, so code outside the block runs with routing off, scikit-learn's
    default, which our helpers must support.
    """

    def context(enabled=True):
        return sklearn.config_context(enable_metadata_routing=enabled)

    return context
