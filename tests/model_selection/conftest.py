"""Fixtures of the tests of cross_validate_ranker and the searches: data, a dask client."""

import numpy as np
import pytest

from skrank.datasets import make_ranking

from tests.model_selection._estimators import N_QUERIES


@pytest.fixture(scope="module")
def forty_noisy_queries():
    """40 queries of 5 to 12 documents; noisy labels so metrics are not saturated."""
    return make_ranking(
        n_queries=N_QUERIES, n_docs=(5, 12), n_features=5, noise=1.0, random_state=0
    )


@pytest.fixture(scope="module")
def shuffled_queries(forty_noisy_queries):
    """The same rows in random order, with string query ids."""
    X, y, qid = forty_noisy_queries
    perm = np.random.default_rng(1).permutation(len(y))
    return X[perm], y[perm], np.array([f"q{q}" for q in qid])[perm]


# ----------------------------------------------------------------------------
# Dask: joblib's dask backend on an in-process cluster (no network needed)
@pytest.fixture(scope="module")
def dask_client(installed):
    distributed = installed("distributed", "dask")
    cluster = distributed.LocalCluster(
        n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None
    )
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()
