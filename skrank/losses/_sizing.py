"""Arrays sized by a loss's parameters: refused by name before they are allocated."""

from contextlib import contextmanager
from contextvars import ContextVar

from ..utils._memory import NotEnoughMemoryError, check_memory, format_bytes
from ..utils._sklearn_compat import MAX_LENGTH


#: ``(name, value)`` of the outermost :func:`sized_by` block running, if any:
#: the user's parameter (``n_rankings``) behind the draws of an inner one.
_SIZING = ContextVar("skrank_sizing", default=None)


@contextmanager
def sized_by(name, value, bytes_per_unit, what):
    """Name the parameter ``name`` that sizes the arrays allocated in the block.

    The arrays take ``value * bytes_per_unit`` bytes (``value`` the
    parameter's, e.g. ``n_rankings``). More than an array can hold
    (:data:`MAX_LENGTH` bytes) is a ValueError before anything is
    allocated, and more than the memory available a MemoryError
    (:func:`~skrank.utils._memory.check_memory`: the kernel would promise
    the arrays and kill the process once they are written); a MemoryError
    in the block is raised again with the parameter's name and the size
    (numpy's allocator names no parameter). Within another such block
    (the draws of a loss's rank samples), a refusal names the outer
    block's parameter too, and says to lower it: it is the user's.

    Parameters
    ----------
    name : str
        The parameter, e.g. ``"n_rankings"``.
    value : int
        Its value.
    bytes_per_unit : int
        Bytes of the arrays per unit of ``value`` (positive).
    what : str
        What the arrays hold, for the messages, e.g. ``"8 rows times
        n_draws 64-bit draws"``.
    """
    largest = MAX_LENGTH // bytes_per_unit
    if value > largest:
        raise ValueError(
            f"{name} must be at most {largest}: {what} must fit in {MAX_LENGTH} bytes, "
            f"the most one array can hold; got {name}={value!r}."
        )
    size = value * bytes_per_unit
    amount = format_bytes(size)
    outer = _SIZING.get()
    shown, lower = f"{name}={value!r}", name
    if outer is not None and outer[0] != name:
        shown, lower = f"{outer[0]}={outer[1]!r} ({shown} of its draws)", outer[0]
    check_memory(size, f"{shown} needs about {amount} for {what}", f"lower {lower}")
    token = _SIZING.set((name, value)) if outer is None else None
    try:
        yield
    except NotEnoughMemoryError:  # refused in the block, naming the parameter
        raise
    except MemoryError as exc:
        raise MemoryError(
            f"{name}={value!r} needs about {amount} for {what}; lower {name}."
        ) from exc
    finally:
        if token is not None:
            _SIZING.reset(token)


def _draws_text(n_rows, per_query):
    """What the draws of :func:`~skrank.losses._query_random.query_bits` hold, for
    :func:`sized_by`'s messages."""
    return f"{n_rows} {'queries' if per_query else 'rows'} times n_draws 64-bit draws"


def _samples_text(layout, per_ranking):
    """What the rank samples of a sampling loss hold, for :func:`sized_by`'s messages."""
    queries = "query" if layout.n_queries == 1 else "queries"
    rows = "row" if layout.n_samples == 1 else "rows"
    return (f"the rank samples of {layout.n_samples} {rows} in {layout.n_queries} {queries} "
            f"({per_ranking} bytes per ranking)")
