"""Shared fixtures: the LETOR data beside the repository, optional packages, seeds,
metadata routing, one BLAS thread."""

import importlib
import os
from pathlib import Path

import numpy as np
import pytest
import sklearn
from threadpoolctl import threadpool_limits

REPO_ROOT = Path(__file__).resolve().parents[1]


def _skip_or_fail_in_ci(message):
    """Skip the test for want of something it needs; fail it instead under ``CI=true``.

    CI installs every extra the suite uses and has the LETOR data beside the
    repository, so there a missing one is a broken setup, not a reason to skip.
    """
    __tracebackhide__ = True  # reported where the test or fixture asked
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="session", autouse=True)
def _one_blas_thread():
    """Run the tests, and the Python processes they start, with one BLAS thread.

    The tests fit on small data, where BLAS threads only cost: starting and
    spin-waiting on every small product and factorisation (L-BFGS-B's, the
    networks' layers) took about half the suite's CPU time on the 2-core
    machines, and more than doubled its wall time when other processes shared
    the cores. The variables reach the subprocesses (README's code, ``python -m
    skrank``); worker processes of ``n_jobs`` get their limits from joblib.
    """
    with pytest.MonkeyPatch.context() as env:
        for name in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS"):
            env.setenv(name, "1")
        with threadpool_limits(limits=1, user_api="blas"):
            yield


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
        _skip_or_fail_in_ci(message)
    return path


@pytest.fixture(scope="session")
def installed():
    """``installed(module, extra)``: the imported module, or a skip (a failure in CI).

    For the optional packages of pyproject.toml's extras: without ``module``
    the test skips, naming the ``extra`` that installs it; under ``CI=true``,
    where every extra is installed, it fails.
    """

    def require(module, extra):
        __tracebackhide__ = True
        try:
            return importlib.import_module(module)
        except ImportError as exc:
            _skip_or_fail_in_ci(
                f"{module} is not installed ({exc}); install the {extra} extra "
                f"(pip install '.[{extra}]')."
            )

    return require


@pytest.fixture(scope="session")
def pytrec_eval(installed):
    """The ``pytrec_eval`` module (trec_eval); fails (not skips) in CI without it."""
    return installed("pytrec_eval", "test")


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


@pytest.fixture
def memory_available(monkeypatch):
    """``memory_available(n_bytes)``: the memory skrank sees as available, for the test.

    What :func:`skrank.utils._memory.check_memory` compares an allocation
    with, so that a refusal is tested with small arrays (None: unknown).
    Nothing large is ever allocated to test it.
    """

    def set_to(n_bytes):
        monkeypatch.setattr("skrank.utils._memory.available_memory", lambda: n_bytes)

    return set_to
