"""Reading and fitting data larger than memory: timings of skrank's streaming pieces.

Sections (``--section``):

* ``reader``: the LETOR readers. Three files are generated into a temporary
  folder (``--rows`` rows each, default 200,000; never into the repository):

  - **dense**: MSLR-WEB-shaped, 136 features listed on every line, labels
    0..4, queries of 50..150 documents, values ``0.123456`` with about 5 %
    small integers (``--rows 200000`` is about 325 MB);
  - **letor3**: OHSUMED-shaped (LETOR 3.0), 45 features on every line and a
    ``#docid = <id>`` comment;
  - **sparse**: the dense file's shape with 30 % of the features of each line
    left out (lines that list different features: the careful path's case).

  Each reader runs in its own child process, which reports its seconds and
  its peak resident memory (``VmHWM``) above what the interpreter held before
  the read (``VmRSS`` after the imports), divided by the bytes of the
  returned ``X``. The readers: ``load_letor`` float32 and float64 with
  ``engine="auto"`` (pandas' C reader when pandas is installed), float64 with
  ``engine="numpy"`` (NumPy alone), ``engine="sklearn"`` (the careful path,
  scikit-learn's parser block by block; before the fast engines it was the
  only path, and it read the whole text at once), and
  ``sklearn.datasets.load_svmlight_file(path, query_id=True)``. The ratios are
  throughputs against ``load_svmlight_file`` and against ``engine="sklearn"``
  measured in the same run.

* ``fit``: streamed fits. ``--stream-rows`` training rows (default
  5,000,000) of ``make_web_ranking`` data (136 float32 features, grouped by
  query, values rounded to 4 decimals) are written once as ``.npy`` and
  their first ``--text-rows`` (default 800,000) as LETOR text, with 100,000
  test rows. Each fit runs in a child process, which reports its seconds
  per epoch (``--epochs`` epochs, default 5, no early stopping) and its peak
  resident memory above the interpreter: ListNet and BoltzRank
  (``n_init=1``) streamed by ``skrank.stream.fit_stream`` from the memory
  map (all rows), from the text (re-read each epoch), and at
  ``--compare-rows`` rows (default 800,000) from the memory map (queries
  shuffled within 4 chunks, and in the order of the file: ``npy
  ordered``) and in memory by ``fit``; the reader alone on the text; and the test NDCG@10 of
  the streamed and in-memory models at ``--compare-rows`` rows over three
  seeds (their spread is the noise a difference must exceed).

Run ``python benchmarks/bench_stream.py --section reader`` (add ``--rows`` for
another size, ``--keep DIR`` to generate into and keep a folder). Timings
depend on the machine and on what else runs on it: compare ratios within one
run.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

READERS = {
    "load_letor f32": {"dtype": "float32", "engine": "auto"},
    "load_letor f64": {"dtype": "float64", "engine": "auto"},
    "load_letor f64 numpy": {"dtype": "float64", "engine": "numpy"},
    "load_letor f64 sklearn": {"dtype": "float64", "engine": "sklearn"},
    "load_svmlight_file": None,
}


def _write_file(path, rows, *, n_features, docids, missing, seed):
    """Write ``rows`` LETOR lines to ``path``: queries of 50..150 (or 35..320) rows."""
    rng = np.random.default_rng(seed)
    names = [f"{k}:" for k in range(1, n_features + 1)]
    table = [f"0.{k:06d}" for k in range(1_000_000)]
    with open(path, "w") as f:
        done, q = 0, 0
        while done < rows:
            q += 1
            low, high = (35, 320) if docids else (50, 150)
            n = min(rows - done, int(rng.integers(low, high)))
            codes = rng.integers(0, 1_000_000, size=(n, n_features))
            integers = rng.random((n, n_features)) < (0 if docids else 0.05)
            keep = rng.random((n, n_features)) >= missing
            labels = rng.integers(0, 3 if docids else 5, size=n)
            out = []
            for i in range(n):
                fields = [
                    names[j] + (str(codes[i, j] % 100) if integers[i, j] else table[codes[i, j]])
                    for j in np.flatnonzero(keep[i]).tolist()
                ]
                tail = f" #docid = {int(rng.integers(10**5, 10**6))}" if docids else ""
                out.append(f"{labels[i]} qid:{q} {' '.join(fields)}{tail}\n")
            f.write("".join(out))
            done += n


def _status(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key):
                return int(line.split()[1]) * 1024
    return 0


def _child(reader, path):
    """Run one reader on ``path``; print its seconds, X bytes and peak memory as JSON."""
    from sklearn.datasets import load_svmlight_file

    from skrank.datasets import load_letor

    if READERS[reader] is not None and READERS[reader]["engine"] == "auto":
        try:
            import pandas  # noqa: F401  (imported before the baseline, as sklearn does)
        except ImportError:
            pass
    baseline = _status("VmRSS")
    start = time.perf_counter()
    if READERS[reader] is None:
        X, y, qid = load_svmlight_file(path, query_id=True)
        x_bytes = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
    else:
        X, y, qid = load_letor(path, **READERS[reader])
        x_bytes = X.nbytes
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "rows": int(y.size), "x_bytes": x_bytes,
                      "peak": _status("VmHWM") - baseline}))


def section_reader(args):
    folder = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench_stream_"))
    folder.mkdir(parents=True, exist_ok=True)
    files = {
        "dense": dict(n_features=136, docids=False, missing=0.0, seed=0),
        "letor3": dict(n_features=45, docids=True, missing=0.0, seed=1),
        "sparse": dict(n_features=136, docids=False, missing=0.3, seed=2),
    }
    try:
        import pandas
        fast = f"pandas {pandas.__version__}"
    except ImportError:
        fast = "pandas not installed: engine='auto' is NumPy"
    print(f"reader section: {args.rows:,} rows per file in {folder}; {fast}; "
          f"{os.cpu_count()} CPUs")
    for name, spec in files.items():
        path = folder / f"{name}_{args.rows}.txt"
        if not path.exists():
            start = time.perf_counter()
            _write_file(path, args.rows, **spec)
            print(f"  wrote {path.name} in {time.perf_counter() - start:.0f} s")
        mb = path.stat().st_size / 1e6
        print(f"\n{name}: {mb:.0f} MB")
        print(f"  {'reader':<28} {'s':>7} {'MB/s':>7} {'peak/X':>7} {'x svmlight':>11} "
              f"{'x sklearn':>9}")
        results = {}
        # the children import the skrank beside this folder, as the parent does
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            [str(Path(__file__).resolve().parent.parent), os.environ.get("PYTHONPATH", "")])}
        for reader in READERS:
            if reader == "load_svmlight_file" and name != "dense" and args.skip_slow:
                continue
            out = subprocess.run(
                [sys.executable, __file__, "--child", reader, str(path)],
                capture_output=True, text=True, env=env,
            )
            if out.returncode:
                sys.exit(f"{reader} failed on {path}:\n{out.stderr}")
            results[reader] = json.loads(out.stdout.strip().splitlines()[-1])
        base_svm = results.get("load_svmlight_file", {}).get("seconds")
        base_before = results["load_letor f64 sklearn"]["seconds"]
        for reader, r in results.items():
            vs_svm = f"{base_svm / r['seconds']:.1f}x" if base_svm else "-"
            print(f"  {reader:<28} {r['seconds']:7.2f} {mb / r['seconds']:7.1f} "
                  f"{r['peak'] / r['x_bytes']:7.2f} {vs_svm:>11} "
                  f"{base_before / r['seconds']:8.1f}x")
    if not args.keep:
        for path in folder.iterdir():
            path.unlink()
        folder.rmdir()


# ----------------------------------------------------------------------
# Section "fit": streamed fits against in-memory ones
STREAM_RANKERS = {
    "ListNet": ("ListNetRanker", {}),
    "BoltzRank": ("BoltzRankRanker", {"n_init": 1}),
}


def _write_letor_text(path, X, y, qid, block=20_000):
    """Write rows as LETOR text, values with 4 decimals (X must already be rounded so)."""
    fmt = " ".join(f"{j}:%.4f" for j in range(1, X.shape[1] + 1))
    with open(path, "w") as f:
        for lo in range(0, X.shape[0], block):
            hi = min(lo + block, X.shape[0])
            f.write("".join(
                f"{int(label)} qid:{int(q)} {fmt % tuple(row)}\n"
                for label, q, row in zip(y[lo:hi], qid[lo:hi], X[lo:hi].tolist())))


def _make_stream_data(folder, rows, test_rows, text_rows):
    """Train (.npy, grouped by query, float32) and test arrays; a LETOR text file of the first rows."""
    from skrank import make_web_ranking

    n_queries = int(np.ceil((rows + test_rows) / 119))
    X, y, qid = make_web_ranking(n_queries=n_queries, shuffle=False, dtype=np.float32,
                                 random_state=0)
    X = np.round(X, 4)  # what the text holds
    test = qid >= np.unique(qid)[-max(1, int(round(n_queries * test_rows / (rows + test_rows))))]
    np.save(folder / "X_test.npy", X[test]); np.save(folder / "y_test.npy", y[test])
    np.save(folder / "qid_test.npy", qid[test])
    train = ~test
    np.save(folder / "X.npy", X[train]); np.save(folder / "y.npy", y[train])
    np.save(folder / "qid.npy", qid[train])
    qid_train = qid[train]
    n_text = _whole(qid_train, text_rows)
    start = time.perf_counter()
    _write_letor_text(folder / "train.txt", X[train][:n_text], y[train][:n_text],
                      qid_train[:n_text])
    print(f"  wrote {int(train.sum())} training rows (.npy), {n_text} as LETOR text "
          f"({os.path.getsize(folder / 'train.txt') / 1e6:.0f} MB, "
          f"{time.perf_counter() - start:.0f} s), {int(test.sum())} test rows", flush=True)
    return n_text, qid_train


def _whole(qid, rows):
    """``rows`` rounded up to the end of a query of ``qid`` (grouped)."""
    rows = min(rows, len(qid))
    while rows < len(qid) and qid[rows] == qid[rows - 1]:
        rows += 1
    return rows


def _fit_child(spec):
    """Run one fit described by ``spec`` (JSON) in this process; print its figures as JSON."""
    import warnings

    import skrank
    from skrank.stream import fit_stream

    spec = json.loads(spec)
    folder = Path(spec["folder"])
    base = _status("VmRSS")
    cls = getattr(skrank, STREAM_RANKERS[spec["ranker"]][0])
    params = {**STREAM_RANKERS[spec["ranker"]][1], "random_state": spec["seed"],
              "max_iter": spec["epochs"], "early_stopping": False}
    ranker = cls(**params)
    rows = spec["rows"]
    y = np.load(folder / "y.npy")[:rows]
    qid = np.load(folder / "qid.npy")[:rows]
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if spec["source"] == "memory":
            X = np.array(np.load(folder / "X.npy", mmap_mode="r")[:rows])
            start = time.perf_counter()  # the fit only: the data are in memory
            ranker.fit(X, y, qid=qid)
        elif spec["source"] == "read":  # the reader alone: its chunks, no fit
            from skrank.datasets import iter_letor_chunks

            for _ in iter_letor_chunks(folder / "train.txt", chunk_rows=spec["chunk_rows"],
                                       n_features=136, dtype=np.float32):
                pass
            print(json.dumps({"seconds": time.perf_counter() - start, "epochs": 1,
                              "ndcg": float("nan"),
                              "peak_mb": (_status("VmHWM") - base) / 1e6}))
            return
        elif spec["source"] in ("npy", "npy ordered"):
            X = np.load(folder / "X.npy", mmap_mode="r")[:rows]
            fit_stream(ranker, (X, y, qid), chunk_rows=spec["chunk_rows"],
                       shuffle=spec["source"] == "npy")
        else:
            fit_stream(ranker, str(folder / "train.txt"), chunk_rows=spec["chunk_rows"],
                       n_features=136, dtype=np.float32)
    seconds = time.perf_counter() - start
    X_test = np.load(folder / "X_test.npy")
    ndcg = ranker.score(X_test, np.load(folder / "y_test.npy"),
                        qid=np.load(folder / "qid_test.npy"))
    print(json.dumps({"seconds": seconds, "epochs": ranker.n_iter_, "ndcg": ndcg,
                      "peak_mb": (_status("VmHWM") - base) / 1e6}))


def _run_fit(spec):
    out = subprocess.run([sys.executable, __file__, "--fit-child", json.dumps(spec)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def section_fit(args):
    folder = Path(args.keep or tempfile.mkdtemp(prefix="bench_stream_"))
    folder.mkdir(parents=True, exist_ok=True)
    print(f"Streamed fits: {args.stream_rows} training rows x 136 float32 features "
          f"(about {args.stream_rows * 136 * 4 / 1e9:.2f} GB as .npy), {args.epochs} epochs, "
          f"chunks of {args.chunk_rows} rows, in {folder}", flush=True)
    n_text, qid_train = _make_stream_data(folder, args.stream_rows, 100_000, args.text_rows)
    n_all, n_compare = len(qid_train), _whole(qid_train, args.compare_rows)
    common = {"folder": str(folder), "epochs": args.epochs, "chunk_rows": args.chunk_rows}
    print("\n  ranker      source           rows   s/epoch  peak RSS above interpreter")
    results = {}
    read = _run_fit({**common, "ranker": "ListNet", "source": "read", "rows": n_text,
                     "seed": 0})
    print(f"  (reader)    text         {n_text:>9}  {read['seconds']:8.2f}  "
          f"{read['peak_mb']:8.0f} MB", flush=True)
    for ranker in STREAM_RANKERS:
        for source, rows in (("npy", n_all), ("text", n_text),
                             ("memory", n_compare), ("npy", n_compare),
                             ("npy ordered", n_compare)):
            r = _run_fit({**common, "ranker": ranker, "source": source, "rows": rows,
                          "seed": 0})
            results[ranker, source, rows] = r
            print(f"  {ranker:<10}  {source:<11}  {rows:>9}  {r['seconds'] / r['epochs']:8.2f}"
                  f"  {r['peak_mb']:8.0f} MB", flush=True)
        memory = results[ranker, "memory", n_compare]
        in_memory = memory["seconds"] / memory["epochs"]
        for source in ("npy", "npy ordered"):
            npy = results[ranker, source, n_compare]
            print(f"  {ranker}: {source} epoch / in-memory epoch at {n_compare} rows = "
                  f"{(npy['seconds'] / npy['epochs']) / in_memory:.2f} (goal <= 1.5)",
                  flush=True)
        if n_text == n_compare:
            text = results[ranker, "text", n_text]
            budget = read["seconds"] + memory["seconds"] / memory["epochs"]
            print(f"  {ranker}: text epoch / (reader + in-memory epoch) at {n_text} rows = "
                  f"{(text['seconds'] / text['epochs']) / budget:.2f} (goal <= 1.2)",
                  flush=True)
    print("\n  test NDCG@10 at", n_compare, "rows, seeds 0..2 (streamed: shuffled "
          "within 4 chunks; in memory: fit)")
    for ranker in STREAM_RANKERS:
        for source in ("memory", "npy"):
            scores = [results[ranker, source, n_compare]["ndcg"]] + [
                _run_fit({**common, "ranker": ranker, "source": source,
                          "rows": n_compare, "seed": seed})["ndcg"]
                for seed in (1, 2)]
            print(f"  {ranker:<10}  {source:<11}  mean {np.mean(scores):.4f}  "
                  f"spread {np.max(scores) - np.min(scores):.4f}  {np.round(scores, 4)}",
                  flush=True)


SECTIONS = {"reader": section_reader, "fit": section_fit}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--section", choices=list(SECTIONS), default="reader")
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--keep", metavar="DIR", help="generate into DIR and keep the files")
    parser.add_argument("--skip-slow", action="store_true",
                        help="time load_svmlight_file on the dense file only")
    parser.add_argument("--stream-rows", type=int, default=5_000_000,
                        help="fit section: training rows written as .npy (default 5,000,000)")
    parser.add_argument("--compare-rows", type=int, default=800_000,
                        help="fit section: rows of the in-memory comparison (default 800,000)")
    parser.add_argument("--text-rows", type=int, default=800_000,
                        help="fit section: rows written as LETOR text (default 800,000)")
    parser.add_argument("--chunk-rows", type=int, default=100_000)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--child", nargs=2, metavar=("READER", "PATH"), help=argparse.SUPPRESS)
    parser.add_argument("--fit-child", metavar="SPEC", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(*args.child)
        return
    if args.fit_child:
        _fit_child(args.fit_child)
        return
    SECTIONS[args.section](args)


if __name__ == "__main__":
    main()
