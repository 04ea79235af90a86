"""How far skrank's metrics are from the tools they claim to equal.

For each preset (``convention=``) and each tool, the largest absolute
difference over every query and measure, all computed in this one run:

- trec_eval (through ``pytrec_eval``, the ``test`` extra): random queries of
  1 to 200 documents, graded labels 0..4, scores with and without ties (a
  query's rows given in trec_eval's tie order, decreasing document name);
  measures ``ndcg``, ``ndcg_cut``, ``map``, ``map_cut``, ``P``, ``recall``,
  ``recip_rank`` at cutoffs 1, 3, 5, 10, 20. skrank's default conventions are
  compared on untied scores where the definitions meet (NDCG with the linear
  gain, MAP, MRR, recall@k).
- ranx (when installed; not a dependency of skrank or of its tests): the same
  random queries; without ties, ``convention="trec_eval"`` against ranx's
  ``ndcg``, ``ndcg@k``, ``map``, ``map@k``, ``mrr``, ``precision@k`` and
  ``recall@k``, and skrank's default conventions against ``ndcg_burges@k``
  (exponential gain), ``map``, ``mrr`` and ``recall@k``. With ties, ranx's
  NDCG@k of each query is checked to lie between skrank's
  ``ties="pessimistic"`` value and the best order of the tied documents, and
  the queries where it equals the row order, or its reverse, are counted.
- scikit-learn's ``ndcg_score`` and ``dcg_score``: equal-length queries with
  ties.
- the official LETOR 3.0 script's output (``reference_metrics.json``) on the
  five OHSUMED test folds, when the LETOR data is found;
- the LETOR 4.0 script's printed output (4 decimals) on the toy example of
  the data's README.

Run with::

    python benchmarks/metric_oracles.py [--queries 2000] [--seed 0]
"""

import argparse
import json
import warnings

import numpy as np
import sklearn.metrics

from skrank.datasets import load_letor
from skrank.metrics import (
    dcg_score,
    map_score,
    mrr_score,
    ndcg_score,
    precision_at_k,
    recall_at_k,
)

CUTOFFS = (1, 3, 5, 10, 20)


def _queries(rng, n_queries, tied):
    sizes = rng.integers(1, 201, size=n_queries)
    qid = rng.permutation(np.repeat(np.arange(n_queries), sizes))
    y = rng.choice(5, size=qid.shape[0], p=[0.5, 0.25, 0.15, 0.07, 0.03])
    # trec_eval holds scores in single precision: give it no other ties
    score = rng.normal(size=qid.shape[0]).astype(np.float32)
    if tied:
        score = np.round(score, 1)
    # within each query, document names decrease along the rows
    order = np.argsort(qid, kind="stable")
    within = np.empty(qid.shape[0], dtype=np.int64)
    starts = np.r_[0, np.cumsum(np.bincount(qid))[:-1]]
    within[order] = np.arange(qid.shape[0]) - np.repeat(starts, np.bincount(qid))
    return y, score, qid, within


def _qrel_and_run(y, score, qid, within):
    """trec_eval-style {query: {document: label}} and {query: {document: score}}.

    Document names decrease along each query's rows (trec_eval's tie order).
    """
    qrel, run = {}, {}
    for q, j, label, s in zip(qid.tolist(), within.tolist(), y.tolist(), score.tolist()):
        name, doc = f"q{q:06d}", f"d{999999 - j:06d}"
        qrel.setdefault(name, {})[doc] = label
        run.setdefault(name, {})[doc] = s
    return qrel, run


def _trec_eval(pytrec_eval, y, score, qid, within):
    qrel, run = _qrel_and_run(y, score, qid, within)
    cut = ",".join(map(str, CUTOFFS))
    measures = {"ndcg", "map", "recip_rank", f"ndcg_cut.{cut}", f"map_cut.{cut}",
                f"P.{cut}", f"recall.{cut}"}
    result = pytrec_eval.RelevanceEvaluator(qrel, measures).evaluate(run)
    names = sorted(result)
    return {m: np.array([result[q][m] for q in names]) for m in result[names[0]]}


def _skrank(y, score, qid, **conv):
    out = {
        "ndcg": ndcg_score(y, score, qid=qid, average=False, **conv),
        "map": map_score(y, score, qid=qid, average=False, **conv),
        "recip_rank": mrr_score(y, score, qid=qid, average=False, **conv),
    }
    for k in CUTOFFS:
        out[f"ndcg_cut_{k}"] = ndcg_score(y, score, qid=qid, k=k, average=False, **conv)
        out[f"map_cut_{k}"] = map_score(y, score, qid=qid, k=k, average=False, **conv)
        out[f"P_{k}"] = precision_at_k(y, score, qid=qid, k=k, average=False, **conv)
        out[f"recall_{k}"] = recall_at_k(y, score, qid=qid, k=k, average=False, **conv)
    return out


def _max_diff(mine, theirs, names):
    return max(float(np.max(np.abs(mine[m] - theirs[m]))) for m in names)


def trec_eval_rows(n_queries, seed):
    try:
        import pytrec_eval
    except ImportError:
        return [("trec_eval", "trec_eval", "pytrec_eval not installed", "")]
    rng = np.random.default_rng(seed)
    rows = []
    for tied in (False, True):
        y, score, qid, within = _queries(rng, n_queries, tied)
        theirs = _trec_eval(pytrec_eval, y, score, qid, within)
        mine = _skrank(y, score, qid, convention="trec_eval")
        what = f"{n_queries} queries, {'tied' if tied else 'untied'} scores, {len(theirs)} measures"
        rows.append(("trec_eval", "trec_eval", what, _max_diff(mine, theirs, theirs)))
        if not tied:
            default = _skrank(y, score, qid)
            linear = {"ndcg": ndcg_score(y, score, qid=qid, gain="linear", average=False)}
            agree = ["map", "recip_rank"] + [f"recall_{k}" for k in CUTOFFS]
            diff = max(_max_diff(default, theirs, agree), _max_diff(linear, theirs, ["ndcg"]))
            rows.append(("skrank (gain='linear' for NDCG)", "trec_eval",
                         what.replace(f"{len(theirs)} measures", "ndcg, map, recip_rank, recall"),
                         diff))
    return rows


def _ranx(ranx, y, score, qid, within, measures):
    qrels, run = _qrel_and_run(y, score, qid, within)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numba's type-safety notes
        result = ranx.evaluate(ranx.Qrels.from_dict(qrels), ranx.Run.from_dict(run),
                               measures, return_mean=False)
    # ranx returns the queries in sorted order, as skrank does
    return {m: np.asarray(result[m], dtype=float) for m in measures}


def ranx_rows(n_queries, seed):
    try:
        import ranx
    except ImportError:
        return [("trec_eval", "ranx", "ranx not installed", "")]
    rng = np.random.default_rng(seed)
    rows = []
    cut = [f"{m}@{k}" for k in CUTOFFS for m in ("ndcg", "map", "precision", "recall")]
    # the same queries as trec_eval's rows: the same generator, seed and order
    y, score, qid, within = _queries(rng, n_queries, tied=False)
    theirs = _ranx(ranx, y, score, qid, within, ["ndcg", "map", "mrr"] + cut)
    mine = _skrank(y, score, qid, convention="trec_eval")
    names = {"ndcg": "ndcg", "map": "map", "mrr": "recip_rank"}
    for k in CUTOFFS:
        names.update({f"ndcg@{k}": f"ndcg_cut_{k}", f"map@{k}": f"map_cut_{k}",
                      f"precision@{k}": f"P_{k}", f"recall@{k}": f"recall_{k}"})
    diff = max(float(np.max(np.abs(mine[ours] - theirs[m]))) for m, ours in names.items())
    what = f"{n_queries} queries, untied scores"
    rows.append(("trec_eval", "ranx", f"{what}, {len(names)} measures", diff))
    burges = _ranx(ranx, y, score, qid, within, [f"ndcg_burges@{k}" for k in CUTOFFS])
    default = _skrank(y, score, qid)
    diff = max(float(np.max(np.abs(default[ours] - theirs[m])))
               for m, ours in (("map", "map"), ("mrr", "recip_rank")))
    for k in CUTOFFS:
        ours = ndcg_score(y, score, qid=qid, k=k, average=False)
        diff = max(diff, float(np.max(np.abs(ours - burges[f"ndcg_burges@{k}"]))),
                   float(np.max(np.abs(recall_at_k(y, score, qid=qid, k=k, average=False)
                                       - theirs[f"recall@{k}"]))))
    rows.append(("skrank", "ranx", f"{what}, ndcg_burges@k, map, mrr, recall@k", diff))
    # ties: ranx's order of a tied run is its sort's, so bound it
    y, score, qid, within = _queries(rng, n_queries, tied=True)
    theirs = _ranx(ranx, y, score, qid, within, [f"ndcg@{k}" for k in CUTOFFS])
    best = np.lexsort((-y, qid))  # within each query, the best labels first
    outside, same, reverse, total = 0.0, 0, 0, 0
    for k in CUTOFFS:
        got = theirs[f"ndcg@{k}"]
        conv = dict(convention="trec_eval", k=k, average=False)
        low = ndcg_score(y, score, qid=qid, ties="pessimistic", **conv)
        high = ndcg_score(y[best], score[best], qid=qid[best], **conv)
        outside = max(outside, float(np.max(np.maximum(low - got, got - high))))
        rows_order = ndcg_score(y, score, qid=qid, **conv)
        flipped = ndcg_score(y[::-1], score[::-1], qid=qid[::-1], **conv)
        moved = ~np.isclose(low, high, rtol=0, atol=1e-12)  # the ties change the value
        same += int(np.sum(moved & np.isclose(got, rows_order, rtol=0, atol=1e-12)))
        reverse += int(np.sum(moved & np.isclose(got, flipped, rtol=0, atol=1e-12)))
        total += int(np.sum(moved))
    rows.append(("trec_eval, ties bounded", "ranx",
                 f"{n_queries} queries, tied scores, ndcg@1..20: of {total} (query, k) whose "
                 f"value the ties change, ranx equals the row order in {same} and its reverse "
                 f"in {reverse}; largest step outside [pessimistic, best]", outside))
    return rows


def sklearn_rows(seed):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 5, size=(500, 30))
    s = np.round(rng.normal(size=(500, 30)), 1)
    qid = np.repeat(np.arange(500), 30)
    diff = 0.0
    for k in (None, *CUTOFFS):
        ours = ndcg_score(y.ravel(), s.ravel(), qid=qid, k=k, convention="sklearn", average=False)
        theirs = [sklearn.metrics.ndcg_score(y[i:i + 1], s[i:i + 1], k=k) for i in range(500)]
        diff = max(diff, float(np.max(np.abs(ours - theirs))))
        ours = dcg_score(y.ravel(), s.ravel(), qid=qid, k=k, convention="sklearn", average=False)
        theirs = [sklearn.metrics.dcg_score(y[i:i + 1], s[i:i + 1], k=k) for i in range(500)]
        diff = max(diff, float(np.max(np.abs(ours - theirs))))
    return [("sklearn", "sklearn.metrics ndcg_score, dcg_score",
             "500 queries of 30, tied scores, k None/1/3/5/10/20", diff)]


def letor_rows():
    from _shared_data import ohsumed_root

    root = ohsumed_root()
    reference = json.loads((root.parent / "reference_metrics.json").read_text())
    diff = 0.0
    for key, entry in reference.items():
        path, _, ranker = key.partition(" score=")
        X, y, qid = load_letor(root.parent / (path + ".gz"))
        score = np.zeros(len(y)) if ranker == "constant 0" else np.asarray(X[:, 0]).ravel()
        for k in range(1, 17):
            for func, name in ((ndcg_score, "NDCG@1..16"), (precision_at_k, "P@1..16")):
                got = func(y, score, qid=qid, k=k, convention="letor")
                diff = max(diff, abs(got - entry[name][k - 1]))
        diff = max(diff, abs(map_score(y, score, qid=qid, convention="letor") - entry["MAP"]))
    return [("letor", "Eval-Score-3.0.pl output", "OHSUMED 5 test folds x 2 rankers, "
             "NDCG@1..16, P@1..16, MAP (means)", diff)]


def letor4_rows():
    """Eval-Score-4.0.pl's printed output (4 decimals) on the toy example.

    shared/data/README.md section 4.3: three queries, ties in file order.
    """
    labels = [0, 2, 1] + [0, 0] + [0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 2]
    scores = [3, 2, 1] + [1, 2] + [0] * 12
    qid = [1] * 3 + [2] * 2 + [3] * 12
    printed = {"NDCG": [0.0, 0.25, 0.3552, 0.0526], "P": [0.0, 0.1667, 0.3333, 0.25]}
    diff = abs(map_score(labels, scores, qid=qid, convention="letor4") - 0.2778)
    for k in range(1, 5):
        for func, name in ((ndcg_score, "NDCG"), (precision_at_k, "P")):
            got = func(labels, scores, qid=qid, k=k, convention="letor4")
            diff = max(diff, abs(got - printed[name][k - 1]))
    return [("letor4", "Eval-Score-4.0.pl printed output (4 decimals)",
             "toy example, NDCG@1..4, P@1..4, MAP", diff)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rows = (trec_eval_rows(args.queries, args.seed) + ranx_rows(args.queries, args.seed)
            + sklearn_rows(args.seed)
            + letor_rows() + letor4_rows())
    print("| convention | tool | data | max abs difference |")
    print("| --- | --- | --- | --- |")
    for convention, tool, what, diff in rows:
        shown = f"{diff:.1e}" if isinstance(diff, float) else diff
        print(f"| {convention} | {tool} | {what} | {shown} |")


if __name__ == "__main__":
    main()
