"""How every ranker's time and memory grow with the rows, on MSLR-WEB10K-shaped data.

Data: :func:`skrank.datasets.make_web_ranking` (136 standard normal
features, lognormal query sizes of mean ~119 clipped to 2..900, labels 0..4
at 52/32/13/2/1 % cut from a nonlinear score, rows shuffled across queries),
``random_state=0``. For each size of ``--sizes`` (training rows, default
50,000, 200,000 and 800,000) enough queries are drawn that 80 % of them hold
about that many rows; those 80 % (drawn at random, whole queries) train and
the other 20 % test. The actual training rows are printed and used for the
growth exponents.

Rankers: ListNet, SoftRank, BoltzRank (BoltzRank1), BoltzRank2
(``hidden_layer_sizes=(3,), pairwise_hidden_layer_sizes=(5,)``) and LogRank,
every parameter at its default but ``random_state=0``; and, when installed
(they are not dependencies of skrank), LightGBM's ``LGBMRanker(n_estimators=200)``
and XGBoost's ``XGBRanker(n_estimators=200)``. The two GBDTs need the rows
sorted by query: their timed fits (and their memory fits) include that sort, a
copy of ``X``, since skrank's rankers take the rows in any order.

Every fit runs in its own child process (``multiprocessing``, spawn), which
loads the data from ``.npy`` files written once per size and dtype by the
parent. Per ranker and size:

* **s/epoch**: one epoch of a run (Adam's pass over the training queries and
  the validation metric; for LogRank an L-BFGS iteration), ``(T - setup) /
  n_iter_`` of a fit of ``T`` seconds with ``n_init=1``, early stopping's
  patience out of reach (LogRank: ``tol=0``, as its L-BFGS otherwise stops
  after 4 or 5 iterations) and ``max_iter`` between 4 and 200, chosen so
  that the epochs take about 3 times as long as the setup (the setup varies
  from fit to fit and would swamp cheap epochs); for a GBDT one tree,
  ``(T(200 trees) - T(1 tree)) / 199``.
* **setup s**: everything in ``fit`` before the first epoch (input checks,
  the holdout, the loss's preparation such as BoltzRank's rank samples,
  LogRank's folded sample rows). A fit with ``max_iter=1, n_init=1,
  verbose=1`` prints after its first epoch the seconds since its run started;
  the setup is the time from calling ``fit`` to that start, read from when the
  line was written (the line gives the seconds to 0.01, so the setup is
  known to about 0.005 s). For a GBDT, ``T(1 tree) - s/tree``.
* **fit s**: a fit with the defaults (early stopping, ``n_init``, ``max_iter``
  as shipped; BoltzRank runs ``n_init=3`` restarts), and **epochs**, its
  ``n_iter_`` (of the kept run).
* **mem64, mem32**: peak memory of ``fit`` above ``X``, as a multiple of the
  training ``X.nbytes``, for float64 and for float32 ``X``: the child loads
  the data, reads its resident set size (``VmRSS``), resets the peak (writes
  ``5`` to ``/proc/self/clear_refs``, Linux), fits, and reads the peak
  (``VmHWM``); the figure is ``(VmHWM - VmRSS) / X_train.nbytes``. The memory
  fits are capped (``max_iter=2, n_init=1``; GBDTs ``n_estimators=2``): the
  peak is in the setup and the first epochs, and restarts run one after the
  other. Not measured with ``--skip-memory`` or without ``/proc``.
* **NDCG@10** of the default fit on the test queries
  (:func:`skrank.metrics.ndcg_score`, ``k=10``, default convention).
* **fit/LGBM**: the default fit's seconds over LightGBM's, same run.

With ``--dtypes float64 float32`` each skrank ranker is timed on float64 and
on float32 ``X`` (a row each; ``mem64`` and ``mem32`` are measured with the
float64 row). ``--fit-timeout SECONDS`` ends a skrank ranker's default fit
after that long (it runs in a child of its own, killed then); the table
shows ``>SECONDS``, and fit/LGBM the bound it gives. ``--memory-only`` runs
the memory fits alone (peak memory does not depend on other work on the
machine, so they may run beside other jobs).

Before the tables: the CPU's model, whether it has AVX-512, and NumPy's
float64 and float32 ``tanh`` and ``exp`` in nanoseconds per element. NumPy's
float64 ``tanh`` has a vector kernel only on CPUs with AVX-512 (elsewhere it
calls the C library one value at a time, ten times slower), so a ranker
that evaluated it over many values would be fast or slow by the CPU; these
figures say which kind of machine a table comes from.
``NPY_DISABLE_CPU_FEATURES="AVX512F AVX512_SKX ..."`` turns NumPy's AVX-512
kernels off on a CPU that has them (the line then names it, and its float64
``tanh`` figure shows whether it took effect).

Then the growth exponent of each figure between consecutive sizes,
``log(figure ratio) / log(training rows ratio)``: 1 is linear. For memory
it is that of the peak bytes above ``X`` (not of their multiple of
``X.nbytes``, which stays flat when memory grows linearly).

``--long`` adds 50 queries of 3,000 documents (136 features, all 150,000
rows train): s/epoch, setup and memory of every ranker, no default fit.

The short fits behind s/epoch and setup run at least 3 times, the default
fits ``--repeat`` times (default 1); each figure is the median. Other work
on the machine slows them, the multithreaded GBDTs most (their threads wait
for each other): the load average is printed at the start and the end.
Only public API is used, so the same script measures another checkout
(``PYTHONPATH=/path/to/checkout python benchmarks/bench_scale.py``; the
first line says which skrank was imported). Run with::

    python benchmarks/bench_scale.py [--sizes 50000 200000 800000]
        [--rankers ListNet SoftRank BoltzRank BoltzRank2 LogRank LightGBM XGBoost]
        [--dtypes float64 float32] [--fit-timeout SECONDS]
        [--skip-memory] [--long] [--repeat 1]

``--sizes 20000 50000`` takes a few minutes on two cores.
"""

import argparse
import importlib.util
import io
import multiprocessing
import os
import re
import sys
import tempfile
import time
import traceback
import warnings
from pathlib import Path

import numpy as np

from skrank import (
    BoltzRankRanker,
    ListNetRanker,
    LogRankRanker,
    SoftRankRanker,
    make_web_ranking,
    ndcg_score,
)

#: Mean query size of make_web_ranking's defaults: exp(4.6 + 0.6 ** 2 / 2).
MEAN_QUERY_SIZE = float(np.exp(4.6 + 0.6**2 / 2))
TRAIN_SHARE = 0.8
MIN_EPOCHS, MAX_EPOCHS = 4, 200  # bounds of the epochs of the fit that times an epoch
SETUP_MULTIPLE = 3  # ... whose epochs should last about this many setups
PROBES = 3  # at least this many short fits for s/epoch and setup (median)
MEMORY_CAP = 2  # max_iter (GBDT: n_estimators) of the memory fits
N_TREES = 200
LONG_TREES = 20  # extra trees of the fit that times a tree in --long
LONG_QUERIES, LONG_DOCS = 50, 3000

SKRANK = {
    "ListNet": (ListNetRanker, {}),
    "SoftRank": (SoftRankRanker, {}),
    "BoltzRank": (BoltzRankRanker, {}),
    "BoltzRank2": (BoltzRankRanker, {"hidden_layer_sizes": (3,),
                                     "pairwise_hidden_layer_sizes": (5,)}),
    "LogRank": (LogRankRanker, {}),
}
GBDT = {"LightGBM": "lightgbm", "XGBoost": "xgboost"}
RANKERS = list(SKRANK) + list(GBDT)

# ----------------------------------------------------------------------------
# What a child process runs


def _make(name, **overrides):
    """The ranker ``name`` at its benchmark defaults, with ``overrides``."""
    if name in SKRANK:
        cls, params = SKRANK[name]
        return cls(random_state=0, **params).set_params(**overrides)
    if name == "LightGBM":
        from lightgbm import LGBMRanker

        return LGBMRanker(**{"n_estimators": N_TREES, "verbose": -1, **overrides})
    from xgboost import XGBRanker

    return XGBRanker(**{"n_estimators": N_TREES, **overrides})


def _fit(name, model, X, y, qid):
    """Fit ``model``; a GBDT gets the rows sorted by query (inside the fit)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning of the capped fits
        if name in SKRANK:
            return model.fit(X, y, qid=qid)
        order = np.argsort(qid, kind="stable")
        X, y, qid = X[order], y[order], qid[order]
        if name == "LightGBM":
            return model.fit(X, y, group=np.unique(qid, return_counts=True)[1])
        return model.fit(X, y, qid=qid)


def _unstoppable(name):
    """Overrides that keep a run of ``name`` going to ``max_iter``.

    Early stopping's patience out of reach; without early stopping (LogRank)
    no tolerance, though L-BFGS may still end when it can make no progress.
    """
    if "n_iter_no_change" in _make(name).get_params():
        return {"n_iter_no_change": 1000}
    return {"tol": 0.0}


def _timed_fit(name, data, **overrides):
    """(seconds, fitted model) of one fit."""
    model = _make(name, **overrides)
    t0 = time.perf_counter()
    _fit(name, model, *data)
    return time.perf_counter() - t0, model


class _Stamps(io.TextIOBase):
    """A stdout that keeps every write with the time it came."""

    def __init__(self):
        self.writes = []

    def write(self, text):
        self.writes.append((time.perf_counter(), text))
        return len(text)


#: verbose=1's line after the first epoch ends with the seconds since the run began.
_FIRST_EPOCH = re.compile(r"iteration 1,.*?([0-9.]+) s\s*$")


def _setup_seconds(name, data):
    """(setup, first) seconds of a one-epoch fit with verbose=1.

    ``setup`` runs from calling fit to the start of the first epoch, ``first``
    from there to the epoch's line (the epoch and verbose's training metric);
    both None if the line is not found.
    """
    model = _make(name, max_iter=1, n_init=1, verbose=1)
    stamps, stdout = _Stamps(), sys.stdout
    sys.stdout = stamps
    try:
        t0 = time.perf_counter()
        _fit(name, model, *data)
    finally:
        sys.stdout = stdout
    for t, text in stamps.writes:
        match = _FIRST_EPOCH.search(text)
        if match:
            return t - float(match.group(1)) - t0, float(match.group(1))
    return None, None


def _load(folder, part, dtype="float64"):
    folder = Path(folder)
    X = np.load(folder / f"X_{part}_{dtype}.npy")
    return X, np.load(folder / f"y_{part}.npy"), np.load(folder / f"qid_{part}.npy")


def _time_task(name, folder, repeat, default_fit, dtype="float64"):
    """s/epoch, setup s and, with ``default_fit``, the default fit's seconds and NDCG@10."""
    train = _load(folder, "train", dtype)
    out = {}
    # warm-up on a few queries: the first fit of a process pays one-time costs
    few = np.isin(train[2], np.unique(train[2])[:10])
    _timed_fit(name, [a[few] for a in train],
               **({"n_estimators": 1} if name in GBDT else {"max_iter": 1, "n_init": 1}))
    if name in SKRANK:
        setups, epochs = [], []
        for _ in range(max(repeat, PROBES)):
            setup, first = _setup_seconds(name, train)
            # enough epochs that they outlast the setup, whose noise from fit
            # to fit would otherwise swamp cheap epochs; the fit then costs
            # about (1 + SETUP_MULTIPLE) setups
            n = MIN_EPOCHS if setup is None else int(np.clip(
                np.ceil(SETUP_MULTIPLE * setup / max(first, 1e-3)), MIN_EPOCHS, MAX_EPOCHS))
            seconds, model = _timed_fit(name, train, max_iter=n, n_init=1,
                                        **_unstoppable(name))
            setups.append(setup)
            epochs.append((seconds - (setup or 0.0)) / model.n_iter_)
        out["setup"] = None if None in setups else float(np.median(setups))
        out["epoch"] = float(np.median(epochs))
    if default_fit:
        out.update(_default_fit_task(name, folder, repeat, dtype, train))
    if name in GBDT:
        ones = [_timed_fit(name, train, n_estimators=1)[0] for _ in range(max(repeat, PROBES))]
        one = float(np.median(ones))
        if default_fit:
            out["epoch"] = (out["fit"] - one) / (N_TREES - 1)
        else:
            more = float(np.median([_timed_fit(name, train, n_estimators=1 + LONG_TREES)[0]
                                    for _ in range(max(repeat, PROBES))]))
            out["epoch"] = (more - one) / LONG_TREES
        out["setup"] = one - out["epoch"]
    return out


def _default_fit_task(name, folder, repeat, dtype="float64", train=None):
    """The default fit's seconds, epochs and test NDCG@10 (test rows in ``dtype``)."""
    if train is None:
        train = _load(folder, "train", dtype)
    fits = [_timed_fit(name, train) for _ in range(repeat)]
    model = fits[-1][1]
    X_test, y_test, qid_test = _load(folder, "test")
    X_test = X_test.astype(dtype, copy=False)
    scores = (model.predict(X_test, qid=qid_test) if name in SKRANK
              else model.predict(X_test))
    return {"fit": float(np.median([s for s, _ in fits])),
            "epochs": getattr(model, "n_iter_", N_TREES),
            "ndcg": float(ndcg_score(y_test, scores, qid=qid_test, k=10))}


def _status_kib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def _memory_task(name, folder, dtype):
    """Peak resident memory of a capped fit above the loaded data, / X_train.nbytes."""
    cap = {"n_estimators": MEMORY_CAP} if name in GBDT else {"max_iter": MEMORY_CAP, "n_init": 1}
    model = _make(name, **cap)
    X, y, qid = _load(folder, "train", dtype)
    before = _status_kib("VmRSS")
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # VmHWM := VmRSS
    _fit(name, model, X, y, qid)
    peak = _status_kib("VmHWM")
    return {f"mem_{dtype}": (peak - before) * 1024 / X.nbytes}


def _child(conn, task, args):
    try:
        result = task(*args)
    except BaseException:  # noqa: BLE001 - reported in the table, the run goes on
        result = {"error": traceback.format_exc(limit=3)}
    conn.send(result)
    conn.close()


def in_child(task, *args, timeout=None):
    """``task(*args)`` in a fresh spawned process; its dict, or ``{"error": ...}``.

    A child still running after ``timeout`` seconds is killed:
    ``{"timeout": timeout}``.
    """
    context = multiprocessing.get_context("spawn")
    receive, send = context.Pipe(duplex=False)
    process = context.Process(target=_child, args=(send, task, args))
    process.start()
    send.close()
    if timeout is not None and not receive.poll(timeout):
        process.kill()
        process.join()
        return {"timeout": timeout}
    try:
        result = receive.recv()
    except EOFError:
        result = {"error": "the child process died"}
    process.join()
    if process.exitcode not in (0, None) and "error" not in result:
        result["error"] = f"exit code {process.exitcode}"
    return result


# ----------------------------------------------------------------------------
# The parent: data, the runs, the tables


def write_data(folder, n_train_rows=None, long_queries=False):
    """Generate, split by query, write .npy files; (train rows, train queries, test rows)."""
    folder.mkdir(parents=True, exist_ok=True)
    if long_queries:
        X, y, qid = make_web_ranking(n_queries=LONG_QUERIES, n_docs=LONG_DOCS, random_state=0)
        train = np.ones(len(y), dtype=bool)
    else:
        n_queries = max(5, round(n_train_rows / TRAIN_SHARE / MEAN_QUERY_SIZE))
        X, y, qid = make_web_ranking(n_queries=n_queries, random_state=0)
        queries = np.random.RandomState(0).permutation(n_queries)
        train = np.isin(qid, queries[: round(TRAIN_SHARE * n_queries)])
    for part, rows in (("train", train), ("test", ~train)):
        if not rows.any():
            continue
        X_part = X[rows]
        np.save(folder / f"X_{part}_float64.npy", X_part)
        if part == "train":
            np.save(folder / f"X_{part}_float32.npy", X_part.astype(np.float32))
        np.save(folder / f"y_{part}.npy", y[rows])
        np.save(folder / f"qid_{part}.npy", qid[rows])
    return int(train.sum()), np.unique(qid[train]).size, int((~train).sum()), X.shape[1]


def measure(name, folder, args, default_fit=True, dtype="float64"):
    """Every figure of ``name`` on the data in ``folder`` (timed fits on ``dtype`` X).

    A skrank ranker's default fit runs in a child of its own, killed after
    ``--fit-timeout`` seconds (the table then shows the fit as longer than
    that). The memory fits (both dtypes) run with the float64 timings.
    """
    t0 = time.perf_counter()
    separate = name in SKRANK and default_fit
    result = {} if args.memory_only else in_child(
        _time_task, name, str(folder), args.repeat, default_fit and not separate, dtype)
    separate = separate and not args.memory_only
    if separate and "error" not in result:
        fit = in_child(_default_fit_task, name, str(folder), args.repeat, dtype,
                       timeout=args.fit_timeout)
        if "timeout" in fit:
            result["fit"] = f">{fit['timeout']:.0f}"
        else:
            result.update(fit)
    if not args.skip_memory and "error" not in result and dtype == "float64":
        for memory_dtype in ("float64", "float32"):
            result.update(in_child(_memory_task, name, str(folder), memory_dtype))
    label = name if dtype == "float64" else f"{name} {dtype}"
    print(f"    {label:<19} done in {time.perf_counter() - t0:6.1f} s"
          + (f"  ERROR: {result['error'].strip().splitlines()[-1]}" if "error" in result else ""),
          flush=True)
    return result


def _cell(value, fmt, width):
    if isinstance(value, str):  # a bound, such as a fit killed after --fit-timeout
        return f"{value:>{width}}"
    return f"{'—' if value is None else format(value, fmt):>{width}}"


COLUMNS = [  # key, header, format, width
    ("epoch", "s/epoch", ".4f", 9),
    ("setup", "setup s", ".3f", 8),
    ("fit", "fit s", ".2f", 8),
    ("epochs", "epochs", "d", 6),
    ("mem_float64", "mem64 xX", ".2f", 9),
    ("mem_float32", "mem32 xX", ".2f", 9),
    ("ndcg", "NDCG@10", ".4f", 8),
    ("vs_lgbm", "fit/LGBM", ".2f", 9),
]


def print_table(title, results, columns):
    print(f"\n{title}")
    print(f"  {'ranker':<19}" + "".join(f"{h:>{w + 1}}" for k, h, f, w in columns))
    for name, r in results.items():
        if "error" in r:
            print(f"  {name:<19} error: {r['error'].strip().splitlines()[-1]}")
            continue
        print(f"  {name:<19}" + "".join(" " + _cell(r.get(k), f, w) for k, h, f, w in columns))


def growth(rows, by_size, names, columns):
    """Exponents log(f2/f1) / log(n2/n1) of each figure between consecutive sizes."""
    figures = [c for c in columns if c[0] in ("epoch", "setup", "fit", "mem_float64",
                                              "mem_float32")]
    print("\ngrowth exponents: log(figure ratio) / log(training rows ratio), 1 = linear; "
          "for memory, of the peak bytes above X (the multiple of X times the rows)")
    for i in range(len(rows) - 1):
        n1, n2 = rows[i], rows[i + 1]
        print(f"  {n1:,} -> {n2:,} training rows")
        print(f"  {'ranker':<19}" + "".join(f"{h:>{w + 1}}" for k, h, f, w in figures))
        for name in names:
            a, b = by_size[i].get(name, {}), by_size[i + 1].get(name, {})
            cells = []
            for key, _, _, width in figures:
                f1, f2 = a.get(key), b.get(key)
                ok = all(isinstance(f, float) and f > 0 for f in (f1, f2))
                if ok and key.startswith("mem"):  # bytes, not the multiple of X
                    f1, f2 = f1 * n1, f2 * n2
                cells.append(_cell(np.log(f2 / f1) / np.log(n2 / n1) if ok else None,
                                   ".2f", width))
            print(f"  {name:<19}" + "".join(" " + c for c in cells))


def available(names):
    """``names`` without the GBDTs whose library is not installed (with a note)."""
    kept = []
    for name in names:
        if name in GBDT and importlib.util.find_spec(GBDT[name]) is None:
            print(f"note: {GBDT[name]} is not installed; {name} skipped")
            continue
        kept.append(name)
    return kept


def _load_average():
    """The 1-minute load average (other work on the machine slows every timing)."""
    return f"{os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else "unknown"


def _cpu_model_and_flags():
    """The CPU's model name and feature flags from ``/proc/cpuinfo`` (Linux), else platform's."""
    import platform

    model, flags = platform.processor() or platform.machine(), set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "model name" and model in ("", platform.machine()):
                    model = value.strip()
                elif key in ("flags", "Features") and not flags:
                    flags = set(value.split())
    except OSError:
        pass
    return model, flags


def ns_per_element(func, dtype, n=2**20, repeat=7):
    """Median nanoseconds per element of ``func`` on ``n`` values in [-3, 3) of ``dtype``."""
    x = np.random.RandomState(0).uniform(-3, 3, size=n).astype(dtype)
    out = np.empty_like(x)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        func(x, out=out)
        times.append(time.perf_counter() - t0)
    return float(np.median(times)) / n * 1e9


def cpu_line():
    """The CPU, whether it has AVX-512, and NumPy's tanh and exp in ns per element.

    NumPy's float64 ``tanh`` (and others) have vectorised kernels only on
    CPUs with AVX-512 (and only where ``NPY_DISABLE_CPU_FEATURES`` does not
    turn them off); elsewhere they call the C library one value at a time.
    These figures let the tables be read across machines.
    """
    model, flags = _cpu_model_and_flags()
    avx512 = "yes" if "avx512f" in flags else ("no" if flags else "unknown")
    disabled = os.environ.get("NPY_DISABLE_CPU_FEATURES")
    timings = ", ".join(
        f"{name} {np.dtype(dtype).name} {ns_per_element(func, dtype):.1f}"
        for name, func in (("tanh", np.tanh), ("exp", np.exp))
        for dtype in (np.float64, np.float32))
    return (f"CPU: {model}; AVX-512: {avx512}"
            + (f" (NPY_DISABLE_CPU_FEATURES={disabled})" if disabled else "")
            + f"; numpy ns/element: {timings}")


def environment(args):
    import skrank

    versions = [f"numpy {np.__version__}"]
    for module in ("sklearn", "lightgbm", "xgboost"):
        if importlib.util.find_spec(module) is not None:
            versions.append(f"{module} {__import__(module).__version__}")
    print(f"skrank from {os.path.dirname(skrank.__file__)}; " + ", ".join(versions)
          + f"; {os.cpu_count()} CPUs, load average {_load_average()}")
    print(cpu_line())
    print(f"command: python benchmarks/bench_scale.py {' '.join(sys.argv[1:])}".rstrip())
    memory = ("capped fits (max_iter=2, n_init=1; GBDTs n_estimators=2), peak VmHWM above "
              "the loaded data / X_train.nbytes" if not args.skip_memory else "not measured")
    print("protocol: defaults + random_state=0; s/epoch = (fit - setup) / n_iter_ of a fit "
          f"of {MIN_EPOCHS}-{MAX_EPOCHS} epochs (about {SETUP_MULTIPLE} times the setup), "
          "n_init=1, patience out "
          "of reach (LogRank: tol=0, per "
          "L-BFGS iteration; GBDTs: per tree); setup from verbose=1's first epoch line "
          "(GBDTs: 1-tree fit - s/tree); fit s, epochs (n_iter_; BoltzRank: of the best of "
          "its n_init runs) and NDCG@10 (test queries) "
          f"of the default fit; memory: {memory}. GBDT fits include sorting the rows by "
          f"query (a copy of X). Medians of {max(args.repeat, PROBES)} short fits and "
          f"{args.repeat} default fit(s).")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[50000, 200000, 800000],
                        help="training rows (default: 50000 200000 800000)")
    parser.add_argument("--rankers", nargs="+", choices=RANKERS, default=RANKERS,
                        metavar="NAME", help=f"subset of {' '.join(RANKERS)}")
    parser.add_argument("--skip-memory", action="store_true",
                        help="no memory fits")
    parser.add_argument("--long", action="store_true",
                        help=f"add {LONG_QUERIES} queries of {LONG_DOCS} documents")
    parser.add_argument("--repeat", type=int, default=1, help="timed fits per figure (median)")
    parser.add_argument("--dtypes", nargs="+", choices=["float64", "float32"],
                        default=["float64"],
                        help="dtypes of X for the timed fits of skrank's rankers (GBDTs: "
                             "float64; memory: both, with the float64 timings)")
    parser.add_argument("--memory-only", action="store_true",
                        help="only the memory fits (their figures do not depend on other "
                             "work on the machine, unlike the timings)")
    parser.add_argument("--fit-timeout", type=float, default=None, metavar="SECONDS",
                        help="kill a skrank ranker's default fit after SECONDS (shown as "
                             "'>SECONDS'); no limit by default")
    args = parser.parse_args()
    if args.memory_only and args.skip_memory:
        parser.error("--memory-only and --skip-memory leave nothing to measure")
    if not args.skip_memory and not os.path.exists("/proc/self/clear_refs"):
        print("note: /proc/self/clear_refs not found (not Linux?): memory not measured")
        args.skip_memory = True
    environment(args)
    names = available(args.rankers)
    columns = [c for c in COLUMNS if not (args.skip_memory and c[0].startswith("mem"))]
    if "LightGBM" not in names:
        columns = [c for c in columns if c[0] != "vs_lgbm"]
    start = time.perf_counter()

    rows, by_size = [], []
    with tempfile.TemporaryDirectory(prefix="bench_scale_") as tmp:
        for size in sorted(args.sizes):
            folder = Path(tmp) / str(size)
            t0 = time.perf_counter()
            n_train, q_train, n_test, n_features = write_data(folder, size)
            x_mib = n_train * n_features * 8 / 2**20
            title = (f"size {size:,}: {n_train:,} training rows ({q_train} queries), "
                     f"{n_test:,} test rows; X_train {x_mib:.0f} MiB in float64 "
                     f"(data written in {time.perf_counter() - t0:.1f} s)")
            print(f"\n{title}", flush=True)
            results = {}
            for name in names:
                for dtype in args.dtypes if name in SKRANK else ["float64"]:
                    label = name if dtype == "float64" else f"{name} {dtype}"
                    results[label] = measure(name, folder, args, dtype=dtype)
            lgbm = results.get("LightGBM", {}).get("fit")
            for label, r in results.items():
                fit = r.get("fit")
                if isinstance(lgbm, float) and label not in GBDT and fit is not None:
                    r["vs_lgbm"] = (fit / lgbm if isinstance(fit, float)
                                    else f">{float(fit[1:]) / lgbm:.1f}")
            print_table(f"size {size:,} ({n_train:,} training rows)", results, columns)
            rows.append(n_train)
            by_size.append(results)
            for path in folder.iterdir():
                path.unlink()

        if len(rows) > 1:
            growth(rows, by_size, list(by_size[0]), columns)

        if args.long:
            folder = Path(tmp) / "long"
            n_train, q_train, _, n_features = write_data(folder, long_queries=True)
            title = (f"long queries: {q_train} queries of {LONG_DOCS:,} documents, "
                     f"{n_train:,} training rows x {n_features} (no default fit)")
            print(f"\n{title}", flush=True)
            results = {name: measure(name, folder, args, default_fit=False) for name in names}
            print_table("long queries", results, [c for c in columns if c[0] in (
                "epoch", "setup", "mem_float64", "mem_float32")])
    print(f"\ntotal {time.perf_counter() - start:.0f} s; load average {_load_average()}")


if __name__ == "__main__":
    main()
