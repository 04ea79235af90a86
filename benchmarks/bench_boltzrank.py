"""Cost of BoltzRank: the loss over rank samples, the pairwise potential, an epoch.

A kernel benchmark: it times private kernels of skrank (the pairwise
potential's network, built in ``skrank._core``) against a numpy reference,
and therefore imports private modules, as only the kernel benchmarks do.

Four measurements, every ratio taken against numpy timed in the same run:

1. Loss + gradient of one query (``BoltzRankLoss``, k = 100 samples, the
   default objective) for m = 100, 200, 400, 800, 1600, 3200 documents
   (labels 0..2, normal scores, fixed seeds), as the fit loop calls it
   (``sorted_value_and_grad`` on a prepared state: no input checks). The
   arithmetic it must do is one (k x m) x (m) product for the energies and one
   (k) x (k x m) product for the gradient; the reference is numpy's
   ``C @ s`` plus ``p @ C`` on a float64 (k x m) array ``C`` of the same
   values. Goals: time <= 3x the reference, and a least-squares scaling
   exponent of log(time) against log(m) <= 1.15. A call has a fixed cost
   (Python and the k-vectors of the softmax, some 30 microseconds) that
   dominates for small m; the same loss over a batch of 64 queries of
   m = 100 in one call (as the fit loop calls it) shows it is paid per call,
   not per query.
2. The pairwise potential of BoltzRank2 (h = 5 hidden units, d = 25
   features, linear individual potential): network forward + backward of one
   query of m = 100, 200, 400, 800 documents, against numpy's ``np.tanh``
   over an (m, m, h) float64 array (the pairs' hidden units applied one by
   one). Goal: <= 4x, both single-threaded (``np.tanh`` is; the network's
   BLAS products are limited to one thread with threadpoolctl); the ratio
   with the default BLAS threads is printed beside it (threads cost more
   than they give at these sizes). The network evaluates the units through
   one exponential per document (``PairwiseNetwork``'s Notes), so it can
   beat ``np.tanh`` where NumPy's float64 ``tanh`` has no vector kernel (CPUs
   without AVX-512); the ratio to the broadcast sum ``p_j + q_k`` over the
   (m, m, h) pairs, the least any implementation must write, is printed too.
3. Sampling: the time of ``BoltzRankLoss.prepare`` (the rank samples, their
   gains and the target distribution) on OHSUMED Fold1 train, once per fit.
4. Seconds per epoch on OHSUMED Fold1 train (9219 rows x 45 features, 63
   queries) through the public API: one more epoch of a fit, ``(fit of 11
   epochs - fit of 1 epoch) / 10``, after a warm-up fit, median of 3, with early stopping on the held-out fifth
   of the queries, so the fixed costs of a fit cancel; BoltzRank1 (defaults),
   BoltzRank2 (``hidden_layer_sizes=(3,), pairwise_hidden_layer_sizes=(5,)``),
   ListNet and SoftRank (defaults), all with ``n_init=1``.

Timings are medians over ``--repeat`` runs after a warm-up. Run with::

    python benchmarks/bench_boltzrank.py [--repeat 7] [--skip-ohsumed]
"""

import argparse
import time

import numpy as np
from threadpoolctl import threadpool_limits

from skrank import BoltzRankRanker, ListNetRanker, SoftRankRanker, load_letor_fold
from skrank._core._network_factory import make_network
from skrank.losses import BoltzRankLoss
from skrank.utils import QueryLayout

from _shared_data import median_time, ohsumed_root  # benchmarks/ is the script's folder
from bench_fit import marginal_epoch

SIZES = (100, 200, 400, 800, 1600, 3200)
PAIR_SIZES = (100, 200, 400, 800)
K = 100
GOALS = {"loss": 3.0, "exponent": 1.15, "pairwise": 4.0}


def report(name, value, goal, unit="x"):
    met = "met" if value <= goal else "NOT met"
    print(f"  {name:<40}{value:8.2f} {unit}  (goal <= {goal:g}: {met})")


def loss_scaling(repeat):
    print(f"1. Loss + gradient of one query, k = {K} samples")
    print(f"  {'m':>6} {'loss (ms)':>10} {'C@s + p@C (ms)':>15} {'ratio':>7}")
    loss = BoltzRankLoss(n_rankings=K)
    times, ratios = [], []
    for m in SIZES:
        rng = np.random.default_rng(m)
        y = rng.integers(0, 3, size=m).astype(float)
        s = rng.normal(size=m)
        layout = QueryLayout(np.zeros(m, dtype=int))
        state = loss.prepare(y, layout, random_state=0)
        C = np.ascontiguousarray(state.rank_samples().ranks.T, dtype=np.float64)
        p = rng.random(K)
        t_loss = median_time(lambda: loss.sorted_value_and_grad(s, state), repeat * 20)
        t_ref = median_time(lambda: (C @ s, p @ C), repeat * 20)
        times.append(t_loss)
        ratios.append(t_loss / t_ref)
        print(f"  {m:6d} {1e3 * t_loss:10.4f} {1e3 * t_ref:15.4f} {t_loss / t_ref:7.2f}")
    # the same loss over a batch of 64 queries of m = 100: the fixed cost of a
    # call (Python, small arrays) is paid once per batch, not once per query
    m, n_q = 100, 64
    rng = np.random.default_rng(0)
    layout = QueryLayout(np.repeat(np.arange(n_q), m))
    y = rng.integers(0, 3, size=m * n_q).astype(float)
    s = rng.normal(size=m * n_q)
    state = loss.prepare(y, layout, random_state=0)
    ranks = state.rank_samples().ranks
    blocks = [np.ascontiguousarray(ranks[i * m:(i + 1) * m].T, dtype=np.float64)
              for i in range(n_q)]
    p = rng.random(K)
    t_batch = median_time(lambda: loss.sorted_value_and_grad(s, state), repeat * 5)
    t_ref = median_time(lambda: [(C @ s[:m], p @ C) for C in blocks], repeat * 5)
    print(f"  {n_q} queries of m = {m} in one call: {1e3 * t_batch:.3f} ms against "
          f"{1e3 * t_ref:.3f} ms for their products ({t_batch / t_ref:.2f} x)")
    exponent = np.polyfit(np.log(SIZES), np.log(times), 1)[0]
    report(f"ratio at m = {SIZES[-1]}", ratios[-1], GOALS["loss"])
    report("worst ratio over m", max(ratios), GOALS["loss"])
    report("scaling exponent", exponent, GOALS["exponent"], unit=" ")


def pairwise_cost(repeat):
    print("2. Pairwise potential, forward + backward of one query, h = 5, d = 25")
    print(f"  {'m':>6} {'net (ms)':>10} {'tanh (ms)':>10} {'ratio':>7} {'sum (ms)':>10} "
          f"{'ratio':>7}")
    worst = 0.0
    for m in PAIR_SIZES:
        rng = np.random.default_rng(m)
        X = rng.normal(size=(m, 25))
        net = make_network(25, (), "scaled_tanh", pairwise_hidden_layer_sizes=(5,))
        params = net.init_params(np.random.RandomState(0))
        layout = QueryLayout(np.zeros(m, dtype=int))
        g = rng.normal(size=m)

        def forward_backward():
            scores, cache = net.forward(params, X, layout)
            return net.backward(params, cache, g)

        Z = rng.normal(size=(m, m, 5))
        t_tanh = median_time(lambda: np.tanh(Z), repeat)
        p, q = rng.normal(size=(m, 1, 5)), rng.normal(size=(1, m, 5))
        t_sum = median_time(lambda: np.add(p, q, out=Z), repeat)
        with threadpool_limits(limits=1):  # single-threaded, as np.tanh
            t_net = median_time(forward_backward, repeat)
        t_threads = median_time(forward_backward, repeat)
        worst = max(worst, t_net / t_tanh)
        print(f"  {m:6d} {1e3 * t_net:10.3f} {1e3 * t_tanh:10.3f} {t_net / t_tanh:7.2f}"
              f" {1e3 * t_sum:10.3f} {t_net / t_sum:7.2f}"
              f"   (ratio to tanh with the default BLAS threads: {t_threads / t_tanh:.2f})")
    report("worst ratio over m (one thread)", worst, GOALS["pairwise"])


def ohsumed(repeat):
    fold = load_letor_fold(ohsumed_root(), 1)
    X, y, qid = fold.train
    layout = QueryLayout(qid)
    print(f"3. Sampling on OHSUMED Fold1 train ({X.shape[0]} rows, {layout.n_queries} queries)")
    loss = BoltzRankLoss()
    t_prepare = median_time(lambda: loss.prepare(y, layout, random_state=0), repeat)
    print(f"  prepare (k = {loss.n_rankings} rank samples, gains, target)   {t_prepare:.3f} s")
    print("4. Seconds per epoch on OHSUMED Fold1 train (one more epoch of a fit)")
    rankers = {
        "BoltzRank1": lambda **p: BoltzRankRanker(n_init=1, random_state=0, **p),
        "BoltzRank2": lambda **p: BoltzRankRanker(
            hidden_layer_sizes=(3,), pairwise_hidden_layer_sizes=(5,), n_init=1,
            random_state=0, **p),
        "ListNet": lambda **p: ListNetRanker(random_state=0, **p),
        "SoftRank": lambda **p: SoftRankRanker(random_state=0, **p),
    }
    for name, make in rankers.items():
        t0 = time.perf_counter()
        marginal_epoch(make, X, y, qid, extra=2)  # warm-up (first touch of the arrays)
        epoch = float(np.median([marginal_epoch(make, X, y, qid, extra=10)
                                 for _ in range(3)]))
        print(f"  {name:<12}{epoch:8.3f} s/epoch   (measured in {time.perf_counter() - t0:.0f} s)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--skip-ohsumed", action="store_true")
    args = parser.parse_args()
    loss_scaling(args.repeat)
    pairwise_cost(args.repeat)
    if not args.skip_ohsumed:
        ohsumed(args.repeat)


if __name__ == "__main__":
    main()
