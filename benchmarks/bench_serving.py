"""Serving latency: ``predict`` against ONNX Runtime on the graph of ``skrank.export.to_onnx``.

For three models fitted on synthetic MSLR-shaped data (136 float32 features,
``make_web_ranking``): a linear ListNet, a ListNet MLP of hidden layers
(64, 32), and BoltzRank2 (``BoltzRankRanker(hidden_layer_sizes=(),
pairwise_hidden_layer_sizes=(5,))``), this script prints, measured in one
run on the same machine:

1. per query of 100 and of 1,000 documents: the median and 99th percentile
   of the latency of ``predict(X, qid=...)`` (BLAS limited to one thread
   with threadpoolctl) and of one ONNX Runtime ``session.run`` (one intra-op
   thread, float32 graph), over ``--repeat`` calls on different queries (at
   most 50 for 1,000 documents), and the ratio of the medians (above 1: ONNX
   Runtime is faster);
2. rows per second on ``--rows`` rows (queries of 100 documents), by
   ``predict`` of all rows at once and by the session (all rows at once for
   the row-wise models, query by query for BoltzRank2, whose graph pairs all
   its input rows), and their ratio (above 1: ONNX Runtime is faster).

Only public API is used. Needs the ``onnx`` extra. Run with::

    python benchmarks/bench_serving.py [--repeat 300] [--rows 100000]
"""

import argparse
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import threadpool_limits

from skrank import BoltzRankRanker, ListNetRanker, make_web_ranking
from skrank.export import to_onnx

MODELS = {
    "ListNet linear": lambda: ListNetRanker(hidden_layer_sizes=(), max_iter=2, random_state=0),
    "ListNet MLP (64, 32)": lambda: ListNetRanker(hidden_layer_sizes=(64, 32), max_iter=2,
                                                  random_state=0),
    "BoltzRank2": lambda: BoltzRankRanker(hidden_layer_sizes=(), pairwise_hidden_layer_sizes=(5,),
                                          n_init=1, max_iter=2, random_state=0),
}


def session_of(model):
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    return onnxruntime.InferenceSession(to_onnx(model).SerializeToString(), options,
                                        providers=["CPUExecutionProvider"])


def latencies(call, queries):
    """Seconds of ``call(X)`` for each query ``X`` (after one warm-up call)."""
    call(queries[0])
    times = np.empty(len(queries))
    for i, X in enumerate(queries):
        t0 = time.perf_counter()
        call(X)
        times[i] = time.perf_counter() - t0
    return times


def main():
    with threadpool_limits(1):  # predict on one core, as the session
        run()


def run():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=300, help="queries timed per size")
    parser.add_argument("--rows", type=int, default=100_000, help="rows of the throughput test")
    args = parser.parse_args()

    import onnxruntime

    X, y, qid = make_web_ranking(n_queries=200, random_state=0, dtype=np.float32)
    print(f"fitted on {X.shape[0]} rows x {X.shape[1]} float32 features; "
          f"onnxruntime {onnxruntime.__version__}; one thread each")
    rng = np.random.default_rng(1)
    print(f"\n{'model':<22}{'docs':>6}{'predict ms':>22}{'onnxruntime ms':>22}"
          f"{'predict / onnxruntime':>24}")
    print(f"{'':<28}{'median':>11}{'p99':>11}{'median':>11}{'p99':>11}")
    for name, make in MODELS.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model = make().fit(X, y, qid=qid)
        session = session_of(model)
        for n_docs in (100, 1000):
            queries = [rng.standard_normal((n_docs, X.shape[1]), dtype=np.float32)
                       for _ in range(min(args.repeat, 50 if n_docs > 100 else args.repeat))]
            one = np.zeros(n_docs, dtype=int)
            ours = latencies(lambda Q: model.predict(Q, qid=one), queries) * 1e3
            theirs = latencies(lambda Q: session.run(None, {"X": Q}), queries) * 1e3
            print(f"{name:<22}{n_docs:>6}{np.median(ours):>11.3f}{np.percentile(ours, 99):>11.3f}"
                  f"{np.median(theirs):>11.3f}{np.percentile(theirs, 99):>11.3f}"
                  f"{np.median(ours) / np.median(theirs):>23.2f}x")

    print(f"\nrows per second on {args.rows} rows (queries of 100 documents)")
    rows = rng.standard_normal((args.rows, X.shape[1]), dtype=np.float32)
    qid_rows = np.repeat(np.arange(args.rows // 100 + 1), 100)[: args.rows]
    for name, make in MODELS.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model = make().fit(X, y, qid=qid)
        session = session_of(model)
        t0 = time.perf_counter()
        model.predict(rows, qid=qid_rows)
        ours = time.perf_counter() - t0
        t0 = time.perf_counter()
        if name == "BoltzRank2":  # its graph pairs every input row: one query per run
            for lo in range(0, args.rows, 100):
                session.run(None, {"X": rows[lo:lo + 100]})
        else:
            session.run(None, {"X": rows})
        theirs = time.perf_counter() - t0
        print(f"  {name:<22} predict {args.rows / ours:>12,.0f}   onnxruntime "
              f"{args.rows / theirs:>12,.0f}   onnxruntime / predict {ours / theirs:5.2f}")


if __name__ == "__main__":
    main()
