"""Front ends of the rankers: validate, build the fit loop's objects, keep the result.

:class:`BaseRanker` does what every ranker does (input checks, the query
holdout for early stopping, restarts, fitted attributes, ``predict`` and
``score`` with ``qid``, metadata requests). A ranker's ``fit`` hands
``_fit`` its solver, its restarts and its early-stopping split as keyword
arguments, and ``_fit`` asks it for the network, the loss and the stopping
rule (``_make_network``, ``_make_loss``, ``_make_stopping``), each built
with keyword arguments from the ranker's parameters. :class:`NetworkMixin`
builds the network (a linear model or an MLP) from the network parameters;
:class:`NeuralRanker` adds the stochastic solvers' parameters, early
stopping and ``partial_fit`` (ListNet, SoftRank, BoltzRank), while LogRank
takes the mixin alone and fits by L-BFGS. The core's errors speak of its
own objects; this module translates them into the ranker's parameters.
"""

import copy
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, replace
from numbers import Integral

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils import check_array, column_or_1d
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from .._core._runs import Restarts, average_runs, best_run, fit_runs
from .._core._stopping import StoppingRule, UnscorableValidationError
from .._core._objective import make_objective
from .._core._network_factory import FITTED_ATTRIBUTES, make_network, restore_network
from .._core._networks import LinearNetwork
from .._core._solvers import LBFGS, SGD, Adam, DivergenceError, check_finite
from ..losses._base import QUERY_WEIGHT
from ..metrics import ndcg_score
from ..metrics._scorer import get_ranking_scorer
from ..utils._memory import check_memory, format_bytes
from ..utils._sklearn_compat import _fit_context, validate_data
from ..utils._qid import check_qid, resolve_qid
from ..utils._query_layout import QueryLayout
from ..utils._validation import (
    check_feature_dtypes,
    check_numeric,
    keep_fitted_state_on_error,
    query_weights,
)
from ._params import EARLY_STOPPING, LAYER_UNITS, NETWORK, RESTARTS, SOLVER, constraints

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


def layer_sizes(value):
    """``value`` (an int or a sequence of them) as a tuple of widths; None if one is not
    a :data:`LAYER_UNITS` (e.g. ``True``, or 0)."""
    sizes = (value,) if isinstance(value, Integral) else tuple(value)
    return sizes if all(LAYER_UNITS.is_satisfied_by(h) for h in sizes) else None


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
            state.per_query[QUERY_WEIGHT] = _scaled(weights, weight_scale)
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

#: A penalty strength or a largest |X| from which a diverged fit blames it.
EXTREME = 1e8


def _largest_abs(X):
    """The largest absolute value of a dense or sparse ``X`` (0 when it stores none)."""
    values = X.data if sp.issparse(X) else X
    return float(np.abs(values).max()) if values.size else 0.0


def _total(weights):
    """The sum of non-negative weights, ``inf`` beyond the largest float (no warning)."""
    top = float(weights.max())
    return top * float((weights / top).sum())


def _mean_weight(weights):
    """The mean of non-negative query weights, without overflow (None: 1, unweighted)."""
    if weights is None:
        return 1.0
    top = float(weights.max())
    return top * float((weights / top).mean())


def _scaled(weights, scale):
    """Query weights divided by ``scale``: the relative weights of :meth:`partial_fit`."""
    with np.errstate(over="ignore"):
        scaled = weights / scale
    if not np.isfinite(scaled).all():
        raise ValueError(
            f"sample_weight: query weights up to {float(weights.max()):.3g} are beyond the "
            f"largest float times the mean query weight of the first partial_fit call "
            f"({scale:.3g}); partial_fit weighs the queries of every call relative to it."
        )
    return scaled


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


def warn_no_signal(scorer, given_name=None):
    """Warn that early stopping is off: ``scorer`` cannot rank on the validation set.

    ``given_name`` names a given validation set (``"X_val"``); None means
    the queries held out of the training set, which are then trained on.
    """
    where = "the held-out queries" if given_name is None else given_name
    warnings.warn(
        f"Early stopping would monitor scoring={scorer!r} on {where}, but it "
        "scores the best and the worst ranking alike there (no query with "
        "documents of different relevance, or a metric returning NaN), so it "
        "could only stop at random. Fitting without early stopping: the "
        "training loss decides when to stop"
        + (", on all queries." if given_name is None else "."),
        UserWarning,
    )


def validation_given(validation_fraction, X_val, y_val, qid_val):
    """Whether a validation set is given; raises if it is given in part, or in vain.

    ``validation_fraction`` is None without early stopping, when a given
    validation set would not be used.
    """
    if X_val is None and y_val is None and qid_val is None:
        return False
    if X_val is None or y_val is None:
        given = [n for n, v in (("X_val", X_val), ("y_val", y_val), ("qid_val", qid_val))
                 if v is not None]
        raise ValueError(
            f"X_val and y_val must be given together; got only {', '.join(given)}."
        )
    if validation_fraction is None:
        raise ValueError(
            "X_val/y_val are used for early stopping only; got them with "
            "early_stopping=False."
        )
    return True


def _named(name, check, *args, **kwargs):
    """``check(*args, **kwargs)``, its ValueError prefixed with ``name`` when it does not say it."""
    try:
        return check(*args, **kwargs)
    except ValueError as exc:
        if name in str(exc):
            raise
        raise ValueError(f"{name}: {exc}") from None


def _validation_scorer(scoring):
    try:
        return get_ranking_scorer(scoring)
    except ValueError as exc:
        raise ValueError(
            f"scoring={scoring!r} is not a ranking scorer name: {exc}"
        ) from None


def _has_signal(scorer, y, layout, name):
    """Whether the monitored metric tells the ideal ranking of ``y`` from the reversed one.

    Raises before training if it cannot score these labels at all. Without
    signal (no query with documents of different relevance, single-document
    queries, a metric returning NaN) the metric is the same for every model,
    and early stopping on it would keep the first epoch.
    """
    try:
        best = scorer.score_predictions(y, y.astype(np.float64), qid=layout.qid)
        worst = scorer.score_predictions(y, -y.astype(np.float64), qid=layout.qid)
    except ValueError as exc:
        raise ValueError(
            f"scoring={scorer!r} cannot score the labels {name}: {exc} "
            "Pass scoring=make_ranking_scorer(...) with suitable conventions."
        ) from None
    return bool(np.isfinite(best) and np.isfinite(worst) and best != worst)


def first_draws(layout, validation_fraction, rng):
    """The first draws of a fit from ``rng``: a seed, then the held-out queries.

    Returns ``(seed, train, val)``: a seed (the loss's, in
    :meth:`BaseRanker._fit`), and the query numbers used for training and
    held out for early stopping (:func:`_split_queries`; ``val`` is None
    without early stopping, ``validation_fraction=None``). The one spelling
    of these draws: the gradient-boosted baselines of ``compare``
    (:mod:`skrank.rankers._gbdt`) hold out the same queries as a ranker of
    the same ``random_state`` and ``validation_fraction``.
    """
    seed = rng.randint(np.iinfo(np.int32).max)
    train, val = _split_queries(layout, validation_fraction, rng)
    return seed, train, val


def _split_queries(layout, validation_fraction, rng):
    """Query numbers used for training and validation (None: no early stopping)."""
    queries = np.arange(layout.n_queries)
    if validation_fraction is None:
        return queries, None
    if layout.n_queries < 2:
        warnings.warn(
            "early_stopping=True holds out whole queries for validation and "
            f"needs at least 2 queries; got {layout.n_queries} (qid=None means "
            "all rows are one query). Fitting without early stopping: the "
            "training loss decides when to stop.",
            UserWarning,
        )
        return queries, None
    n_val = int(np.clip(round(validation_fraction * layout.n_queries), 1,
                        layout.n_queries - 1))
    perm = rng.permutation(layout.n_queries)
    return np.sort(perm[n_val:]), np.sort(perm[:n_val])


def _query_rows(layout, queries):
    """Rows of some queries, grouped by query, and their layout.

    Returns ``(rows, layout)``: the row indices (None when they are all rows
    in their own order, so that ``X`` itself can be used without a copy).
    """
    positions, sub = layout.select(queries)
    if layout.order is not None:
        return layout.order[positions], sub
    if len(positions) == layout.n_samples:
        return None, sub
    return positions, sub


class NetworkMixin:
    """The network of a ranker trained by the neural fit loop.

    From the parameters ``hidden_layer_sizes`` and ``activation``: builds
    the scoring network (``_make_network``), refuses one whose fit cannot
    fit in the memory available (``_check_network_fits``) and a fitted one
    that the current parameters cannot continue (``_check_warm_network``).
    Shared by the stochastic rankers (:class:`NeuralRanker`) and by
    LogRank, whose L-BFGS fit has no solver or stopping parameters.
    """

    def _hidden_sizes(self):
        sizes = layer_sizes(self.hidden_layer_sizes)
        if sizes is None:
            raise ValueError(
                "hidden_layer_sizes must hold positive integers; got "
                f"{self.hidden_layer_sizes!r} (each entry must be {LAYER_UNITS})."
            )
        return sizes

    def _make_network(self, n_features):
        return make_network(n_features, self._hidden_sizes(), self.activation)

    def _network_parameters(self):
        """The parameters that size the network, by name, as the user gave them."""
        return {"hidden_layer_sizes": self.hidden_layer_sizes}

    def _check_network_fits(self, network, n_init, largest_query):
        """Refuse a network whose fit cannot fit in the memory available, naming its sizes.

        The widths of the hidden layers come from the user, and an MLP's
        parameters grow as ``n_features`` times the first one: the kernel
        would promise their arrays and kill the process once they are
        written. What is counted is a floor of the fit's memory, 8 bytes a
        value: the ``n_init`` starting points and a gradient, and the
        hidden activations (pre-activations and activations) of the
        largest query. A larger fit may still run out of memory later.
        """
        given = self._network_parameters()
        units = sum(sum(layer_sizes(value)) for value in given.values() if value is not None)
        n_bytes = 8 * ((n_init + 1) * network.n_params + 2 * largest_query * units)
        shown = " and ".join(f"{name}={value!r}" for name, value in given.items())
        starts = "1 starting point" if n_init == 1 else f"n_init={n_init} starting points"
        check_memory(
            n_bytes,
            f"{shown} make{'s' if len(given) == 1 else ''} a network of {network.n_params} "
            f"parameters on {network.n_features} features, whose fit needs at least "
            f"{format_bytes(n_bytes)} ({starts} and a gradient, and the hidden "
            f"activations of a query of {largest_query} rows)",
            f"lower {' or '.join(self._network_culprits(given, n_init))}",
        )

    @staticmethod
    def _network_culprits(given, n_init):
        """The parameters of ``given`` (and ``n_init`` above 1) that make the network larger."""
        culprits = [name for name, value in given.items()
                    if value is not None and sum(layer_sizes(value))]
        if n_init > 1:
            culprits.append("n_init")
        return culprits or list(given)

    def _check_warm_network(self, network, by):
        """Raise if the fitted ``network`` cannot continue under the current parameters.

        ``by``: what continues it (:data:`WARM_START`, :data:`PARTIAL_FIT` or
        a stream's own :class:`Continuation`), for the messages.
        """
        linear = isinstance(network, LinearNetwork)
        hidden = self._hidden_sizes()
        if linear != (len(hidden) == 0):
            raise ValueError(
                f"{by.continues} the fitted {'linear' if linear else 'MLP'} "
                f"network, but hidden_layer_sizes={self.hidden_layer_sizes!r} asks for "
                f"{'an MLP' if linear else 'a linear model'}; {by.instead}."
            )
        if linear:
            return
        fitted = network.hidden_layer_sizes
        # after restarts="average" every layer is n_init times wider: that is the model
        widths_match = len(fitted) == len(hidden) and len(
            {f / h for f, h in zip(fitted, hidden)}
        ) == 1 and fitted[0] % hidden[0] == 0
        if not widths_match:
            raise ValueError(
                f"{by.continues} the fitted MLP of hidden layers {fitted}, but "
                f"hidden_layer_sizes={self.hidden_layer_sizes!r} asks for another network; "
                f"{by.instead}."
            )
        if network.activation != self.activation:
            raise ValueError(
                f"{by.continues} the MLP fitted with activation="
                f"{network.activation!r}, but got activation={self.activation!r}; "
                f"{by.instead}."
            )


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
