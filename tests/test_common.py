"""scikit-learn's estimator checks over every skrank estimator; shared docs."""

import inspect
import re

import pytest
from sklearn.utils.estimator_checks import check_param_validation, parametrize_with_checks

from skrank import BoltzRankRanker, ListNetRanker, LogRankRanker, QueryNormalizer, SoftRankRanker
from skrank.rankers._params import format_default
from skrank.utils._sklearn_compat import assert_docstring_consistency
from skrank.utils.estimator_checks import expected_failed_checks


def _fast(ranker_class, **params):
    """A ranker with settings that keep each check under a fraction of a second."""
    return ranker_class(early_stopping=False, max_iter=20, n_iter_no_change=3, random_state=0, **params)


RANKERS = [
    # defaults: qid=None is one query, so early stopping warns and falls back
    ListNetRanker(max_iter=20, random_state=0),
    _fast(ListNetRanker),
    _fast(ListNetRanker, hidden_layer_sizes=(3,), solver="lbfgs"),
    # restarts averaged into one wider MLP
    _fast(ListNetRanker, hidden_layer_sizes=(2,), n_init=2, restarts="average"),
    SoftRankRanker(max_iter=20, random_state=0),
    _fast(SoftRankRanker),
    _fast(SoftRankRanker, hidden_layer_sizes=(3,), solver="lbfgs", rank_distribution="hybrid",
          n_exact=2, sinkhorn_iterations=2),
    _fast(SoftRankRanker, solver="sgd", n_init=2, restarts="best"),
    # BoltzRank1 (the paper's 5 scaled-tanh units) and BoltzRank2 (pairwise
    # potential; predict(X) without qid scores all rows as one query)
    _fast(BoltzRankRanker, n_rankings=10, n_init=2),
    _fast(BoltzRankRanker, n_rankings=10, n_init=2, output_activation="scaled_tanh",
          restarts="best"),
    _fast(BoltzRankRanker, n_rankings=10, n_init=1, hidden_layer_sizes=(3,),
          pairwise_hidden_layer_sizes=(5,)),
    _fast(BoltzRankRanker, n_rankings=5, hidden_layer_sizes=(), output_activation="identity",
          solver="lbfgs", objective="likelihood"),
    # LogRank: the default (sampled L3-NDCG), the AUC closed form, the
    # non-convex ExpGain on a small MLP with restarts
    LogRankRanker(random_state=0),
    LogRankRanker(objective="convex", metric="auc", normalize_pairs=False, max_iter=50,
                  random_state=0),
    LogRankRanker(objective="expected_gain", metric="map", n_rankings=10, walk_length=3,
                  walk_restart="graded", hidden_layer_sizes=(3,), n_init=2, max_iter=30,
                  random_state=0),
]
ESTIMATORS = [QueryNormalizer(), QueryNormalizer(method="zscore"), *RANKERS]


# The fast settings stop at max_iter on purpose.
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.filterwarnings("ignore:early_stopping=True holds out:UserWarning")
@parametrize_with_checks(ESTIMATORS, expected_failed_checks=expected_failed_checks)
def test_sklearn_compatible(estimator, check):
    check(estimator)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_param_validation(estimator):
    check_param_validation(type(estimator).__name__, estimator)


def test_shared_parameters_and_attributes_are_documented_alike():
    """A parameter or attribute that two rankers share reads the same in both."""
    rankers = [ListNetRanker, SoftRankRanker]
    shared = sorted(set.intersection(*(set(inspect.signature(r).parameters) for r in rankers)))
    assert {"hidden_layer_sizes", "n_init", "restarts", "scoring", "warm_start"} <= set(shared)
    assert_docstring_consistency(rankers, include_params=shared, include_attrs=True)
    # BoltzRank's network defaults differ (the paper's); the rest reads the same
    signatures = [inspect.signature(r).parameters for r in (*rankers, BoltzRankRanker)]
    same_default = [p for p in shared if all(p in s for s in signatures)
                    and len({repr(s[p].default) for s in signatures}) == 1]
    assert {"alpha", "early_stopping", "scoring", "solver", "warm_start"} <= set(same_default)
    assert_docstring_consistency([*rankers, BoltzRankRanker], include_params=same_default,
                                 include_attrs=["n_iter_", "loss_curve_", "validation_scores_",
                                                "best_validation_score_", "coef_", "coefs_"])
    # LogRank: one solver (L-BFGS) to convergence, no early stopping, and its
    # own penalty form; the parameters it shares otherwise read the same
    own_meaning = {"alpha", "max_iter", "tol", "n_init", "verbose"}
    with_logrank = sorted(set(shared) & set(inspect.signature(LogRankRanker).parameters)
                          - own_meaning)
    assert with_logrank == ["activation", "hidden_layer_sizes", "n_jobs", "random_state",
                            "warm_start"]
    assert_docstring_consistency([*rankers, LogRankRanker], include_params=with_logrank,
                                 include_attrs=["coef_", "coefs_", "n_features_in_",
                                                "feature_names_in_"])


@pytest.mark.parametrize("ranker", [ListNetRanker, SoftRankRanker, BoltzRankRanker,
                                    LogRankRanker], ids=lambda r: r.__name__)
def test_documented_defaults_are_the_signatures(ranker):
    """Each parameter's ``default=`` in the docstring is the ranker's own (BoltzRank's
    ``batch_size=4``, LogRank's ``max_iter=500``...), also in the shared fragments."""
    doc = inspect.getdoc(ranker)
    section = doc.split("Parameters\n----------\n", 1)[1].split("\n\nAttributes\n", 1)[0]
    documented = dict(re.findall(r"^(\w+) : .*, default=(.+)$", section, flags=re.M))
    signature = {n: p.default for n, p in inspect.signature(ranker).parameters.items()}
    assert documented.keys() == signature.keys()
    assert "%(" not in doc  # every placeholder filled
    for name, default in signature.items():
        assert documented[name] == format_default(default), name
    expected = {BoltzRankRanker: {"batch_size": "4", "n_init": "3", "activation": '"scaled_tanh"',
                                  "hidden_layer_sizes": "(5,)"},
                LogRankRanker: {"max_iter": "500", "tol": "1e-6", "alpha": '"auto"'}}
    for name, shown in expected.get(ranker, {}).items():
        assert documented[name] == shown
