"""Listwise losses: pure functions of labels, scores and the query layout.

Every loss follows the protocol of :class:`ListwiseLoss`:
``state = loss.prepare(y, qid, random_state=...)`` once per fit (``qid``
the query id of each row, or their :class:`~skrank.utils.QueryLayout`), then
``loss.value_and_grad(scores, state, queries=None)`` as often as the
optimizer needs. The state is an instance of the loss's own
:class:`LossState` subclass (e.g. :class:`ListNetState`), whose fields are
its arrays. :data:`LOSSES` maps each loss's name to its class.
"""

from ._base import ListwiseLoss, LossState, RankSamples, query_array, row_array
from ._query_random import query_uniforms
from ._boltzrank import BoltzRankLoss, BoltzRankState
from ._listnet import ListNetLoss, ListNetState
from ._logrank import LogRankLoss, LogRankState
from ._softrank import SoftRankLoss, SoftRankState

#: Registry of the listwise losses, name -> class.
LOSSES = {cls.name: cls for cls in (BoltzRankLoss, ListNetLoss, LogRankLoss, SoftRankLoss)}

__all__ = [
    "LOSSES",
    "BoltzRankLoss",
    "BoltzRankState",
    "ListNetLoss",
    "ListNetState",
    "ListwiseLoss",
    "LogRankLoss",
    "LogRankState",
    "LossState",
    "RankSamples",
    "SoftRankLoss",
    "SoftRankState",
    "query_array",
    "query_uniforms",
    "row_array",
]
