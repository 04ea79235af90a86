"""The listwise loss protocol shared by every ranker.

A loss is set up once per fit with :meth:`ListwiseLoss.prepare` from the
labels and the query ids (targets, and for sampling losses the fixed rank
samples) and then evaluated many
times with :meth:`ListwiseLoss.value_and_grad` on all queries or on a
mini-batch of whole queries. Losses know nothing of networks, optimizers or
estimators: they map scores to a value and the gradient with respect to the
scores.
"""

from dataclasses import MISSING, dataclass, field, fields
from functools import lru_cache

import numpy as np

from ..utils._query_layout import QueryLayout, as_layout
from ..utils._validation import check_numeric, query_weights
from ._averaging import _unit_mean, query_mean
from ._checks import _check_finite_vector, _describe


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


_AXIS = "skrank.losses.axis"


def row_array(*, default=MISSING):
    """A field of a :class:`LossState` subclass with one entry per row.

    The field's first axis runs over the rows of the state's layout in its
    *sorted* order; :meth:`LossState.take` and :meth:`LossState.subset` keep
    the entries of the kept rows.

    Parameters
    ----------
    default : object, optional
        The field's default (``None`` for an array a loss keeps only in some
        configurations); without one the field must be given.

    Returns
    -------
    field : dataclasses.Field
    """
    return field(default=default, metadata={_AXIS: "row"})


def query_array(*, default=MISSING):
    """A field of a :class:`LossState` subclass with one entry per query.

    As :func:`row_array`, for a field whose first axis runs over the
    queries of the state's layout (in increasing query number).

    Parameters
    ----------
    default : object, optional
        As for :func:`row_array`.
    """
    return field(default=default, metadata={_AXIS: "query"})


@lru_cache(maxsize=None)
def _array_fields(cls):
    """``(name, axis)`` of the per-row and per-query fields of a state class."""
    return tuple((f.name, f.metadata[_AXIS]) for f in fields(cls) if _AXIS in f.metadata)


@dataclass(eq=False)
class LossState:
    """Per-fit state of a loss: what :meth:`ListwiseLoss.prepare` derives from the labels.

    Built by :meth:`ListwiseLoss.prepare`; a user passes it on to
    :meth:`ListwiseLoss.value_and_grad` and never builds one. Each loss has
    a subclass of its own (e.g. :class:`~skrank.losses.ListNetState`) whose
    fields are the loss's arrays, each declared with :func:`row_array` (one
    entry per row, in the sorted order of ``layout``) or
    :func:`query_array` (one entry per query), so that :meth:`take` can cut
    any loss's state to some queries. A field declared otherwise is a
    constant of the fit, shared as it is by every cut. What a user may read
    of a state beyond its fields has a method (:meth:`rank_samples`).

    Parameters
    ----------
    layout : QueryLayout
        The :class:`~skrank.utils.QueryLayout` of the rows the loss was
        prepared on.
    query_weight : ndarray of shape (n_queries,) or None, default=None
        The query weights of :meth:`ListwiseLoss.prepare`'s
        ``sample_weight``, scaled to mean 1 over the queries of the fit (the
        mean loss over a batch of queries is then an unbiased estimate of
        the weighted mean over all of them); None weighs queries equally.
        Keyword only.
    cache : dict, default={}
        What a loss derives from the state on first use and keeps for later
        calls on the same state (e.g. the (good, bad) pairs of every query);
        not carried over by :meth:`take`. Keyword only.
    prepared_by : tuple or None, default=None
        ``(loss class, parameters)`` of the loss whose :meth:`ListwiseLoss.prepare`
        built the state (the parameters its arrays depend on, as ``(name,
        value)`` pairs); carried over by :meth:`take`. A loss refuses a state
        that it could not have prepared itself. Keyword only.
    """

    layout: QueryLayout
    query_weight: np.ndarray | None = field(default=None, kw_only=True,
                                            metadata={_AXIS: "query"})
    cache: dict = field(default_factory=dict, repr=False, kw_only=True)
    prepared_by: tuple | None = field(default=None, repr=False, kw_only=True)

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
            Of the same class: the kept queries' layout, per-row and
            per-query arrays (the cache is not carried over).
        """
        positions, layout = self.layout.select(queries)
        return positions, self.subset(layout, positions, np.sort(np.asarray(queries)))

    def subset(self, layout, rows, queries):
        """The state of some rows and queries, for code that cuts its own batches.

        No check is made that ``rows`` and ``queries`` agree with ``layout``:
        :meth:`take` is the checked way to cut a state.

        Parameters
        ----------
        layout : QueryLayout
            The layout of the kept rows.
        rows : slice or ndarray of int
            Positions of the kept rows in this state's sorted order, grouped
            as ``layout`` groups them.
        queries : slice or ndarray of int
            Numbers of the kept queries in this state, in ``layout``'s order.

        Returns
        -------
        state : LossState
            Of the same class, with every :func:`row_array` field indexed by
            ``rows`` and every :func:`query_array` field by ``queries``; an
            empty cache.
        """
        # a shallow copy with the arrays replaced, not dataclasses.replace:
        # the fit loop cuts one state per mini-batch, and __init__ would cost
        # more than the cut of a small batch
        state = object.__new__(type(self))
        fields_ = state.__dict__
        fields_.update(self.__dict__)
        fields_["layout"], fields_["cache"] = layout, {}
        for name, axis in _array_fields(type(self)):
            value = fields_[name]
            if value is not None:
                fields_[name] = value[rows if axis == "row" else queries]
        return state

    def arrays(self):
        """The state's per-row and per-query arrays, by field name.

        Returns
        -------
        arrays : dict of str to ndarray
            Every :func:`row_array` and :func:`query_array` field that is
            not None (``query_weight`` included), in the order of the
            fields: for inspecting or comparing states without knowing the
            loss.
        """
        return {name: getattr(self, name) for name, _ in _array_fields(type(self))
                if getattr(self, name) is not None}

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
        owner = "a loss" if self.prepared_by is None else self.prepared_by[0].__name__
        raise ValueError(
            "rank_samples needs the state of a sampling loss (LogRankLoss with "
            f"sampler='walk', BoltzRankLoss); this one is of {owner}, which draws "
            "no rank samples."
        )


class ListwiseLoss:
    """Base class of listwise losses.

    Subclasses implement ``_prepare(y_sorted, layout, random_state)``, which
    returns their :class:`LossState` subclass, and ``_query_losses_and_grad(s_sorted,
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

    Examples
    --------
    A loss of one's own: half the squared error between the scores and the
    labels, summed within each query. Its state is a :class:`LossState`
    subclass holding the labels, one per row (:func:`row_array`, so that
    mini-batches cut it). A subclass meets the protocol through which the
    fit loop sees a loss (``skrank._core._types.Loss``).

    >>> from dataclasses import dataclass
    >>> import numpy as np
    >>> from skrank.losses import ListwiseLoss, LossState, row_array
    >>> @dataclass(eq=False)
    ... class SquaredErrorState(LossState):
    ...     y: np.ndarray = row_array()
    >>> class SquaredError(ListwiseLoss):
    ...     name = "squared_error"
    ...     def _prepare(self, y_sorted, layout, random_state):
    ...         return SquaredErrorState(layout, y=y_sorted)
    ...     def _query_losses_and_grad(self, s_sorted, state):
    ...         diff = s_sorted - state.y
    ...         return state.layout.sum(0.5 * diff**2), diff
    >>> loss = SquaredError()
    >>> state = loss.prepare(np.array([1.0, 0.0, 2.0]), [7, 7, 8])
    >>> value, grad = loss.value_and_grad(np.array([0.5, 0.0, 2.0]), state)
    >>> float(value), grad
    (0.0625, array([-0.25,  0.  ,  0.  ]))
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
            :func:`~skrank.losses.query_uniforms`, so that each query's draws
            depend only on the seed, the query's id and its rows' order within the query:
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
            state.query_weight = _unit_mean(weights)
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
        self.check_state(state)
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

        Raises
        ------
        ValueError
            If ``s_sorted`` is not a float64 array of one score per row of
            ``state`` (a check of its type and shape only: its values are
            taken as they are).
        """
        if check_state:
            self.check_state(state)
        n = state.layout.n_samples
        if not (isinstance(s_sorted, np.ndarray) and s_sorted.dtype == np.float64
                and s_sorted.shape == (n,)):
            got = (f"an array of {s_sorted.dtype} and shape {s_sorted.shape}"
                   if isinstance(s_sorted, np.ndarray) else _describe(s_sorted))
            raise ValueError(
                f"s_sorted must be a float64 array of shape ({n},), one score per row of "
                f"the state in its sorted order; got {got}. value_and_grad takes scores of "
                "any form, in row order."
            )
        per_query, grad = self._query_losses_and_grad(s_sorted, state)
        return query_mean(per_query, grad, state.query_weight,
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
        self.check_state(state)
        return self._logit_form(state)

    def _logit_form(self, state):
        return None

    def _state_signature(self):
        """The values of :attr:`_state_parameters`, as ``(name, value)`` pairs."""
        return tuple((name, getattr(self, name)) for name in self._state_parameters)

    def check_state(self, state):
        """Raise unless ``state`` is what this loss's :meth:`prepare` could have returned.

        Parameters
        ----------
        state : object
            What is to be used as this loss's state.

        Raises
        ------
        TypeError
            For anything but a :class:`LossState`, or the state of another
            loss class (or one no ``prepare`` built).
        ValueError
            For the state of a loss of this class prepared with other values
            of the parameters it depends on.
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


