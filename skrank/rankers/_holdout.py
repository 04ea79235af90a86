"""The queries a fit holds out, and the validation set early stopping monitors.

:func:`first_draws` draws a fit's loss seed and the queries held out for
early stopping (:func:`_split_queries`), and :func:`_query_rows` gives the
rows of some queries; :func:`validation_given` checks that a validation
set (``X_val``, ``y_val``, ``qid_val``) is given whole and with early
stopping; :func:`_validation_scorer` is the scorer early stopping
monitors, :func:`_has_signal` whether it can tell a good ranking from a
bad one on a set of labels, and :func:`warn_no_signal` the warning when it
cannot. Shared by :class:`~skrank.rankers._base.BaseRanker`, the
gradient-boosted baselines and ``fit_stream``.
"""

import warnings

import numpy as np

from ..metrics._scorer import get_ranking_scorer


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
