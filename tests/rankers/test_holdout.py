"""The held-out queries and the validation set (skrank/rankers/_holdout.py).

The queries held out for early stopping, an explicit validation set, and a
validation set without signal (the training loss then decides).
"""

import numpy as np
import pytest

from skrank import ListNetRanker, get_ranking_scorer, make_ranking_scorer

from tests._rankers import N_QUERIES, NDCG10, fast_ranker, requires, validation_rows


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_single_query_early_stopping_warns_and_uses_training_loss(ranker_class, forty_queries):
    requires(ranker_class, "early_stopping")
    X, y, qid = forty_queries
    X, y = X[qid < 3], y[qid < 3]  # qid=None: one query of 30 documents
    with pytest.warns(UserWarning, match="needs at least 2 queries; got 1"):
        ranker = fast_ranker(ranker_class, max_iter=5).fit(X, y)
    assert ranker.validation_scores_ is None and ranker.best_validation_score_ is None


def test_scoring_names_the_monitored_metric(ranker_class, forty_queries):
    X, y, qid = forty_queries
    ranker = fast_ranker(ranker_class, scoring="map").fit(X, y, qid=qid)
    rows = validation_rows(qid)
    assert ranker.best_validation_score_ == pytest.approx(
        get_ranking_scorer("map")(ranker, X[rows], y[rows], qid=qid[rows]), rel=1e-12
    )
    assert ranker.best_validation_score_ != pytest.approx(NDCG10(ranker, X[rows], y[rows],
                                                                 qid=qid[rows]))


# ----------------------------------------------------------------------
# An explicit validation set
def test_explicit_validation_set(ranker_class, forty_queries, other_queries, captured_runs):
    """X_val replaces the query holdout: all queries of X train, validation_fraction is ignored."""
    X, y, qid = forty_queries
    X_val, y_val, qid_val = other_queries
    ranker = fast_ranker(ranker_class, validation_fraction=0.5)
    ranker.fit(X, y, qid=qid, X_val=X_val, y_val=y_val, qid_val=qid_val)
    assert captured_runs["objective"].n_queries == N_QUERIES
    assert captured_runs["objective"].state.layout.n_samples == len(y)
    assert len(ranker.validation_scores_) == ranker.n_iter_
    assert ranker.best_validation_score_ == max(ranker.validation_scores_)
    assert ranker.best_validation_score_ == pytest.approx(
        NDCG10(ranker, X_val, y_val, qid=qid_val), rel=1e-12
    )


def _nan_metric(y_true, y_score, *, qid, k=None):
    return float("nan")


@pytest.mark.parametrize("case", ["no_relevant", "equal_labels", "single_documents", "nan"])
def test_early_stopping_without_signal_falls_back_to_training_loss(thirty_queries, case):
    X, y, qid = thirty_queries
    y_val, qid_val, scoring = y.copy(), qid.copy(), "ndcg@10"
    if case == "no_relevant":
        y_val[:] = 0
    elif case == "equal_labels":
        y_val[:] = 2
    elif case == "single_documents":
        qid_val = np.arange(len(y))
    else:
        scoring = make_ranking_scorer(_nan_metric)
    params = dict(early_stopping=True, scoring=scoring, n_iter_no_change=2, max_iter=60,
                  random_state=0)
    with pytest.warns(UserWarning, match="training loss decides when to stop"):
        ranker = ListNetRanker(**params).fit(X, y, qid=qid, X_val=X, y_val=y_val,
                                             qid_val=qid_val)
    reference = ListNetRanker(**{**params, "early_stopping": False}).fit(X, y, qid=qid)
    # the same fit as without early stopping, not the first epoch's weights
    np.testing.assert_array_equal(ranker.coef_, reference.coef_)
    assert ranker.n_iter_ == reference.n_iter_ > 3
    assert ranker.best_validation_score_ is None


def test_early_stopping_held_out_without_signal_trains_on_all_queries(thirty_queries):
    X, y, qid = thirty_queries
    scoring = make_ranking_scorer(_nan_metric)
    with pytest.warns(UserWarning, match="held-out queries.*on all queries"):
        ranker = ListNetRanker(early_stopping=True, scoring=scoring, n_iter_no_change=2,
                               max_iter=60, random_state=0).fit(X, y, qid=qid)
    assert ranker.best_validation_score_ is None
    assert ranker.n_iter_ > 3
