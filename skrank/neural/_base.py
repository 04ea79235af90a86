"""The fit loop shared by the neural listwise rankers.

An estimator picks a loss (from :data:`skrank.losses.LOSSES`), a scoring
network and a solver; this module runs the fit: validation, the query
holdout for early stopping, restarts through joblib, mini-batches of whole
queries, the stopping rules and the fitted attributes.
"""

import time
import warnings
from numbers import Integral, Real

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from .._query import QueryLayout, check_qid
from ..metrics import ndcg_score
from ..metrics._scorer import RankingScorer, get_ranking_scorer
from ..utils._sklearn_compat import Interval, StrOptions, _fit_context, validate_data
from ._networks import ACTIVATIONS, ScoringNetwork
from ._optimizers import STOCHASTIC_SOLVERS, lbfgs

#: Documentation of the parameters every neural ranker shares, so that they
#: read the same in every docstring.
SHARED_PARAMETERS = """\
hidden_layer_sizes : tuple of int, default=()
        Units of each hidden layer of the scoring network. ``()`` is the
        linear model :math:`f(x) = \\langle w, x \\rangle`; ``(h,)`` is a
        one-hidden-layer network. The output layer has no bias: the loss is
        invariant to shifting all scores of a query.
    activation : {"tanh", "scaled_tanh", "relu", "logistic"}, default="tanh"
        Hidden-layer activation; ``"scaled_tanh"`` is
        :math:`1.7159 \\tanh(2x/3)`. Unused when ``hidden_layer_sizes=()``.
    solver : {"adam", "sgd", "lbfgs"}, default="adam"
        ``"adam"`` and ``"sgd"`` take steps on mini-batches of whole
        queries; ``"lbfgs"`` minimises the full objective with
        :func:`scipy.optimize.minimize` (one iteration = one L-BFGS step).
    alpha : float, default=1e-4
        Strength of the L2 penalty :math:`\\frac{\\alpha}{2}\\|W\\|^2` on the
        weights (not the hidden biases), added to the mean loss per query.
    learning_rate_init : float, default=1e-2
        Step size of ``"adam"`` and ``"sgd"``.
    batch_size : int, default=8
        Number of *queries* per mini-batch (``"adam"``, ``"sgd"``); capped
        at the number of training queries.
    max_iter : int, default=200
        Maximum number of epochs (``"adam"``, ``"sgd"``) or L-BFGS
        iterations.
    tol : float, default=1e-4
        Minimum improvement of the monitored quantity (validation metric
        with early stopping, otherwise training loss) that resets the
        patience counter; also the gradient tolerance of ``"lbfgs"``.
    early_stopping : bool, default=True
        Hold out ``validation_fraction`` of the *queries* (chosen with
        ``random_state``), monitor ``validation_scoring`` on them after each
        epoch, stop after ``n_iter_no_change`` epochs without improvement and
        keep the weights of the best epoch. With fewer than two queries
        (e.g. ``qid=None``) a warning is issued and the training loss decides
        when to stop instead.
    validation_fraction : float, default=0.2
        Fraction of the queries held out for early stopping (at least one
        query, and at least one query left for training).
    validation_scoring : str or RankingScorer, default="ndcg@10"
        Metric monitored on the held-out queries, e.g. ``"ndcg@10"`` or
        ``"map"`` (see :func:`skrank.metrics.get_ranking_scorer`).
    n_iter_no_change : int, default=10
        Patience, in epochs (or L-BFGS iterations).
    learning_rate_decay : float, default=1.0
        Factor by which the step size is multiplied after an epoch in which
        the training metric (``validation_scoring`` on the training queries)
        did not improve; 1.0 keeps it constant. SoftRank (Taylor et al.,
        2008, §4.5) uses 0.8 with ``solver="sgd"``. Unused by ``"lbfgs"``.
    momentum : float, default=0.9
        Momentum of ``solver="sgd"``.
    n_restarts : int, default=1
        Number of independent random initialisations; the one with the best
        validation score (or, without early stopping, the lowest final
        training objective) is kept.
    n_jobs : int, default=None
        Number of restarts run in parallel with joblib (``None`` means 1
        unless in a :func:`joblib.parallel_backend` context, ``-1`` all
        processors). Results do not depend on it.
    random_state : int, RandomState instance or None, default=None
        Seed of the validation split, of the initialisations and of the
        mini-batch order. Pass an int for reproducible fits.
    verbose : int, default=0
        If positive, print one line per epoch: loss, training and validation
        metric, elapsed seconds.
    warm_start : bool, default=False
        If True and the ranker is fitted, start from its current weights
        (then there is a single run; ``n_restarts`` is ignored). The
        optimizer state (Adam moments, SGD velocity, decayed step size) starts
        afresh, and the validation queries are drawn again from
        ``random_state``."""


#: Documentation of the fitted attributes every neural ranker shares.
SHARED_ATTRIBUTES = """\
coefs_ : list of ndarray
        Weight matrices, ``coefs_[i]`` of shape ``(n_units_in, n_units_out)``;
        the last one maps to the single score.
    intercepts_ : list of ndarray
        Biases of the hidden layers (empty for the linear model; the output
        layer has none).
    n_iter_ : int
        Epochs (or L-BFGS iterations) run by the kept restart.
    loss_curve_ : list of float
        Training objective (mean loss per query plus penalty) after each
        epoch of the kept restart.
    validation_scores_ : list of float or None
        ``validation_scoring`` on the held-out queries after each epoch;
        None without early stopping.
    best_validation_score_ : float or None
        Best of ``validation_scores_`` (the weights kept are from that
        epoch); None without early stopping.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Feature names seen during fit, when ``X`` has string column names."""


class BaseNeuralRanker(BaseEstimator):
    """Base class of the neural listwise rankers (the shared fit loop).

    Subclasses set the loss through :meth:`_make_loss` and, if needed, the
    network through :meth:`_make_network`.
    """

    _parameter_constraints = {
        "hidden_layer_sizes": ["array-like", Interval(Integral, 1, None, closed="left")],
        "activation": [StrOptions(set(ACTIVATIONS))],
        "solver": [StrOptions({"adam", "sgd", "lbfgs"})],
        "alpha": [Interval(Real, 0, None, closed="left")],
        "learning_rate_init": [Interval(Real, 0, None, closed="neither")],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "early_stopping": ["boolean"],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
        "validation_scoring": [str, RankingScorer],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
        "learning_rate_decay": [Interval(Real, 0, 1, closed="right")],
        "momentum": [Interval(Real, 0, 1, closed="both")],
        "n_restarts": [Interval(Integral, 1, None, closed="left")],
        "n_jobs": [None, Integral],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "warm_start": ["boolean"],
    }

    def __init__(
        self,
        *,
        hidden_layer_sizes=(),
        activation="tanh",
        solver="adam",
        alpha=1e-4,
        learning_rate_init=1e-2,
        batch_size=8,
        max_iter=200,
        tol=1e-4,
        early_stopping=True,
        validation_fraction=0.2,
        validation_scoring="ndcg@10",
        n_iter_no_change=10,
        learning_rate_decay=1.0,
        momentum=0.9,
        n_restarts=1,
        n_jobs=None,
        random_state=None,
        verbose=0,
        warm_start=False,
    ):
        self.hidden_layer_sizes = hidden_layer_sizes
        self.activation = activation
        self.solver = solver
        self.alpha = alpha
        self.learning_rate_init = learning_rate_init
        self.batch_size = batch_size
        self.max_iter = max_iter
        self.tol = tol
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.validation_scoring = validation_scoring
        self.n_iter_no_change = n_iter_no_change
        self.learning_rate_decay = learning_rate_decay
        self.momentum = momentum
        self.n_restarts = n_restarts
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose
        self.warm_start = warm_start

    # ------------------------------------------------------------------
    # Hooks for subclasses
    def _make_loss(self):
        raise NotImplementedError

    def _make_network(self, n_features):
        return ScoringNetwork(n_features, self._hidden_sizes(), self.activation)

    def _hidden_sizes(self):
        sizes = self.hidden_layer_sizes
        sizes = (sizes,) if isinstance(sizes, Integral) else tuple(sizes)
        if not all(isinstance(h, Integral) and h >= 1 for h in sizes):
            raise ValueError(
                "hidden_layer_sizes must hold positive integers; got "
                f"{self.hidden_layer_sizes!r}."
            )
        return sizes

    # ------------------------------------------------------------------
    # Fit
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, *, qid=None, X_val=None, y_val=None, qid_val=None):
        """Fit the ranker.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Feature rows.
        y : array-like of shape (n_samples,)
            Relevance labels (larger is more relevant).
        qid : array-like of shape (n_samples,), default=None
            Query id of each row (integers or strings, rows in any order).
            None means all rows belong to one query.
        X_val : {array-like, sparse matrix} of shape (n_val_samples, n_features), \
                default=None
            Validation rows for early stopping (e.g. LETOR's ``vali`` split).
            When given, all queries of ``X`` are used for training and
            ``validation_fraction`` is ignored. Needs ``early_stopping=True``.
        y_val : array-like of shape (n_val_samples,), default=None
            Labels of ``X_val``; required with it.
        qid_val : array-like of shape (n_val_samples,), default=None
            Query ids of ``X_val``; None means one query.

        Returns
        -------
        self : object
            The fitted ranker.
        """
        warm = self.warm_start and hasattr(self, "coefs_")
        X, y = validate_data(
            self, X, y, accept_sparse="csr", dtype=np.float64, y_numeric=True, reset=not warm
        )
        layout = QueryLayout(np.zeros(X.shape[0], dtype=np.int64) if qid is None else qid,
                             X.shape[0])
        network = self._make_network(X.shape[1])
        scorer = self._validation_scorer()
        loss = self._make_loss()
        if layout.order is not None:  # group the rows once; everything below is grouped
            X, y = X[layout.order], y[layout.order]
            layout = QueryLayout(layout.to_sorted(layout.qid))

        rng = check_random_state(self.random_state)
        validation = self._check_validation_set(X_val, y_val, qid_val)
        if validation is None:
            train, val = self._split_queries(layout, rng)
            positions, train_layout = layout.select(train)
            X_train, y_train = X[positions], y[positions]
            if val is not None:
                positions, val_layout = layout.select(val)
                validation = (X[positions], y[positions], val_layout)
        else:
            X_train, y_train, train_layout = X, y, layout
        state = loss.prepare(y_train, train_layout, random_state=rng)
        if validation is not None:
            _check_scorable(scorer, validation[1], validation[2], "y_val" if X_val is not None else "y")
        if self.learning_rate_decay < 1.0 and self.solver != "lbfgs":
            _check_scorable(scorer, y_train, train_layout, "y")

        if warm:
            starts = [network.pack(self.coefs_, self.intercepts_)]
        else:
            seeds = rng.randint(np.iinfo(np.int32).max, size=self.n_restarts)
            starts = [network.init_params(np.random.RandomState(s)) for s in seeds]
        seeds = rng.randint(np.iinfo(np.int32).max, size=len(starts))
        data = (X_train, y_train, train_layout, state, validation)
        runs = Parallel(n_jobs=self.n_jobs)(
            delayed(_run)(self, network, loss, scorer, data, params, seed, restart)
            for restart, (params, seed) in enumerate(zip(starts, seeds))
        )
        if validation is not None:
            best = max(runs, key=lambda r: r["best_validation_score"])
        else:
            best = min(runs, key=lambda r: r["final_objective"])

        self.coefs_, self.intercepts_ = (
            [c.copy() for c in part] for part in network.unpack(best["params"])
        )
        self.n_iter_ = best["n_iter"]
        self.loss_curve_ = best["loss_curve"]
        self.validation_scores_ = best["validation_scores"] if validation else None
        self.best_validation_score_ = best["best_validation_score"] if validation else None
        if not best["stopped"]:
            warnings.warn(
                f"{type(self).__name__}: maximum iterations ({self.max_iter}) reached "
                "and the optimization has not converged yet.",
                ConvergenceWarning,
            )
        return self

    def _validation_scorer(self):
        try:
            return get_ranking_scorer(self.validation_scoring)
        except ValueError as exc:
            raise ValueError(
                f"validation_scoring={self.validation_scoring!r} is not a ranking "
                f"scorer name: {exc}"
            ) from None

    def _check_validation_set(self, X_val, y_val, qid_val):
        """``(X_val, y_val, layout)`` of a given validation set, or None."""
        if X_val is None and y_val is None and qid_val is None:
            return None
        if X_val is None or y_val is None:
            given = [n for n, v in (("X_val", X_val), ("y_val", y_val), ("qid_val", qid_val))
                     if v is not None]
            raise ValueError(
                f"X_val and y_val must be given together; got only {', '.join(given)}."
            )
        if not self.early_stopping:
            raise ValueError(
                "X_val/y_val are used for early stopping only; got them with "
                "early_stopping=False."
            )
        X_val, y_val = validate_data(
            self, X_val, y_val, accept_sparse="csr", dtype=np.float64, y_numeric=True,
            reset=False,
        )
        n = X_val.shape[0]
        qid_val = np.zeros(n, dtype=np.int64) if qid_val is None else check_qid(
            qid_val, n, name="qid_val"
        )
        return X_val, y_val, QueryLayout(qid_val)

    def _split_queries(self, layout, rng):
        """Query numbers used for training and (with early stopping) validation."""
        queries = np.arange(layout.n_queries)
        if not self.early_stopping:
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
        n_val = int(np.clip(round(self.validation_fraction * layout.n_queries), 1,
                            layout.n_queries - 1))
        perm = rng.permutation(layout.n_queries)
        return np.sort(perm[n_val:]), np.sort(perm[:n_val])

    # ------------------------------------------------------------------
    # Predict and score
    def _params(self):
        network = self._make_network(self.n_features_in_)
        return network, network.pack(self.coefs_, self.intercepts_)

    def predict(self, X):
        """Ranking scores (larger ranks higher).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Feature rows.

        Returns
        -------
        scores : ndarray of shape (n_samples,)
            Score of each row; only their order within a query matters.
        """
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        network, params = self._params()
        return network.forward(params, X)[0]

    def score(self, X, y, *, qid=None):
        """Mean NDCG@10 over queries, with skrank's default convention.

        That is ``ndcg_score(y, self.predict(X), qid=qid, k=10)``: gain
        :math:`2^{y} - 1`, :math:`\\log_2` discount, ties averaged, 0 for a
        query without relevant documents.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Feature rows.
        y : array-like of shape (n_samples,)
            Relevance labels (non-negative).
        qid : array-like of shape (n_samples,), default=None
            Query id of each row; None means one query.

        Returns
        -------
        score : float
        """
        y_score = self.predict(X)
        if qid is None:
            qid = np.zeros(len(y_score), dtype=np.int64)
        return ndcg_score(y, y_score, qid=qid, k=10)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.target_tags.required = True
        return tags


def _check_scorable(scorer, y, layout, name):
    """Fail before training if the monitored metric cannot score these labels."""
    try:
        scorer.score_predictions(y, np.zeros(len(y)), qid=layout.qid)
    except ValueError as exc:
        raise ValueError(
            f"validation_scoring={scorer!r} cannot score the labels {name}: {exc} "
            "Pass validation_scoring=make_ranking_scorer(...) with suitable conventions."
        ) from None


def _objective(network, loss, alpha, X, layout, state, params, queries=None):
    """Mean loss over queries plus the L2 penalty, and its gradient."""
    if queries is not None:  # a mini-batch: the loss state of those queries only
        positions, state = state.take(queries)
        X, layout = X[positions], state.layout
    scores, cache = network.forward(params, X, layout)
    if not np.isfinite(scores).all():
        raise ValueError(
            "The scores overflowed to inf or NaN: the optimisation diverged. Lower "
            "learning_rate_init, scale the features, or try another solver."
        )
    value, dscores = loss.value_and_grad(scores, state)
    grad = network.backward(params, cache, dscores)
    penalty, penalty_grad = network.penalty(params, alpha)
    grad += penalty_grad
    return value + penalty, grad


def _run(est, network, loss, scorer, data, params, seed, restart):
    """One optimisation from ``params``; returns its history and best weights."""
    X, y, layout, state, validation = data
    rng = np.random.RandomState(seed)
    params = params.copy()
    history = _History(est, network, scorer, layout, y, X, validation, restart)

    if est.solver == "lbfgs":

        def fun(p):
            return _objective(network, loss, est.alpha, X, layout, state, p)

        def callback(intermediate_result):
            if history.update(intermediate_result.x, intermediate_result.fun):
                raise StopIteration

        result = lbfgs(fun, params, max_iter=est.max_iter, tol=est.tol, callback=callback)
        if not history.loss_curve:  # converged before the first iteration
            history.update(result.x, result.fun)
        history.finish(result.x, stopped=history.stopped or result.status == 0)
        return history.result(fun)

    optimizer = STOCHASTIC_SOLVERS[est.solver](
        network.n_params,
        est.learning_rate_init,
        **({"momentum": est.momentum} if est.solver == "sgd" else {}),
    )
    batch = min(est.batch_size, layout.n_queries)
    for _ in range(est.max_iter):
        perm = rng.permutation(layout.n_queries)
        total = 0.0
        for start in range(0, layout.n_queries, batch):
            queries = perm[start : start + batch]
            value, grad = _objective(
                network, loss, est.alpha, X, layout, state, params, queries
            )
            optimizer.step(params, grad)
            total += value * len(queries)
        if history.update(params, total / layout.n_queries, optimizer):
            break
    history.finish(params, stopped=history.stopped)
    return history.result(
        lambda p: _objective(network, loss, est.alpha, X, layout, state, p)
    )


class _History:
    """Per-epoch bookkeeping of one run: curves, best weights, stopping rules."""

    def __init__(self, est, network, scorer, layout, y, X, validation, restart):
        self.est, self.network, self.scorer = est, network, scorer
        self.train = (X, y, layout)
        self.validation = validation
        self.restart = restart
        self.loss_curve, self.validation_scores = [], []
        self.best_score, self.best_loss = -np.inf, np.inf
        self.best_params = None
        self.best_train_metric = -np.inf
        self.no_change = 0
        self.stopped = False
        self.start = time.perf_counter()

    def _metric(self, params, X, y, layout):
        scores = self.network.forward(params, X, layout)[0]
        return self.scorer.score_predictions(y, scores, qid=layout.qid)

    def update(self, params, loss, optimizer=None):
        """Record one epoch; True when the run should stop."""
        est = self.est
        self.loss_curve.append(float(loss))
        line = f"Restart {self.restart}, iteration {len(self.loss_curve)}, loss = {loss:.6f}"
        decay = optimizer is not None and est.learning_rate_decay < 1.0
        if est.verbose or decay:
            train_metric = self._metric(params, *self.train)
            line += f", train {self.scorer.name} = {train_metric:.4f}"
            if decay:
                if train_metric > self.best_train_metric:
                    self.best_train_metric = train_metric
                else:
                    optimizer.decay(est.learning_rate_decay)
        if self.validation is not None:
            score = self._metric(params, *self.validation)
            self.validation_scores.append(score)
            line += f", validation {self.scorer.name} = {score:.4f}"
            improved = score > self.best_score + est.tol
            if score > self.best_score:
                self.best_score = score
                self.best_params = params.copy()
        else:
            improved = loss < self.best_loss - est.tol
            self.best_loss = min(self.best_loss, loss)
        if est.verbose:
            print(f"{line}, {time.perf_counter() - self.start:.2f} s", flush=True)
        self.no_change = 0 if improved else self.no_change + 1
        self.stopped = self.no_change >= est.n_iter_no_change
        return self.stopped

    def finish(self, params, *, stopped):
        self.stopped = stopped
        self.final_params = params if self.best_params is None else self.best_params

    def result(self, objective):
        return {
            "params": self.final_params,
            "n_iter": len(self.loss_curve),
            "loss_curve": self.loss_curve,
            "validation_scores": self.validation_scores,
            "best_validation_score": self.best_score,
            "final_objective": objective(self.final_params)[0],
            "stopped": self.stopped,
        }
