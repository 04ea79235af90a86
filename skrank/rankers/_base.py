"""Front ends of the rankers: validate, build the fit loop's objects, keep the result.

:class:`BaseRanker` does what every ranker does (input checks, the query
holdout for early stopping, restarts, fitted attributes, ``predict`` and
``score`` with ``qid``, metadata requests). A ranker's ``fit`` hands
``_fit`` its solver, its restarts and its early-stopping split as keyword
arguments, and ``_fit`` asks it for the network, the loss and the stopping
rule (``_make_network``, ``_make_loss``, ``_make_stopping``), each built
with keyword arguments from the ranker's parameters. :class:`NetworkMixin`
(:mod:`skrank.rankers._network_mixin`) builds the network (a linear model
or an MLP) from the network parameters; :class:`NeuralRanker`
(:mod:`skrank.rankers._neural`) adds the stochastic solvers' parameters,
early stopping and ``partial_fit`` (ListNet, SoftRank, BoltzRank), while
LogRank takes the mixin alone and fits by L-BFGS. The core's errors speak
of its own objects; this module translates them into the ranker's
parameters.
"""

import warnings
from contextlib import contextmanager
from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils import check_array, column_or_1d
from sklearn.utils.validation import check_is_fitted

from .._core._runs import average_runs, best_run, fit_runs
from .._core._stopping import UnscorableValidationError
from .._core._objective import make_objective
from .._core._network_factory import FITTED_ATTRIBUTES, restore_network
from .._core._solvers import DivergenceError, check_finite
from ..metrics import ndcg_score
from ..utils._sklearn_compat import validate_data
from ..utils._qid import check_qid, resolve_qid
from ..utils._query_layout import QueryLayout
from ..utils._validation import (
    check_feature_dtypes,
    check_numeric,
    query_weights,
)
from ._continuation import _STREAM_ATTRIBUTES, WARM_START
from ._holdout import (
    _has_signal,
    _query_rows,
    first_draws,
    validation_given,
    warn_no_signal,
)
from ._query_weights import _mean_weight, _scaled, _total

#: Dtypes ``X`` keeps: float32 stays float32 (no float64 copy), anything
#: else becomes float64 (as in scikit-learn's linear models).
FLOAT_DTYPES = (np.float64, np.float32)


@dataclass
class TrainingSet:
    """The validated data of a fit (:meth:`BaseRanker._training_set`).

    ``X`` and ``y`` as validated, the ``layout`` of their query ids,
    ``sample_weight`` as given (one per row, or None) and ``weights``, the
    weight of each query (None without ``sample_weight``).
    """

    X: object
    y: np.ndarray
    layout: QueryLayout
    sample_weight: object = None
    weights: np.ndarray = None


@dataclass
class PreparedRows:
    """The training rows of a fit and its loss state (:meth:`BaseRanker._prepared_rows`).

    ``rows``: the row of ``X`` of each training row, grouped by query (None:
    ``X`` itself); ``y``: their labels; ``state``: the loss prepared on them;
    ``n_effective``: the number of training queries, or their total weight.
    """

    rows: np.ndarray
    y: np.ndarray
    state: object
    n_effective: float


class BaseRanker(BaseEstimator):
    """Base class of the rankers: fit through the shared loop, predict, score.

    Subclasses implement ``fit`` (calling ``_fit`` with their solver,
    restarts and early-stopping split), ``_make_network(n_features)``,
    ``_check_network_fits`` and ``_check_warm_network`` (all three from
    :class:`NetworkMixin`), ``_make_loss()`` and ``_make_stopping()``; they
    may override
    ``_penalty_strength(n_queries)`` (here ``alpha``) and
    ``_step_size_advice()`` (here none).
    """

    # With metadata routing on, fit and score receive qid without
    # set_*_request calls; predict only where the network scores the
    # documents of a query jointly (subclasses with such a network set True).
    __metadata_request__fit = {"qid": True}
    __metadata_request__score = {"qid": True}
    __metadata_request__predict = {"qid": False}

    # ------------------------------------------------------------------
    # Fit
    def _fit(self, X, y, qid, sample_weight, *, X_val=None, y_val=None, qid_val=None,
             solver, restarts, validation_fraction, random_state, warm_start):
        """The fit, from the ranker's explicit choices; returns ``self``.

        ``solver`` (a solver of :mod:`skrank._core._solvers`) and
        ``restarts`` (:class:`~skrank._core._runs.Restarts`) are built by the
        ranker; ``validation_fraction`` is the fraction of the queries held
        out for early stopping, None without early stopping; ``warm_start``
        continues a fitted network. The network, the loss and the stopping
        rule come from ``_make_network``, ``_make_loss`` and
        ``_make_stopping``, when the data are known.

        The stages, each a method of its own that :meth:`partial_fit` shares:
        :meth:`_training_set` (validate and lay out the data),
        :meth:`_held_out` (the held-out queries), :meth:`_prepared_rows`
        (the loss state of the training rows), :meth:`_initial_network`
        (build or restore the network), :meth:`_train` (the runs and their
        combination) and :meth:`_store_fit` (the fitted attributes).
        """
        warm = warm_start and self._is_fitted()
        data = self._training_set(X, y, qid, sample_weight, reset=not warm)
        stopping = self._make_stopping()
        loss = self._make_loss()
        given = self._check_validation_set(validation_fraction, X_val, y_val, qid_val)
        rng = check_random_state(random_state)
        loss_seed, train, validation = self._held_out(
            data, validation_fraction, given, stopping.scorer, rng, given_name="X_val")
        rows = self._prepared_rows(loss, data, train, loss_seed,
                                   train_metric=solver.needs_train_metric,
                                   scorer=stopping.scorer)
        network, starts = self._initial_network(data.X.shape[1], warm, restarts.n_init, rng,
                                                data.layout.max_size)
        run_seeds = rng.randint(np.iinfo(np.int32).max, size=len(starts))
        alpha = self._penalty_strength(rows.n_effective)
        objective = make_objective(network, loss, rows.state, rows.y, data.X, rows.rows, alpha,
                                   full_batch=solver.full_batch)
        stopping = replace(stopping, validation=validation,
                           train_metric=solver.needs_train_metric)
        with self._fit_errors(data, alpha, X_val is not None):
            network, params, kept, averaged = self._train(
                objective, solver, stopping, restarts, starts, run_seeds)
        for name in _STREAM_ATTRIBUTES:  # a new fit: partial_fit starts afresh after it
            self.__dict__.pop(name, None)
        # partial_fit weighs later queries in the unit of this fit's weights
        self._weight_scale = _mean_weight(None if data.weights is None else data.weights[train])
        self._store_fit(network, params, n_iter=kept[0].n_iter,
                        loss_curve=kept[0].loss_curve, n_fit_queries=data.layout.n_queries,
                        loss_seed=loss_seed,
                        t=None if solver.full_batch else
                        kept[0].n_iter * rows.state.layout.n_queries)
        self.validation_scores_ = kept[0].validation_scores
        if validation is None:
            self.best_validation_score_ = None
        elif averaged:
            X_v, y_v, layout_v = validation
            self.best_validation_score_ = stopping.scorer.score_predictions(
                y_v, network.forward(params, X_v, layout_v)[0], qid=layout_v.qid
            )
        else:
            self.best_validation_score_ = kept[0].best_validation_score
        if not all(r.converged for r in kept):
            warnings.warn(
                f"{type(self).__name__}: maximum iterations ({solver.max_iter}) reached "
                "and the optimization has not converged yet.",
                ConvergenceWarning,
            )
        return self

    # The stages of a fit

    def _training_set(self, X, y, qid, sample_weight, *, reset, method="fit"):
        """Stage 1: ``X``, ``y``, ``qid`` and ``sample_weight`` validated, as a :class:`TrainingSet`.

        ``reset`` records the number and names of the features (a new
        model); otherwise ``X`` must have those of the fitted one. Labels
        that do not suit the loss raise or warn (:meth:`_check_labels`).
        """
        if y is not None:  # (None: scikit-learn's own message)
            check_numeric(y, "y")
        X, y = validate_data(
            self, X, y, accept_sparse="csr", dtype=FLOAT_DTYPES, y_numeric=True, reset=reset
        )
        layout = QueryLayout(resolve_qid(qid, X.shape[0],
                                         caller=f"{type(self).__name__}.{method}",
                                         routing_hint=True))
        weights = None if sample_weight is None else query_weights(sample_weight, layout)
        self._check_labels(y, layout)
        return TrainingSet(X, y, layout, sample_weight, weights)

    def _held_out(self, data, validation_fraction, given, scorer, rng, *, given_name):
        """Stage 2: the loss's seed, the training queries and the validation set.

        Draws from ``rng`` the loss's seed, then (without a ``given``
        validation set and with a ``validation_fraction``) the queries held
        out for early stopping (:func:`first_draws`). Returns ``(seed,
        train, validation)``: ``train`` the training query numbers,
        ``validation`` ``(X, y, layout)`` of the queries that early stopping
        monitors, or None. A validation set on which ``scorer`` cannot tell
        a good ranking from a bad one warns and is dropped (its queries, if
        held out of ``data``, are then trained on).
        """
        seed, train, val = first_draws(
            data.layout, validation_fraction if given is None else None, rng)
        validation = given
        if val is not None:
            rows, val_layout = _query_rows(data.layout, val)
            validation = (data.X[rows], data.y[rows], val_layout)
        if validation is not None and not _has_signal(
            scorer, validation[1], validation[2], "y_val" if given is not None else "y"
        ):
            warn_no_signal(scorer, given_name if given is not None else None)
            validation, train = None, np.arange(data.layout.n_queries)
        return seed, train, validation

    def _prepared_rows(self, loss, data, train, seed, *, train_metric=False, scorer=None,
                       weight_scale=None):
        """Stage 3: the training rows of the queries ``train`` and the loss prepared on them.

        Returns :class:`PreparedRows`. The loss draws its samples (if any)
        from ``seed``, per query id, so the same query gets the same samples
        in every fit and every call of :meth:`partial_fit`. With
        ``train_metric`` the ``scorer`` must be able to score the training
        labels. ``weight_scale`` (:meth:`partial_fit`): the query weights are
        divided by it instead of being scaled to mean 1 over these queries.
        """
        rows, train_layout = _query_rows(data.layout, train)
        y_train = data.y if rows is None else data.y[rows]
        train_weight = None
        n_effective = train_layout.n_queries
        if data.weights is not None:
            if not np.any(data.weights[train] > 0):
                raise ValueError(
                    "sample_weight is zero for every training query (the others are "
                    "held out for early stopping): nothing would be learnt."
                )
            train_weight = np.asarray(data.sample_weight)
            train_weight = train_weight if rows is None else train_weight[rows]
            # integer weights act as repeated queries
            n_effective = _total(data.weights[train])
        state = loss.prepare(y_train, train_layout, sample_weight=train_weight,
                             random_state=seed)
        if weight_scale is not None and (data.weights is not None or weight_scale != 1.0):
            weights = (np.ones(train_layout.n_queries) if data.weights is None
                       else data.weights[train])
            state.query_weight = _scaled(weights, weight_scale)
        if train_metric:
            # raises if the metric cannot score y; a training set without signal
            # has already been warned about by _check_labels
            _has_signal(scorer, y_train, train_layout, "y")
        return PreparedRows(rows, y_train, state, n_effective)

    def _initial_network(self, n_features, warm, n_init, rng, largest_query):
        """Stage 4: the network and the initial parameters of each run.

        With ``warm``, the fitted network (one run from its parameters);
        otherwise a new one from ``_make_network`` and ``n_init``
        initialisations drawn from ``rng``, once :meth:`_check_network_fits`
        has found room for them (``largest_query``: rows of the largest
        query of the data).
        """
        if warm:
            network, start = restore_network(vars(self))
            self._check_warm_network(network, WARM_START)
            return network, [start]
        network = self._make_network(n_features)
        self._check_network_fits(network, n_init, largest_query)
        init_seeds = rng.randint(np.iinfo(np.int32).max, size=n_init)
        return network, [network.init_params(np.random.RandomState(s)) for s in init_seeds]

    @staticmethod
    def _train(objective, solver, stopping, restarts, starts, run_seeds):
        """Stage 5: the runs from ``starts``, combined as ``restarts`` says.

        Returns ``(network, params, kept, averaged)``: the network and
        parameters kept, the runs whose history the fit reports (the best
        run; all of them when ``averaged``, the runs' scores averaged into
        one wider network).
        """
        runs = fit_runs(objective, solver, stopping, starts, run_seeds, n_jobs=restarts.n_jobs)
        best = best_run(objective, runs)
        if restarts.combine == "average" and len(runs) > 1:
            network, params = average_runs(objective, runs)
            check_finite(params, "averaged weights")
            return network, params, [best] + [r for r in runs if r is not best], True
        return objective.network, best.params, [best], False

    @contextmanager
    def _fit_errors(self, data, alpha, given_validation):
        """The core's errors of a fit, told in the ranker's terms (its settings, ``X_val``)."""
        try:
            yield
        except DivergenceError as exc:
            raise DivergenceError(
                f"{type(self).__name__}: {exc} "
                f"{self._divergence_advice(data.X, alpha, data.weights)}"
            ) from None
        except UnscorableValidationError as exc:
            if not given_validation:
                raise ValueError(
                    f"{exc} They are held-out queries of X (early_stopping=True): "
                    "scale X, e.g. with StandardScaler."
                ) from None
            raise ValueError(
                "The scores of the validation queries are NaN while the training scores "
                "are finite: X_val holds values the model cannot score (its largest "
                f"absolute value is {exc.largest:.3g}). Scale X_val as the training X."
            ) from None

    def _store_fit(self, network, params, *, n_iter, loss_curve, n_fit_queries, loss_seed,
                   t=None):
        """Stage 6: the fitted attributes of ``network``'s ``params`` and the fit's history.

        ``n_fit_queries`` is the number of queries the model was fitted on
        (a network that scores a query's documents jointly must not be given
        the rows of several queries as one: predict warns then);
        ``loss_seed`` the seed of the loss's samples, which
        :meth:`partial_fit` continues with; ``t`` the number of training
        queries the stochastic solver stepped over (``t_``), None for a
        full-batch solver.
        """
        for name in FITTED_ATTRIBUTES + ("t_",):
            self.__dict__.pop(name, None)
        for name, value in network.export(params).items():
            setattr(self, name, value)
        self.n_iter_ = n_iter
        self.loss_curve_ = loss_curve
        self._n_fit_queries = n_fit_queries
        self._loss_seed = loss_seed
        if t is not None:
            self.t_ = t

    def _divergence_advice(self, X, alpha, weights):
        """What to tell of a diverged fit: the likely causes among its settings.

        A setting is blamed when it is extreme (:data:`EXTREME`): the
        penalty (:meth:`_penalty_advice`), the scale of ``X``, a step size of
        at least 1 for the solvers that take one. Without an extreme setting
        the possible causes are listed: the step size (stochastic solvers
        only; L-BFGS has none), then the scale of ``X``.
        """
        likely, possible = [], []
        penalty, extreme = self._penalty_advice(alpha, weights)
        if penalty is not None:
            (likely if extreme else possible).append(penalty)
        top = _largest_abs(X)
        scale = (f"the scale of X (its largest absolute value is {top:.3g}): scale the "
                 "features, e.g. with StandardScaler or skrank's QueryNormalizer")
        (likely if top >= EXTREME else possible).append(scale)
        step, extreme = self._step_size_advice()
        if step is not None:
            (likely if extreme else possible).insert(0, step)
        if likely:
            return f"Likely cause{'s' if len(likely) > 1 else ''}: {'; '.join(likely)}."
        return f"Possible causes: {'; '.join(possible)}."

    def _penalty_advice(self, alpha, weights):
        """``(advice, extreme)`` on the L2 penalty of strength ``alpha`` of a diverged fit.

        None when the penalty is neither extreme nor too weak to bound the
        weights (below 1 / :data:`EXTREME`).
        """
        if alpha >= EXTREME:
            return (f"the penalty (alpha={alpha!r}): an extreme strength (the weights it "
                    "allows are about 0, and its gradient throws the solver's steps out of "
                    "range): lower alpha"), True
        if alpha < 1.0 / EXTREME:
            return (f"the penalty (alpha={alpha!r}) is too weak to keep the weights bounded "
                    "when the training queries can be ranked perfectly: raise alpha"), False
        return None, False

    def _is_fitted(self):
        return hasattr(self, "coef_") or hasattr(self, "coefs_")

    def _check_labels(self, y, layout):
        """Raise (or warn) before training when the labels do not suit the loss.

        By default, warn when no query has two documents of different
        relevance: a listwise loss then has no order to learn (every row its
        own query, or equal labels everywhere).
        """
        y_sorted = layout.to_sorted(y)
        if not np.any(layout.max(y_sorted) > layout.min(y_sorted)):
            warnings.warn(
                f"{type(self).__name__}: no query has two documents of different "
                f"relevance ({layout.n_queries} queries, labels in "
                f"[{y.min():g}, {y.max():g}]), so there is no order to learn and the "
                "fitted model ranks at random. Check y and qid (qid=None makes all "
                "rows one query).",
                UserWarning,
            )

    def _penalty_strength(self, n_queries):
        """``alpha`` of the L2 penalty added to the mean loss over ``n_queries``."""
        return self.alpha

    def _step_size_advice(self):
        """``(advice, extreme)`` on the solver's step size of a diverged fit; None without one."""
        return None, False

    def _check_validation_set(self, validation_fraction, X_val, y_val, qid_val, *, caller=None):
        """``(X_val, y_val, layout)`` of a given validation set, or None.

        ``caller`` names what was given the set in the warning of a
        forgotten ``qid_val`` (the ranker's ``fit`` when None).
        """
        if not validation_given(validation_fraction, X_val, y_val, qid_val):
            return None
        check_numeric(y_val, "y_val")
        # scikit-learn's checks, with messages that name the validation set
        given = X_val
        check_feature_dtypes(X_val, name="X_val")
        X_val = _named("X_val", check_array, X_val, accept_sparse="csr", dtype=FLOAT_DTYPES,
                       input_name="X_val", estimator=self)
        if X_val.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X_val has {X_val.shape[1]} features, but {type(self).__name__} is "
                f"expecting {self.n_features_in_} features as input (those of X)."
            )
        # the feature names of X_val as given (a DataFrame's) against those of X
        _named("X_val", validate_data, self, given, reset=False, skip_check_array=True)
        shape = np.shape(y_val)
        if len(shape) != 1 and shape[1:] != (1,):
            raise ValueError(f"y_val must be a 1-D array of labels; got shape {shape}.")
        y_val = column_or_1d(y_val, warn=True)  # (a column: a DataConversionWarning)
        y_val = _named("y_val", check_array, y_val, ensure_2d=False, dtype="numeric",
                       input_name="y_val", estimator=self)
        if y_val.shape[0] != X_val.shape[0]:
            raise ValueError(
                f"y_val must have one label per row of X_val ({X_val.shape[0]}); got "
                f"{y_val.shape[0]}."
            )
        caller = f"{type(self).__name__}.fit" if caller is None else caller
        layout = QueryLayout(resolve_qid(qid_val, X_val.shape[0], name="qid_val", caller=caller))
        return X_val, y_val, layout

    # ------------------------------------------------------------------
    # Predict and score
    def predict(self, X, *, qid=None):
        """Ranking scores (larger ranks higher).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Feature rows.
        qid : array-like of shape (n_samples,), default=None
            Query id of each row. Used only by networks that score the
            documents of a query jointly (None then means one query, which
            warns when the ranker was fitted on several queries); otherwise
            only checked against ``X``.

        Returns
        -------
        scores : ndarray of shape (n_samples,)
            Score of each row; only their order within a query matters.
            float32 for float32 ``X``, float64 otherwise.
        """
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", dtype=FLOAT_DTYPES, reset=False)
        network, params = restore_network(vars(self))
        layout = None
        if network.needs_query:
            # the scores of a query's documents depend on each other
            layout = QueryLayout(resolve_qid(
                qid, X.shape[0], caller=f"{type(self).__name__}.predict",
                fitted_queries=getattr(self, "_n_fit_queries", 1),
            ))
        elif qid is not None:
            check_qid(qid, X.shape[0])
        return network.forward(params, X, layout)[0]

    def score(self, X, y, *, qid=None, sample_weight=None):
        """Mean NDCG@10 over queries, with skrank's default convention.

        That is ``ndcg_score(y, self.predict(X, qid=qid), qid=qid, k=10)``:
        gain :math:`2^{y} - 1`, :math:`\\log_2` discount, ties averaged, 0 for
        a query without relevant documents.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Feature rows.
        y : array-like of shape (n_samples,)
            Relevance labels (non-negative numbers; strings are refused, as
            in ``fit``).
        qid : array-like of shape (n_samples,), default=None
            Query id of each row. None means one query, and is refused
            (``ValueError``) when the ranker was fitted on several queries:
            the mean over one merged "query" would be a plausible but wrong
            number (as ``cross_val_score`` or ``Pipeline.score`` with
            metadata routing off would compute it). A ranker fitted with
            ``qid=None`` scores with ``qid=None``.
        sample_weight : array-like of shape (n_samples,), default=None
            Weight of each row's *query* in the mean (it must be the same for
            all rows of a query); None weighs queries equally.

        Returns
        -------
        score : float
        """
        check_is_fitted(self)
        check_numeric(y, "y")
        X = validate_data(self, X, accept_sparse="csr", dtype=FLOAT_DTYPES, reset=False)
        qid = resolve_qid(qid, X.shape[0], caller=f"{type(self).__name__}.score",
                          fitted_queries=getattr(self, "_n_fit_queries", 1), strict=True)
        y_score = self.predict(X, qid=qid)
        return ndcg_score(y, y_score, qid=qid, k=10, sample_weight=sample_weight)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.target_tags.required = True
        return tags


#: A penalty strength or a largest |X| from which a diverged fit blames it.
EXTREME = 1e8


def _largest_abs(X):
    """The largest absolute value of a dense or sparse ``X`` (0 when it stores none)."""
    values = X.data if sp.issparse(X) else X
    return float(np.abs(values).max()) if values.size else 0.0


def _named(name, check, *args, **kwargs):
    """``check(*args, **kwargs)``, its ValueError prefixed with ``name`` when it does not say it."""
    try:
        return check(*args, **kwargs)
    except ValueError as exc:
        if name in str(exc):
            raise
        raise ValueError(f"{name}: {exc}") from None
