"""scikit-learn's GroupKFold with the folds of skrank's integer ``cv``.

Tests that compare skrank's tools (``cv=4``) with scikit-learn's
(``GroupKFold(4)``) import ``GroupKFold`` from here (``from tests._folds import
GroupKFold``). scikit-learn releases that order queries of equal size with
numpy's unstable sort (1.6 among them) deal them in an order that depends on
the CPU; skrank deals them in a fixed order
(:func:`skrank.model_selection._common.group_folds`, equal to a stable
GroupKFold, tested in tests/model_selection/test_common.py), so the two sides compared
must use the same folds.
"""

from sklearn.model_selection import GroupKFold as _SklearnGroupKFold

from skrank.model_selection._common import group_folds
from skrank.utils import QueryLayout


class GroupKFold(_SklearnGroupKFold):
    """``GroupKFold`` whose queries of equal size are dealt as skrank deals them."""

    def split(self, X, y=None, groups=None):
        yield from group_folds(QueryLayout(groups), self.n_splits)
