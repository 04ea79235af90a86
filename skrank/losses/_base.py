"""The listwise loss protocol shared by every ranker.

A loss is set up once per fit with :meth:`ListwiseLoss.prepare` from the
labels and the query ids (targets, and for sampling losses the fixed rank
samples) and then evaluated many
times with :meth:`ListwiseLoss.value_and_grad` on all queries or on a
mini-batch of whole queries. Losses know nothing of networks, optimizers or
estimators: they map scores to a value and the gradient with respect to the
scores.
"""

import hashlib
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

import numpy as np
from sklearn.utils import check_random_state

from ..utils._memory import NotEnoughMemoryError, check_memory, format_bytes
from ..utils._query_layout import QueryLayout, as_layout
from ..utils._sklearn_compat import MAX_LENGTH
from ..utils._validation import check_numeric, is_integer, query_weights


#: Key of ``LossState.per_query`` holding the query weights of
#: :meth:`ListwiseLoss.prepare`'s ``sample_weight``, scaled to mean 1 over
#: the queries of the fit: the mean loss over a batch of queries is then an
#: unbiased estimate of the weighted mean over all of them.
QUERY_WEIGHT = "query_weight"


@dataclass(frozen=True)
class RankSamples:
    """The fixed rank samples of a sampling loss, from :meth:`LossState.rank_samples`.

    A sampling loss (:class:`~skrank.losses.LogRankLoss` with
    ``sampler="walk"``, :class:`~skrank.losses.BoltzRankLoss`) draws ``k``
    rankings of every query once, when it is prepared, and sums over them
    at every evaluation. :meth:`LossState.rank_samples` builds it; its
    parameters are its attributes.

    Parameters
    ----------
    ranks : ndarray of int of shape (n_samples, k) or None
        Rank (1 is the top) of every row in every sampled ranking of its
        query, rows in the row order of the state's layout. Ranking 0 is the
        ideal one: by decreasing label (for LogRank, the good documents
        first), ties in random order. LogRank draws no rankings of a query
        without both a good and a bad document: its rows have rank 0. None
        where the loss kept no ranks (``LogRankLoss(store_ranks=False)``, as
        a ranker's fit prepares it).
    gains : ndarray of shape (n_queries, k) or None
        The gain :math:`G` of every sampled ranking of every query (the
        loss's ``gain``, e.g. NDCG@10). None where the loss needs no gains
        (``BoltzRankLoss(objective="likelihood")``).
    valid : ndarray of bool of shape (n_queries, k)
        Whether a sampled ranking enters the loss. LogRank sums over the
        *set* of sampled rankings, so a ranking equal to an earlier one of
        its query is False (and so is every ranking but the first of a query
        without both a good and a bad document); BoltzRank counts every
        sample.
    informative : ndarray of bool of shape (n_queries,)
        Whether a query enters the loss at all: it has documents of
        different labels (for LogRank, a good and a bad one).
    """

    ranks: np.ndarray
    gains: np.ndarray
    valid: np.ndarray
    informative: np.ndarray


@dataclass
class LossState:
    """Per-fit state of a loss.

    Built by :meth:`ListwiseLoss.prepare`; a user passes it on to
    :meth:`ListwiseLoss.value_and_grad` and never builds one. Its arrays are
    the loss's own business; what a user may read of them has a method
    (:meth:`rank_samples`).

    Parameters
    ----------
    layout : QueryLayout
        The :class:`~skrank.utils.QueryLayout` of the rows the loss was
        prepared on.
    per_row : dict of str to ndarray
        Arrays whose first axis runs over rows in *sorted* order of ``layout``.
    per_query : dict of str to ndarray
        Arrays whose first axis runs over queries.
    cache : dict
        What a loss derives from the state on first use and keeps for later
        calls on the same state (e.g. the (good, bad) pairs of every query);
        not carried over by :meth:`take`.
    prepared_by : tuple or None
        ``(loss class, parameters)`` of the loss whose :meth:`ListwiseLoss.prepare`
        built the state (the parameters its arrays depend on, as ``(name,
        value)`` pairs); carried over by :meth:`take`. A loss refuses a state
        that it could not have prepared itself.
    """

    layout: QueryLayout
    per_row: dict = field(default_factory=dict)
    per_query: dict = field(default_factory=dict)
    cache: dict = field(default_factory=dict, repr=False, compare=False)
    prepared_by: tuple = field(default=None, repr=False, compare=False)

    def take(self, queries):
        """The state restricted to some queries, and the selected positions.

        Parameters
        ----------
        queries : array-like of int
            Indices of the queries to keep, into the sorted unique query ids
            of ``layout``.

        Returns
        -------
        positions : ndarray of int
            Sorted-order positions of the kept rows in this state.
        state : LossState
            The kept queries' layout, per-row and per-query arrays (the cache
            is not carried over).
        """
        positions, layout = self.layout.select(queries)
        queries = np.sort(np.asarray(queries))
        return positions, LossState(
            layout,
            {k: v[positions] for k, v in self.per_row.items()},
            {k: v[queries] for k, v in self.per_query.items()},
            prepared_by=self.prepared_by,
        )

    def rank_samples(self):
        """The rankings a sampling loss drew for every query when it was prepared.

        Returns
        -------
        samples : RankSamples
            Their ranks, gains and which of them enter the loss.

        Raises
        ------
        ValueError
            If the loss that prepared the state draws no rankings (ListNet,
            SoftRank, LogRank with ``sampler="exact"``).

        Examples
        --------
        >>> import numpy as np
        >>> from skrank.losses import BoltzRankLoss
        >>> y, qid = np.array([2, 0, 1, 0, 1]), np.array([0, 0, 0, 1, 1])
        >>> state = BoltzRankLoss(4, metric="ndcg").prepare(y, qid, random_state=0)
        >>> samples = state.rank_samples()
        >>> samples.ranks[:, 0]  # ranking 0 sorts by label
        array([1, 3, 2, 2, 1], dtype=int8)
        >>> samples.gains.shape
        (2, 4)
        """
        ranks = self.per_row.get("ranks")
        valid = self.per_query.get("valid")
        if ranks is None and valid is None:
            owner = "a loss" if self.prepared_by is None else self.prepared_by[0].__name__
            raise ValueError(
                "rank_samples needs the state of a sampling loss (LogRankLoss with "
                f"sampler='walk', BoltzRankLoss); this one is of {owner}, which draws "
                "no rank samples."
            )
        gains = self.per_query.get("gains")
        if valid is None:  # every sample counts
            valid = np.ones((self.layout.n_queries, ranks.shape[1]), dtype=bool)
        return RankSamples(
            ranks=None if ranks is None else self.layout.to_rows(ranks),
            gains=gains,
            valid=valid,
            informative=self.per_query["informative"],
        )


class ListwiseLoss:
    """Base class of listwise losses.

    Subclasses implement ``_prepare(y_sorted, layout, random_state)``, which
    returns a :class:`LossState`, and ``_query_losses_and_grad(s_sorted,
    state)``, which returns the per-query losses and the gradient of their
    *sum* with respect to the scores, both in sorted order. This class does
    the bookkeeping: validation, row order, query subsets and averaging.

    Two methods evaluate a loss: :meth:`value_and_grad`, for scores in row
    order, checked; and :meth:`sorted_value_and_grad`, for finite float64
    scores already grouped in the sorted order of the state's layout,
    unchecked (the fit loop's entry). Both return the mean loss over the
    queries and its gradient.

    Every loss is averaged over queries, so the objective of a fit does not
    grow with the number of queries and mini-batch gradients are unbiased
    estimates of the full gradient.

    Every public method that takes a state checks that it is a
    :class:`LossState` prepared by a loss of the same class and of the same
    ``_state_parameters`` (``None``, another object, the state of another
    loss or of another configuration are refused with a ``TypeError`` or a
    ``ValueError`` naming ``state``, rather than failing inside with a
    ``KeyError``); a subclass with a logit form implements ``_logit_form``.
    """

    #: Name under which the loss is registered in :data:`skrank.losses.LOSSES`.
    name = None
    #: Whether :meth:`prepare` draws random samples. Their draws depend on the
    #: order of the rows within each query (nothing else tells two rows of a
    #: query apart), so such a loss is invariant to interleaving the queries'
    #: rows, not to reordering the rows of a query.
    sampling = False
    #: Names of the parameters the prepared state depends on (a state
    #: prepared with other values of them is refused).
    _state_parameters = ()

    def prepare(self, y, layout, *, sample_weight=None, random_state=None):
        """Set the loss up for one fit.

        Parameters
        ----------
        y : array-like of shape (n_samples,)
            Relevance labels (numbers; text is refused with a ``TypeError``).
        layout : array-like of shape (n_samples,) or QueryLayout
            Query id of each row (integers or strings, rows in any order, as
            a ranker's ``qid``), or the :class:`~skrank.utils.QueryLayout`
            built from them (``QueryLayout(qid)``; reusing one saves grouping
            the rows again). Anything else (None, a dict, a string, a number)
            is a ``TypeError``.
        sample_weight : array-like of shape (n_samples,), default=None
            Query weights, as a ranker's ``fit`` takes them: the weight of
            each row's query, the same for all rows of a query, finite,
            non-negative and not all zero. The loss becomes the weighted mean
            of the query losses; only the ratios of the weights matter
            (constant weights, of any size, give the unweighted loss). None
            weighs queries equally.
        random_state : int, RandomState instance or None, default=None
            Seed of any sampling done here (fixed for the whole fit, so that
            the objective is deterministic). A sampling loss draws through
            :func:`query_uniforms`, so that each query's draws depend only on
            the seed, the query's id and its rows' order within the query:
            not on how the queries are interleaved, nor on which other
            queries are present.

        Returns
        -------
        state : LossState
            Its ``layout`` is the query layout of the rows (built from the
            ids when ids were given).
        """
        y = check_numeric(y, "y")
        if not isinstance(layout, QueryLayout):  # query ids, one per label
            layout = as_layout(layout, y.shape[0] if y.ndim == 1 else None)
        y = _check_finite_vector("y", y, layout.n_samples)
        weights = None if sample_weight is None else query_weights(sample_weight, layout)
        state = self._prepare(layout.to_sorted(y), layout, random_state)
        if weights is not None:
            state.per_query[QUERY_WEIGHT] = _unit_mean(weights)
        state.prepared_by = (type(self), self._state_signature())
        return state

    def value_and_grad(self, scores, state, queries=None):
        """Loss averaged over queries and its gradient with respect to the scores.

        Parameters
        ----------
        scores : array-like of shape (n_rows,)
            With ``queries=None``, the scores of all rows of the prepared
            layout, in its row order. Otherwise the scores of the selected
            queries' rows, grouped by query in increasing query number, as
            given by ``state.layout.select(queries)``.
        state : LossState
            What :meth:`prepare` returned.
        queries : array-like of int, default=None
            Distinct query numbers of a mini-batch; None means all queries.

        Returns
        -------
        loss : float
            Mean loss over the (selected) queries.
        grad : ndarray of shape (n_rows,)
            Gradient of ``loss`` with respect to ``scores``, same order.
        """
        self._check_state(state)
        if queries is not None:
            _, state = state.take(queries)
        layout = state.layout
        scores = _check_finite_vector("scores", scores, layout.n_samples)
        value, grad = self.sorted_value_and_grad(layout.to_sorted(scores), state,
                                                check_state=False)  # checked above
        return value, layout.to_rows(grad)

    def sorted_value_and_grad(self, s_sorted, state, *, check_state=True):
        """Mean loss over the queries and its gradient, for scores in sorted order.

        :meth:`value_and_grad` without the checks of the scores and without
        reordering: for the fit loop, which checks the scores once and keeps
        every batch grouped by query, and for code that keeps its scores
        grouped the same way.

        Parameters
        ----------
        s_sorted : ndarray of shape (n_rows,)
            Finite float64 scores of the rows of ``state``, in the sorted
            order of ``state.layout``.
        state : LossState
            From :meth:`prepare` (or :meth:`LossState.take` of it).
        check_state : bool, default=True
            Whether to refuse a ``state`` this loss could not have prepared
            (as every public method does). False where the caller took ``state``'s
            rows from a state it checked (the fit loop's mini-batches).

        Returns
        -------
        loss : float
            Mean loss over the queries of ``state``.
        grad : ndarray of shape (n_rows,)
            Its gradient, in sorted order.
        """
        if check_state:
            self._check_state(state)
        per_query, grad = self._query_losses_and_grad(s_sorted, state)
        return query_mean(per_query, grad, state.per_query.get(QUERY_WEIGHT),
                          state.layout.expand)

    def logit_form(self, state):
        """The loss as an objective of per-query logits linear in the scores, or None.

        For the fit loop: a loss over a fixed sample of ``k`` rankings per
        query (LogRank's walk, BoltzRank) is a function of the logits
        ``a_q C_q^T s_q`` of its samples, with integer coefficients ``C_q``
        and one scale ``a_q`` per query; what it returns lets a linear model
        fold ``C_q^T X_q`` once per fit. Losses without that form return
        None (the default).

        Parameters
        ----------
        state : LossState
            From :meth:`prepare`.

        Returns
        -------
        form : LogitForm or None
            ``coef`` (``(n_rows, k)`` integers, sorted order of
            ``state.layout``), ``scale`` (``(n_queries,)``) and
            ``mean_value_and_grad(logits, queries=None)``, the loss of the
            ``(n_queries, k)`` logits averaged (and weighted) over the
            queries as :meth:`value_and_grad` averages it, and its
            gradient with respect to the logits.
        """
        self._check_state(state)
        return self._logit_form(state)

    def _logit_form(self, state):
        return None

    def _state_signature(self):
        """The values of :attr:`_state_parameters`, as ``(name, value)`` pairs."""
        return tuple((name, getattr(self, name)) for name in self._state_parameters)

    def _check_state(self, state):
        """Raise unless ``state`` is what this loss's :meth:`prepare` could have returned.

        A ``TypeError`` for anything but a :class:`LossState`, or the state
        of another loss class (or one no ``prepare`` built); a
        ``ValueError`` for the state of a loss of this class prepared with
        other values of the parameters it depends on.
        """
        owner = type(self).__name__
        expected = (f"state must be the LossState returned by this loss's prepare "
                    f"({owner}.prepare(y, qid))")
        if not isinstance(state, LossState):
            raise TypeError(f"{expected}; got {_describe(state)}.")
        if state.prepared_by is None:
            raise TypeError(f"{expected}; got a LossState that no loss's prepare returned.")
        cls, signature = state.prepared_by
        if cls is not type(self):
            raise TypeError(f"{expected}; got a LossState prepared by {cls.__name__}.")
        ours = self._state_signature()
        if signature != ours:
            differ = ", ".join(
                f"{name}={theirs!r} where this loss has {mine!r}"
                for (name, theirs), (_, mine) in zip(signature, ours) if theirs != mine
            )
            raise ValueError(
                f"{expected}; got a LossState prepared by a {cls.__name__} with {differ}, "
                "which this loss cannot use. Prepare the state with this loss."
            )

    def _prepare(self, y_sorted, layout, random_state):
        """The subclass's hook: the :class:`LossState` of labels in sorted order."""
        raise NotImplementedError

    def _query_losses_and_grad(self, s_sorted, state):
        """The subclass's hook: ``(per_query, grad)`` for scores in sorted order.

        ``per_query`` holds each query's loss, ``grad`` the gradient of
        their sum with respect to ``s_sorted`` (a new array, which the
        caller scales in place). :meth:`sorted_value_and_grad` averages them.
        """
        raise NotImplementedError


def query_mean(per_query, grad, weight=None, expand=None):
    """Mean of per-query losses (weighted) and their gradient scaled alike.

    The one spelling of the averaging of :meth:`ListwiseLoss.sorted_value_and_grad`.

    Parameters
    ----------
    per_query : ndarray of shape (n_queries,)
        Loss of each query.
    grad : ndarray
        Gradient of ``per_query.sum()``; scaled in place.
    weight : ndarray of shape (n_queries,), default=None
        Query weights (``state.per_query[QUERY_WEIGHT]``); None weighs
        queries equally.
    expand : callable, default=None
        Maps ``weight`` to an array that broadcasts against ``grad`` (e.g.
        :meth:`QueryLayout.expand` for a gradient over rows); needed with
        ``weight``.

    Returns
    -------
    loss : float
        ``sum(weight * per_query) / n_queries``.
    grad : ndarray
        ``grad`` times ``weight / n_queries``, the same array.
    """
    n = len(per_query)
    if weight is None:
        weight = 1.0
    else:  # query weights of mean 1 over the fit's queries
        # a query of weight 0 adds 0, also where its loss is +inf
        per_query = np.where(weight > 0, per_query, 0.0)
        grad *= expand(weight)
    grad /= n
    with np.errstate(over="ignore"):  # a loss beyond the largest float is inf
        value = float((per_query * weight).sum() / n)
        if value == np.inf and np.isfinite(per_query).all():
            # a product or the sum overflowed, not necessarily the mean
            value = float((per_query / n * weight).sum())
    return value, grad


def _unit_mean(weights):
    """Query weights divided by their mean, exactly 1 where they are all equal.

    Divided by their largest value first, so that no sum overflows (weights
    of 1e308) or loses its precision (weights of 1e-320): a weighted mean of
    the query losses does not depend on the scale of the weights, and
    constant weights of any size give the unweighted fit exactly.
    """
    weights = weights / weights.max()
    return weights / weights.mean()


def _describe(value):
    """A short description of an unexpected argument, for a message."""
    if value is None:
        return "None"
    text = repr(value)
    if len(text) > 60:
        return f"an object of type {type(value).__name__}"
    return f"{text} of type {type(value).__name__}"


def _check_finite_vector(name, values, n):
    """``values`` as a float64 vector of length ``n``, or an error naming it.

    Text is refused (:func:`~skrank.utils._validation.check_numeric`, a
    TypeError); a wrong shape or a non-finite value is a ValueError.
    """
    values = np.asarray(check_numeric(values, name), dtype=np.float64)
    if values.shape != (n,):
        raise ValueError(
            f"{name} must have shape ({n},) to match the (selected) queries; "
            f"got {values.shape}."
        )
    if not np.isfinite(values).all():
        raise ValueError(f"{name} must be finite; got NaN or infinite values.")
    return values


def segment_log_softmax(s_sorted, layout):
    """Per-query log-sum-exp and softmax of scores in sorted order.

    Stable for any finite scores: each query is shifted by its maximum.

    Returns
    -------
    lse : ndarray of shape (n_queries,)
        ``log(sum_j exp(s_j))`` per query.
    prob : ndarray of shape (n_samples,)
        ``exp(s_j - lse)`` in sorted order.
    """
    top = layout.max(s_sorted)
    with np.errstate(over="ignore"):  # gaps beyond the largest float: probability 0
        prob = np.exp(s_sorted - layout.expand(top))
    total = layout.sum(prob)
    prob /= layout.expand(total)
    return top + np.log(total), prob


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
    """What :func:`query_bits`' draws hold, for :func:`sized_by`'s messages."""
    return f"{n_rows} {'queries' if per_query else 'rows'} times n_draws 64-bit draws"


def _samples_text(layout, per_ranking):
    """What the rank samples of a sampling loss hold, for :func:`sized_by`'s messages."""
    queries = "query" if layout.n_queries == 1 else "queries"
    rows = "row" if layout.n_samples == 1 else "rows"
    return (f"the rank samples of {layout.n_samples} {rows} in {layout.n_queries} {queries} "
            f"({per_ranking} bytes per ranking)")
