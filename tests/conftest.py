"""Shared fixtures: the LETOR data beside the repository, optional packages, seeds,
metadata routing, one BLAS thread; data sets and ranker classes used by several
test files.

A fixture used by the tests of one package only lives in that package's
``conftest.py`` (``tests/datasets``, ``tests/losses``, ``tests/model_selection``,
``tests/stream``); helper functions live in the ``tests/_*.py`` modules.
"""

import importlib
import os
from pathlib import Path

import numpy as np
import pytest
import sklearn
from threadpoolctl import threadpool_limits

from skrank import make_ranking
from skrank._core._runs import fit_runs
from skrank.rankers import _base

from tests._rankers import ALL_RANKERS, N_QUERIES, STOCHASTIC


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


# ----------------------------------------------------------------------------
# Data sets of several test files (module scope: made once per test module)
@pytest.fixture(scope="module")
def six_queries():
    """6 queries of 5 documents, 10 features."""
    return make_ranking(n_queries=6, n_docs=5, random_state=0)


@pytest.fixture(scope="module")
def eight_queries():
    """40 rows: 8 queries of 5 documents, 3 features."""
    return make_ranking(n_queries=8, n_docs=5, n_features=3, random_state=0)


@pytest.fixture(scope="module")
def eight_queries_scores(eight_queries):
    """Random scores of the rows of ``eight_queries``."""
    return np.random.default_rng(0).normal(size=len(eight_queries[1]))


@pytest.fixture(scope="module")
def thirty_queries():
    """30 queries of 10 documents, 10 features (300 rows: more than qid=None takes quietly)."""
    return make_ranking(n_queries=30, n_docs=10, random_state=0)


@pytest.fixture(scope="module")
def weighted_queries():
    """12 queries with integer weights 0 to 3: X, y, qid, weights, sample_weight, unique."""
    X, y, qid = make_ranking(n_queries=12, n_docs=(4, 9), n_features=5, noise=0.5,
                             random_state=0)
    weights = np.random.default_rng(0).integers(0, 4, 12)
    weights[:2] = [0, 3]
    unique, inverse = np.unique(qid, return_inverse=True)
    return X, y, qid, weights, weights[inverse], unique


# ----------------------------------------------------------------------------
# The fit every ranker shares (tests/_rankers.py has the settings)
@pytest.fixture(params=ALL_RANKERS, ids=lambda cls: cls.__name__)
def ranker_class(request):
    """Every ranker class of :mod:`skrank.rankers`, one per test."""
    return request.param


@pytest.fixture(scope="module")
def forty_queries():
    """40 queries of 10 documents; noise=0.5 keeps the validation NDCG below 1 all along."""
    return make_ranking(n_queries=N_QUERIES, n_docs=10, n_features=5, noise=0.5, random_state=0)


@pytest.fixture(scope="module")
def other_queries():
    """10 more queries from another seed (an explicit validation set)."""
    return make_ranking(n_queries=10, n_docs=10, n_features=5, noise=0.5, random_state=1)


@pytest.fixture
def captured_runs(monkeypatch):
    """What the front end hands the fit loop (objective, initial vectors) and the runs it gets."""
    record = {}

    def spy(objective, solver, stopping, starts, seeds, **kwargs):
        runs = fit_runs(objective, solver, stopping, starts, seeds, **kwargs)
        record.update(objective=objective, starts=[s.copy() for s in starts], runs=runs)
        return runs

    monkeypatch.setattr(_base, "fit_runs", spy)
    return record


@pytest.fixture(params=STOCHASTIC, ids=lambda cls: cls.__name__)
def stochastic_class(request):
    """Every ranker class with a stochastic solver (and partial_fit), one per test."""
    return request.param


@pytest.fixture
def scattered(rng):
    """24 queries of 2-9 rows with ids in random order, their rows interleaved."""
    sizes = rng.integers(2, 10, size=24)
    qid = np.repeat(rng.permutation(1000)[:24], sizes)
    X = rng.normal(size=(len(qid), 5))
    y = rng.integers(0, 3, size=len(qid)).astype(float)
    shuffle = rng.permutation(len(qid))
    return X[shuffle], y[shuffle], qid[shuffle]
