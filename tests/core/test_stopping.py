"""Stopping a run (skrank/_core/_stopping.py): patience, max_iter, the validation score.

Through every ranker's fit: the epoch kept, the number of epochs, the
ConvergenceWarning, the lines of verbose, a validation metric that cannot
score.
"""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_array_equal
from sklearn.exceptions import ConvergenceWarning

import skrank
import skrank.rankers
from skrank import ListNetRanker, LogRankRanker
from skrank._core._stopping import UnscorableValidationError
from skrank.rankers import _base

from tests._inputs import HUGE, fast
from tests._rankers import (
    N_QUERIES,
    NDCG10,
    fast_ranker,
    fit_quietly,
    fitted_params,
    validation_rows,
)


def _patience_stop(scores, tol, n_iter_no_change):
    """Epoch (1-based) at which the patience rule stops a run with these validation scores."""
    best, no_change = -np.inf, 0
    for epoch, score in enumerate(scores, 1):
        no_change = 0 if score > best + tol else no_change + 1
        best = max(best, score)
        if no_change >= n_iter_no_change:
            return epoch
    return None


# ----------------------------------------------------------------------
# Early stopping
# (seeds whose last epoch is not the best one, so that re-scoring tells them apart)
@pytest.mark.parametrize("solver, random_state", [("adam", 0), ("lbfgs", 6)])
def test_early_stopping_keeps_the_best_epoch(ranker_class, forty_queries, solver, random_state):
    X, y, qid = forty_queries
    ranker = fast_ranker(ranker_class, solver=solver, max_iter=200, n_iter_no_change=2,
                   random_state=random_state)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)  # the patience rule stops it
        ranker.fit(X, y, qid=qid)
    scores = ranker.validation_scores_
    # one score per epoch (per L-BFGS iteration), and the run stopped exactly
    # when n_iter_no_change epochs in a row did not improve on the best by tol
    assert len(scores) == ranker.n_iter_ == len(ranker.loss_curve_)
    assert ranker.n_iter_ == _patience_stop(scores, ranker.tol, 2)
    assert ranker.best_validation_score_ == max(scores)
    assert scores[-1] < max(scores)
    # the kept weights are those of the best epoch: re-score the held-out queries
    rows = validation_rows(qid, random_state)
    assert NDCG10(ranker, X[rows], y[rows], qid=qid[rows]) == pytest.approx(
        ranker.best_validation_score_, rel=1e-12
    )


def test_without_early_stopping_the_last_epoch_is_kept(ranker_class, forty_queries, captured_runs):
    X, y, qid = forty_queries
    ranker = fit_quietly(fast_ranker(ranker_class, early_stopping=False, max_iter=5), X, y, qid=qid)
    assert ranker.validation_scores_ is None and ranker.best_validation_score_ is None
    (run,) = captured_runs["runs"]
    assert_array_equal(fitted_params(ranker), run.params)
    assert captured_runs["objective"].n_queries == N_QUERIES  # no query held out
    assert ranker.n_iter_ == 5 == len(ranker.loss_curve_)


def test_max_iter_reached_warns(ranker_class, forty_queries):
    X, y, qid = forty_queries
    ranker = fast_ranker(ranker_class, early_stopping=False, max_iter=3, tol=0.0)
    match = rf"{ranker_class.__name__}: maximum iterations \(3\) reached"
    with pytest.warns(ConvergenceWarning, match=match):
        ranker.fit(X, y, qid=qid)
    assert ranker.n_iter_ == 3 == len(ranker.loss_curve_)
    assert ranker.loss_curve_[-1] < ranker.loss_curve_[0]


def test_without_validation_the_training_loss_decides(ranker_class, forty_queries):
    """Without early stopping, patience counts epochs whose loss did not drop by tol."""
    X, y, qid = forty_queries
    ranker = fast_ranker(ranker_class, early_stopping=False, tol=1e3, n_iter_no_change=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        ranker.fit(X, y, qid=qid)
    assert ranker.n_iter_ == 1 + 3  # only the first epoch improves on +inf by tol


def test_lbfgs_converged_at_start_records_one_point(ranker_class, forty_queries):
    X, y, qid = forty_queries
    ranker = fast_ranker(ranker_class, solver="lbfgs", early_stopping=False, max_iter=5, warm_start=True)
    fit_quietly(ranker, X, y, qid=qid)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)  # converged: no warning
        ranker.set_params(tol=1e3).fit(X, y, qid=qid)  # the gradient is already below tol
    assert ranker.n_iter_ == 1 and len(ranker.loss_curve_) == 1
    assert np.isfinite(ranker.loss_curve_[0])


def test_verbose_prints_one_line_per_epoch(ranker_class, forty_queries, capsys):
    X, y, qid = forty_queries
    fit_quietly(fast_ranker(ranker_class, verbose=1, max_iter=4, n_iter_no_change=10), X, y, qid=qid)
    lines = capsys.readouterr().out.strip().splitlines()
    assert [line.split(",")[:2] for line in lines] == [
        ["Run 0", f" iteration {i}"] for i in range(1, 5)
    ]
    assert "loss = " in lines[0] and "train ndcg@10 = " in lines[0]
    assert "validation ndcg@10 = " in lines[0] and lines[0].endswith(" s")


@pytest.mark.parametrize("given", [True, False], ids=["X_val", "held-out"])
def test_nan_validation_scores_are_told_in_the_rankers_terms(forty_queries, monkeypatch, given):
    """The core raises in its own terms (the validation rows); the ranker names X_val,
    or the held-out queries of X and early_stopping."""
    X, y, qid = forty_queries

    def unscorable(*args, **kwargs):
        raise UnscorableValidationError(1e300)

    monkeypatch.setattr(_base, "fit_runs", unscorable)
    with pytest.raises(UnscorableValidationError, match=r"the validation rows hold values"):
        unscorable()
    ranker = skrank.ListNetRanker(max_iter=2, random_state=0)
    if given:
        match = (r"^The scores of the validation queries are NaN .*: X_val holds values the "
                 r"model cannot score \(its largest absolute value is 1e\+300\)\. Scale X_val")
        with pytest.raises(ValueError, match=match):
            ranker.fit(X[qid >= 10], y[qid >= 10], qid=qid[qid >= 10],
                       X_val=X[qid < 10], y_val=y[qid < 10], qid_val=qid[qid < 10])
    else:
        match = r"1e\+300\)\. They are held-out queries of X \(early_stopping=True\): scale X"
        with pytest.raises(ValueError, match=match):
            ranker.fit(X, y, qid=qid)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("value", HUGE)
def test_huge_iteration_limits_are_no_limit(value, six_queries):
    X, y, qid = six_queries
    ranker = ListNetRanker(max_iter=value, n_iter_no_change=2, tol=0.5, random_state=0)
    assert ranker.fit(X, y, qid=qid).n_iter_ <= 10  # the patience stopped it
    for solver in ("adam", "lbfgs"):
        fast(ListNetRanker, solver=solver, n_iter_no_change=value).fit(X, y, qid=qid)
    assert fast(LogRankRanker, max_iter=value).fit(X, y, qid=qid).n_iter_ < 1000
