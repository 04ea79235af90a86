"""Bad input gets a clear error, not a crash from deep inside (issue 27).

One section per cause of the issue: text labels, the loss API on a plain
``qid``, integers beyond 64 bits, and ``True`` passed as an integer. Each
test drives the input the issue reported and checks the error's type and
message (naming the parameter), or, where the input has a meaning, that it
works as that meaning.
"""

import numpy as np
import pytest

from skrank import BoltzRankRanker, ListNetRanker, LogRankRanker, SoftRankRanker, ndcg_score
from skrank.losses import LogRankLoss

from tests._inputs import HUGE, RAGGED, RANKERS, TEXT_LABELS, fast, ragged_message, text_message


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("kind", sorted(TEXT_LABELS))
@pytest.mark.parametrize("cls", RANKERS, ids=lambda c: c.__name__)
def test_text_labels_are_refused_by_fit_and_score(cls, kind, six_queries):
    X, y, qid = six_queries
    to_text, got = TEXT_LABELS[kind]
    with pytest.raises(TypeError, match=text_message("y", got)):
        fast(cls).fit(X, to_text(y), qid=qid)
    ranker = fast(cls).fit(X, y, qid=qid)
    with pytest.raises(TypeError, match=text_message("y", got)):
        ranker.score(X, to_text(y), qid=qid)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_text_labels_of_the_validation_set_are_refused(six_queries):
    X, y, qid = six_queries
    to_text, got = TEXT_LABELS["str"]
    with pytest.raises(TypeError, match=text_message("y_val", got)):
        fast(ListNetRanker).fit(X, y, qid=qid, X_val=X, y_val=to_text(y), qid_val=qid)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("cls", RANKERS, ids=lambda c: c.__name__)
def test_object_labels_of_numbers_still_fit(cls, six_queries):
    X, y, qid = six_queries
    as_objects = np.array([int(v) for v in y], dtype=object)
    expected = fast(cls).fit(X, y, qid=qid)
    got = fast(cls).fit(X, as_objects, qid=qid)
    np.testing.assert_array_equal(got.predict(X, qid=qid), expected.predict(X, qid=qid))
    assert got.score(X, as_objects, qid=qid) == expected.score(X, y, qid=qid)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_complex_labels_are_refused_by_fit(six_queries):
    X, y, qid = six_queries
    with pytest.raises(ValueError, match=r"Complex data not supported: y must be real"):
        fast(ListNetRanker).fit(X, y + 0j, qid=qid)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("k", HUGE)
def test_huge_k_of_logrank_is_no_cut_off(k, six_queries):
    # as ndcg_score's k: a cut-off past the longest query cuts nothing
    X, y, qid = six_queries
    longest = np.bincount(qid).max()
    assert ndcg_score(y, X[:, 0], qid=qid, k=k) == ndcg_score(y, X[:, 0], qid=qid, k=None)
    huge = fast(LogRankRanker, metric=f"ndcg@{k}").fit(X, y, qid=qid)
    np.testing.assert_array_equal(
        huge.coef_, fast(LogRankRanker, metric=f"ndcg@{longest}").fit(X, y, qid=qid).coef_)
    np.testing.assert_array_equal(  # and no cut-off at all
        huge.coef_, fast(LogRankRanker, metric="ndcg").fit(X, y, qid=qid).coef_)
    assert huge.metric == f"ndcg@{k}"  # the parameter is kept as given
    # k also shapes the graded restarts of the likelihood
    for objective in ("l3", "likelihood"):
        state = LogRankLoss(objective, metric=f"ndcg@{k}", sampler="walk").prepare(
            y, qid, random_state=0)
        expected = LogRankLoss(objective, metric=f"ndcg@{longest}", sampler="walk").prepare(
            y, qid, random_state=0)
        np.testing.assert_array_equal(state.per_row["coef"], expected.per_row["coef"])
        np.testing.assert_array_equal(state.per_query["gains"], expected.per_query["gains"])


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("value", HUGE)
@pytest.mark.parametrize("cls", [ListNetRanker, SoftRankRanker, BoltzRankRanker],
                         ids=lambda c: c.__name__)
def test_huge_batch_size_is_one_batch_of_all_queries(cls, value, six_queries):
    X, y, qid = six_queries
    n_queries = len(np.unique(qid))
    got = fast(cls, batch_size=value, early_stopping=False).fit(X, y, qid=qid)
    expected = fast(cls, batch_size=n_queries, early_stopping=False).fit(X, y, qid=qid)
    np.testing.assert_array_equal(got.predict(X, qid=qid), expected.predict(X, qid=qid))


@pytest.mark.parametrize("value", HUGE)
@pytest.mark.parametrize("cls, name, message", [
    (ListNetRanker, "hidden_layer_sizes",
     r"^hidden_layer_sizes must hold positive integers; got \(4, {value}\) \(each entry must"
     r" be an int \(not a bool\) in the range \[1, 9223372036854775807\]\)\.$"),
    (BoltzRankRanker, "pairwise_hidden_layer_sizes",
     r"^pairwise_hidden_layer_sizes must be None or one positive number of hidden units, such"
     r" as \(5,\); got \({value},\) \(its entry must be an int \(not a bool\) in the "
     r"range \[1, 9223372036854775807\]\)\.$"),
])
def test_huge_layer_widths_are_refused(cls, name, message, value, six_queries):
    X, y, qid = six_queries
    sizes = (4, value) if name == "hidden_layer_sizes" else (value,)
    with pytest.raises(ValueError, match=message.format(value=value)):
        fast(cls, **{name: sizes}).fit(X, y, qid=qid)


#: Widths (and runs) an array could hold but no machine's memory: the
#: weights of one layer on make_ranking's 10 features take some 80 TB.
_TOO_WIDE = 10**12


@pytest.mark.parametrize("cls, params, shown, lower", [
    (ListNetRanker, {"hidden_layer_sizes": (_TOO_WIDE,)},
     r"hidden_layer_sizes=\(1000000000000,\) makes", "hidden_layer_sizes"),
    (ListNetRanker, {"hidden_layer_sizes": _TOO_WIDE},
     r"hidden_layer_sizes=1000000000000 makes", "hidden_layer_sizes"),
    (SoftRankRanker, {"hidden_layer_sizes": (4, _TOO_WIDE)},
     r"hidden_layer_sizes=\(4, 1000000000000\) makes", "hidden_layer_sizes"),
    (LogRankRanker, {"hidden_layer_sizes": (_TOO_WIDE,)},
     r"hidden_layer_sizes=\(1000000000000,\) makes", "hidden_layer_sizes"),
    (BoltzRankRanker, {"pairwise_hidden_layer_sizes": (_TOO_WIDE,), "n_init": 2},
     r"hidden_layer_sizes=\(5,\) and pairwise_hidden_layer_sizes=\(1000000000000,\) make",
     "hidden_layer_sizes or pairwise_hidden_layer_sizes or n_init"),
    (ListNetRanker, {"n_init": _TOO_WIDE}, r"hidden_layer_sizes=\(\) makes", "n_init"),
], ids=["ListNet", "ListNet-int", "SoftRank", "LogRank", "BoltzRank-pairwise", "n_init"])
def test_layer_widths_beyond_any_memory_are_refused_naming_them(cls, params, shown, lower,
                                                               six_queries):
    """Was numpy's MemoryError about a boolean array (or, below a few TB, the OOM killer)."""
    X, y, qid = six_queries
    with pytest.raises(MemoryError, match=rf"^{shown} a network of \d+ parameters on 10 "
                                          r"features, whose fit needs at least [\d.]+ [TP]iB "
                                          r"\(.* starting points? and a gradient, and the hidden "
                                          r"activations of a query of 5 rows\), more than the "
                                          rf".* of memory available now; lower {lower}\.$"):
        fast(cls, **params).fit(X, y, qid=qid)


def test_partial_fit_refuses_a_network_beyond_the_memory_available(six_queries, memory_available):
    X, y, qid = six_queries
    ranker = fast(ListNetRanker, hidden_layer_sizes=(1000,), n_init=3)
    # 12,000 parameters: a start and a gradient, 192,000 bytes, and 2 x 5 x 1000 x 8 bytes of
    # activations of a query
    memory_available(271_999)
    with pytest.raises(MemoryError, match=r"^hidden_layer_sizes=\(1000,\) makes a network of "
                                          r"12000 parameters on 10 features, whose fit needs "
                                          r"at least 265\.6 KiB \(1 starting point and a "
                                          r"gradient, and the hidden activations of a query of "
                                          r"5 rows\), more than the 265\.6 KiB of memory "
                                          r"available now; lower hidden_layer_sizes\.$"):
        ranker.partial_fit(X, y, qid=qid)
    assert not hasattr(ranker, "coefs_")
    with pytest.raises(MemoryError, match=r"fit needs at least 453\.1 KiB \(n_init=3 starting "
                                          r"points and a gradient, .* lower hidden_layer_sizes "
                                          r"or n_init\.$"):
        ranker.fit(X, y, qid=qid)
    memory_available(272_000)
    ranker.partial_fit(X, y, qid=qid)
    assert ranker.coefs_[0].shape == (10, 1000)


@pytest.mark.parametrize("cls, name, value, message", [
    (ListNetRanker, "hidden_layer_sizes", (4, True),
     r"^hidden_layer_sizes must hold positive integers; got \(4, True\) \(each entry must be "
     r"an int \(not a bool\) in the range \[1, "),
    (BoltzRankRanker, "pairwise_hidden_layer_sizes", (True,),
     r"^pairwise_hidden_layer_sizes must be None or one positive number of hidden units, "
     r"such as \(5,\); got \(True,\) \(its entry must be an int \(not a bool\)"),
])
def test_bool_is_not_a_layer_width(cls, name, value, message, six_queries):
    X, y, qid = six_queries
    with pytest.raises(ValueError, match=message):
        fast(cls, **{name: value}).fit(X, y, qid=qid)


@pytest.mark.parametrize("cls", RANKERS)
def test_ragged_labels_are_named_by_fit(cls):
    with pytest.raises(ValueError, match=ragged_message("y")):
        fast(cls).fit(np.ones((2, 2)), RAGGED, qid=[0, 0])


def test_ragged_validation_labels_are_named_by_fit(six_queries):
    X, y, qid = six_queries
    with pytest.raises(ValueError, match=ragged_message("y_val")):
        fast(ListNetRanker, early_stopping=True).fit(
            X, y, qid=qid, X_val=X[:2], y_val=RAGGED, qid_val=[0, 0])


def test_ragged_sample_weight_is_named_by_fit(six_queries):
    X, y, qid = six_queries
    weight = [[1]] + [[1, 2]] * (len(y) - 1)
    with pytest.raises(ValueError, match=r"^sample_weight must be a 1-D array of numbers; "
                                         r"got a ragged nested sequence \(\[\[1\], \[1, 2\]"):
        fast(ListNetRanker).fit(X, y, qid=qid, sample_weight=weight)
