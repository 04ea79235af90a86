"""ListNet's top-one cross-entropy loss (Cao et al., ICML 2007)."""

from dataclasses import dataclass

import numpy as np

from ._base import ListwiseLoss, LossState, row_array
from ._softmax import segment_log_softmax


@dataclass(eq=False)
class ListNetState(LossState):
    """The state of a :class:`ListNetLoss`: the target distribution of every query.

    Parameters
    ----------
    layout : QueryLayout
        As :class:`~skrank.losses.LossState`.
    target : ndarray of shape (n_samples,)
        The top-one probability :math:`P_y(j)` of every row under the
        labels, in the sorted order of ``layout``.
    query_weight, cache, prepared_by : keyword only
        As :class:`~skrank.losses.LossState`.
    """

    target: np.ndarray = row_array()


class ListNetLoss(ListwiseLoss):
    r"""Cross entropy between top-one probabilities of labels and scores.

    Notes
    -----
    With :math:`\phi = \exp` the top-one probability of document :math:`j`
    under scores :math:`s` is :math:`P_s(j) = \exp(s_j) / \sum_k \exp(s_k)`
    (§4.2); the target distribution comes from the relevance labels in the
    same way, :math:`P_y(j) = \exp(y_j) / \sum_k \exp(y_k)` (§5). The loss of
    a query is the cross entropy (eq. 2)

    .. math:: L(y, s) = -\sum_j P_y(j) \log P_s(j),

    whose gradient is :math:`\partial L / \partial s_j = P_s(j) - P_y(j)`
    (eq. 3). Both softmaxes use a per-query log-sum-exp, so any finite
    scores give a finite gradient, and a finite loss unless the loss itself
    exceeds the largest float (scores some 1e308 apart, against the target):
    then it is ``+inf``. Where :math:`\log \sum_k e^{s_k} - \sum_j P_y(j)
    s_j` overflows on the way, the loss is taken as :math:`2 \sum_j P_y(j)
    (\mathrm{lse}/2 - s_j/2)`, whose halved gaps cannot overflow. A
    single-document query has loss 0; a query
    whose labels are all equal has a uniform target and pulls its scores
    together (the paper sums over all queries, so such queries are kept).
    The loss is shift-invariant per query, so a scoring function needs no
    output bias.

    References
    ----------
    .. [1] Z. Cao, T. Qin, T.-Y. Liu, M.-F. Tsai and H. Li, "Learning to
       rank: from pairwise approach to listwise approach", ICML 2007.
    """

    name = "listnet"

    def _prepare(self, y_sorted, layout, random_state):
        _, target = segment_log_softmax(y_sorted, layout)
        return ListNetState(layout, target=target)

    def _query_losses_and_grad(self, s_sorted, state):
        layout = state.layout
        target = state.target
        lse, prob = segment_log_softmax(s_sorted, layout)
        # -sum_j P_y(j) (s_j - lse) = lse - sum_j P_y(j) s_j, as sum_j P_y(j) = 1.
        with np.errstate(over="ignore", invalid="ignore"):
            per_query = lse - layout.sum(target * s_sorted)
        if not np.isfinite(per_query).all():  # extreme scores: see Notes
            # sum_j P_y(j) (lse - s_j), from the halves of the gaps (which cannot overflow)
            half = layout.expand(lse / 2.0) - s_sorted / 2.0
            with np.errstate(over="ignore"):
                per_query = 2.0 * layout.sum(target * half)
        prob -= target
        return per_query, prob
