"""ListNetRanker: the ListNet listwise ranker (Cao et al., ICML 2007)."""

from ..losses import ListNetLoss
from ._base import SHARED_ATTRIBUTES, SHARED_PARAMETERS, BaseNeuralRanker


class ListNetRanker(BaseNeuralRanker):
    __doc__ = r"""ListNet: listwise ranking with top-one probabilities.

    Learns a scoring function :math:`f` (linear, or a small neural network)
    by minimising, over queries, the cross entropy between the top-one
    probability distributions given by the relevance labels and by the
    scores.

    Parameters
    ----------
    """ + SHARED_PARAMETERS + r"""

    Attributes
    ----------
    """ + SHARED_ATTRIBUTES + r"""

    See Also
    --------
    skrank.losses.ListNetLoss : The loss on its own.
    skrank.model_selection.RankerSearchCV : Grid search over queries.

    Notes
    -----
    With :math:`\phi = \exp`, the top-one probability of document :math:`j`
    of a query under scores :math:`s_j = f(x_j)` is (§4.2)

    .. math:: P_s(j) = \frac{\exp(s_j)}{\sum_k \exp(s_k)},

    and the target distribution :math:`P_y` is the same softmax of the
    labels (§5). The objective is the mean over queries of the cross entropy
    (eq. 2) plus an L2 penalty,

    .. math:: \frac{1}{|Q|} \sum_{q \in Q} \Big(-\sum_{j \in q} P_y(j)
              \log P_s(j)\Big) + \frac{\alpha}{2} \|W\|^2,

    whose gradient with respect to the scores is
    :math:`(P_s(j) - P_y(j)) / |Q|` (eq. 3), back-propagated through
    :math:`f`. The paper uses a linear :math:`f` trained by gradient
    descent; ``hidden_layer_sizes=(h,)`` gives the neural-network variant.
    Softmaxes are computed with a per-query log-sum-exp, so extreme scores
    stay finite. The paper averages nothing; we average over queries so that
    the step size and ``alpha`` do not depend on the number of queries.

    Defaults (Adam, step 0.01, 8 queries per batch, early stopping on
    NDCG@10 of 20 % of the queries) come from a sweep on the five OHSUMED
    folds of LETOR 3.0 (linear model, seed 0, mean test NDCG@10 with the
    LETOR convention): step 0.01 gave 0.449 against 0.441 for 0.001, and 8
    queries per batch 0.449 against 0.425 for 64. On such small data sets
    the validation metric is noisy; ``n_restarts`` (best of several
    initialisations on the validation queries) makes results steadier.

    References
    ----------
    .. [1] Z. Cao, T. Qin, T.-Y. Liu, M.-F. Tsai and H. Li, "Learning to
       rank: from pairwise approach to listwise approach", ICML 2007,
       pp. 129-136.

    Examples
    --------
    >>> from skrank import ListNetRanker
    >>> from skrank.datasets import make_ranking
    >>> X, y, qid = make_ranking(n_queries=30, n_docs=10, random_state=0)
    >>> ranker = ListNetRanker(random_state=0).fit(X, y, qid=qid)
    >>> ranker.predict(X[:3]).shape
    (3,)
    >>> round(ranker.score(X, y, qid=qid), 2) > 0.8
    True
    """

    def _make_loss(self):
        return ListNetLoss()
