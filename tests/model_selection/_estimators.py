"""Estimators, splits and scores of the tests of cross_validate_ranker and the searches."""

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.linear_model import Ridge

from tests._folds import GroupKFold  # the folds of skrank's integer cv


#: The queries of ``forty_noisy_queries``.
N_QUERIES = 40
ALPHAS = [0.01, 1000.0]


class QidRecorder(RegressorMixin, BaseEstimator):
    """Ridge-like least squares whose ``fit`` takes ``qid`` and records it."""

    def __init__(self, alpha=1.0):
        self.alpha = alpha

    def fit(self, X, y, *, qid=None):
        self.fit_qid_ = None if qid is None else np.array(qid, copy=True)
        self.ridge_ = Ridge(alpha=self.alpha).fit(X, y)
        return self

    def predict(self, X):
        return self.ridge_.predict(X)


class FailsWithQuery(RegressorMixin, BaseEstimator):
    """Raises in ``fit`` whenever query ``bad_qid`` is in the training rows."""

    def __init__(self, bad_qid=0):
        self.bad_qid = bad_qid

    def fit(self, X, y, *, qid):
        if np.any(np.asarray(qid) == self.bad_qid):
            raise RuntimeError(f"query {self.bad_qid} in training")
        self.ridge_ = Ridge().fit(X, y)
        return self

    def predict(self, X):
        return self.ridge_.predict(X)


def group_splits(X, y, qid, n_splits=5):
    """The (train, test) splits of GroupKFold over the queries."""
    return list(GroupKFold(n_splits=n_splits).split(X, y, groups=qid))


def manual_scores(X, y, qid, splits, metric, *, alpha=1.0, side="test", **kwargs):
    """``metric`` of Ridge(alpha) on one side of each split."""
    scores = []
    for train, test in splits:
        rows = test if side == "test" else train
        pred = Ridge(alpha=alpha).fit(X[train], y[train]).predict(X[rows])
        scores.append(metric(y[rows], pred, qid=qid[rows], **kwargs))
    return np.array(scores)
