"""Rankers of the stream tests, and what they fitted."""

import warnings

from sklearn.exceptions import ConvergenceWarning

from skrank._core._network_factory import restore_network


def fitted_params(ranker):
    """The fitted weights as one flat vector."""
    return restore_network(vars(ranker))[1]


def quiet(function, *args, **kwargs):
    """``function(*args, **kwargs)``, ignoring ConvergenceWarning."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return function(*args, **kwargs)


def stream_ranker(cls, **params):
    """A seeded ranker of one start and batches of 5 queries."""
    return cls(**{"random_state": 0, "n_init": 1, "batch_size": 5, **params})
