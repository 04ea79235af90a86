"""Ranking metrics (skrank/metrics/_ranking.py) against independent oracles.

Oracles: the official LETOR 3.0 script output (reference_metrics.json), the
worked toy example of shared/data/README.md, scikit-learn's ndcg_score and
dcg_score, brute-force enumeration of tie orderings, a plain per-query loop
written here from the textbook definitions, and trec_eval itself; query
weights against per-query loops and repeated queries.
"""

import itertools
import json
import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import dcg_score as sk_dcg_score
from sklearn.metrics import ndcg_score as sk_ndcg_score

from skrank.datasets import load_letor
from skrank.metrics import (
    CONVENTIONS,
    average_precision_score,
    dcg_score,
    err_score,
    map_score,
    mrr_score,
    ndcg_score,
    precision_at_k,
    recall_at_k,
)
from skrank.metrics._ranking import ndcg_of_rankings
from skrank.utils import QueryLayout

from tests._inputs import RAGGED, TEXT_LABELS, ragged_message, text_message
from tests.metrics._query_weights import row_weights

METRICS = [
    ndcg_score, dcg_score, average_precision_score, precision_at_k, recall_at_k,
    mrr_score, err_score,
]


# ----------------------------------------------------------------------------
# Oracle 1: the official LETOR 3.0 evaluation script
def _reference_entries():
    """The entries of reference_metrics.json, or one placeholder without it.

    Without the data the placeholder still requests the ``shared_data``
    fixture, which skips the test (fails it when ``CI=true``); collection
    itself must never depend on the data.
    """
    from tests.conftest import _shared_data_dir

    path = _shared_data_dir() / "reference_metrics.json"
    if not path.is_file():
        return [pytest.param(None, id="letor-data-missing")]
    return sorted(json.loads(path.read_text()))


@pytest.mark.parametrize("entry", _reference_entries())
def test_letor_reference_metrics_reproduced(shared_data, entry):
    reference = json.loads((shared_data / "reference_metrics.json").read_text())[entry]
    path, ranker = entry.split(" score=")
    X, y, qid = load_letor(shared_data / (path + ".gz"))
    if ranker == "constant 0":
        score = np.zeros(len(y))
    else:
        assert ranker == "feature 1"
        score = X[:, 0]
    for k in range(1, 17):
        got = ndcg_score(y, score, qid=qid, k=k, convention="letor")
        assert abs(got - reference["NDCG@1..16"][k - 1]) < 1e-12, k
        got = precision_at_k(y, score, qid=qid, k=k, convention="letor")
        assert abs(got - reference["P@1..16"][k - 1]) < 1e-12, k
    got = map_score(y, score, qid=qid, convention="letor")
    assert abs(got - reference["MAP"]) < 1e-12


def test_letor_toy_example():
    """shared/data/README.md section 4.3: Eval-Score-3.0.pl on three queries."""
    labels = [0, 2, 1] + [0, 0] + [0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 2]
    scores = [3, 2, 1] + [1, 2] + [0] * 12
    qid = [1] * 3 + [2] * 2 + [3] * 12
    per_query = ndcg_score(labels, scores, qid=qid, k=3, convention="letor", average=False)
    np.testing.assert_allclose(per_query, [0.907732438392864, 0, 0.157732438392864])
    expected = {3: 0.355154958928576, 4: 0.0525774794642881, 12: 0.122313215877071}
    for k, value in expected.items():
        assert ndcg_score(labels, scores, qid=qid, k=k, convention="letor") == (
            pytest.approx(value, abs=1e-14)
        )
    precision = [
        precision_at_k(labels, scores, qid=qid, k=k, convention="letor")
        for k in (1, 2, 3, 4)
    ]
    np.testing.assert_allclose(precision, [0, 1 / 6, 1 / 3, 1 / 12], atol=1e-15)
    assert map_score(labels, scores, qid=qid, convention="letor") == pytest.approx(
        (7 / 12 + 0 + 0.25) / 3, abs=1e-15
    )
    # LETOR 4.0 counts the holes of a short query as irrelevant: "pad"
    pad = precision_at_k(labels, scores, qid=qid, k=4, convention="letor",
                         short_queries="pad")
    assert pad == pytest.approx(0.25)


def test_letor4_toy_example():
    """shared/data/README.md section 4.3: Eval-Score-4.0.pl's printed output.

    The 4.0 script prints 4 decimals. It pads precision's short queries,
    and still counts NDCG@k of a query shorter than k as 0.
    """
    labels = [0, 2, 1] + [0, 0] + [0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 2]
    scores = [3, 2, 1] + [1, 2] + [0] * 12
    qid = [1] * 3 + [2] * 2 + [3] * 12
    printed = {
        "ndcg": [0.0000, 0.2500, 0.3552, 0.0526],
        "precision": [0.0000, 0.1667, 0.3333, 0.2500],
    }
    for k in (1, 2, 3, 4):
        got = ndcg_score(labels, scores, qid=qid, k=k, convention="letor4")
        assert round(got, 4) == printed["ndcg"][k - 1], k
        got = precision_at_k(labels, scores, qid=qid, k=k, convention="letor4")
        assert round(got, 4) == printed["precision"][k - 1], k
    assert round(map_score(labels, scores, qid=qid, convention="letor4"), 4) == 0.2778
    # the two presets differ only in precision at k = 4 (q1 has 3 documents)
    assert precision_at_k(labels, scores, qid=qid, k=4, convention="letor") == (
        pytest.approx(1 / 12)
    )


def test_map_at_k_denominator_conventions():
    """AP@k over min(R, k) (skrank) or over R (trec_eval's map_cut, ranx)."""
    y, s, qid = [1, 1], [2.0, 1.0], [0, 0]
    assert map_score(y, s, qid=qid, k=1) == 1.0
    assert map_score(y, s, qid=qid, k=1, ap_denominator="relevant_in_k") == 1.0
    assert map_score(y, s, qid=qid, k=1, ap_denominator="relevant") == 0.5
    assert map_score(y, s, qid=qid, k=1, convention="trec_eval") == 0.5
    # explicit parameter over the preset
    assert map_score(y, s, qid=qid, k=1, convention="trec_eval",
                     ap_denominator="relevant_in_k") == 1.0
    # equal when R <= k or k is None
    y = [1, 0, 1, 0, 0]
    s = [5.0, 4.0, 3.0, 2.0, 1.0]
    for k in (None, 2, 3, 5):
        a = map_score(y, s, qid=[0] * 5, k=k)
        assert a == map_score(y, s, qid=[0] * 5, k=k, ap_denominator="relevant")
    assert map_score(y, s, qid=[0] * 5, k=1) == 1.0
    assert map_score(y, s, qid=[0] * 5, k=1, ap_denominator="relevant") == 0.5


# ----------------------------------------------------------------------------
# Oracle 2: scikit-learn
@pytest.mark.parametrize("k", [None, 1, 3, 7])
@pytest.mark.parametrize("tied", [False, True])
def test_ndcg_matches_sklearn_on_equal_length_queries(rng, k, tied):
    n_queries, n_docs = 12, 9
    y = rng.integers(0, 4, size=(n_queries, n_docs)).astype(float)
    s = rng.normal(size=(n_queries, n_docs))
    if tied:
        s = np.round(s)  # many ties: checks the "average" convention too
    qid = np.repeat(np.arange(n_queries), n_docs)
    expected = sk_ndcg_score(y, s, k=k)
    got = ndcg_score(y.ravel(), s.ravel(), qid=qid, k=k, gain="linear")
    assert got == pytest.approx(expected, abs=1e-12)
    got = ndcg_score(y.ravel(), s.ravel(), qid=qid, k=k, convention="sklearn")
    assert got == pytest.approx(expected, abs=1e-12)
    expected_dcg = sk_dcg_score(y, s, k=k)
    got_dcg = dcg_score(y.ravel(), s.ravel(), qid=qid, k=k, gain="linear")
    assert got_dcg == pytest.approx(expected_dcg, abs=1e-12)


# ----------------------------------------------------------------------------
# Oracle 3: a plain per-query loop from the textbook definitions
def _loop_metric(name, y, s, qid, k, gain, discount, short, no_relevant, threshold=1):
    values = []
    for q in np.unique(qid):
        rows = np.flatnonzero(qid == q)
        order = rows[np.argsort(-s[rows], kind="stable")]  # ties: row order
        labels = y[order]
        n = len(labels)
        kk = n if k is None else min(k, n)
        if name in ("ndcg", "dcg"):
            g = (2.0**labels - 1) if gain == "exponential" else labels
            ideal = np.sort(g)[::-1]
            if discount == "log2":
                d = [1 / math.log2(r + 1) for r in range(1, n + 1)]
            else:
                d = [1 / max(1.0, math.log2(r)) for r in range(1, n + 1)]
            dcg = sum(g[i] * d[i] for i in range(kk))
            idcg = sum(ideal[i] * d[i] for i in range(kk))
            empty = idcg == 0
            value = dcg if name == "dcg" else (dcg / idcg if idcg > 0 else 0.0)
        elif name == "err":
            top = y.max()  # max_grade: the largest label of all queries
            value, reach = 0.0, 1.0
            for i in range(kk):
                stop = (2.0 ** labels[i] - 1) / 2.0**top
                value += reach * stop / (i + 1)
                reach *= 1 - stop
            empty = labels.max() == 0
        else:
            rel = labels >= threshold
            R = rel.sum()
            empty = R == 0
            if name == "recall":
                value = rel[:kk].sum() / R if R else 0.0
            elif name == "mrr":
                first = np.flatnonzero(rel[:kk])
                value = 1.0 / (first[0] + 1) if first.size else 0.0
            elif name == "precision":
                denom = k if (short == "pad" and k is not None) else kk
                value = rel[:kk].sum() / denom
            else:  # ap
                hits, total = 0, 0.0
                for i in range(kk):
                    if rel[i]:
                        hits += 1
                        total += hits / (i + 1)
                norm = R if k is None else min(R, k)
                value = total / norm if norm else 0.0
        if k is not None and n < k and short == "zero":
            value = 0.0
        if empty:
            value = np.nan if no_relevant == "skip" else no_relevant
        values.append(value)
    return np.array(values)


_FUNCS = {
    "ndcg": ndcg_score,
    "dcg": dcg_score,
    "ap": average_precision_score,
    "precision": precision_at_k,
    "recall": recall_at_k,
    "mrr": mrr_score,
    "err": err_score,
}


@pytest.mark.parametrize("name", sorted(_FUNCS))
@pytest.mark.parametrize("k", [None, 1, 3, 10])
@pytest.mark.parametrize("short", ["truncate", "zero", "pad"])
@pytest.mark.parametrize("no_relevant", [0.0, 1.0, "skip"])
@pytest.mark.parametrize("gain, discount", [("exponential", "log2"), ("linear", "letor")])
def test_metrics_match_per_query_loop(rng, name, k, short, no_relevant, gain, discount):
    # unsorted, non-contiguous string ids; sizes 1..12; some queries with no
    # relevant document; ties in the scores
    sizes = rng.integers(1, 13, size=15)
    qid = np.repeat(np.array([f"q{i:02d}" for i in range(15)]), sizes)
    perm = rng.permutation(len(qid))
    qid = qid[perm]
    y = rng.integers(0, 3, size=len(qid)).astype(float)
    y[np.isin(qid, ["q03", "q07"])] = 0.0
    s = np.round(rng.normal(size=len(qid)), 1)
    kwargs = dict(k=k, short_queries=short, no_relevant=no_relevant, ties="stable")
    if name in ("ndcg", "dcg"):
        kwargs.update(gain=gain, discount=discount)
    got = _FUNCS[name](y, s, qid=qid, average=False, **kwargs)
    expected = _loop_metric(name, y, s, qid, k, gain, discount, short, no_relevant)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    mean = _FUNCS[name](y, s, qid=qid, **kwargs)
    assert mean == pytest.approx(np.nanmean(expected), abs=1e-12)


def test_per_query_order_is_sorted_unique_qid():
    y = [1, 0, 0, 1, 1, 0]
    s = [0.1, 0.9, 0.5, 0.4, 0.3, 0.2]
    qid = ["b", "b", "a", "a", "c", "c"]  # sorted unique: a, b, c
    per_query = average_precision_score(y, s, qid=qid, average=False)
    np.testing.assert_allclose(per_query, [0.5, 0.5, 1.0])


def test_non_integer_labels_use_the_sorting_path(rng):
    """Fractional labels skip the integer fast path of the ideal DCG."""
    qid = np.repeat(np.arange(6), 7)
    y = rng.uniform(0, 3, size=len(qid))
    s = rng.normal(size=len(qid))
    expected = _loop_metric("ndcg", y, s, qid, 5, "linear", "log2", "truncate", 0.0)
    got = ndcg_score(y, s, qid=qid, k=5, gain="linear", average=False)
    np.testing.assert_allclose(got, expected, rtol=1e-12)


# ----------------------------------------------------------------------------
# Oracle 4: brute force over tie orderings
def _all_tie_orderings(y, s, qid, func, **kwargs):
    """Metric under every ordering of the tied documents, equally likely.

    Each group of rows with the same query and score is permuted in place,
    in every way, and ``ties="stable"`` ranks the rows as they come.
    """
    groups = [
        np.flatnonzero((qid == q) & (s == v)) for q, v in set(zip(qid.tolist(), s.tolist()))
    ]
    values = []
    for orders in itertools.product(*(itertools.permutations(g) for g in groups)):
        perm = np.arange(len(y))
        for rows, order in zip(groups, orders):
            perm[rows] = order
        values.append(func(y[perm], s[perm], qid=qid[perm], ties="stable", **kwargs))
    return np.array(values)


@pytest.mark.parametrize("func", METRICS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("k", [None, 2, 4])
@pytest.mark.parametrize("seed", range(3))
def test_average_ties_equal_brute_force_mean(func, k, seed):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, size=7).astype(float)
    s = rng.integers(0, 3, size=7).astype(float)  # heavy ties
    qid = np.array([0, 0, 0, 0, 1, 1, 1])
    every = _all_tie_orderings(y, s, qid, func, k=k)
    assert func(y, s, qid=qid, k=k, ties="average") == pytest.approx(
        every.mean(), abs=1e-12
    )
    # The worst label first among ties is the worst case over tie orderings.
    assert func(y, s, qid=qid, k=k, ties="pessimistic") == pytest.approx(
        every.min(), abs=1e-12
    )


def test_average_ties_all_tied_ndcg():
    # a constant score over [1, 0]: expected NDCG is the mean of 1 and 1/3/1
    y = np.array([1.0, 0.0])
    got = ndcg_score(y, [0.0, 0.0], qid=[0, 0])
    assert got == pytest.approx((1.0 + 1 / math.log2(3)) / 2)


# ----------------------------------------------------------------------------
# Properties
@st.composite
def _queries(draw):
    n = draw(st.integers(1, 25))
    qid = np.array(draw(st.lists(st.integers(0, 4), min_size=n, max_size=n)))
    y = np.array(draw(st.lists(st.integers(0, 4), min_size=n, max_size=n)), float)
    s = np.array(
        draw(st.lists(st.sampled_from([-1.0, 0.0, 0.5, 2.0, 1e300, -np.inf]),
                      min_size=n, max_size=n))
    )
    k = draw(st.one_of(st.none(), st.integers(1, 6)))
    ties = draw(st.sampled_from(["average", "stable", "pessimistic"]))
    return y, s, qid, k, ties


@settings(max_examples=60, deadline=None)
@given(_queries(), st.randoms(use_true_random=False))
def test_row_permutation_invariance_and_range(data, random):
    y, s, qid, k, ties = data
    perm = np.array(random.sample(range(len(y)), len(y)))
    for func in (ndcg_score, average_precision_score, precision_at_k, recall_at_k,
                 mrr_score, err_score):
        a = func(y, s, qid=qid, k=k, ties="average", average=False)
        b = func(y[perm], s[perm], qid=qid[perm], k=k, ties="average", average=False)
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
        values = func(y, s, qid=qid, k=k, ties=ties, average=False)
        assert np.all(values >= -1e-12) and np.all(values <= 1 + 1e-12)


@settings(max_examples=60, deadline=None)
@given(_queries())
def test_perfect_ranking_scores_one(data):
    y, _, qid, k, ties = data
    has_relevant = np.array([y[qid == q].max() >= 1 for q in np.unique(qid)])
    for func in (ndcg_score, average_precision_score):
        values = func(y, y, qid=qid, k=k, ties="pessimistic", average=False)
        np.testing.assert_allclose(values[has_relevant], 1.0, rtol=1e-12)
    # A reversed ranking is strictly worse unless all labels in a query are
    # equal (the log2 discount strictly decreases, so the least relevant
    # document first always costs), and then it is the perfect ranking.
    ideal = ndcg_score(y, y, qid=qid, k=k, average=False)
    reversed_ = ndcg_score(y, -y, qid=qid, k=k, average=False)
    varied = np.array([np.ptp(y[qid == q]) > 0 for q in np.unique(qid)])
    np.testing.assert_allclose(ideal[varied], 1.0, rtol=1e-12)
    assert np.all(reversed_[varied] < ideal[varied] - 1e-12)
    assert np.all(reversed_ >= 0.0)
    np.testing.assert_allclose(reversed_[~varied], ideal[~varied], rtol=1e-12)


def test_single_document_queries_and_equal_labels():
    y = np.array([2.0, 0.0, 1.0, 1.0, 1.0])
    s = np.array([0.3, 0.1, 5.0, 5.0, -2.0])
    qid = np.array([1, 2, 3, 3, 3])
    np.testing.assert_allclose(ndcg_score(y, s, qid=qid, average=False), [1.0, 0.0, 1.0])
    np.testing.assert_allclose(
        average_precision_score(y, s, qid=qid, average=False), [1.0, 0.0, 1.0]
    )


def test_extreme_scores_are_ranked_exactly():
    y = np.array([0.0, 1.0, 2.0, 0.0])
    s = np.array([-np.inf, 1e308, np.inf, -1e308])
    qid = np.zeros(4)
    assert ndcg_score(y, s, qid=qid) == pytest.approx(1.0)
    assert ndcg_score(y, -s, qid=qid) < 0.5


# ----------------------------------------------------------------------------
# Conventions
def test_no_relevant_conventions():
    y = np.array([0.0, 0.0, 1.0, 0.0])
    s = np.array([1.0, 2.0, 1.0, 2.0])
    qid = np.array([1, 1, 2, 2])
    assert ndcg_score(y, s, qid=qid, average=False)[0] == 0.0
    assert ndcg_score(y, s, qid=qid, no_relevant=1.0, average=False)[0] == 1.0
    per_query = ndcg_score(y, s, qid=qid, no_relevant="skip", average=False)
    assert np.isnan(per_query[0]) and per_query[1] == pytest.approx(1 / math.log2(3))
    assert ndcg_score(y, s, qid=qid, no_relevant="skip") == pytest.approx(per_query[1])
    assert map_score(y, s, qid=qid, no_relevant="skip") == pytest.approx(0.5)
    with pytest.raises(ValueError, match="no query has a relevant document"):
        ndcg_score(np.zeros(4), s, qid=qid, no_relevant="skip")


def test_short_queries_conventions():
    y = np.array([1.0, 0.0, 2.0, 1.0, 0.0])
    s = np.array([0.5, 0.1, 0.9, 0.2, 0.3])
    qid = np.array([1, 1, 2, 2, 2])
    truncated = ndcg_score(y, s, qid=qid, k=3, average=False)
    assert truncated[0] == 1.0  # NDCG@2 of a 2-document query
    zero = ndcg_score(y, s, qid=qid, k=3, short_queries="zero", average=False)
    assert zero[0] == 0.0 and zero[1] == truncated[1]
    p = precision_at_k(y, s, qid=qid, k=3, average=False)
    p_pad = precision_at_k(y, s, qid=qid, k=3, short_queries="pad", average=False)
    assert p[0] == 0.5 and p_pad[0] == pytest.approx(1 / 3)


def test_relevance_threshold():
    y = np.array([2.0, 1.0, 0.0])
    s = np.array([0.1, 0.9, 0.5])
    assert map_score(y, s, qid=[0, 0, 0], relevance_threshold=2) == pytest.approx(1 / 3)
    assert precision_at_k(y, s, qid=[0, 0, 0], k=1, relevance_threshold=2) == 0.0


def test_explicit_parameters_override_convention():
    y = np.array([2.0, 1.0, 0.0])
    s = np.array([0.0, 0.0, 0.0])
    qid = np.zeros(3)
    letor_stable = ndcg_score(y, s, qid=qid, convention="letor")
    letor_average = ndcg_score(y, s, qid=qid, convention="letor", ties="average")
    assert letor_stable == 1.0  # ties keep row order, which is ideal here
    assert letor_average < 1.0


def test_conventions_are_read_only():
    with pytest.raises(TypeError):
        CONVENTIONS["letor"] = dict(CONVENTIONS["skrank"])
    with pytest.raises(TypeError):
        CONVENTIONS["letor"]["ties"] = "average"
    with pytest.raises(TypeError):
        del CONVENTIONS["skrank"]["gain"]
    copy = dict(CONVENTIONS["letor"])  # a copy is the user's to change
    copy["ties"] = "average"
    assert CONVENTIONS["letor"]["ties"] == "stable"
    assert ndcg_score([2, 1, 0], [0.0, 0.0, 0.0], qid=[0, 0, 0], convention="letor") == 1.0


# ----------------------------------------------------------------------------
# Bad input
@pytest.mark.parametrize("func", METRICS, ids=lambda f: f.__name__)
def test_qid_length_mismatch(func):
    with pytest.raises(ValueError, match="qid must have one entry per row"):
        func([1, 0, 1], [0.1, 0.2, 0.3], qid=[0, 0])


@pytest.mark.parametrize("func", METRICS, ids=lambda f: f.__name__)
def test_nan_scores_rejected(func):
    with pytest.raises(ValueError, match="y_score contains NaN"):
        func([1, 0, 1], [0.1, np.nan, 0.3], qid=[0, 0, 0])


@pytest.mark.parametrize("func", [ndcg_score, dcg_score], ids=lambda f: f.__name__)
def test_negative_labels_with_exponential_gain(func):
    with pytest.raises(ValueError, match="y_true has negative labels"):
        func([1, -1, 0], [0.1, 0.2, 0.3], qid=[0, 0, 0])
    with pytest.raises(ValueError, match="y_true has negative labels"):
        ndcg_score([1, -1, 0], [0.1, 0.2, 0.3], qid=[0, 0, 0], gain="linear")
    # DCG with linear gain is defined for negative labels
    got = dcg_score([-1.0, 2.0], [0.0, 1.0], qid=[0, 0], gain="linear")
    assert got == pytest.approx(2.0 - 1.0 / math.log2(3))


@pytest.mark.parametrize("func", METRICS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("k", [0, -3, 2.5, "3"])
def test_bad_k(func, k):
    with pytest.raises(ValueError, match="'k' parameter"):
        func([1, 0], [0.2, 0.1], qid=[0, 0], k=k)


def test_other_bad_inputs():
    with pytest.raises(ValueError, match="'convention' parameter"):
        ndcg_score([1, 0], [0.2, 0.1], qid=[0, 0], convention="trec")
    with pytest.raises(ValueError, match="'ties' parameter"):
        ndcg_score([1, 0], [0.2, 0.1], qid=[0, 0], ties="random")
    with pytest.raises(ValueError, match="no_relevant must be a finite number"):
        ndcg_score([1, 0], [0.2, 0.1], qid=[0, 0], no_relevant=np.nan)
    with pytest.raises(ValueError, match="same length"):
        ndcg_score([1, 0, 1], [0.2, 0.1], qid=[0, 0, 0])
    with pytest.raises(ValueError, match="qid contains NaN"):
        ndcg_score([1, 0], [0.2, 0.1], qid=[0, np.nan])
    with pytest.raises(ValueError, match="y_true contains NaN"):
        ndcg_score([1, np.nan], [0.2, 0.1], qid=[0, 0])
    with pytest.raises(TypeError, match="y_score must be numeric"):
        ndcg_score([1, 0], ["a", "b"], qid=[0, 0])
    with pytest.raises(ValueError, match="overflows"):
        ndcg_score([2000, 0], [0.2, 0.1], qid=[0, 0])


def test_dcg_no_relevant_means_no_positive_gain():
    # the ideal DCG is negative, yet a relevant document (gain 3) exists
    got = dcg_score([3.0, -5.0], [0.1, 0.3], qid=[0, 0], gain="linear")
    assert got == pytest.approx(-5.0 + 3.0 / math.log2(3))
    assert dcg_score([-1.0, 0.0], [0.1, 0.3], qid=[0, 0], gain="linear",
                     no_relevant=7.0) == 7.0


@pytest.mark.parametrize("func", METRICS, ids=lambda f: f.__name__)
def test_boolean_cutoff_rejected(func):
    with pytest.raises(ValueError, match=r"'k' parameter .*not a bool.*Got True"):
        func([1, 0], [0.2, 0.1], qid=[0, 0], k=True)


@pytest.mark.parametrize("k", [np.timedelta64(3), np.datetime64("2020-01-01"), 3.0, 3.5])
@pytest.mark.parametrize("func", METRICS, ids=lambda f: f.__name__)
def test_cutoff_that_is_not_an_int_is_a_type_error_naming_k(func, k):
    # np.timedelta64 is a numbers.Integral to numpy: it reached the bound
    # check and failed there with numpy's UFuncTypeError
    with pytest.raises(TypeError, match=rf"^The 'k' parameter of {func.__name__} must be an "
                                        rf"int \(not a bool\) .*Got {re.escape(repr(k))} instead"):
        func([1, 0], [0.2, 0.1], qid=[0, 0], k=k)


@pytest.mark.parametrize("func", [average_precision_score, precision_at_k, map_score])
def test_relevance_threshold_must_be_finite(func):
    with pytest.raises(ValueError, match="relevance_threshold must be a finite"):
        func([1, 0], [0.2, 0.1], qid=[0, 0], relevance_threshold=np.nan)


def test_numpy_integer_cutoff_accepted():
    assert ndcg_score([1, 0], [0.2, 0.1], qid=[0, 0], k=np.int64(1)) == 1.0


@pytest.mark.parametrize("k", [None, 1, 3, 10])
@pytest.mark.parametrize("conventions", [
    {}, {"convention": "letor"}, {"gain": "linear", "discount": "letor"},
    {"no_relevant": 0.5, "short_queries": "zero"}, {"no_relevant": "skip"},
    {"convention": "sklearn"},
], ids=repr)
def test_ndcg_of_rankings_is_ndcg_score_of_each_ranking(rng, k, conventions):
    """Many rankings of the same queries at once (BoltzRank's gains): the value
    ndcg_score gives each ranking as a query of its own, ranked by minus its ranks;
    rows interleaved, a query without a relevant document, queries shorter than k."""
    sizes = [7, 1, 4, 12]
    qid = rng.permutation(np.repeat([30, 10, 20, 40], sizes))
    y = rng.integers(0, 4, size=qid.size).astype(float)
    y[qid == 20] = 0.0
    layout = QueryLayout(qid)
    y_sorted = layout.to_sorted(y)
    n_rankings = 6
    ranks = np.concatenate([
        np.column_stack([rng.permutation(n) + 1 for _ in range(n_rankings)])
        for n in layout.sizes])
    order = np.empty(ranks.T.shape, dtype=np.intp)  # the row at each place
    np.put_along_axis(order, (layout.expand(layout.starts)[:, None] + ranks - 1).T,
                      np.broadcast_to(np.arange(qid.size), order.shape), axis=1)
    got = ndcg_of_rankings(y_sorted, order, layout, k=k, **conventions)
    assert got.shape == (layout.n_queries, n_rankings)
    sorted_qid = layout.to_sorted(qid)
    for s in range(n_rankings):
        expected = ndcg_score(y_sorted, -ranks[:, s].astype(float), qid=sorted_qid, k=k,
                              average=False, **conventions)
        np.testing.assert_allclose(got[:, s], expected, rtol=1e-14, atol=1e-15)
    if conventions.get("no_relevant") == "skip":
        no_relevant = np.flatnonzero(layout.unique_qid == 20)[0]
        assert np.isnan(got[no_relevant]).all()
        assert not np.isnan(np.delete(got, no_relevant, axis=0)).any()


# ----------------------------------------------------------------------------
# The cascade metrics (MRR, ERR) on long runs of tied scores
def test_mrr_of_a_long_tied_run_is_the_closed_form():
    """First relevant of m among n tied documents at place j: C(n-j, m-1)/C(n, m)."""
    n, m, before = 300, 7, 4
    y = np.r_[np.zeros(before), np.zeros(n - m), np.ones(m)]
    s = np.r_[np.arange(before, 0, -1) + 1.0, np.zeros(n)]  # 4 irrelevant first
    expected = sum(
        math.comb(n - j, m - 1) / math.comb(n, m) / (before + j) for j in range(1, n + 1)
    )
    got = mrr_score(y, s, qid=np.zeros(n + before))
    assert got == pytest.approx(expected, rel=1e-12)
    got_k = mrr_score(y, s, qid=np.zeros(n + before), k=10)
    expected_k = sum(
        math.comb(n - j, m - 1) / math.comb(n, m) / (before + j) for j in range(1, 7)
    )
    assert got_k == pytest.approx(expected_k, rel=1e-12)


def test_err_of_tied_documents_with_one_label_is_the_plain_cascade():
    """Every order of equal labels is the same ranking."""
    y = np.full(257, 3.0)
    y[0] = 4.0  # max_grade 4, ranked first by its score
    s = np.r_[1.0, np.zeros(256)]
    stable = err_score(y, s, qid=np.zeros(257), ties="stable")
    assert err_score(y, s, qid=np.zeros(257)) == pytest.approx(stable, rel=1e-12)


def test_err_average_ties_over_distinct_orders_of_a_run():
    """Eight tied documents of three grades after two ranked ones."""
    labels = np.array([0, 2, 1, 0, 2, 3, 1, 0], dtype=float)
    head = np.array([1.0, 0.0])
    orders = set(itertools.permutations(labels))  # equally likely label orders
    brute = []
    for order in orders:
        y = np.r_[head, order]
        s = -np.arange(10.0)  # this exact order
        brute.append(err_score(y, s, qid=np.zeros(10), k=7))
    y = np.r_[head, labels]
    s = np.r_[2.0, 1.0, np.zeros(8)]
    assert err_score(y, s, qid=np.zeros(10), k=7) == pytest.approx(
        np.mean(brute), abs=1e-14
    )


def test_err_max_grade():
    y, s, qid = [1, 0], [1.0, 0.0], [0, 0]
    assert err_score(y, s, qid=qid) == 0.5  # (2**1 - 1) / 2**1
    assert err_score(y, s, qid=qid, max_grade=4) == 1 / 16
    with pytest.raises(ValueError, match=r"labels from 0 to max_grade=1; y_true has"):
        err_score([2, 0], s, qid=qid, max_grade=1)
    with pytest.raises(ValueError, match="labels from 0 to max_grade"):
        err_score([-1, 0], s, qid=qid)
    with pytest.raises(ValueError, match="'max_grade' parameter"):
        err_score(y, s, qid=qid, max_grade=-1)


# ----------------------------------------------------------------------------
# Cutoffs beyond every query, up to beyond int64
@pytest.mark.parametrize("func", METRICS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("short", ["truncate", "zero", "pad"])
def test_any_k_beyond_every_query_is_the_same_cutoff(func, short):
    y = np.array([1.0, 0.0, 2.0, 0.0, 1.0])
    s = np.array([0.3, 0.1, 0.2, 0.5, 0.5])
    qid = np.array([0, 0, 0, 1, 1])
    huge = (10**6, 2**63 - 1, 2**63, 10**23, 10**400)  # the last beyond any float
    values = [
        func(y, s, qid=qid, k=k, short_queries=short, average=False) for k in (4, *huge)
    ]
    if func is precision_at_k and short == "pad":  # hits / k
        hits = values[0] * 4
        for k, got in zip(huge, values[1:]):
            expected = hits / float(k) if k < 10**400 else 0.0 * hits
            np.testing.assert_allclose(got, expected, rtol=1e-15)
    else:
        for got in values[1:]:
            np.testing.assert_array_equal(got, values[0])


def test_err_of_a_tied_run_keeps_small_stopping_probabilities():
    """Stopping probabilities near 1e-18 keep their relative precision."""
    y = np.ones(50)
    qid = np.zeros(50)
    for top in (53, 60):
        stable = err_score(y, np.arange(50.0), qid=qid, max_grade=top)
        tied = err_score(y, np.zeros(50), qid=qid, max_grade=top)
        assert tied == pytest.approx(stable, rel=1e-12)


@pytest.mark.parametrize("func", [average_precision_score, precision_at_k, map_score,
                                  recall_at_k, mrr_score])
def test_relevance_threshold_beyond_the_largest_float(func):
    with pytest.raises(ValueError, match=r"relevance_threshold must be a finite number, "
                                         r"got 1000.*\(401 characters\)"):
        func([1, 0], [0.2, 0.1], qid=[0, 0], relevance_threshold=10**400)


def test_err_top_grade_beyond_1000_is_named():
    y, s, qid = [1, 0, 2], [0.3, 0.2, 0.1], [0, 0, 0]
    with pytest.raises(ValueError, match=r"max_grade=1000.*\(401 characters\) is above 1000"):
        err_score(y, s, qid=qid, max_grade=10**400)
    with pytest.raises(ValueError, match=r"the top grade \(the largest label, as "
                                         r"max_grade=None\) is above 1000"):
        err_score(np.array(y) * 1e300, s, qid=qid)


ALL_METRICS = [ndcg_score, dcg_score, average_precision_score, map_score, precision_at_k,
               recall_at_k, mrr_score, err_score]


@pytest.mark.parametrize("metric", ALL_METRICS, ids=lambda f: f.__name__)
def test_qid_none_is_one_query_and_warns_on_many_rows(metric):
    """As in every function that takes qid: None is one query, and past 100 rows it warns."""
    import warnings

    rng = np.random.default_rng(0)
    y, s = rng.integers(0, 3, size=101).astype(float), rng.normal(size=101)
    caller = metric.__name__
    with pytest.warns(UserWarning, match=rf"^{caller} got qid=None, so all 101 rows are "
                                         r"treated as ONE query"):
        implicit = metric(y, s, k=5, average=False)
    np.testing.assert_array_equal(implicit, metric(y, s, qid=np.zeros(101), k=5, average=False))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert metric(y[:100], s[:100]) == metric(y[:100], s[:100], qid=np.zeros(100))


# ----------------------------------------------------------------------------
# trec_eval itself (through pytrec_eval)
CUTOFFS = (1, 3, 5, 10)


def _random_queries(seed, n_queries=300, *, tied):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 31, size=n_queries)
    names = np.array([f"q{i:03d}" for i in range(n_queries)])
    qid = rng.permutation(np.repeat(names, sizes))
    y = rng.choice([0, 0, 0, 1, 1, 2, 3], size=qid.shape[0])
    y[np.isin(qid, names[::17])] = 0  # queries without a relevant document
    score = rng.normal(size=qid.shape[0])
    if tied:
        score = np.round(score, 1)
        score[np.isin(qid, names[::23])] = 0.5  # queries scored by a constant
    # document names decreasing along each query's rows: trec_eval's tie order
    docno = np.empty(qid.shape[0], dtype=object)
    for name in names:
        rows = np.flatnonzero(qid == name)
        docno[rows] = [f"d{9999 - j:04d}" for j in range(rows.shape[0])]
    return y, score, qid, docno


def _trec_eval(module, y, score, qid, docno, measures):
    qrel, run = {}, {}
    for q, d, label, s in zip(qid, docno, y, score):
        qrel.setdefault(q, {})[d] = int(label)
        run.setdefault(q, {})[d] = float(s)
    result = module.RelevanceEvaluator(qrel, set(measures)).evaluate(run)
    queries = sorted(result)  # skrank's per-query order: sorted unique qid
    return {
        key: np.array([result[q][key] for q in queries])
        for key in result[queries[0]]
    }


def _skrank(y, score, qid, **conventions):
    """skrank's per-query values under trec_eval's measure names."""
    values = {
        "ndcg": ndcg_score(y, score, qid=qid, average=False, **conventions),
        "map": map_score(y, score, qid=qid, average=False, **conventions),
        "recip_rank": mrr_score(y, score, qid=qid, average=False, **conventions),
    }
    for k in CUTOFFS:
        values[f"ndcg_cut_{k}"] = ndcg_score(
            y, score, qid=qid, k=k, average=False, **conventions
        )
        values[f"map_cut_{k}"] = map_score(
            y, score, qid=qid, k=k, average=False, **conventions
        )
        values[f"P_{k}"] = precision_at_k(
            y, score, qid=qid, k=k, average=False, **conventions
        )
        values[f"recall_{k}"] = recall_at_k(
            y, score, qid=qid, k=k, average=False, **conventions
        )
    return values


_MEASURES = ["ndcg", "map", "recip_rank"] + [
    f"{m}.{','.join(map(str, CUTOFFS))}" for m in ("ndcg_cut", "map_cut", "P", "recall")
]


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("tied", [False, True], ids=["untied", "tied"])
def test_trec_eval_preset_equals_trec_eval(pytrec_eval, seed, tied):
    y, score, qid, docno = _random_queries(seed, tied=tied)
    expected = _trec_eval(pytrec_eval, y, score, qid, docno, _MEASURES)
    got = _skrank(y, score, qid, convention="trec_eval")
    assert set(got) == set(expected)
    for name, values in expected.items():
        np.testing.assert_allclose(got[name], values, rtol=0, atol=1e-12, err_msg=name)


def test_trec_eval_preset_follows_the_document_names(pytrec_eval):
    """Reversing the rows of a tied query changes the ranking unless docno says."""
    y = np.array([0, 1, 0, 2])
    score = np.zeros(4)
    qid = np.array(["q"] * 4)
    docno = np.array(["d4", "d3", "d2", "d1"])  # decreasing along the rows
    expected = _trec_eval(pytrec_eval, y, score, qid, docno, ["ndcg", "recip_rank"])
    got = _skrank(y, score, qid, convention="trec_eval")
    assert got["recip_rank"][0] == expected["recip_rank"][0] == 0.5
    assert got["ndcg"][0] == pytest.approx(expected["ndcg"][0], abs=1e-15)
    # rows in increasing docno: trec_eval's order is now the reverse of the rows
    expected = _trec_eval(pytrec_eval, y, score, qid, docno[::-1], ["recip_rank"])
    assert expected["recip_rank"][0] == 1.0
    assert got["recip_rank"][0] != expected["recip_rank"][0]


def test_trec_eval_compares_scores_in_single_precision(pytrec_eval):
    """Scores equal as float32 tie in trec_eval: cast them to agree."""
    y = np.array([0, 1, 0, 2])
    score = np.array([1.0, 1.0 + 1e-9, 0.5, 0.5 + 1e-12])
    qid = np.array(["q"] * 4)
    docno = np.array(["d4", "d3", "d2", "d1"])
    expected = _trec_eval(pytrec_eval, y, score, qid, docno, _MEASURES)
    cast = _skrank(y, score.astype(np.float32), qid, convention="trec_eval")
    for name, values in expected.items():
        np.testing.assert_allclose(cast[name], values, rtol=0, atol=1e-12, err_msg=name)
    # in double precision the scores do not tie, and the ranking differs
    got = _skrank(y, score, qid, convention="trec_eval")
    assert got["recip_rank"][0] == 1.0 and expected["recip_rank"][0] == 0.5


@pytest.mark.parametrize("seed", [0, 1])
def test_default_conventions_agree_where_they_should(pytrec_eval, seed):
    """skrank's defaults equal trec_eval without ties, where the definitions meet.

    Linear gain NDCG, MAP, MRR and recall@k agree on every query; MAP@k
    where the query has at most k relevant documents (min(R, k) = R);
    precision@k where the query has at least k documents.
    """
    y, score, qid, docno = _random_queries(seed, tied=False)
    expected = _trec_eval(pytrec_eval, y, score, qid, docno, _MEASURES)
    got = _skrank(y, score, qid)
    linear = {"ndcg": ndcg_score(y, score, qid=qid, gain="linear", average=False)}
    for k in CUTOFFS:
        linear[f"ndcg_cut_{k}"] = ndcg_score(
            y, score, qid=qid, k=k, gain="linear", average=False
        )
    names = np.unique(qid)
    n_relevant = np.array([np.sum(y[qid == q] >= 1) for q in names])
    sizes = np.array([np.sum(qid == q) for q in names])
    for name, values in expected.items():
        if name.startswith("ndcg"):
            mine, rows = linear[name], slice(None)
        elif name.startswith("map_cut_"):
            mine, rows = got[name], n_relevant <= int(name.rsplit("_", 1)[1])
        elif name.startswith("P_"):
            mine, rows = got[name], sizes >= int(name.rsplit("_", 1)[1])
        else:
            mine, rows = got[name], slice(None)
        np.testing.assert_allclose(mine[rows], values[rows], rtol=0, atol=1e-12,
                                   err_msg=name)
    # and they do differ where the definitions part
    assert not np.allclose(got["map_cut_1"], expected["map_cut_1"])
    assert not np.allclose(got["P_10"], expected["P_10"])
    assert not np.allclose(got["ndcg"], expected["ndcg"])  # exponential gain


# ----------------------------------------------------------------------------
# Query weights (sample_weight). Oracles: np.average of per-query values computed one
# query at a time, with the weights of each query from a dict over qid; and, for
# integer weights, the unweighted metric on data where every query is repeated w
# times under new query ids (weight 0 removes the query).
def err_at_grade_3(y_true, y_score, **kwargs):
    """ERR on the 0..3 scale of these data, the same for one query as for all."""
    return err_score(y_true, y_score, max_grade=3, **kwargs)


WEIGHTED_METRICS = [
    ndcg_score, dcg_score, precision_at_k, average_precision_score, map_score,
    recall_at_k, mrr_score, err_at_grade_3,
]

WEIGHT_CONVENTIONS = [
    {},
    {"convention": "letor"},
    {"convention": "sklearn"},
    {"no_relevant": "skip"},
    {"no_relevant": 0.25},
    {"k": 3, "short_queries": "zero"},
    {"k": 3, "short_queries": "pad", "ties": "pessimistic"},
]


def _ids(value):
    if callable(value):
        return value.__name__
    return ",".join(f"{k}={v}" for k, v in value.items()) or "default"


@pytest.fixture(scope="module")
def weighted_queries():
    """12 queries of 1 to 7 rows, shuffled, with ties and queries without relevant rows.

    Returns labels, scores, qid and the weight of each query as a dict.
    """
    rng = np.random.default_rng(0)
    sizes = [1, 2, 3, 4, 5, 6, 7, 3, 4, 5, 2, 6]
    qid = np.repeat(np.arange(100, 100 + 12 * 7, 7), sizes)  # not 0..n-1
    y = rng.integers(0, 4, qid.shape[0]).astype(float)
    y[qid == 114] = 0.0  # no relevant document
    y[qid == 142] = 0.0
    score = np.round(rng.normal(size=qid.shape[0]), 1)  # some ties
    score[qid == 121] = 0.5  # one query all tied
    perm = rng.permutation(qid.shape[0])
    y, score, qid = y[perm], score[perm], qid[perm]
    weight_of = {q: float(w) for q, w in zip(
        sorted(set(qid.tolist())), [2, 0, 1, 3, 1, 0, 2, 1, 3, 1, 2, 1]
    )}
    return y, score, qid, weight_of


def _loop_weighted_mean(metric, y, score, qid, weight_of, kwargs):
    """Weighted mean of the metric evaluated on each query alone."""
    values, weights = [], []
    for q in sorted(weight_of):
        rows = qid == q
        value = metric(y[rows], score[rows], qid=qid[rows], average=False, **kwargs)
        if not np.isnan(value[0]):  # no_relevant="skip"
            values.append(value[0])
            weights.append(weight_of[q])
    return np.average(values, weights=weights)


def _repeated(y, score, qid, weight_of):
    """Each query's rows repeated weight times, each copy a new query."""
    parts = []
    for q in sorted(weight_of):
        rows = np.flatnonzero(qid == q)  # row order kept (ties="stable")
        for copy in range(int(weight_of[q])):
            parts.append((y[rows], score[rows], np.full(rows.shape, 1000 * q + copy)))
    return tuple(np.concatenate(arrays) for arrays in zip(*parts))


@pytest.mark.parametrize("kwargs", WEIGHT_CONVENTIONS, ids=_ids)
@pytest.mark.parametrize("metric", WEIGHTED_METRICS, ids=_ids)
def test_weighted_mean_equals_per_query_loop(weighted_queries, metric, kwargs):
    y, score, qid, weight_of = weighted_queries
    weight = row_weights(qid, weight_of)
    got = metric(y, score, qid=qid, sample_weight=weight, **kwargs)
    expected = _loop_weighted_mean(metric, y, score, qid, weight_of, kwargs)
    assert got == pytest.approx(expected, rel=1e-12)
    # the weights matter on this data (recall of the whole query is always 1)
    if metric is not recall_at_k or kwargs.get("k") is not None:
        assert got != pytest.approx(metric(y, score, qid=qid, **kwargs), rel=1e-6)


@pytest.mark.parametrize("kwargs", WEIGHT_CONVENTIONS, ids=_ids)
@pytest.mark.parametrize("metric", WEIGHTED_METRICS, ids=_ids)
def test_integer_weights_equal_repeated_queries(weighted_queries, metric, kwargs):
    y, score, qid, weight_of = weighted_queries
    weight = row_weights(qid, weight_of)
    got = metric(y, score, qid=qid, sample_weight=weight, **kwargs)
    y_rep, score_rep, qid_rep = _repeated(y, score, qid, weight_of)
    expected = metric(y_rep, score_rep, qid=qid_rep, **kwargs)
    assert got == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("kwargs", WEIGHT_CONVENTIONS, ids=_ids)
@pytest.mark.parametrize("metric", WEIGHTED_METRICS, ids=_ids)
def test_weights_only_affect_the_mean(weighted_queries, metric, kwargs):
    y, score, qid, weight_of = weighted_queries
    ones = np.ones(qid.shape[0])
    assert metric(y, score, qid=qid, sample_weight=ones, **kwargs) == pytest.approx(
        metric(y, score, qid=qid, **kwargs), rel=1e-12
    )
    # constant weights of any scale, as a list, up to the largest float
    for scale in (2.5, 1e-300, 1e308):
        assert metric(
            y, score, qid=qid, sample_weight=[scale] * qid.shape[0], **kwargs
        ) == pytest.approx(metric(y, score, qid=qid, **kwargs), rel=1e-12)
    per_query = metric(
        y, score, qid=qid, average=False,
        sample_weight=row_weights(qid, weight_of), **kwargs,
    )
    np.testing.assert_array_equal(
        per_query, metric(y, score, qid=qid, average=False, **kwargs)
    )


@pytest.mark.parametrize("metric", WEIGHTED_METRICS, ids=_ids)
def test_weights_near_the_largest_float_give_the_weighted_mean(weighted_queries, metric):
    """A weight of 1e308 beside weights of 1 is the weighted mean, not NaN."""
    y, score, qid, _ = weighted_queries
    per_query = metric(y, score, qid=qid, average=False)
    first = np.unique(qid)[0]
    weights = np.where(qid == first, 1e308, 1.0)
    assert metric(y, score, qid=qid, sample_weight=weights) == pytest.approx(
        per_query[0], rel=1e-12
    )


@pytest.mark.parametrize("metric", WEIGHTED_METRICS, ids=_ids)
def test_zero_weight_drops_the_query(weighted_queries, metric):
    y, score, qid, weight_of = weighted_queries
    kept = row_weights(qid, weight_of) > 0
    got = metric(y, score, qid=qid, sample_weight=kept.astype(int))  # 0 or 1
    assert got == pytest.approx(metric(y[kept], score[kept], qid=qid[kept]), rel=1e-12)


@pytest.mark.parametrize("average", [True, False])
@pytest.mark.parametrize("metric", WEIGHTED_METRICS, ids=_ids)
def test_weights_varying_within_a_query_raise(weighted_queries, metric, average):
    y, score, qid, weight_of = weighted_queries
    weight = row_weights(qid, weight_of)
    weight[np.flatnonzero(qid == 135)[0]] += 1.0  # query 135 has 5 rows
    with pytest.raises(ValueError, match="sample_weight.*same for all rows"):
        metric(y, score, qid=qid, sample_weight=weight, average=average)


@pytest.mark.parametrize(
    "weight, error, match",
    [
        (lambda n: -np.ones(n), ValueError, "sample_weight must be finite and non-neg"),
        (lambda n: np.full(n, np.nan), ValueError, "sample_weight must be finite"),
        (lambda n: np.ones(n - 1), ValueError, "sample_weight must be a 1-D array"),
        (lambda n: np.zeros(n), ValueError, "sample_weight is zero for every query"),
        (lambda n: np.array(["a"] * n), TypeError, "sample_weight must hold numbers"),
    ],
    ids=["negative", "nan", "length", "all-zero", "strings"],
)
@pytest.mark.parametrize("metric", WEIGHTED_METRICS, ids=_ids)
def test_invalid_weights_raise(weighted_queries, metric, weight, error, match):
    y, score, qid, _ = weighted_queries
    with pytest.raises(error, match=match):
        metric(y, score, qid=qid, sample_weight=weight(qid.shape[0]))


@pytest.mark.parametrize("metric", WEIGHTED_METRICS, ids=_ids)
def test_skip_with_weight_only_on_skipped_queries_raises(weighted_queries, metric):
    # the remaining weight is zero: the weighted mean is undefined
    y, score, qid, _ = weighted_queries
    weight = np.isin(qid, [114, 142]).astype(float)  # the no-relevant queries
    with pytest.raises(ValueError, match="sample_weight 0.*weighted mean is undefined"):
        metric(y, score, qid=qid, sample_weight=weight, no_relevant="skip")
    # without "skip" they count, with their no_relevant value
    assert metric(y, score, qid=qid, sample_weight=weight, no_relevant=0.5) == 0.5


def test_sample_weight_reads_the_same_in_every_metric():
    def section(func):
        doc = func.__doc__
        start = doc.index("    sample_weight : ")
        return doc[start:doc.index("\n\n", start)]

    sections = {section(func) for func in WEIGHTED_METRICS if func is not err_at_grade_3}
    sections.add(section(err_score))
    assert len(sections) == 1
    assert "average=False" in sections.pop()


# ----------------------------------------------------------------------------
# Text, complex and ragged input, named
INPUT_CHECKED_METRICS = [ndcg_score, dcg_score, average_precision_score, map_score, precision_at_k]


@pytest.mark.parametrize("kind", sorted(TEXT_LABELS))
@pytest.mark.parametrize("metric", INPUT_CHECKED_METRICS, ids=lambda f: f.__name__)
def test_text_labels_and_scores_are_refused_by_the_metrics(metric, kind):
    to_text, got = TEXT_LABELS[kind]
    y, scores, qid = np.array([0.0, 1.0, 2.0, 1.0]), np.array([3.0, 1.0, 2.0, 0.0]), [0, 0, 1, 1]
    with pytest.raises(TypeError, match=text_message("y_true", got)):
        metric(to_text(y), scores, qid=qid)
    with pytest.raises(TypeError, match=text_message("y_score", got)):
        metric(y, to_text(scores), qid=qid)
    # numbers in an object array are numbers
    assert metric(y.astype(object), scores.astype(object), qid=qid) == metric(y, scores, qid=qid)


@pytest.mark.parametrize("metric", INPUT_CHECKED_METRICS, ids=lambda f: f.__name__)
def test_complex_labels_and_scores_are_refused_by_the_metrics(metric):
    """Not cut to their real part with only NumPy's ComplexWarning."""
    y, scores, qid = np.array([0.0, 1.0, 2.0, 1.0]), np.array([3.0, 1.0, 2.0, 0.0]), [0, 0, 1, 1]
    message = r"must be real numbers, got an array of complex numbers \(dtype complex128\)"
    with pytest.raises(ValueError, match="y_true " + message):
        metric(y + 1j, scores, qid=qid)
    with pytest.raises(ValueError, match="y_score " + message):
        metric(y, scores + 0j, qid=qid)


@pytest.mark.parametrize("metric", INPUT_CHECKED_METRICS)
def test_ragged_sample_weight_is_named_by_the_metrics(metric):
    with pytest.raises(ValueError, match=ragged_message("sample_weight")):
        metric([1, 0], [1, 0], qid=[0, 0], sample_weight=RAGGED)
