"""Gradient-boosted trees of LightGBM or XGBoost: the optional baselines of ``compare``.

Not part of the public API and not a dependency: ``python -m skrank
compare`` adds a LightGBM (lambdarank) and an XGBoost (rank:ndcg) row when
the package is installed (:mod:`skrank.rankers._registry`), so that its table
shows what boosted trees reach on the same queries. The library is imported
when a model is fitted, never when skrank is imported.
"""

import importlib
import inspect
import warnings

import numpy as np
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from ..metrics._scorer import get_ranking_scorer
from ..utils._qid import check_qid, resolve_qid
from ..utils._query_layout import QueryLayout
from ..utils._sklearn_compat import Float, Integer, StrOptions, _fit_context, validate_data
from ..utils._validation import check_numeric, keep_fitted_state_on_error
from ._base import FLOAT_DTYPES, BaseRanker
from ._holdout import _has_signal, _query_rows, first_draws
from ._params import constraints

#: The row of ``compare`` of each library.
ROW_NAMES = {"lightgbm": "LGBMRanker", "xgboost": "XGBRanker"}

#: The largest label both objectives take with their default exponential gain
#: (LightGBM's ``label_gain`` has 31 entries, 2**i - 1 for i in 0 .. 30;
#: XGBoost's ``ndcg_exp_gain`` refuses labels above 31).
MAX_LABEL = 30


class GBDTRanker(BaseRanker):
    """Gradient-boosted ranking trees of LightGBM or XGBoost, with early stopping on queries.

    A baseline for ``python -m skrank compare``: LightGBM's ``LGBMRanker``
    (objective ``"lambdarank"``) or XGBoost's ``XGBRanker`` (objective
    ``"rank:ndcg"``) behind skrank's ``fit(X, y, *, qid, X_val, y_val,
    qid_val)``, holding out the same queries for early stopping as skrank's
    rankers. The library is not a dependency of skrank; it is imported by
    ``fit``.

    Parameters
    ----------
    library : {"lightgbm", "xgboost"}, default="lightgbm"
        The library that grows the trees.
    n_estimators : int, default=500
        Maximum number of boosting rounds (trees); early stopping usually
        keeps far fewer.
    learning_rate : float, default=0.1
        Shrinkage of each tree.
    early_stopping : bool, default=True
        Monitor the library's NDCG@10 on held-out queries after each round,
        stop after ``n_iter_no_change`` rounds without improvement and keep
        the trees of the best round. The held-out queries are ``X_val`` when
        given to ``fit``, else ``validation_fraction`` of the queries of
        ``X``, drawn from ``random_state`` exactly as a skrank ranker of the
        same ``random_state`` and ``validation_fraction`` draws them. With
        fewer than two queries, or held-out labels that cannot tell a
        ranking from another, a warning is issued and all
        ``n_estimators`` rounds are grown.
    validation_fraction : float, default=0.2
        Fraction of the queries held out for early stopping (at least one
        query, and at least one query left for training).
    n_iter_no_change : int, default=20
        Patience, in boosting rounds.
    n_jobs : int, default=1
        Threads of the library (None: the library's default). One thread by
        default, so that fit seconds compare with skrank's rankers.
    random_state : int, RandomState instance or None, default=None
        Seed of the validation split and of the library. Pass an int for
        reproducible fits.

    Attributes
    ----------
    model_ : lightgbm.LGBMRanker or xgboost.XGBRanker
        The fitted model of the library.
    n_iter_ : int
        Number of trees used by ``predict`` (the best round with early
        stopping).
    best_validation_score_ : float or None
        The library's NDCG@10 on the held-out queries at the best round;
        None without early stopping.
    n_features_in_ : int
        Number of features seen during fit.

    See Also
    --------
    skrank.ListNetRanker : A listwise ranker with the same early stopping.

    Notes
    -----
    The rows are stably sorted by query inside ``fit`` (LightGBM takes the
    sizes of groups of contiguous rows, XGBoost sorted query ids), so ``X``
    may hold the queries in any order; ``predict`` scores each row on its
    own and returns the scores in the caller's row order.

    Early stopping monitors the library's own NDCG@10 (LightGBM's
    ``ndcg@10`` with ``eval_at=[10]``, XGBoost's ``eval_metric="ndcg@10"``),
    not a skrank scorer. Both use the gain :math:`2^{y} - 1` and the
    discount :math:`1 / \\log_2(1 + i)`, as skrank's default convention, but
    score a query without a relevant document 1 where skrank scores it 0,
    and break tied scores in an order of their own where skrank averages
    over the tied orders (convention ``"skrank"``) or keeps the file's order
    (``"letor"``, whose discount also differs). So the round kept may differ
    from the one skrank's NDCG@10 would choose.

    The labels must be integers in ``0 .. 30``: the exponential gain of
    both objectives is defined for these.
    """

    _parameter_constraints = {
        "library": [StrOptions(set(ROW_NAMES))],
        "n_estimators": [Integer(1, None, closed="left")],
        "learning_rate": [Float(0, None, closed="neither")],
        **constraints("early_stopping", "validation_fraction", "n_iter_no_change",
                      "n_jobs", "random_state"),
    }

    def __init__(self, *, library="lightgbm", n_estimators=500, learning_rate=0.1,
                 early_stopping=True, validation_fraction=0.2, n_iter_no_change=20,
                 n_jobs=1, random_state=None):
        self.library = library
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.n_jobs = n_jobs
        self.random_state = random_state

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, *, qid=None, X_val=None, y_val=None, qid_val=None):
        """Fit the trees, with early stopping on held-out queries.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Feature rows, the queries in any order.
        y : array-like of shape (n_samples,)
            Relevance labels: integers in ``0 .. 30``.
        qid : array-like of shape (n_samples,), default=None
            Query id of each row (integers or strings, rows in any order).
            None means all rows belong to one query.
        X_val : {array-like, sparse matrix} of shape (n_val_samples, n_features), \
                default=None
            Validation rows for early stopping (e.g. LETOR's ``vali``
            split). When given, all queries of ``X`` are used for training
            and ``validation_fraction`` is ignored. Needs
            ``early_stopping=True``.
        y_val : array-like of shape (n_val_samples,), default=None
            Labels of ``X_val``; required with it.
        qid_val : array-like of shape (n_val_samples,), default=None
            Query ids of ``X_val``; None means one query (with more than 100
            rows it warns, as ``qid=None`` does).

        Returns
        -------
        self : object
            The fitted ranker.
        """
        with keep_fitted_state_on_error(self):
            return self._fit_trees(X, y, qid, X_val, y_val, qid_val)

    def _fit_trees(self, X, y, qid, X_val, y_val, qid_val):
        if y is not None:  # (None: scikit-learn's own message)
            check_numeric(y, "y")
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=FLOAT_DTYPES,
                             y_numeric=True)
        layout = QueryLayout(resolve_qid(qid, X.shape[0], caller=f"{type(self).__name__}.fit",
                                         routing_hint=True))
        self._check_integer_labels(y, "y")
        self._check_labels(y, layout)
        fraction = self.validation_fraction if self.early_stopping else None
        validation = self._check_validation_set(fraction, X_val, y_val, qid_val)
        if validation is not None:
            self._check_integer_labels(validation[1], "y_val")
        # the draws of a skrank ranker's fit: the same held-out queries
        seed, train, val = first_draws(layout, fraction if validation is None else None,
                                       check_random_state(self.random_state))
        if val is not None:
            validation = (X, y, layout, val)
        elif validation is not None:
            X_v, y_v, layout_v = validation
            validation = (X_v, y_v, layout_v, np.arange(layout_v.n_queries))
        if validation is not None:
            _, y_v, layout_v, queries = validation
            rows, sub = _query_rows(layout_v, queries)
            if not _has_signal(get_ranking_scorer("ndcg@10"), _take(y_v, rows), sub,
                               "y" if val is not None else "y_val"):
                warnings.warn(
                    f"Early stopping would monitor NDCG@10 on "
                    f"{'the held-out queries' if val is not None else 'X_val'}, but no "
                    "query there has documents of different relevance, so it could only "
                    f"stop at random. Growing all n_estimators={self.n_estimators} trees"
                    + (" on all queries." if val is not None else "."),
                    UserWarning,
                )
                validation, train = None, np.arange(layout.n_queries)
        fit_set = _grouped(X, y, layout, train)
        eval_set = None if validation is None else _grouped(*validation)
        fit = _fit_lightgbm if self.library == "lightgbm" else _fit_xgboost
        self.model_, self.n_iter_, self.best_validation_score_ = fit(
            self, fit_set, eval_set, seed)
        self._n_fit_queries = layout.n_queries
        return self

    def _check_integer_labels(self, y, name):
        """Raise ValueError unless ``y`` holds integers in ``0 .. MAX_LABEL``."""
        problem = _label_problem(y, name)
        if problem is not None:
            raise ValueError(
                f"{type(self).__name__}(library={self.library!r}) ({ROW_NAMES[self.library]}) "
                f"needs integer relevance labels in 0 .. {MAX_LABEL} for its exponential "
                f"gain; {problem}."
            )

    def predict(self, X, *, qid=None):
        """Ranking scores (larger ranks higher), in the rows' order.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Feature rows.
        qid : array-like of shape (n_samples,), default=None
            Query id of each row; only checked against ``X`` (each row is
            scored on its own).

        Returns
        -------
        scores : ndarray of shape (n_samples,)
            Score of each row (float64); with early stopping, the trees up to
            the best round score it.
        """
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", dtype=FLOAT_DTYPES, reset=False)
        if qid is not None:
            check_qid(qid, X.shape[0])
        return np.asarray(self.model_.predict(X), dtype=np.float64)

    def _is_fitted(self):
        return hasattr(self, "model_")


def _label_problem(y, name):
    """What is wrong with the labels ``y`` (named ``name``) for both objectives, or None."""
    y = np.asarray(y, dtype=np.float64)
    bad = ~((y >= 0) & (y <= MAX_LABEL) & (y == np.round(y)))  # NaN is bad too
    if not bad.any():
        return None
    return (f"{name} holds {int(bad.sum())} other label(s), e.g. "
            f"{y[np.flatnonzero(bad)[0]].item()!r}")


def unusable(library, labels):
    """Why ``compare`` cannot run the trees of ``library`` on ``labels``, or None.

    Called by ``compare`` before its first fit, so that a row it cannot run
    is left out with a note instead of failing the whole comparison after
    the other rows ran: the package is imported here (a package that
    :func:`importlib.util.find_spec` finds may still fail to load, e.g. a
    missing OpenMP library is an OSError), and the labels of each
    ``(name, y)`` of ``labels`` must be integers in ``0 .. MAX_LABEL``.
    """
    try:
        importlib.import_module(library)
    except (ImportError, OSError) as exc:
        return f"{library} is installed but cannot be imported ({type(exc).__name__}: {exc})"
    for name, y in labels:
        problem = _label_problem(y, name)
        if problem is not None:
            return (f"its objective needs integer relevance labels in 0 .. {MAX_LABEL}; "
                    f"{problem}")
    return None


def _take(a, rows):
    return a if rows is None else a[rows]


def _grouped(X, y, layout, queries):
    """``(X, y, sizes)`` of some queries, their rows stably sorted by query."""
    rows, sub = _query_rows(layout, queries)
    return _take(X, rows), _take(y, rows), sub.sizes


def _fit_lightgbm(est, fit_set, eval_set, seed):
    """LightGBM's lambdarank; returns ``(model, n_trees, best NDCG@10 or None)``."""
    import lightgbm  # noqa: PLC0415 (optional, imported by fit only)

    model = lightgbm.LGBMRanker(
        objective="lambdarank", metric="ndcg", n_estimators=est.n_estimators,
        learning_rate=est.learning_rate, n_jobs=est.n_jobs, random_state=seed,
        deterministic=True, force_row_wise=True, verbose=-1,
    )
    X, y, sizes = fit_set
    kwargs = {}
    if eval_set is not None:
        X_v, y_v, sizes_v = eval_set
        # LightGBM 4.7 replaced eval_set (deprecated) by eval_X and eval_y
        if "eval_X" in inspect.signature(model.fit).parameters:
            kwargs = dict(eval_X=(X_v,), eval_y=(y_v,))
        else:
            kwargs = dict(eval_set=[(X_v, y_v)])
        kwargs.update(eval_group=[sizes_v], eval_at=[10],
                      callbacks=[lightgbm.early_stopping(est.n_iter_no_change, verbose=False)])
    model.fit(X, y, group=sizes, **kwargs)
    if eval_set is None:
        return model, model.n_estimators_, None
    return model, model.best_iteration_, float(model.best_score_["valid_0"]["ndcg@10"])


def _fit_xgboost(est, fit_set, eval_set, seed):
    """XGBoost's rank:ndcg; returns ``(model, n_trees, best NDCG@10 or None)``."""
    import xgboost  # noqa: PLC0415 (optional, imported by fit only)

    model = xgboost.XGBRanker(
        objective="rank:ndcg", eval_metric="ndcg@10", tree_method="hist",
        n_estimators=est.n_estimators, learning_rate=est.learning_rate, n_jobs=est.n_jobs,
        random_state=seed,
        early_stopping_rounds=None if eval_set is None else est.n_iter_no_change,
    )
    X, y, sizes = fit_set
    kwargs = {}
    if eval_set is not None:
        X_v, y_v, sizes_v = eval_set
        kwargs = dict(eval_set=[(X_v, y_v)], eval_qid=[_sorted_qid(sizes_v)])
    model.fit(X, y, qid=_sorted_qid(sizes), verbose=False, **kwargs)
    if eval_set is None:
        return model, est.n_estimators, None
    return model, model.best_iteration + 1, float(model.best_score)


def _sorted_qid(sizes):
    """Query numbers 0, 1, ... of rows grouped by query, ``sizes[i]`` rows each."""
    return np.repeat(np.arange(len(sizes)), sizes)
