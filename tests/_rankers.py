"""Settings and helpers of the tests that run the fit of every ranker.

The fixtures ``ranker_class``, ``stochastic_class``, ``forty_queries``,
``other_queries``, ``captured_runs`` and ``scattered`` are in
``tests/conftest.py``; what a test needs to fit a ranker fast, skip a
parameter the ranker does not have, and read what the fit did is here.
"""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

import skrank.rankers
from skrank import get_ranking_scorer
from skrank._core._network_factory import restore_network

#: Every ranker class of skrank.rankers.
ALL_RANKERS = [getattr(skrank.rankers, name) for name in skrank.rankers.__all__]

#: The queries of ``forty_queries``.
N_QUERIES = 40
NDCG10 = get_ranking_scorer("ndcg@10")


def fast_ranker(ranker_class, **params):
    """A ranker with settings that fit the 40 queries in a fraction of a second.

    One initialisation unless asked for more (BoltzRank's default is 10). A
    test that sets a parameter the ranker does not have (LogRank has no
    early stopping and no stochastic solver) does not apply to it: skipped.
    """
    accepted = ranker_class().get_params()
    # a ranker without these parameters always does what they ask for
    params = {k: v for k, v in params.items()
              if k in accepted or _ALWAYS.get(k, object()) != v}
    requires(ranker_class, *params)
    defaults = {"random_state": 0, "max_iter": 30, "n_iter_no_change": 3, "n_init": 1}
    return ranker_class(**{**{k: v for k, v in defaults.items() if k in accepted}, **params})


#: What a ranker without the parameter always does (LogRank: L-BFGS, no
#: early stopping).
_ALWAYS = {"early_stopping": False, "solver": "lbfgs"}


def requires(ranker_class, *names):
    """Skip a test about parameters (e.g. early stopping) the ranker does not have."""
    missing = sorted(set(names) - set(ranker_class().get_params()))
    if missing:
        pytest.skip(f"{ranker_class.__name__} has no {', '.join(missing)}")


def fit_quietly(ranker, *args, **kwargs):
    """Fit, ignoring the ConvergenceWarning of runs that stop at max_iter on purpose."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return ranker.fit(*args, **kwargs)


def fitted_params(ranker):
    """The fitted weights as the fit loop's flat vector."""
    return restore_network(vars(ranker))[1]


def validation_rows(qid, random_state=0, fraction=0.2):
    """Rows of the queries the front end holds out with an int ``random_state``.

    The front end's RandomState first draws the seed of the loss, then a
    permutation of the query numbers; the first ``round(fraction *
    n_queries)`` are held out.
    """
    rng = np.random.RandomState(random_state)
    rng.randint(np.iinfo(np.int32).max)  # the loss seed
    unique = np.unique(qid)
    held_out = np.sort(rng.permutation(len(unique))[: round(fraction * len(unique))])
    return np.isin(qid, unique[held_out])


#: The rankers with a stochastic solver, and so partial_fit.
STOCHASTIC = [cls for cls in ALL_RANKERS if "solver" in cls().get_params()]
