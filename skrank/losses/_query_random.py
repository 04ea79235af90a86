"""Random draws per query that depend only on the seed, the query's id and the row's place.

A splitmix64 generator keyed by the query's id: a query gets the same
draws in every fit, whatever the other queries, their order, or how the
data are split into chunks (:func:`query_uniforms`, :func:`query_bits`).
"""

import hashlib

import numpy as np
from sklearn.utils import check_random_state

from ..utils._query_layout import as_layout
from ..utils._validation import is_integer
from ._sizing import _draws_text, sized_by


_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _mix(x):
    """The splitmix64 finaliser: a bijective scrambling of uint64 values."""
    x = x + _GOLDEN  # a new array (or scalar): the rest works in place
    x ^= x >> np.uint64(30)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(31)
    return x


def _query_keys(unique_qid):
    """A uint64 key per query id: the integer itself, or a stable hash of a string."""
    if unique_qid.dtype.kind in "iu":
        return unique_qid.astype(np.int64).view(np.uint64)
    return np.array(
        [int.from_bytes(hashlib.blake2b(str(q).encode(), digest_size=8).digest(), "little")
         for q in unique_qid],
        dtype=np.uint64,
    )


def _seed(random_state):
    """A non-negative integer seed from an int, a RandomState or None."""
    if is_integer(random_state):
        return int(random_state) % 2**64
    return int(check_random_state(random_state).randint(np.iinfo(np.int32).max))


def query_uniforms(layout, random_state, n_draws, *, per_query=False):
    """Uniform draws per row that depend only on the seed, the query id and the row's place.

    The draw ``d`` of the ``i``-th row of query ``q`` (in the order of the
    rows of ``q``) is a hash of ``(seed, id of q, i, d)`` (splitmix64), so a
    query gets the same draws whatever other queries are present and however
    the queries' rows are interleaved: sampling losses stay reproducible on a
    subset of queries (cross-validation, the early-stopping holdout).

    Parameters
    ----------
    layout : array-like of shape (n_samples,) or QueryLayout
        Query id of each row (as a ranker's ``qid``), or the
        ``QueryLayout`` built from them.
    random_state : int, RandomState instance or None
        The seed (a RandomState gives one draw of it; None, fresh entropy).
    n_draws : int
        Draws per row (per query with ``per_query=True``).
    per_query : bool, default=False
        Draw per query instead: draw ``d`` of query ``q`` is a hash of
        ``(seed, id of q, d)``, independent of the per-row draws.

    Returns
    -------
    uniforms : ndarray of shape (n_samples, n_draws) or (n_queries, n_draws)
        Values in [0, 1), rows in sorted order of ``layout``.

    Raises
    ------
    ValueError
        If ``n_draws`` is not a positive integer, or if the draws (8 bytes
        each) would exceed the largest array numpy can hold.
    MemoryError
        If the draws would not fit in the memory available (raised before
        they are allocated) or cannot be allocated; the message names
        ``n_draws`` and the size.
    """
    layout = as_layout(layout)
    bits = query_bits(layout, random_state, n_draws, per_query=per_query)
    n_rows = len(bits)
    with sized_by("n_draws", n_draws, 8 * max(n_rows, 1), _draws_text(n_rows, per_query)):
        return (bits >> np.uint64(11)).astype(np.float64) * 2.0**-53


def query_bits(layout, random_state, n_draws, *, per_query=False, draws_first=False):
    """The 64 random bits behind :func:`query_uniforms`, shape (n_samples or n_queries, n_draws).

    For a caller that makes more than one draw of each 64-bit hash (two
    32-bit uniforms, say) instead of hashing twice. With ``draws_first``
    the same bits come transposed, shape (n_draws, n_samples or n_queries),
    C-contiguous.
    """
    if not is_integer(n_draws) or n_draws < 1:
        raise ValueError(f"n_draws must be a positive integer; got {n_draws!r}.")
    n_rows = layout.n_queries if per_query else layout.n_samples
    # the (n_rows, n_draws) array of 64-bit draws must fit in one numpy array
    with sized_by("n_draws", n_draws, 8 * max(n_rows, 1), _draws_text(n_rows, per_query)), \
            np.errstate(over="ignore"):  # uint64 arithmetic wraps on purpose
        base = _mix(np.uint64(_seed(random_state)))
        query = _mix(base ^ _query_keys(layout.unique_qid))
        if per_query:
            # index 2**64 - 1 is no row's place: a domain of its own
            row = _mix(query ^ _mix(np.uint64(2**64 - 1)))
        else:
            index = layout.index_in_query.astype(np.uint64)
            row = _mix(layout.expand(query) ^ _mix(index))
        draws = _mix(np.arange(n_draws, dtype=np.uint64))
        if draws_first:
            return _mix(draws[:, None] ^ row[None, :])
        return _mix(row[:, None] ^ draws[None, :])
