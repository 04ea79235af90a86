"""Bad input to the selection and inspection tools gets a clear error (issue 27).

One section per cause found by the fuzzing campaign: a metric function given
as ``scoring`` (and permutation_importance's other arguments), ``n_jobs``
beyond joblib's range, custom ``cv`` splits that do not index the rows, and
the methods of a search fitted with ``refit=False``. Each test drives the
reported input through ``cross_validate_ranker``, ``RankerSearchCV``,
``RankerRandomizedSearchCV`` or ``permutation_importance`` and checks the
error's type and message (naming the parameter and the value), or, where the
input has a meaning, that it works as that meaning.
"""

import re

import numpy as np
import pytest
from sklearn.linear_model import Ridge
from sklearn.metrics import make_scorer, r2_score
from sklearn.model_selection import GridSearchCV
from sklearn.model_selection import GroupKFold as SklearnGroupKFold
from sklearn.utils._param_validation import InvalidParameterError

from skrank.metrics import get_ranking_scorer, make_ranking_scorer, ndcg_score
from skrank.model_selection import cross_validate_ranker

from tests._inputs import HUGE
from tests._selection import N_ROWS, SEARCHES, grid_search, run_tool, three_epoch_listnet

# ListNet with max_iter=3, the campaign's fast ranker, stops before converging
pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


TOOLS = ["permutation_importance", "cross_validate_ranker", *SEARCHES]
CV_TOOLS = ["cross_validate_ranker", *SEARCHES]


def _scorer_message(name, given, signature, hint):
    return (rf"^{re.escape(name)} must be a scorer, called as scorer\(estimator, X, y, "
            rf"qid=qid\), such as get_ranking_scorer\('ndcg@10'\) or "
            rf"make_ranking_scorer\(ndcg_score\); got {re.escape(name)}={given} with "
            rf"signature {re.escape(signature)}, {re.escape(hint)}\.$")


@pytest.mark.parametrize("tool", TOOLS)
def test_metric_function_as_scoring_is_refused_naming_it(tool, eight_queries):
    message = _scorer_message(
        "scoring", "ndcg_score", "(y_true, y_score, *, qid=None, ...)",
        "a metric function: make it a scorer with make_ranking_scorer(ndcg_score)")
    with pytest.raises(TypeError, match=message):
        run_tool(tool, eight_queries, scoring=ndcg_score)


def test_metric_function_in_a_scoring_dict_is_refused_naming_its_key(eight_queries):
    message = _scorer_message(
        "scoring['ndcg']", "ndcg_score", "(y_true, y_score, *, qid=None, ...)",
        "a metric function: make it a scorer with make_ranking_scorer(ndcg_score)")
    with pytest.raises(TypeError, match=message):
        run_tool("cross_validate_ranker", eight_queries,
             scoring={"map": "map", "ndcg": ndcg_score})


def test_pointwise_metric_function_as_scoring_points_to_make_scorer(eight_queries):
    message = _scorer_message(
        "scoring", "r2_score", "(y_true, y_pred, *, sample_weight=None, ...)",
        "a metric function: make it a scorer with sklearn.metrics.make_scorer(r2_score)")
    with pytest.raises(TypeError, match=message):
        run_tool("permutation_importance", eight_queries, scoring=r2_score)


def test_callable_that_cannot_take_estimator_x_y_is_refused(eight_queries):
    def two_arguments(estimator, X):
        return 0.0

    message = _scorer_message("scoring", "two_arguments", "(estimator, X)",
                              "which cannot be called that way")
    with pytest.raises(TypeError, match=message):
        run_tool("cross_validate_ranker", eight_queries, scoring=two_arguments)


@pytest.mark.parametrize("scoring", [
    make_ranking_scorer(ndcg_score, k=10),
    get_ranking_scorer("ndcg@10"),
    "ndcg@10",
], ids=["make_ranking_scorer", "get_ranking_scorer", "name"])
def test_scorers_of_a_metric_agree(scoring, eight_queries):
    got = run_tool("cross_validate_ranker", eight_queries, scoring=scoring)["test_score"]
    expected = run_tool("cross_validate_ranker", eight_queries, scoring="ndcg@10")["test_score"]
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("scoring", [
    make_scorer(r2_score),
    lambda estimator, X, y: r2_score(y, estimator.predict(X)),
    lambda estimator, X, y, *, qid: r2_score(y, estimator.predict(X)),
], ids=["make_scorer", "estimator-X-y", "estimator-X-y-qid"])
def test_callables_taking_estimator_x_y_are_still_scorers(scoring, eight_queries):
    got = run_tool("cross_validate_ranker", eight_queries, scoring=scoring)["test_score"]
    expected = run_tool("cross_validate_ranker", eight_queries, scoring="r2")["test_score"]
    np.testing.assert_allclose(got, expected, rtol=1e-12)


@pytest.mark.parametrize("value", HUGE)
def test_huge_n_jobs_of_cross_validate_ranker_is_one_worker_per_fold(value, eight_queries):
    X, y, qid = eight_queries
    got = cross_validate_ranker(three_epoch_listnet(), X, y, qid=qid, cv=2, n_jobs=value)
    expected = cross_validate_ranker(three_epoch_listnet(), X, y, qid=qid, cv=2)
    np.testing.assert_array_equal(got["test_score"], expected["test_score"])


@pytest.mark.parametrize("value", HUGE)
@pytest.mark.parametrize("search", SEARCHES)
def test_huge_n_jobs_of_the_searches_is_one_worker_per_fit(search, value, eight_queries):
    X, y, qid = eight_queries
    got = SEARCHES[search](cv=2, n_jobs=value).fit(X, y, qid=qid)
    expected = SEARCHES[search](cv=2).fit(X, y, qid=qid)
    assert got.n_jobs == value  # the parameter is given back after the fit
    np.testing.assert_array_equal(got.cv_results_["mean_test_score"],
                                  expected.cv_results_["mean_test_score"])


@pytest.mark.parametrize("search", SEARCHES)
def test_n_jobs_0_of_the_searches_is_refused_naming_n_jobs(search, eight_queries):
    X, y, qid = eight_queries
    message = rf"^The 'n_jobs' parameter of {search} must be .* or None\. Got 0 instead\.$"
    with pytest.raises(InvalidParameterError, match=message):
        SEARCHES[search](cv=2, n_jobs=0).fit(X, y, qid=qid)


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


@pytest.mark.parametrize("tool", CV_TOOLS)
def test_splitter_that_yields_no_split_is_refused(tool, eight_queries):
    with pytest.raises(ValueError, match=r"^cv gave no splits: cv=_NoSplits\(\) yielded no "
                                         r"\(train, test\) pair; give at least one split\.$"):
        run_tool(tool, eight_queries, cv=_NoSplits())


@pytest.mark.parametrize("cv", [True, False, np.True_, 2.5, "abc"])
def test_cv_that_is_not_a_number_of_folds_or_splits_is_refused(cv, eight_queries):
    message = (r"^cv must be an int \(the number of folds\), a splitter or an iterable of "
               rf"\(train, test\) index arrays, got cv={re.escape(repr(cv))}\.$")
    with pytest.raises(TypeError, match=message):
        run_tool("cross_validate_ranker", eight_queries, cv=cv)


@pytest.mark.parametrize("search", SEARCHES)
def test_cv_true_of_the_searches_is_refused_naming_cv(search, eight_queries):
    X, y, qid = eight_queries
    message = rf"^The 'cv' parameter of {search} must be .*\. Got True instead\.$"
    with pytest.raises(InvalidParameterError, match=message):
        SEARCHES[search](cv=True).fit(X, y, qid=qid)


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


def test_returned_indices_of_a_mask_split_are_row_numbers(eight_queries):
    X, y, qid = eight_queries
    train, test = _mask(ROWS[:20]), _mask(ROWS[20:])
    got = cross_validate_ranker(Ridge(), X, y, qid=qid, cv=[(train, test)],
                                return_indices=True)
    np.testing.assert_array_equal(got["indices"]["train"][0], ROWS[:20])
    np.testing.assert_array_equal(got["indices"]["test"][0], ROWS[20:])


@pytest.fixture(scope="module", params=list(SEARCHES))
def unrefitted(request, eight_queries):
    X, y, qid = eight_queries
    return SEARCHES[request.param](cv=2, refit=False).fit(X, y, qid=qid)


def _refit_message(search, attr):
    return (rf"^This {search} instance was initialized with `refit=False`\. {attr} is "
            r"available only after refitting on the best parameters\. You can refit an "
            r"estimator manually using the `best_params_` attribute$")


def test_predict_after_refit_false_is_scikit_learns_attribute_error(unrefitted, eight_queries):
    X, _, qid = eight_queries
    name = type(unrefitted).__name__
    assert not hasattr(unrefitted, "predict")
    with pytest.raises(AttributeError, match=rf"^This '{name}' has no attribute "
                                             r"'predict'$") as raised:
        unrefitted.predict(X, qid=qid)
    assert isinstance(raised.value.__cause__, AttributeError)
    assert re.match(_refit_message(name, "predict"), str(raised.value.__cause__))


def test_score_after_refit_false_is_scikit_learns_attribute_error(unrefitted, eight_queries):
    X, y, qid = eight_queries
    with pytest.raises(AttributeError,
                       match=_refit_message(type(unrefitted).__name__, "score")):
        unrefitted.score(X, y, qid=qid)


def test_refit_false_errors_are_those_of_grid_search_cv(eight_queries):
    """The oracle: scikit-learn's GridSearchCV fitted with refit=False."""
    X, y, qid = eight_queries
    ours = grid_search(cv=2, refit=False).fit(X, y, qid=qid)
    theirs = GridSearchCV(Ridge(), {"alpha": [1e-3, 1.0]}, cv=2, refit=False).fit(X, y)

    def errors(search, call):
        with pytest.raises(AttributeError) as raised:
            call(search)
        return [str(e).replace(type(search).__name__, "SEARCH")
                for e in (raised.value, raised.value.__cause__) if e is not None]

    assert errors(ours, lambda s: s.predict(X, qid=qid)) == errors(theirs,
                                                                   lambda s: s.predict(X))
    assert errors(ours, lambda s: s.score(X, y, qid=qid)) == errors(theirs,
                                                                    lambda s: s.score(X, y))


def test_refit_false_search_finds_the_parameters_of_a_refitted_one(unrefitted, eight_queries):
    X, y, qid = eight_queries
    refitted = SEARCHES[type(unrefitted).__name__](cv=2).fit(X, y, qid=qid)
    assert unrefitted.best_params_ == refitted.best_params_
    assert not hasattr(unrefitted, "best_estimator_")
