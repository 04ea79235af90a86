"""Data sets made the same way by several test files."""

import numpy as np

from skrank.datasets import make_ranking


def scaled_queries(n_queries, seed):
    """Queries whose feature scales differ by query, so normalisation matters."""
    X, y, qid = make_ranking(
        n_queries=n_queries, n_docs=(4, 10), n_features=4, noise=1.0, random_state=seed
    )
    scale = np.random.default_rng(seed).uniform(0.1, 10.0, size=qid.max() + 1)
    return X * scale[qid][:, None], y, qid
