"""scikit-learn's estimator checks that skrank's estimators fail by design.

Pass :func:`expected_failed_checks` to scikit-learn's
:func:`~sklearn.utils.estimator_checks.check_estimator` or
:func:`~sklearn.utils.estimator_checks.parametrize_with_checks`, as skrank's
own test suite does, to see these checks reported as expected failures with
the reason instead of as errors.
"""

__all__ = ["expected_failed_checks"]

_PER_QUERY_STATISTICS = (
    "By design the statistics are computed per query on the data being transformed, so "
    "transforming a subset of the rows of a query (with qid=None, of all rows) gives "
    "different values."
)
_JOINT_SCORES = (
    "By design the pairwise potential scores a document against the other documents of "
    "its query; predict(X) without qid makes all rows one query, so a subset of the rows "
    "is another query with other scores."
)

_QUERY_WEIGHTS = (
    "sample_weight holds query weights (the same for all rows of a query, as in LightGBM "
    "and XGBoost); the check passes weights that vary between the rows of one query "
    "(qid=None), which fit refuses with a ValueError rather than misread."
)
_RANKER_CHECKS = (
    "check_sample_weights_not_overwritten",
    "check_sample_weight_equivalence_on_dense_data",
    "check_sample_weight_equivalence_on_sparse_data",
)


def expected_failed_checks(estimator):
    """The checks ``estimator`` fails by design, with the reason for each.

    Parameters
    ----------
    estimator : estimator object
        A skrank estimator (any other estimator gets an empty dict).

    Returns
    -------
    checks : dict
        Check names (as scikit-learn names them) mapped to the reason.

    Examples
    --------
    >>> from sklearn.utils.estimator_checks import check_estimator
    >>> from skrank import QueryNormalizer
    >>> from skrank.utils.estimator_checks import expected_failed_checks
    >>> sorted(expected_failed_checks(QueryNormalizer()))
    ['check_methods_subset_invariance']
    >>> _ = check_estimator(QueryNormalizer(),
    ...                     expected_failed_checks=expected_failed_checks(QueryNormalizer()))
    """
    from ..preprocessing import QueryNormalizer
    from ..rankers._base import BaseRanker

    if isinstance(estimator, QueryNormalizer):
        return {"check_methods_subset_invariance": _PER_QUERY_STATISTICS}
    checks = {}
    if isinstance(estimator, BaseRanker):
        checks.update(dict.fromkeys(_RANKER_CHECKS, _QUERY_WEIGHTS))
    if getattr(estimator, "pairwise_hidden_layer_sizes", None) is not None:
        checks["check_methods_subset_invariance"] = _JOINT_SCORES
    return checks
