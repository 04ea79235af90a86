"""What continues a fitted network: ``warm_start`` or the next ``partial_fit`` call.

:class:`Continuation` names what continues a fitted network and how to
start a new one instead, for the messages of a network the current
parameters cannot continue (:data:`WARM_START`, :data:`PARTIAL_FIT`, or a
stream's own); ``_STREAM_ATTRIBUTES`` are what ``partial_fit`` keeps
between calls; :func:`_first_appearance`, :func:`_last_line` and
:func:`_check_continues` find the order of a call's queries, record where
its last query ended and refuse a call that opens with the previous call's
last query (one query split across two calls).
"""

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Continuation:
    """What continues a fitted network, and how to start a new one instead (for messages)."""

    continues: str
    instead: str


WARM_START = Continuation("warm_start=True continues",
                          "set warm_start=False to fit a new network")
PARTIAL_FIT = Continuation(
    "partial_fit continues",
    "partial_fit always continues the fitted network: call fit, or partial_fit on "
    "sklearn.base.clone(ranker), to start a new one")

#: What :meth:`NeuralRanker.partial_fit` keeps between calls: the solver's
#: state, the last query of the previous call, the unit of the query weights.
_STREAM_ATTRIBUTES = ("_solver_memory", "_last_query", "_weight_scale")


def _first_appearance(layout):
    """Query numbers of ``layout`` in the order of their first row."""
    if layout.order is None:  # rows grouped in sorted query order
        return np.arange(layout.n_queries)
    first = np.empty(layout.n_queries, dtype=np.intp)
    # order[offsets[q]] is the first row of query q (a stable sort keeps row order)
    first[:] = layout.order[layout.offsets[:-1]]
    return np.argsort(first, kind="stable")


def _last_line(layout, query):
    """The last row of query number ``query`` (0-based, in the order of the rows)."""
    end = layout.offsets[query + 1] - 1
    return int(end if layout.order is None else layout.order[layout.offsets[query]:
                                                              layout.offsets[query + 1]].max())


def _check_continues(ranker, layout, order, qid_given=True):
    """Raise if a :meth:`partial_fit` call opens with the previous call's last query.

    Only the first query of a call (in row order) can continue the previous
    call's last one; the same query later in a call is a new pass over it
    (the next epoch of a loop over the same chunks). ``qid_given``: False
    when the call had ``qid=None`` (its rows one query, of id 0).
    """
    last = getattr(ranker, "_last_query", None)
    if last is None:
        return
    qid, line = last
    first = layout.unique_qid[order[0]]
    if getattr(first, "item", lambda: first)() == qid:
        first_row = 0
        if not qid_given:
            raise ValueError(
                "qid=None makes the rows of a call one query, and the previous "
                "partial_fit call's last query had the same id (0): this call would "
                "continue it, training on one list in two halves. Pass qid (one id per "
                "row, the queries of each call whole)."
            )
        raise ValueError(
            f"qid={qid!r} continues a query of the previous partial_fit call (its last "
            f"row there was row {line}; here it starts at row {first_row}): a query must "
            "be whole in one call, or its list is trained on in two halves. Pass each "
            "query's rows in one call."
        )
