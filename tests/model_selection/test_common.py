"""What the selection tools share (skrank/model_selection/_common.py).

Folds of whole queries (an integer cv deals queries in a fixed order, as a
stable GroupKFold), custom cv splits checked, and scoring checked: a metric
function given as scoring is refused naming it.
"""

import re

import numpy as np
import pytest
from sklearn.linear_model import Ridge
from sklearn.metrics import make_scorer, r2_score
from sklearn.model_selection import GroupKFold as SklearnGroupKFold

from skrank.datasets import make_ranking
from skrank.metrics import get_ranking_scorer, make_ranking_scorer, ndcg_score
from skrank.model_selection import RankerSearchCV, cross_validate_ranker
from skrank.model_selection._common import group_folds
from skrank.utils import QueryLayout

from tests._selection import N_ROWS, SEARCHES, run_tool


def test_boolean_mask_splits_are_accepted(forty_noisy_queries):
    X, y, qid = forty_noisy_queries
    first = np.isin(qid, np.unique(qid)[:10])
    result = cross_validate_ranker(Ridge(), X, y, qid=qid, cv=[(~first, first)])
    assert result["test_score"].shape == (1,)


def test_check_disjoint():
    from skrank.utils import QueryLayout
    from skrank.model_selection._common import _check_disjoint

    layout = QueryLayout([1, 1, 2, 2, 3])
    assert _check_disjoint(layout, [0, 1], [2, 3, 4])
    assert not _check_disjoint(layout, [0, 2], [1])


def test_check_disjoint_accepts_boolean_masks():
    from skrank.utils import QueryLayout
    from skrank.model_selection._common import _check_disjoint

    layout = QueryLayout([1, 1, 2, 2, 3])
    train = np.array([True, True, False, False, False])
    assert _check_disjoint(layout, train, ~train)
    other = np.array([False, True, True, False, False])
    assert not _check_disjoint(layout, train, other)


# ----------------------------------------------------------------------
# An integer cv: GroupKFold's folds, the same on every machine
def test_integer_cv_deals_equal_queries_in_a_fixed_order():
    # queries "a", "b", "c" of 2 rows and "d" of 1: largest first, equal sizes
    # in the reverse order of their ids, each to the lightest fold; an
    # unstable sort of the sizes (GroupKFold before scikit-learn sorted
    # stably) could deal "a", "b", "c" in any order, depending on the machine
    qid = np.array(["b", "d", "a", "c", "a", "b", "c"])
    folds = list(group_folds(QueryLayout(qid), 3))
    assert [sorted(set(qid[test])) for _, test in folds] == [["c", "d"], ["b"], ["a"]]
    for train, test in folds:
        assert np.array_equal(np.sort(np.r_[train, test]), np.arange(len(qid)))
        assert np.all(np.diff(train) > 0) and np.all(np.diff(test) > 0)


@pytest.mark.parametrize("seed", range(20))
def test_integer_cv_gives_groupkfolds_folds_without_ties(seed):
    # with every query of its own size, every GroupKFold deals them alike
    rng = np.random.default_rng(seed)
    n_queries = int(rng.integers(2, 30))
    sizes = rng.permutation(np.arange(1, n_queries + 1))
    qid = np.repeat(rng.permutation(10 * n_queries)[:n_queries], sizes)
    qid = qid[rng.permutation(len(qid))]
    n_splits = int(rng.integers(2, n_queries + 1))
    ours = list(group_folds(QueryLayout(qid), n_splits))
    theirs = list(SklearnGroupKFold(n_splits).split(np.zeros(len(qid)), groups=qid))
    assert len(ours) == len(theirs) == n_splits
    for (train, test), (train_sk, test_sk) in zip(ours, theirs):
        assert np.array_equal(train, train_sk) and np.array_equal(test, test_sk)


def test_integer_cv_of_the_tools_uses_the_fixed_folds(monkeypatch):
    # not scikit-learn's GroupKFold, whose order of equal queries may vary
    X, y, qid = make_ranking(n_queries=9, n_docs=4, n_features=3, random_state=0)
    expected = cross_validate_ranker(Ridge(), X, y, qid=qid,
                                     cv=list(group_folds(QueryLayout(qid), 3)))

    def unstable(*args, **kwargs):
        raise AssertionError("GroupKFold.split called")

    monkeypatch.setattr(SklearnGroupKFold, "split", unstable)
    result = cross_validate_ranker(Ridge(), X, y, qid=qid, cv=3)
    assert np.array_equal(result["test_score"], expected["test_score"])
    search = RankerSearchCV(Ridge(), {"alpha": [1.0]}, cv=3).fit(X, y, qid=qid)
    assert np.array_equal(
        [search.cv_results_[f"split{i}_test_score"][0] for i in range(3)],
        expected["test_score"])


# ----------------------------------------------------------------------------
# scoring and cv checked for every tool: a metric function as scoring, custom cv
# splits that do not index the rows
TOOLS = ["permutation_importance", "cross_validate_ranker", *SEARCHES]


CV_TOOLS = ["cross_validate_ranker", *SEARCHES]


def _scorer_message(name, given, signature, hint):
    return (rf"^{re.escape(name)} must be a scorer, called as scorer\(estimator, X, y, "
            rf"qid=qid\), such as get_ranking_scorer\('ndcg@10'\) or "
            rf"make_ranking_scorer\(ndcg_score\); got {re.escape(name)}={given} with "
            rf"signature {re.escape(signature)}, {re.escape(hint)}\.$")


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("tool", TOOLS)
def test_metric_function_as_scoring_is_refused_naming_it(tool, eight_queries):
    message = _scorer_message(
        "scoring", "ndcg_score", "(y_true, y_score, *, qid=None, ...)",
        "a metric function: make it a scorer with make_ranking_scorer(ndcg_score)")
    with pytest.raises(TypeError, match=message):
        run_tool(tool, eight_queries, scoring=ndcg_score)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_metric_function_in_a_scoring_dict_is_refused_naming_its_key(eight_queries):
    message = _scorer_message(
        "scoring['ndcg']", "ndcg_score", "(y_true, y_score, *, qid=None, ...)",
        "a metric function: make it a scorer with make_ranking_scorer(ndcg_score)")
    with pytest.raises(TypeError, match=message):
        run_tool("cross_validate_ranker", eight_queries,
             scoring={"map": "map", "ndcg": ndcg_score})


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_pointwise_metric_function_as_scoring_points_to_make_scorer(eight_queries):
    message = _scorer_message(
        "scoring", "r2_score", "(y_true, y_pred, *, sample_weight=None, ...)",
        "a metric function: make it a scorer with sklearn.metrics.make_scorer(r2_score)")
    with pytest.raises(TypeError, match=message):
        run_tool("permutation_importance", eight_queries, scoring=r2_score)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_callable_that_cannot_take_estimator_x_y_is_refused(eight_queries):
    def two_arguments(estimator, X):
        return 0.0

    message = _scorer_message("scoring", "two_arguments", "(estimator, X)",
                              "which cannot be called that way")
    with pytest.raises(TypeError, match=message):
        run_tool("cross_validate_ranker", eight_queries, scoring=two_arguments)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("scoring", [
    make_ranking_scorer(ndcg_score, k=10),
    get_ranking_scorer("ndcg@10"),
    "ndcg@10",
], ids=["make_ranking_scorer", "get_ranking_scorer", "name"])
def test_scorers_of_a_metric_agree(scoring, eight_queries):
    got = run_tool("cross_validate_ranker", eight_queries, scoring=scoring)["test_score"]
    expected = run_tool("cross_validate_ranker", eight_queries, scoring="ndcg@10")["test_score"]
    np.testing.assert_array_equal(got, expected)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("scoring", [
    make_scorer(r2_score),
    lambda estimator, X, y: r2_score(y, estimator.predict(X)),
    lambda estimator, X, y, *, qid: r2_score(y, estimator.predict(X)),
], ids=["make_scorer", "estimator-X-y", "estimator-X-y-qid"])
def test_callables_taking_estimator_x_y_are_still_scorers(scoring, eight_queries):
    got = run_tool("cross_validate_ranker", eight_queries, scoring=scoring)["test_score"]
    expected = run_tool("cross_validate_ranker", eight_queries, scoring="r2")["test_score"]
    np.testing.assert_allclose(got, expected, rtol=1e-12)


ROWS = np.arange(N_ROWS)
GOOD = (ROWS[:20], ROWS[20:])


def _mask(indices, n=N_ROWS):
    mask = np.zeros(n, dtype=bool)
    mask[indices] = True
    return mask


BAD_SPLITS = {
    "test-out-of-bounds": (
        [(ROWS[:20], np.arange(40, 45))],
        r"Split 0 of the cv iterable: the test indices must be row numbers in \[0, 40\), "
        r"got 5 outside: 40, 41, 42, 43, 44\."),
    "second-split-out-of-bounds": (
        [GOOD, (ROWS[:20], np.r_[20:25, 99])],
        r"Split 1 of the cv iterable: the test indices must be row numbers in \[0, 40\), "
        r"got 1 outside: 99\."),
    "negative-training-index": (
        [(np.r_[-1, 0:20], ROWS[20:])],
        r"Split 0 of the cv iterable: the training indices must be row numbers in "
        r"\[0, 40\), got 1 outside: -1\."),
    "many-out-of-bounds": (
        [(ROWS[:20], np.arange(40, 50))],
        r"Split 0 of the cv iterable: the test indices must be row numbers in \[0, 40\), "
        r"got 10 outside: 40, 41, 42, 43, 44 and 5 more\."),
    "short-mask": (
        [(_mask(ROWS[:20], 30), _mask(ROWS[20:30], 30))],
        r"Split 0 of the cv iterable: the training mask must have one entry per row of X "
        r"\(40\), got 30 entries\."),
    "long-test-mask": (
        [(_mask(ROWS[:20]), _mask(ROWS[20:], 50))],
        r"Split 0 of the cv iterable: the test mask must have one entry per row of X "
        r"\(40\), got 50 entries\."),
    "float-indices": (
        [(ROWS[:20].astype(float), ROWS[20:].astype(float))],
        r"Split 0 of the cv iterable: the training indices must be integers \(row "
        r"numbers\) or a boolean mask, got an array of dtype float64 \(first entries "
        r"\[0\.0, 1\.0, 2\.0, 3\.0, 4\.0\]\)\."),
    "string-indices": (
        [(ROWS[:20], ["20", "21"])],
        r"Split 0 of the cv iterable: the test indices must be integers \(row numbers\) "
        r"or a boolean mask, got an array of dtype <U2 \(first entries \['20', '21'\]\)\."),
    "2d-indices": (
        [(ROWS[:20].reshape(4, 5), ROWS[20:])],
        r"Split 0 of the cv iterable: the training indices must be a 1-d array, got an "
        r"array of shape \(4, 5\)\."),
    "empty-test": (
        [(ROWS[:20], np.arange(0))],
        r"Split 0 of the cv iterable has an empty test set\."),
    "empty-train": (
        [([], ROWS[20:])],
        r"Split 0 of the cv iterable has an empty training set\."),
    "empty-test-mask": (
        [(_mask(ROWS[:20]), np.zeros(N_ROWS, dtype=bool))],
        r"Split 0 of the cv iterable has an empty test set\."),
    "not-a-pair": (
        [(ROWS[:10], ROWS[10:20], ROWS[20:])],
        r"Split 0 of the cv iterable must be a \(train, test\) pair of index arrays, got "
        r"a tuple of length 3\."),
    "not-a-sequence": (
        [3],
        r"Split 0 of the cv iterable must be a \(train, test\) pair of index arrays, got "
        r"3\."),
    "no-split": ([], r"cv gave no splits: the cv iterable yielded no \(train, test\) pair; "
                     r"give at least one split\."),
}


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("case", BAD_SPLITS)
@pytest.mark.parametrize("tool", CV_TOOLS)
def test_cv_split_that_does_not_index_the_rows_is_refused_naming_it(tool, case, eight_queries):
    cv, message = BAD_SPLITS[case]
    with pytest.raises(ValueError, match=f"^{message}$"):
        run_tool(tool, eight_queries, cv=cv)


class _NoSplits:
    """A splitter that yields nothing."""

    def split(self, X, y=None, groups=None):
        return iter(())

    def get_n_splits(self, X=None, y=None, groups=None):
        return 0

    def __repr__(self):
        return "_NoSplits()"


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("tool", CV_TOOLS)
def test_splitter_that_yields_no_split_is_refused(tool, eight_queries):
    with pytest.raises(ValueError, match=r"^cv gave no splits: cv=_NoSplits\(\) yielded no "
                                         r"\(train, test\) pair; give at least one split\.$"):
        run_tool(tool, eight_queries, cv=_NoSplits())


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("cv", [True, False, np.True_, 2.5, "abc"])
def test_cv_that_is_not_a_number_of_folds_or_splits_is_refused(cv, eight_queries):
    message = (r"^cv must be an int \(the number of folds\), a splitter or an iterable of "
               rf"\(train, test\) index arrays, got cv={re.escape(repr(cv))}\.$")
    with pytest.raises(TypeError, match=message):
        run_tool("cross_validate_ranker", eight_queries, cv=cv)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("tool", CV_TOOLS)
def test_masks_and_lists_index_the_rows_as_index_arrays(tool, eight_queries):
    X, y, qid = eight_queries
    folds = list(SklearnGroupKFold(2).split(X, y, groups=qid))
    as_masks = [(_mask(train), _mask(test)) for train, test in folds]
    as_lists = [(train.tolist(), test.tolist()) for train, test in folds]
    key = "test_score" if tool == "cross_validate_ranker" else "mean_test_score"

    def scores(cv):
        got = run_tool(tool, eight_queries, cv=cv)
        return got[key] if tool == "cross_validate_ranker" else got.cv_results_[key]

    expected = scores(folds)
    np.testing.assert_array_equal(scores(as_masks), expected)
    np.testing.assert_array_equal(scores(as_lists), expected)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_returned_indices_of_a_mask_split_are_row_numbers(eight_queries):
    X, y, qid = eight_queries
    train, test = _mask(ROWS[:20]), _mask(ROWS[20:])
    got = cross_validate_ranker(Ridge(), X, y, qid=qid, cv=[(train, test)],
                                return_indices=True)
    np.testing.assert_array_equal(got["indices"]["train"][0], ROWS[:20])
    np.testing.assert_array_equal(got["indices"]["test"][0], ROWS[20:])
