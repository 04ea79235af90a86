"""The network parameters of the rankers (skrank/rankers/_network_mixin.py).

hidden_layer_sizes and pairwise_hidden_layer_sizes: widths that are no
positive integers, or beyond any array or the memory available, are refused
naming them.
"""

import pytest

from skrank import BoltzRankRanker, ListNetRanker, LogRankRanker, SoftRankRanker

from tests._inputs import HUGE, fast


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
