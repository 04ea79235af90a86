"""The metrics against trec_eval itself (through pytrec_eval).

trec_eval ranks a query's documents by decreasing score and breaks ties by
decreasing document name (strcmp). The queries below name each query's
documents in decreasing order along its rows, so that the row order is
trec_eval's order, which ``ties="stable"`` (the ``"trec_eval"`` preset)
keeps. Rows of different queries are interleaved.
"""

import numpy as np
import pytest

from skrank.metrics import (
    map_score,
    mrr_score,
    ndcg_score,
    precision_at_k,
    recall_at_k,
)

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
