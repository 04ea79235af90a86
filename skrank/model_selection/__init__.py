"""Cross-validation and hyperparameter search that keep queries whole."""

from ._search import RankerRandomizedSearchCV, RankerSearchCV
from ._validation import cross_validate_ranker

__all__ = ["RankerRandomizedSearchCV", "RankerSearchCV", "cross_validate_ranker"]
