"""expected_failed_checks (skrank/utils/estimator_checks.py): checks failed by design."""

import functools

import pytest
from sklearn.linear_model import Ridge
from sklearn.utils.estimator_checks import estimator_checks_generator

from skrank import BoltzRankRanker, ListNetRanker, LogRankRanker, QueryNormalizer, SoftRankRanker
from skrank.utils.estimator_checks import expected_failed_checks

#: The checks that pass weights varying within a query, which every ranker refuses.
SAMPLE_WEIGHT_CHECKS = {"check_sample_weights_not_overwritten",
                        "check_sample_weight_equivalence_on_dense_data",
                        "check_sample_weight_equivalence_on_sparse_data"}
ESTIMATORS = [ListNetRanker(), SoftRankRanker(), BoltzRankRanker(), LogRankRanker(),
              BoltzRankRanker(pairwise_hidden_layer_sizes=(3,)), QueryNormalizer()]


def _check_names(estimator):
    """The names of the checks scikit-learn runs on ``estimator``."""
    names = set()
    for _, check in estimator_checks_generator(estimator, mark="skip"):
        names.add((check.func if isinstance(check, functools.partial) else check).__name__)
    return names


@pytest.mark.parametrize("ranker", ESTIMATORS[:4], ids=lambda e: type(e).__name__)
def test_a_ranker_fails_the_checks_of_weights_varying_within_a_query(ranker):
    checks = expected_failed_checks(ranker)
    assert set(checks) == SAMPLE_WEIGHT_CHECKS
    assert all("query weights" in reason for reason in checks.values())


def test_the_pairwise_potential_also_fails_subset_invariance():
    checks = expected_failed_checks(BoltzRankRanker(pairwise_hidden_layer_sizes=(3,)))
    assert set(checks) == SAMPLE_WEIGHT_CHECKS | {"check_methods_subset_invariance"}
    assert "pairwise potential" in checks["check_methods_subset_invariance"]


def test_query_normalizer_fails_subset_invariance_alone():
    checks = expected_failed_checks(QueryNormalizer())
    assert list(checks) == ["check_methods_subset_invariance"]
    assert "per query" in checks["check_methods_subset_invariance"]


def test_another_estimator_fails_nothing_by_design():
    assert expected_failed_checks(Ridge()) == {}


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: repr(e))
def test_every_expected_failure_names_a_check_scikit_learn_runs(estimator):
    # a misspelt or retired name would mark nothing, and the check would fail as an error
    assert set(expected_failed_checks(estimator)) <= _check_names(estimator)
