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
  which is how every file was read before the fast engines), and
  ``sklearn.datasets.load_svmlight_file(path, query_id=True)``. The ratios are
  throughputs against ``load_svmlight_file`` and against ``engine="sklearn"``
  measured in the same run.

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
    "load_letor sklearn (before)": {"dtype": "float64", "engine": "sklearn"},
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
              f"{'x before':>9}")
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
        base_before = results["load_letor sklearn (before)"]["seconds"]
        for reader, r in results.items():
            vs_svm = f"{base_svm / r['seconds']:.1f}x" if base_svm else "-"
            print(f"  {reader:<28} {r['seconds']:7.2f} {mb / r['seconds']:7.1f} "
                  f"{r['peak'] / r['x_bytes']:7.2f} {vs_svm:>11} "
                  f"{base_before / r['seconds']:8.1f}x")
    if not args.keep:
        for path in folder.iterdir():
            path.unlink()
        folder.rmdir()


SECTIONS = {"reader": section_reader}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--section", choices=list(SECTIONS), default="reader")
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--keep", metavar="DIR", help="generate into DIR and keep the files")
    parser.add_argument("--skip-slow", action="store_true",
                        help="time load_svmlight_file on the dense file only")
    parser.add_argument("--child", nargs=2, metavar=("READER", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(*args.child)
        return
    SECTIONS[args.section](args)


if __name__ == "__main__":
    main()
