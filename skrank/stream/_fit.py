"""Fits over data larger than memory: epochs of ``partial_fit`` over a source of whole queries."""

import copy
import os
import sys
import tempfile
import time
import types
import warnings
from dataclasses import replace

import joblib
import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state

from .._core._network_factory import FITTED_ATTRIBUTES, restore_network
from .._core._stopping import StoppingRule
from ..losses import BoltzRankLoss
from ..rankers._base import BaseRanker
from ..rankers._continuation import _STREAM_ATTRIBUTES, WARM_START
from ..rankers._holdout import (
    _has_signal,
    _validation_scorer,
    validation_given,
    warn_no_signal,
)
from ..utils import write_atomically
from ..utils._validation import is_integer
from ._sources import _labelled, query_chunks, release

__all__ = ["fit_stream"]


def _monitor(ranker, rule, given):
    """The stopping rule's monitor of a stream, ``given`` checked against the fitted model."""
    validation = None
    if given is not None:
        fraction = ranker.validation_fraction if ranker.early_stopping else None
        validation = ranker._check_validation_set(fraction, *given, caller="fit_stream")
        if not _has_signal(rule.scorer, validation[1], validation[2], "y_val"):
            warn_no_signal(rule.scorer, "X_val")
            validation = None
    network = restore_network(vars(ranker))[0]
    return replace(rule, validation=validation).monitor(
        types.SimpleNamespace(network=network), "Stream")


class _Stack:
    """Stacks the rows of a buffer's chunks, copying them only when they are apart.

    Chunks of an array or a memory map are slices of it, one after the
    other: the rows of a buffer of them are then one view of it, without a
    copy. Other dense chunks (from a file, a list of arrays, dask) are
    copied into the first ``n`` rows of one array kept for the whole fit
    (grown when a buffer holds more rows): a fresh array for every buffer of
    every epoch would have its pages faulted in again each time, on some
    machines as slow as copying the rows. A buffer is consumed before the
    next one is stacked, so one array serves them all. Sparse chunks are
    stacked into a new CSR matrix.
    """

    def __init__(self):
        self._rows = None

    def rows(self, arrays):
        """``(X, copied)``: the rows of ``arrays``, and False when ``X`` is a view of them."""
        if any(sp.issparse(a) for a in arrays):
            return sp.vstack([sp.csr_matrix(a) for a in arrays], format="csr"), True
        arrays = [np.asarray(a) for a in arrays]
        view = _one_view(arrays)
        if view is not None:
            return view, False
        n = sum(a.shape[0] for a in arrays)
        shape, dtype = (n,) + arrays[0].shape[1:], np.result_type(*arrays)
        kept = self._rows
        if (kept is None or kept.shape[0] < n or kept.shape[1:] != shape[1:]
                or kept.dtype != dtype):
            self._rows = kept = None  # the old array goes before the new one is made
            self._rows = kept = np.empty(shape, dtype=dtype)
        return np.concatenate(arrays, out=kept[:n]), True


def _root(array):
    """The object that owns the memory of ``array`` (an array, or a memory map's mmap)."""
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array if array.base is None else array.base


def _one_view(arrays):
    """One read-only view of the rows of ``arrays``, if they follow each other in one buffer.

    None unless every array is C-contiguous, of one dtype and row shape,
    owned by the same object and starts where the previous one ends: then
    the view spans memory that the first array's owner holds.
    """
    first = arrays[0]
    if first.ndim != 2:
        return None
    owner, end = _root(first), first.__array_interface__["data"][0]
    for a in arrays:
        if not (a.flags.c_contiguous and a.dtype == first.dtype and a.shape[1:] == first.shape[1:]
                and _root(a) is owner and a.__array_interface__["data"][0] == end):
            return None
        end += a.nbytes
    n = sum(a.shape[0] for a in arrays)
    return np.lib.stride_tricks.as_strided(first, shape=(n,) + first.shape[1:], writeable=False)


def _shuffled(chunks, buffer_chunks, rng, stack):
    """The chunks' queries in a random order within each buffer of ``buffer_chunks`` chunks.

    Each buffer becomes one ``(X, y, qid, order)``: the rows of its chunks
    stacked by ``stack`` (a :class:`_Stack`), and the order in which to step
    over its queries (a permutation drawn from ``rng`` of the query numbers,
    in the sorted order of the ids). The rows are not moved: each mini-batch
    gathers its own. Memory: the buffer, and its stacked copy when its
    chunks are apart. A memory map's pages are dropped (:func:`release`)
    once the buffer's rows are copied, or once the buffer is used.
    """
    buffer = []

    def stacked():
        X, copied = stack.rows([c[0] for c in buffer])
        y, qid = (np.concatenate([np.asarray(c[i]) for c in buffer]) for i in (1, 2))
        if copied:  # read into the stack: the map's pages are not needed
            for chunk in buffer:
                release(chunk[0])
        return (X, y, qid, rng.permutation(len(np.unique(qid)))), copied

    def flush():
        part, copied = stacked()
        yield part
        del part
        if not copied:  # used in place: the map's pages are not needed any more
            for used in buffer:
                release(used[0])
        buffer.clear()

    for chunk in chunks:
        buffer.append(chunk)
        if len(buffer) == buffer_chunks:
            yield from flush()
    if buffer:
        yield from flush()


def fit_stream(ranker, source, *, X_val=None, y_val=None, qid_val=None, shuffle=True,
               buffer_chunks=4, chunk_rows=None, label=None, qid=None, n_features=None,
               dtype=None, zero_based=False):
    """Fit ``ranker`` for several epochs over a source of whole queries larger than memory.

    Each epoch reads the source once, chunk by chunk (see
    :func:`query_chunks`), and takes ``partial_fit`` steps on it: only a few
    chunks are in memory at a time. The ranker's own parameters rule the
    fit as they rule ``fit``: ``max_iter`` epochs at most, ``batch_size``,
    the solver and its step size, ``tol`` and ``n_iter_no_change`` for
    stopping, ``scoring`` on the validation set, ``random_state`` and
    ``verbose``. Afterwards the ranker is an ordinary fitted ranker.

    Parameters
    ----------
    ranker : ListNetRanker, SoftRankRanker or BoltzRankRanker
        A ranker with ``partial_fit`` (a stochastic ``solver``). Fitted anew
        unless its ``warm_start`` is True.
    source : path, tuple, list of tuples, dask collection or QueryChunks
        The training rows (see :func:`query_chunks`): a LETOR file, arrays
        or memory-mapped arrays, dask arrays or a dask DataFrame.
    X_val, y_val, qid_val : array-like, default=None
        An in-memory validation set for early stopping (needs the ranker's
        ``early_stopping=True``): after every epoch ``scoring`` is computed
        on it, the fit stops after ``n_iter_no_change`` epochs without an
        improvement of more than ``tol``, and the weights of the best epoch
        are kept. Without it the mean training loss of an epoch decides,
        and the last weights are kept. ``qid_val=None`` makes ``X_val`` one
        query (with more than 100 rows it warns, as a forgotten ``qid``).
    shuffle : bool, default=True
        Shuffle the order of the queries in every epoch within a buffer of
        ``buffer_chunks`` chunks, drawn from the ranker's ``random_state``.
        False takes them in the order of the source: then an epoch steps
        as ``partial_fit`` called on each chunk in turn.
    buffer_chunks : int, default=4
        Chunks held at once for shuffling (the resident memory is about twice
        that many chunks; about that many for an array or a memory map, whose
        consecutive chunks are used in place).
    chunk_rows : int, default=None
        Rows per chunk of a file or arrays (:func:`query_chunks`'s default
        when None).
    label, qid, n_features, dtype, zero_based
        As :func:`query_chunks` takes them, for a dask DataFrame or a file.

    Returns
    -------
    ranker : object
        The fitted ranker. ``n_iter_`` is the number of epochs,
        ``loss_curve_`` the mean training loss of each epoch, ``t_`` the
        number of queries stepped over, ``validation_scores_`` and
        ``best_validation_score_`` those of the validation set (None
        without one).

    Raises
    ------
    ValueError
        If a query's rows are not contiguous in the source (a query split
        across two chunks, partitions or arrays included), naming it; if a
        chunk has no labels (``y`` None); if ``buffer_chunks`` is not a
        positive integer or ``shuffle`` not a bool; if a source's arrays or
        options disagree (see :func:`query_chunks`); or for what
        ``partial_fit`` refuses.
    TypeError
        If ``ranker`` is a class, not a ListNet, SoftRank or BoltzRank
        ranker, or has no ``partial_fit`` (L-BFGS, LogRank).

    Warns
    -----
    ConvergenceWarning
        If ``max_iter`` epochs ran without the stopping rule ending the fit.
    UserWarning
        If BoltzRank's rank samples cannot be written to the temporary
        folder (a full disk): the fit goes on and draws the samples not
        kept again in every epoch, the same samples.

    Notes
    -----
    With ``shuffle=False`` and chunks whose queries come in the order of
    ``fit``'s mini-batches, an epoch gives ``fit``'s weights (one epoch,
    ``early_stopping=False``), up to rounding; a sampling loss (BoltzRank)
    draws the same rank samples, which depend only on a query's id, its
    rows' order and the seed. Those samples are drawn in the first epoch
    and kept on disk for the next ones, in a temporary folder deleted when
    the fit ends (about a third of ``X``'s bytes, in
    ``tempfile.gettempdir()``, which ``TMPDIR`` sets; see the user guide's
    "Data larger than memory"). The validation set is scored with
    ``scoring`` as in ``fit``; a stream has no held-out queries of its own,
    so ``validation_fraction`` is not used.
    """
    _check_streamable(ranker)
    if not is_integer(buffer_chunks) or buffer_chunks < 1:
        raise ValueError(f"buffer_chunks must be a positive integer; got {buffer_chunks!r}.")
    if not isinstance(shuffle, (bool, np.bool_)):
        # "no" or None would be read by their truth value
        raise ValueError(f"shuffle must be True or False; got {shuffle!r}.")
    chunks = query_chunks(source, **({} if chunk_rows is None else {"chunk_rows": chunk_rows}),
                          label=label, qid=qid, n_features=n_features, dtype=dtype,
                          zero_based=zero_based)
    ranker._validate_params()
    if ranker.learning_rate_decay < 1.0:
        raise ValueError(
            f"learning_rate_decay={ranker.learning_rate_decay!r} decays the step size after "
            "an epoch whose training metric did not improve, which fit_stream does not "
            "compute (it would need a second pass over the source). Set "
            "learning_rate_decay=1.0."
        )
    # what can be told of the validation set before reading the source (the
    # rest once the first chunk has fixed the number of features)
    wants_validation = validation_given(
        ranker.validation_fraction if ranker.early_stopping else None, X_val, y_val, qid_val)
    saved = copy.deepcopy(vars(ranker))
    try:
        return _fit_epochs(ranker, chunks, (X_val, y_val, qid_val) if wants_validation else None,
                           shuffle, buffer_chunks)
    except BaseException:
        # a failed fit (a split query, an interrupt) leaves the ranker as it was
        ranker.__dict__.clear()
        ranker.__dict__.update(saved)
        raise


def _check_streamable(ranker):
    """Raise unless ``ranker`` is a skrank ranker instance that has ``partial_fit``."""
    if isinstance(ranker, type):
        raise TypeError(
            f"ranker must be a ranker instance; got the class {ranker.__name__}. Pass "
            f"{ranker.__name__}(solver='adam', ...)."
        )
    refusal = getattr(ranker, "_partial_fit_refusal", None)
    if not isinstance(ranker, BaseRanker) or refusal is None:
        raise TypeError(
            "ranker must be a ListNetRanker, SoftRankRanker or BoltzRankRanker with "
            f"solver='adam' or 'sgd' (fit_stream steps with its partial_fit); got "
            f"{type(ranker).__name__}."
        )
    refusal = refusal()
    if refusal is not None:
        raise TypeError(
            f"fit_stream steps with partial_fit, which {type(ranker).__name__} has not: "
            f"{refusal}")


class _PreparedCache:
    """The loss prepared on each buffer of an epoch, kept on disk for the next epochs.

    BoltzRank's rank samples take about a third of ``X``'s bytes, too many
    to keep in memory for data larger than it, and drawing them costs more
    than an epoch's steps: the first epoch writes each buffer's prepared
    rows (:class:`~skrank.rankers._base.PreparedRows`) with joblib to a
    temporary folder, and the next epochs read them back, one buffer at a
    time (its memory is that of drawing them again). A buffer
    whose labels or query ids differ from the first epoch's (a source that
    changed) is prepared again. Losses that prepare cheaply are not cached
    (``folder`` None).

    A write that fails (a full disk, a file-size limit) warns and ends the
    writing, not the fit: the buffers not on disk are prepared again in
    every epoch, with the same samples (they depend only on each query's id
    and the seed), so the fit is the same, only slower.
    """

    def __init__(self, folder):
        self.folder = folder
        self.writing = folder is not None

    def _path(self, index):
        return os.path.join(self.folder, f"buffer-{index}.joblib")

    def get(self, index, y, qid):
        """The rows prepared for buffer ``index`` if its labels and ids are the same; or None."""
        if self.folder is None or not os.path.exists(self._path(index)):
            return None
        # read into memory (not mapped): the process holds one buffer's state at a time
        y_kept, qid_kept, prepared = joblib.load(self._path(index))
        same = np.array_equal(y_kept, y) and np.array_equal(qid_kept, qid)
        return prepared if same else None

    def put(self, index, y, qid, prepared):
        if not self.writing:
            return
        kept = (np.asarray(y), np.asarray(qid), prepared)
        try:
            # never read half-written, also after a full disk
            write_atomically(self._path(index), lambda f: joblib.dump(kept, f), binary=True)
        except OSError as exc:
            self.writing = False
            warnings.warn(
                f"fit_stream could not keep the rank samples of a buffer on disk in "
                f"{self.folder!r} ({exc}); from now on, the buffers not kept there are "
                "sampled again in every epoch: the same samples and the same fit, at the "
                "cost of drawing them. Free space there, or point TMPDIR at a folder "
                "with room, to keep them.",
                UserWarning,
                stacklevel=2,
            )


def _fit_epochs(ranker, chunks, given, shuffle, buffer_chunks):
    """The epochs of :func:`fit_stream`, the prepared losses cached on disk when they sample."""
    if not isinstance(ranker._make_loss(), BoltzRankLoss):
        return _run_epochs(ranker, chunks, given, shuffle, buffer_chunks, _PreparedCache(None))
    with tempfile.TemporaryDirectory(prefix="skrank-stream-") as folder:
        return _run_epochs(ranker, chunks, given, shuffle, buffer_chunks, _PreparedCache(folder))


def _run_epochs(ranker, chunks, given, shuffle, buffer_chunks, cache):
    """The epochs of :func:`fit_stream` (``given``: the validation arrays, or None)."""
    if not ranker.warm_start:
        for name in FITTED_ATTRIBUTES + _STREAM_ATTRIBUTES + ("t_",):
            ranker.__dict__.pop(name, None)
    rng = check_random_state(ranker.random_state)
    rule = StoppingRule(tol=ranker.tol, n_iter_no_change=ranker.n_iter_no_change,
                        scorer=_validation_scorer(ranker.scoring))
    monitor, curve, stopped = None, [], False
    stack = _Stack()
    for epoch in range(1, ranker.max_iter + 1):
        start = time.perf_counter()
        total, n_queries, n_rows = 0.0, 0, 0
        labelled = _labelled(chunks, "fit_stream")
        parts = (_shuffled(labelled, buffer_chunks, rng, stack) if shuffle
                 else ((X, y, q, None) for X, y, q in labelled))
        for index, (X, y, q, order) in enumerate(parts):
            prepared = cache.get(index, y, q)
            # only warm_start=True continues a fitted network here
            queries, rows = ranker._partial_fit(X, y, q, None, check_split=False, order=order,
                                                prepared=prepared, by=WARM_START)
            if prepared is None:
                cache.put(index, y, q, rows)
            del rows, prepared
            total += ranker.loss_curve_[-1] * queries
            n_queries += queries
            n_rows += np.shape(X)[0]
            if monitor is None:  # the first step: the network exists, X_val can be checked
                monitor = _monitor(ranker, rule, given)
            del X, y, q, order  # before the next buffer is stacked: one at a time
        if n_queries == 0:
            raise ValueError(f"The source {chunks!r} holds no rows.")
        params = restore_network(vars(ranker))[1]
        loss = total / n_queries
        curve.append((loss, n_queries))
        stop = monitor.update(params, loss)
        if ranker.verbose:
            line = (f"Epoch {epoch}: {n_rows} rows, {n_queries} queries, loss = {loss:.6f}")
            if monitor.validation_scores:
                line += (f", validation {rule.scorer.name} = "
                         f"{monitor.validation_scores[-1]:.4f}")
            print(f"{line}, {time.perf_counter() - start:.2f} s", file=sys.stdout, flush=True)
        if stop:
            stopped = True
            break
    network, params = restore_network(vars(ranker))
    if monitor.best_params is not None and not np.array_equal(monitor.best_params, params):
        params = monitor.best_params
        # the solver's state belongs to the last epoch's weights, not to these
        ranker.__dict__.pop("_solver_memory", None)
    ranker._store_fit(network, params, n_iter=len(curve),
                      loss_curve=[loss for loss, _ in curve], n_fit_queries=curve[0][1],
                      loss_seed=ranker._loss_seed, t=ranker.t_)
    ranker.__dict__.pop("_last_query", None)  # the next partial_fit may start anywhere
    validated = monitor.rule.validation is not None
    ranker.validation_scores_ = monitor.validation_scores if validated else None
    ranker.best_validation_score_ = monitor.best_score if validated else None
    if not stopped:
        warnings.warn(
            f"{type(ranker).__name__}: maximum iterations ({ranker.max_iter}) reached "
            "and the optimization has not converged yet.",
            ConvergenceWarning,
        )
    return ranker
