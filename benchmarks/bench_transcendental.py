"""Each ranker's share of an epoch spent in transcendental functions, by dtype.

NumPy's float64 ``tanh`` (and some other float64 transcendental functions)
have vectorised kernels only on CPUs with AVX-512; elsewhere they call the C
library one value at a time, ten times slower than the float32 kernels or
than a product. This script finds where an epoch of each ranker evaluates
them over many values, and how much of the epoch that takes, so that no
ranker's speed depends on the CPU's vector extensions unnoticed.

Every call of NumPy's ``exp``, ``log``, ``tanh``, ``expm1``, ``log1p``,
``logaddexp`` and of SciPy's ``ndtr``, ``expit`` and ``logsumexp`` made from
skrank is timed (the functions are replaced by timing wrappers in NumPy's
namespace and in every skrank module that imported them by name), with the
dtype of its result and the skrank function that called it. For each ranker
(every parameter at its default but ``random_state=0``, ``n_init=1`` and
patience out of reach; BoltzRank2 with ``hidden_layer_sizes=(3,),
pairwise_hidden_layer_sizes=(5,)``), on :func:`skrank.make_web_ranking` data
(MSLR-WEB10K-shaped, rows shuffled across queries) in float64 and float32,
one fit of ``1 + --epochs`` epochs less one fit of 1 epoch gives the
seconds of ``--epochs`` epochs (the setup cancels), and the same difference
of the timed calls gives their share. Printed: seconds per epoch, the share
of float64 and of float32 transcendental calls, and the largest callers.

The wrappers add about a microsecond a call, counted in both the epoch and
the calls (the shares are upper bounds). Only public API and the functions'
names are used. Run with::

    python benchmarks/bench_transcendental.py [--rows 50000] [--epochs 3]
        [--rankers ListNet SoftRank BoltzRank BoltzRank2 LogRank]
"""

import argparse
import sys
import time
import warnings
from collections import defaultdict

import numpy as np
import scipy.special

import skrank
from skrank import make_web_ranking

from bench_scale import MEAN_QUERY_SIZE, SKRANK, cpu_line  # benchmarks/: the script's folder

RANKERS = SKRANK  # name -> (class, parameters other than the defaults)
NUMPY_FUNCTIONS = ("exp", "log", "tanh", "expm1", "log1p", "logaddexp")
SCIPY_FUNCTIONS = ("ndtr", "expit", "logsumexp")

#: (function name, result dtype, calling skrank function) -> [seconds, values]
CALLS = defaultdict(lambda: [0.0, 0])


def _caller():
    """``module.function`` of the innermost skrank frame on the stack."""
    frame = sys._getframe(2)
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module.startswith("skrank"):
            return f"{module.removeprefix('skrank.')}.{frame.f_code.co_name}"
        frame = frame.f_back
    return None


def _timed(name, func):
    def wrapper(*args, **kwargs):
        caller = _caller()
        if caller is None:  # not called from skrank (e.g. from scikit-learn)
            return func(*args, **kwargs)
        t0 = time.perf_counter()
        result = func(*args, **kwargs)
        seconds = time.perf_counter() - t0
        dtype = getattr(result, "dtype", np.dtype(type(result)))
        entry = CALLS[(name, np.dtype(dtype).name, caller)]
        entry[0] += seconds
        entry[1] += int(np.size(result))
        return result

    wrapper.__wrapped__ = func
    return wrapper


def install():
    """Replace the functions by timing wrappers where skrank looks them up."""
    originals = {}
    for name in NUMPY_FUNCTIONS:
        originals[name] = getattr(np, name)
    for name in SCIPY_FUNCTIONS:
        originals[name] = getattr(scipy.special, name)
    wrappers = {name: _timed(name, func) for name, func in originals.items()}
    for name in NUMPY_FUNCTIONS:
        setattr(np, name, wrappers[name])
    for name in SCIPY_FUNCTIONS:
        setattr(scipy.special, name, wrappers[name])
    for module_name, module in list(sys.modules.items()):
        if not module_name.startswith("skrank") or module is None:
            continue
        for attr, value in list(vars(module).items()):
            for name, func in originals.items():
                if value is func:
                    setattr(module, attr, wrappers[name])


def _snapshot():
    return {key: tuple(value) for key, value in CALLS.items()}


def _fit(name, X, y, qid, max_iter):
    cls, params = RANKERS[name]
    model = cls(random_state=0, **params)
    extra = {"max_iter": max_iter}
    if "n_init" in model.get_params():
        extra["n_init"] = 1
    if "n_iter_no_change" in model.get_params():
        extra["n_iter_no_change"] = 1000
    else:
        extra["tol"] = 0.0
    model.set_params(**extra)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        model.fit(X, y, qid=qid)
        seconds = time.perf_counter() - t0
    return seconds, model.n_iter_


def measure(name, X, y, qid, epochs):
    """(seconds per epoch, {(function, dtype, caller): seconds per epoch})."""
    _fit(name, X, y, qid, 1)  # warm-up
    before = _snapshot()
    one, _ = _fit(name, X, y, qid, 1)
    middle = _snapshot()
    more, n_iter = _fit(name, X, y, qid, 1 + epochs)
    after = _snapshot()
    n = max(n_iter - 1, 1)
    calls = {}
    for key in after:
        first = middle.get(key, (0.0, 0))[0] - before.get(key, (0.0, 0))[0]
        second = after[key][0] - middle.get(key, (0.0, 0))[0]
        calls[key] = max(second - first, 0.0) / n
    return (more - one) / n, calls


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=50000, help="training rows (about)")
    parser.add_argument("--epochs", type=int, default=3, help="epochs timed per fit")
    parser.add_argument("--rankers", nargs="+", choices=RANKERS, default=list(RANKERS))
    parser.add_argument("--top", type=int, default=3, help="callers listed per ranker")
    args = parser.parse_args()
    print(f"skrank from {skrank.__file__}; numpy {np.__version__}")
    print(cpu_line())
    n_queries = max(5, round(args.rows / MEAN_QUERY_SIZE))
    X, y, qid = make_web_ranking(n_queries=n_queries, random_state=0)
    print(f"data: make_web_ranking, {len(y):,} rows x {X.shape[1]} features, {n_queries} "
          f"queries; {args.epochs} epochs timed (fit of 1 + epochs - fit of 1)\n")
    install()
    print(f"  {'ranker':<19}{'s/epoch':>9}{'f64 share':>10}{'f32 share':>10}   largest callers "
          "(function dtype caller: share)")
    for name in args.rankers:
        for dtype in (np.float64, np.float32):
            epoch, calls = measure(name, X.astype(dtype), y, qid, args.epochs)
            shares = defaultdict(float)
            for (function, result_dtype, caller), seconds in calls.items():
                shares[result_dtype] += seconds / epoch
            top = sorted(calls.items(), key=lambda item: -item[1])[: args.top]
            callers = "; ".join(f"{f} {d} {c}: {100 * s / epoch:.0f} %"
                                for (f, d, c), s in top if s > 0)
            label = name if dtype == np.float64 else f"{name} float32"
            print(f"  {label:<19}{epoch:9.4f}{100 * shares['float64']:9.1f}%"
                  f"{100 * shares['float32']:9.1f}%   {callers}", flush=True)


if __name__ == "__main__":
    main()
