"""Speed of skrank's vectorised NDCG against a per-query loop and scikit-learn.

Data: 10**6 rows in 10**4 queries of 100 documents, graded labels 0..4,
Gaussian scores. Prints the median time of each method over a few repeats and
the ratios, all measured in this one run. Run with::

    python benchmarks/bench_metrics.py [--rows 1000000] [--queries 10000]
"""

import argparse
import time

import numpy as np
from sklearn.metrics import ndcg_score as sk_ndcg_score

from skrank.metrics import ndcg_score


def _loop_ndcg(y_true, y_score, qid, k, gain):
    """A straightforward per-query loop: the same metric, one query at a time.

    Groups rows once with a stable argsort, then computes each query's
    tie-averaged NDCG@k with NumPy (the obvious way one writes it).
    """
    order = np.argsort(qid, kind="stable")
    _, starts = np.unique(qid[order], return_index=True)
    bounds = np.append(starts, len(qid))
    values = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        rows = order[a:b]
        labels, scores = y_true[rows], y_score[rows]
        g = 2.0**labels - 1.0 if gain == "exponential" else labels
        n = len(rows)
        disc = 1.0 / np.log2(np.arange(2, n + 2))
        disc[k:] = 0.0
        ranked = np.argsort(-scores)
        s_ranked, g_ranked = scores[ranked], g[ranked]
        # tie-averaged DCG: mean gain of each run of equal scores
        _, run_start, run_inv = np.unique(
            -s_ranked, return_index=True, return_inverse=True
        )
        run_gain = np.bincount(run_inv, weights=g_ranked) / np.bincount(run_inv)
        dcg = run_gain[run_inv] @ disc
        idcg = np.sort(g)[::-1] @ disc
        values.append(dcg / idcg if idcg > 0 else 0.0)
    return float(np.mean(values))


def _time(func, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = func()
        times.append(time.perf_counter() - t0)
    return float(np.median(times)), result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10**6)
    parser.add_argument("--queries", type=int, default=10**4)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    n_docs = args.rows // args.queries
    n = n_docs * args.queries
    qid_sorted = np.repeat(np.arange(args.queries), n_docs)
    y_true = rng.integers(0, 5, size=n).astype(np.float64)
    y_score = rng.normal(size=n)
    shuffle = rng.permutation(n)
    print(
        f"{n} rows, {args.queries} queries of {n_docs} documents, k={args.k}, "
        f"median of {args.repeat} runs"
    )

    y_true_s, y_score_s, qid_s = y_true[shuffle], y_score[shuffle], qid_sorted[shuffle]
    loop_repeat = max(1, args.repeat // 2)
    rows = []
    t_vec, v_vec = _time(
        lambda: ndcg_score(y_true, y_score, qid=qid_sorted, k=args.k), args.repeat
    )
    rows.append(("skrank ndcg_score (rows grouped)", t_vec, v_vec))
    t_loop, v_loop = _time(
        lambda: _loop_ndcg(y_true, y_score, qid_sorted, args.k, "exponential"),
        loop_repeat,
    )
    rows.append(("per-query loop (rows grouped)", t_loop, v_loop))
    t_shuf, v_shuf = _time(
        lambda: ndcg_score(y_true_s, y_score_s, qid=qid_s, k=args.k), args.repeat
    )
    rows.append(("skrank ndcg_score (rows shuffled)", t_shuf, v_shuf))
    t_loop_shuf, v_loop_shuf = _time(
        lambda: _loop_ndcg(y_true_s, y_score_s, qid_s, args.k, "exponential"),
        loop_repeat,
    )
    rows.append(("per-query loop (rows shuffled)", t_loop_shuf, v_loop_shuf))

    # scikit-learn applies here: equal-length queries as rows, linear gain.
    t_sk_vec, v_sk_vec = _time(
        lambda: ndcg_score(
            y_true, y_score, qid=qid_sorted, k=args.k, convention="sklearn"
        ),
        args.repeat,
    )
    t_sk, v_sk = _time(
        lambda: sk_ndcg_score(
            y_true.reshape(args.queries, n_docs),
            y_score.reshape(args.queries, n_docs),
            k=args.k,
        ),
        loop_repeat,
    )
    rows.append(("skrank ndcg_score convention='sklearn'", t_sk_vec, v_sk_vec))
    rows.append(("sklearn.metrics.ndcg_score (matrix)", t_sk, v_sk))

    width = max(len(name) for name, _, _ in rows)
    for name, seconds, value in rows:
        print(f"{name:<{width}}  {seconds * 1e3:9.1f} ms   value {value:.12f}")
    assert abs(v_vec - v_loop) < 1e-9 and abs(v_shuf - v_vec) < 1e-9
    assert abs(v_loop_shuf - v_vec) < 1e-9
    assert abs(v_sk - v_sk_vec) < 1e-9
    print(f"speed-up vs per-query loop (grouped rows):  {t_loop / t_vec:6.1f}x")
    print(f"speed-up vs per-query loop (shuffled rows): {t_loop_shuf / t_shuf:6.1f}x")
    print(f"speed-up vs sklearn.metrics.ndcg_score:     {t_sk / t_sk_vec:6.1f}x")


if __name__ == "__main__":
    main()
