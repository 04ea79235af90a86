"""Cross-validation and hyperparameter search that keep queries whole, and the LETOR protocol."""

from ._letor_protocol import LetorProtocolResult, letor_protocol, registered_rankers
from ._search import RankerRandomizedSearchCV, RankerSearchCV
from ._validation import cross_validate_ranker

__all__ = [
    "LetorProtocolResult",
    "RankerRandomizedSearchCV",
    "RankerSearchCV",
    "cross_validate_ranker",
    "letor_protocol",
    "registered_rankers",
]
