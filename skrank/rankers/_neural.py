"""The neural ranker: a network trained by Adam, SGD or L-BFGS on a listwise loss.

:class:`NeuralRanker` is the base class of ListNet, SoftRank and
BoltzRank: the network parameters of
:class:`~skrank.rankers._network_mixin.NetworkMixin`, the stochastic
solvers' parameters, early stopping on held-out queries and restarts,
``fit`` through :meth:`~skrank.rankers._base.BaseRanker._fit`, and
``partial_fit``, one pass of a stochastic solver over some whole queries
that continues the fitted network.
"""

import copy

import numpy as np
from sklearn.utils import check_random_state
from sklearn.utils.metaestimators import available_if

from .._core._runs import Restarts
from .._core._stopping import StoppingRule
from .._core._objective import make_objective
from .._core._network_factory import restore_network
from .._core._solvers import LBFGS, SGD, Adam
from ..utils._sklearn_compat import _fit_context
from ..utils._validation import keep_fitted_state_on_error
from ._base import BaseRanker
from ._continuation import PARTIAL_FIT, _check_continues, _first_appearance, _last_line
from ._holdout import _validation_scorer, first_draws
from ._network_mixin import NetworkMixin
from ._params import EARLY_STOPPING, NETWORK, RESTARTS, SOLVER, constraints
from ._query_weights import _mean_weight


class NeuralRanker(NetworkMixin, BaseRanker):
    """Base class of the rankers trained by the neural fit loop.

    A linear model or an MLP, trained by Adam, SGD or L-BFGS on a listwise
    loss, with early stopping on held-out queries and restarts: the four
    groups of :mod:`skrank.rankers._params`. Subclasses add the loss's own
    parameters and build the loss (``_make_loss``).
    """

    _parameter_constraints = constraints(NETWORK, SOLVER, EARLY_STOPPING, RESTARTS)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, *, qid=None, X_val=None, y_val=None, qid_val=None, sample_weight=None):
        """Fit the ranker.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Feature rows. float32 is kept (the network runs in float32, no
            float64 copy is made); other dtypes are converted to float64.
        y : array-like of shape (n_samples,)
            Relevance labels (larger is more relevant): numbers. Strings such
            as ``"1"`` are refused (``TypeError``), not parsed: convert them
            first, e.g. ``y.astype(float)``.
        qid : array-like of shape (n_samples,), default=None
            Query id of each row (integers or strings, rows in any order).
            None means all rows belong to one query; with more than 100 rows
            that is more likely a forgotten ``qid``, and it warns.
        X_val : {array-like, sparse matrix} of shape (n_val_samples, n_features), \
                default=None
            Validation rows for early stopping (e.g. LETOR's ``vali`` split).
            When given, all queries of ``X`` are used for training and
            ``validation_fraction`` is ignored. Needs ``early_stopping=True``.
        y_val : array-like of shape (n_val_samples,), default=None
            Labels of ``X_val``; required with it.
        qid_val : array-like of shape (n_val_samples,), default=None
            Query ids of ``X_val``; None means one query (with more than 100
            rows it warns, as ``qid=None`` does).
        sample_weight : array-like of shape (n_samples,), default=None
            Query weights, as in LightGBM and XGBoost: the weight of each
            row's query, the same for all rows of a query. The training
            objective becomes the weighted mean of the query losses (integer
            weights act as repeated queries), so only the ratios of the
            weights matter: constant weights, of any size, give the
            unweighted fit. The early-stopping metric on validation queries
            is unweighted. None weighs queries equally.

        Returns
        -------
        self : object
            The fitted ranker.
        """
        with keep_fitted_state_on_error(self):
            return self._fit(
                X, y, qid, sample_weight, X_val=X_val, y_val=y_val, qid_val=qid_val,
                solver=self._make_solver(),
                restarts=Restarts(n_init=self.n_init, combine=self.restarts, n_jobs=self.n_jobs),
                validation_fraction=self.validation_fraction if self.early_stopping else None,
                random_state=self.random_state,
                warm_start=self.warm_start,
            )

    def _partial_fit_refusal(self):
        """Why this ranker has no :meth:`partial_fit` (None: it has one)."""
        if self.solver == "lbfgs":
            return (f"partial_fit is only available for the stochastic solvers ('adam', "
                    f"'sgd'): solver={self.solver!r} minimises the full objective.")
        return None

    def _has_partial_fit(self):
        refusal = self._partial_fit_refusal()
        if refusal is not None:
            raise AttributeError(f"{type(self).__name__}: {refusal}")
        return True

    @available_if(_has_partial_fit)
    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y, *, qid=None, sample_weight=None):
        """One pass of the solver over some whole queries, continuing the model.

        The first call builds the network (as ``fit`` would, from
        ``random_state``); each call then takes one step per mini-batch of
        ``batch_size`` queries, the queries taken in the order in which they
        first appear in ``X``, and the solver's state (Adam's moments and
        step count, SGD's velocity) carries over to the next call. For data
        larger than memory: feed it query chunk by query chunk.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Feature rows of whole queries. float32 is kept. After the first
            call, ``X`` must have the fitted number of features.
        y : array-like of shape (n_samples,)
            Relevance labels (numbers; larger is more relevant).
        qid : array-like of shape (n_samples,), default=None
            Query id of each row. A query must be whole in one call: a call
            that opens with the last query of the previous call raises (a
            query split across two calls would train on two halves of its
            list).
            None means all rows belong to one query.
        sample_weight : array-like of shape (n_samples,), default=None
            Query weights, the same for all rows of a query. They are taken
            relative to the mean query weight of the first call (1 when the
            first call had none), so that the weights of different calls
            compare; None weighs every query of the call 1 in those units.

        Returns
        -------
        self : object
            The ranker, its network updated.

        Raises
        ------
        AttributeError
            With ``solver="lbfgs"``: L-BFGS minimises the full objective and
            has no partial steps (``hasattr(ranker, "partial_fit")`` is
            False then, as for scikit-learn's MLP).
        ValueError
            With ``learning_rate_decay < 1`` (a schedule over epochs, which
            ``partial_fit`` does not see), a number of features other than
            the fitted one, a call that opens with the previous call's last
            query, or a network whose parameters changed since the fit.

        Notes
        -----
        A call is one pass over its queries, so ``max_iter``, ``tol``,
        ``n_iter_no_change``, ``early_stopping``, ``validation_fraction`` and
        ``scoring`` do not apply (as in scikit-learn's ``MLPRegressor``), and
        ``warm_start`` neither: ``partial_fit`` always continues the fitted
        network, including one fitted by ``fit`` (with a fresh solver state).
        It trains one network: ``n_init`` and ``restarts`` are ``fit``'s (the
        first call starts from the first of ``fit``'s initialisations). A
        call with another ``solver`` than the previous one starts that
        solver's state afresh; a change of the network's parameters
        (``hidden_layer_sizes``, ``activation``, ...) raises, as with
        ``warm_start=True``. A query may come back in a later call (a new
        pass over it, as in a loop over epochs), but a call must not open
        with the query that ended the previous one: that is the same query
        split in two.
        ``n_iter_`` counts the calls, ``loss_curve_`` holds the mean
        training objective of each call's batches and ``t_`` counts the
        queries stepped over.

        The rank samples of a sampling loss (BoltzRank) depend only on a
        query's id, its rows' order and the seed drawn from
        ``random_state`` at the first call, so a query gets the same samples
        whichever call holds it. Calls whose queries come in the order of
        ``fit``'s mini-batches (``batch_size`` divides each call's number of
        queries) therefore give the weights of ``fit`` with ``max_iter=1``
        and ``early_stopping=False``, up to rounding.
        """
        with keep_fitted_state_on_error(self):
            self._partial_fit(X, y, qid, sample_weight)
        return self

    def _partial_fit(self, X, y, qid, sample_weight, *, check_split=True, order=None,
                     prepared=None, by=None):
        """:meth:`partial_fit`; returns ``(n_queries, prepared)``.

        ``n_queries``: the number of queries stepped over; ``prepared``: the
        :class:`PreparedRows` of the call (the loss prepared on its rows).
        ``check_split=False`` for a source that checks itself that its
        queries are whole (in a stream of epochs, an epoch's first query may
        be the previous epoch's last). ``order``: the query numbers (in the
        sorted order of the ids) in the order to step over them, instead of
        the order of their first rows (a shuffled stream, without moving
        its rows). ``prepared``: the ``prepared`` an earlier call returned
        for the same labels, query ids and weights (a stream's next epoch),
        used instead of preparing the loss again. ``by``: what continues a
        fitted network, for the messages (:data:`PARTIAL_FIT` when None).
        """
        if self.learning_rate_decay < 1.0:
            raise ValueError(
                f"learning_rate_decay={self.learning_rate_decay!r} decays the step size "
                "after an epoch whose training metric did not improve; partial_fit sees "
                "no epochs. Set learning_rate_decay=1.0 (or lower learning_rate_init)."
            )
        first = not self._is_fitted()
        data = self._training_set(X, y, qid, sample_weight, reset=first,
                                  method="partial_fit")
        layout = data.layout
        order = _first_appearance(layout) if order is None else order
        if not first and check_split:
            _check_continues(self, layout, order, qid_given=qid is not None)
        solver = self._make_solver()
        loss = self._make_loss()
        if first:
            rng = check_random_state(self.random_state)
            seed = first_draws(layout, None, rng)[0]
            network, (params,) = self._initial_network(data.X.shape[1], False, 1, rng,
                                                       layout.max_size)
            memory = solver.start(network.n_params)
            self._weight_scale = _mean_weight(data.weights)
            n_iter, loss_curve, t, n_queries = 0, [], 0, 0
        else:
            network, params = restore_network(vars(self))
            self._check_warm_network(network, PARTIAL_FIT if by is None else by)
            seed = self._loss_seed
            kind, memory = getattr(self, "_solver_memory", (None, None))
            if kind != self.solver:  # fitted by fit, or another solver: a fresh state
                memory = solver.start(network.n_params)
            else:  # a call that fails leaves the model as it was
                memory = copy.deepcopy(memory)
            n_iter, loss_curve = self.n_iter_, list(self.loss_curve_)
            t, n_queries = getattr(self, "t_", 0), self._n_fit_queries
        rows = prepared
        if rows is None:
            rows = self._prepared_rows(loss, data, np.arange(layout.n_queries), seed,
                                       weight_scale=getattr(self, "_weight_scale", 1.0))
        alpha = self._penalty_strength(rows.n_effective)
        objective = make_objective(network, loss, rows.state, rows.y, data.X, rows.rows, alpha)
        with self._fit_errors(data, alpha, False):
            total = solver.pass_over(objective, objective.ordered_batches(self.batch_size, order),
                                     params, memory, self.learning_rate_init)
        self._store_fit(network, params, n_iter=n_iter + 1,
                        loss_curve=loss_curve + [total / layout.n_queries],
                        n_fit_queries=n_queries + layout.n_queries, loss_seed=seed,
                        t=t + layout.n_queries)
        self.validation_scores_ = None
        self.best_validation_score_ = None
        self._solver_memory = (self.solver, memory)
        last = layout.unique_qid[order[-1]]
        self._last_query = (getattr(last, "item", lambda: last)(), _last_line(layout, order[-1]))
        return layout.n_queries, rows

    def _make_solver(self):
        if self.solver == "lbfgs":
            return LBFGS(max_iter=self.max_iter, tol=self.tol)
        if self.solver == "sgd":
            return SGD(learning_rate_init=self.learning_rate_init, batch_size=self.batch_size,
                       max_iter=self.max_iter, learning_rate_decay=self.learning_rate_decay,
                       momentum=self.momentum)
        return Adam(learning_rate_init=self.learning_rate_init, batch_size=self.batch_size,
                    max_iter=self.max_iter, learning_rate_decay=self.learning_rate_decay)

    def _make_stopping(self):
        return StoppingRule(tol=self.tol, n_iter_no_change=self.n_iter_no_change,
                            scorer=_validation_scorer(self.scoring), verbose=self.verbose)

    def _step_size_advice(self):
        if self.solver == "lbfgs":  # no step size
            return None, False
        rate = self.learning_rate_init
        return (f"the step size (learning_rate_init={rate!r} with solver={self.solver!r}): "
                "lower learning_rate_init"), rate >= 1
