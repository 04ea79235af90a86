"""permutation_importance (skrank/inspection/_permutation.py).

Oracles: a hand-written loop and scikit-learn's permutation_importance with a
scorer closing over qid. Bad arguments are refused naming them.
"""

import re

import numpy as np
import pytest
from joblib import parallel_config
from numpy.testing import assert_array_equal
from sklearn.base import BaseEstimator
from sklearn.inspection import permutation_importance as sklearn_permutation_importance
from sklearn.linear_model import Ridge
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skrank import ListNetRanker
from skrank.datasets import make_ranking
from skrank.inspection import permutation_importance
from skrank.metrics import make_ranking_scorer, map_score, ndcg_score

from tests._inputs import HUGE
from tests._selection import N_ROWS, three_epoch_listnet

INFORMATIVE = 1  # the largest weight of make_ranking(random_state=0)'s coef
NOISE = 4  # the appended column, independent of the labels


@pytest.fixture(scope="module")
def data():
    """make_ranking data plus a pure-noise column, rows in shuffled query order."""
    X, y, qid = make_ranking(n_queries=30, n_docs=8, n_features=4, random_state=0)
    rng = np.random.default_rng(0)
    X = np.hstack([X, rng.normal(size=(X.shape[0], 1))])
    rows = rng.permutation(X.shape[0])
    return X[rows], y[rows], qid[rows]


@pytest.fixture(scope="module")
def ridge(data):
    X, y, _ = data
    return Ridge().fit(X, y)


def _loop_importances(model, X, y, qid, n_repeats, random_state, metric):
    """The documented draws, written out: one seed, the same shuffles per feature."""
    seed = np.random.RandomState(random_state).randint(2**31)
    baseline = metric(y, model.predict(X), qid=qid)
    importances = np.empty((X.shape[1], n_repeats))
    for col in range(X.shape[1]):
        rng = np.random.RandomState(seed)
        X_permuted = X.copy()
        idx = np.arange(X.shape[0])
        for repeat in range(n_repeats):
            rng.shuffle(idx)
            X_permuted[:, col] = X_permuted[idx, col]
            score = metric(y, model.predict(X_permuted), qid=qid)
            importances[col, repeat] = baseline - score
    return importances


def _ndcg10(y, y_score, *, qid):
    return ndcg_score(y, y_score, qid=qid, k=10)


@pytest.mark.parametrize("random_state", [0, 7])
def test_equals_hand_written_loop(data, ridge, random_state):
    X, y, qid = data
    result = permutation_importance(ridge, X, y, qid=qid, n_repeats=4,
                                    random_state=random_state)
    expected = _loop_importances(ridge, X, y, qid, 4, random_state, _ndcg10)
    assert_array_equal(result.importances, expected)
    assert_array_equal(result.importances_mean, expected.mean(axis=1))
    assert_array_equal(result.importances_std, expected.std(axis=1))


def test_equals_scikit_learn_with_a_scorer_closing_over_qid(data, ridge):
    # rows never move, so a scorer that captures qid is right for scikit-learn too
    X, y, qid = data

    def scorer(estimator, X_, y_):
        return ndcg_score(y_, estimator.predict(X_), qid=qid, k=10)

    expected = sklearn_permutation_importance(ridge, X, y, scoring=scorer,
                                              n_repeats=3, random_state=1)
    result = permutation_importance(ridge, X, y, qid=qid, n_repeats=3, random_state=1)
    assert_array_equal(result.importances, expected.importances)


def test_informative_feature_matters_and_noise_does_not(data, ridge):
    X, y, qid = data
    result = permutation_importance(ridge, X, y, qid=qid, n_repeats=5, random_state=0)
    mean = result.importances_mean
    assert mean[INFORMATIVE] > 0.2
    assert mean[INFORMATIVE] == mean.max()
    assert abs(mean[NOISE]) < 0.02
    assert abs(mean[NOISE]) < mean[:NOISE].min()


def test_feature_the_model_ignores_has_zero_importance(data):
    X, y, qid = data
    model = Ridge().fit(X, y)
    model.coef_[NOISE] = 0.0
    result = permutation_importance(model, X, y, qid=qid, n_repeats=3, random_state=0)
    assert_array_equal(result.importances[NOISE], np.zeros(3))
    assert (result.importances_mean[:NOISE] > 0).all()


def test_n_jobs_does_not_change_the_result(data, ridge):
    X, y, qid = data
    serial = permutation_importance(ridge, X, y, qid=qid, n_repeats=3,
                                    random_state=0, n_jobs=1)
    # threads keep the test fast; the seed is drawn before the features are dispatched
    with parallel_config(backend="threading"):
        parallel = permutation_importance(ridge, X, y, qid=qid, n_repeats=3,
                                          random_state=0, n_jobs=2)
    assert_array_equal(serial.importances, parallel.importances)


def test_random_state_instance_and_int_agree(data, ridge):
    X, y, qid = data
    a = permutation_importance(ridge, X, y, qid=qid, n_repeats=2, random_state=3)
    b = permutation_importance(ridge, X, y, qid=qid, n_repeats=2,
                               random_state=np.random.RandomState(3))
    assert_array_equal(a.importances, b.importances)


@pytest.mark.parametrize(
    "scoring, metric",
    [
        ("map", map_score),
        ("ndcg@5", lambda y, s, *, qid: ndcg_score(y, s, qid=qid, k=5)),
        (make_ranking_scorer("ndcg", k=3, convention="letor"),
         lambda y, s, *, qid: ndcg_score(y, s, qid=qid, k=3, convention="letor")),
    ],
    ids=["map", "ndcg@5", "RankingScorer"],
)
def test_scoring_forms(data, ridge, scoring, metric):
    X, y, qid = data
    result = permutation_importance(ridge, X, y, qid=qid, scoring=scoring,
                                    n_repeats=2, random_state=0)
    assert_array_equal(result.importances,
                       _loop_importances(ridge, X, y, qid, 2, 0, metric))


def test_several_metrics_give_a_dict_of_bunches(data, ridge):
    X, y, qid = data
    result = permutation_importance(ridge, X, y, qid=qid, scoring=["ndcg@10", "map"],
                                    n_repeats=2, random_state=0)
    assert list(result) == ["ndcg@10", "map"]
    for name in result:
        single = permutation_importance(ridge, X, y, qid=qid, scoring=name,
                                        n_repeats=2, random_state=0)
        assert_array_equal(result[name].importances, single.importances)


class _QidRecorder(BaseEstimator):
    """A fitted linear scorer whose predict takes qid and records it."""

    def __init__(self, coef):
        self.coef = coef

    def fit(self, X, y, *, qid=None):
        return self

    def predict(self, X, *, qid=None):
        self.seen_qid_ = qid
        return np.asarray(X) @ self.coef


def test_qid_reaches_a_predict_that_takes_it(data):
    X, y, qid = data
    strings = np.array([f"q{v}" for v in qid])
    model = _QidRecorder(Ridge().fit(X, y).coef_)
    result = permutation_importance(model, X, y, qid=strings, n_repeats=2,
                                    random_state=0)
    assert_array_equal(model.seen_qid_, strings)
    assert result.importances.shape == (X.shape[1], 2)


@pytest.mark.parametrize(
    "make_model",
    [
        lambda: Ridge(),
        lambda: make_pipeline(StandardScaler(), Ridge()),
        lambda: ListNetRanker(max_iter=30, early_stopping=False, random_state=0),
    ],
    ids=["Ridge", "Pipeline", "ListNetRanker"],
)
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_any_fitted_estimator(data, make_model):
    X, y, qid = data
    model = make_model()
    if isinstance(model, ListNetRanker):
        model.fit(X, y, qid=qid)
    else:
        model.fit(X, y)
    result = permutation_importance(model, X, y, qid=qid, n_repeats=2, random_state=0)
    assert result.importances.shape == (X.shape[1], 2)
    assert result.importances_mean.argmax() == INFORMATIVE


def test_dataframe_equals_array(data, ridge, installed):
    pd = installed("pandas", "test")
    X, y, qid = data
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])])
    model = Ridge().fit(frame, y)
    from_frame = permutation_importance(model, frame, y, qid=qid, n_repeats=2,
                                        random_state=0)
    from_array = permutation_importance(ridge, X, y, qid=qid, n_repeats=2,
                                        random_state=0)
    np.testing.assert_allclose(from_frame.importances, from_array.importances)


def test_query_weights_reach_the_scorer(data, ridge):
    X, y, qid = data
    weights = np.random.default_rng(4).uniform(0.5, 2.0, size=qid.max() + 1)[qid]

    def weighted_ndcg10(y_, y_score, *, qid):
        return ndcg_score(y_, y_score, qid=qid, k=10, sample_weight=weights)

    result = permutation_importance(ridge, X, y, qid=qid, n_repeats=2,
                                    random_state=0, sample_weight=weights)
    assert_array_equal(result.importances,
                       _loop_importances(ridge, X, y, qid, 2, 0, weighted_ndcg10))
    unweighted = permutation_importance(ridge, X, y, qid=qid, n_repeats=2,
                                        random_state=0)
    assert not np.allclose(result.importances, unweighted.importances)


def test_sample_weight_refused_by_a_pointwise_scorer(data, ridge):
    X, y, qid = data
    match = "scoring=pointwise scorer 'r2'.*does not support"
    with pytest.raises(ValueError, match=match):
        permutation_importance(ridge, X, y, qid=qid, scoring="r2",
                               sample_weight=np.ones(len(y)))


def test_qid_none_is_one_query_and_warns_on_many_rows(data, ridge):
    X, y, _ = data
    assert len(y) > 100
    with pytest.warns(UserWarning, match=r"^permutation_importance got qid=None, so all "
                                         rf"{len(y)} rows are treated as ONE query"):
        implicit = permutation_importance(ridge, X, y, n_repeats=2, random_state=0)
    explicit = permutation_importance(ridge, X, y, qid=np.zeros(len(y)), n_repeats=2,
                                      random_state=0)
    np.testing.assert_array_equal(implicit.importances, explicit.importances)


@pytest.mark.parametrize(
    "n_repeats, error",
    [(0, ValueError), (-1, ValueError), (True, TypeError), (2.0, TypeError),
     (2**63, ValueError), (10**23, ValueError)],
)
def test_n_repeats_must_be_a_positive_integer(data, ridge, n_repeats, error):
    X, y, qid = data
    with pytest.raises(error, match=f"n_repeats must be a positive integer, "
                                    f"got n_repeats={n_repeats!r}"):
        permutation_importance(ridge, X, y, qid=qid, n_repeats=n_repeats)


def test_n_repeats_beyond_the_memory_available_is_refused_before_any_repeat(data, ridge,
                                                                           memory_available):
    """10**12 repeats were started: their scores would have outgrown the memory, hours later."""
    X, y, qid = data
    with pytest.raises(MemoryError, match=r"^n_repeats=1000000000000 needs about 109\.1 TiB for "
                                          r"the scores of 5 features times 1 scorer times "
                                          r"n_repeats repeats, more than the .* of memory "
                                          r"available now; lower n_repeats\.$"):
        permutation_importance(ridge, X, y, qid=qid, n_repeats=10**12)
    memory_available(3 * 8 * 5 * 2 * 4 - 1)  # two scorers, 4 repeats
    with pytest.raises(MemoryError, match=r"^n_repeats=4 needs about 960 bytes for the scores of "
                                          r"5 features times 2 scorers times n_repeats repeats"):
        permutation_importance(ridge, X, y, qid=qid, n_repeats=4, scoring=["ndcg", "map"])


def test_lengths_are_checked(data, ridge):
    X, y, qid = data
    with pytest.raises(ValueError, match="qid must have one entry per row"):
        permutation_importance(ridge, X, y, qid=qid[:-1])
    n = len(y)
    message = f"^y must have one entry per row of X: X has {n} rows, y has {n - 1}\\.$"
    with pytest.raises(ValueError, match=message):
        permutation_importance(ridge, X, y[:-1], qid=qid)
    message = (f"^sample_weight must have one entry per row of X: X has {n} rows, "
               f"sample_weight has 3\\.$")
    with pytest.raises(ValueError, match=message):
        permutation_importance(ridge, X, y, qid=qid, sample_weight=np.ones(3))


def test_unknown_scoring_name(data, ridge):
    X, y, qid = data
    with pytest.raises(ValueError, match="scoring='ndgc@10'"):
        permutation_importance(ridge, X, y, qid=qid, scoring="ndgc@10")


# ----------------------------------------------------------------------------
# Bad arguments, named
@pytest.fixture(scope="module")
def listnet(eight_queries):
    X, y, qid = eight_queries
    return three_epoch_listnet().fit(X, y, qid=qid)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_permutation_importance_of_a_ranker_refuses_a_metric_function(eight_queries, listnet):
    X, y, qid = eight_queries
    with pytest.raises(TypeError, match=r"^scoring must be a scorer.* got scoring=ndcg_score "):
        permutation_importance(listnet, X, y, qid=qid, scoring=ndcg_score)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("n", [3, N_ROWS + 1])
def test_wrong_length_sample_weight_names_sample_weight_and_both_lengths(n, eight_queries, listnet):
    X, y, qid = eight_queries
    message = (rf"^sample_weight must have one entry per row of X: X has {N_ROWS} rows, "
               rf"sample_weight has {n}\.$")
    with pytest.raises(ValueError, match=message):
        permutation_importance(listnet, X, y, qid=qid, sample_weight=np.ones(n))


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_wrong_length_y_names_y_and_both_lengths(eight_queries, listnet):
    X, y, qid = eight_queries
    with pytest.raises(ValueError, match=rf"^y must have one entry per row of X: X has "
                                         rf"{N_ROWS} rows, y has 3\.$"):
        permutation_importance(listnet, X, y[:3], qid=qid)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_scalar_sample_weight_is_refused_naming_it(eight_queries, listnet):
    X, y, qid = eight_queries
    with pytest.raises(TypeError, match=rf"^sample_weight must be an array-like with one "
                                        rf"entry per row of X \({N_ROWS}\), got "
                                        rf"sample_weight=2\.0\.$"):
        permutation_importance(listnet, X, y, qid=qid, sample_weight=2.0)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("random_state", ["x", -1, 2.5, 2**32])
def test_bad_random_state_of_permutation_importance_names_random_state(random_state, eight_queries,
                                                                         listnet):
    X, y, qid = eight_queries
    message = (r"^random_state must be None, an int in \[0, 2\*\*32 - 1\] or a "
               rf"numpy\.random\.RandomState, got random_state={re.escape(repr(random_state))}"
               r" \(.+\)\.$")
    with pytest.raises(ValueError, match=message):
        permutation_importance(listnet, X, y, qid=qid, random_state=random_state)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("value", HUGE)
def test_huge_n_jobs_of_permutation_importance_is_one_worker_per_feature(value, eight_queries,
                                                                          listnet):
    X, y, qid = eight_queries
    got = permutation_importance(listnet, X, y, qid=qid, n_repeats=2, random_state=0,
                                 n_jobs=value)
    expected = permutation_importance(listnet, X, y, qid=qid, n_repeats=2, random_state=0)
    np.testing.assert_array_equal(got.importances, expected.importances)
