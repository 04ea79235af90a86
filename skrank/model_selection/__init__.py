"""Cross-validation and hyperparameter search that keep queries whole."""

from ._search import RankerSearchCV
from ._validation import cross_validate_ranker

__all__ = ["RankerSearchCV", "cross_validate_ranker"]
