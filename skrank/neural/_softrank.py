"""SoftRankRanker: SoftRank's smoothed NDCG (Taylor et al., WSDM 2008)."""

from numbers import Integral, Real

from ..losses import SoftRankLoss
from ..losses._softrank import RANK_DISTRIBUTIONS
from ..utils._sklearn_compat import Interval, StrOptions
from ._base import SHARED_ATTRIBUTES, SHARED_PARAMETERS, BaseNeuralRanker


class SoftRankRanker(BaseNeuralRanker):
    __doc__ = r"""SoftRank: listwise ranking by maximising a smoothed NDCG.

    Every score is treated as the mean of a Gaussian, which turns the ranks
    into distributions and NDCG into a smooth function of the scores
    (SoftNDCG); a scoring function :math:`f` (linear, or a small neural
    network) is trained to maximise it, averaged over queries.

    Parameters
    ----------
    sigma : float, default=0.1
        Standard deviation :math:`\sigma` of the Gaussian smoothing of the
        scores (see Notes for how it interacts with the scale of the scores
        and ``alpha``, and for how the default was chosen).
    rank_distribution : {"binomial", "normal", "hybrid"}, default="binomial"
        ``"binomial"``: the exact Rank-Binomial recursion,
        :math:`O(N^3)` per query of :math:`N` documents. ``"normal"``: its
        normal approximation, :math:`O(N^2)`. ``"hybrid"``: exact for the
        ``n_exact`` top and ``n_exact`` bottom documents of the current
        ranking of each query, normal for the rest.
    n_exact : int, default=10
        Documents at each end of the ranking with exact distributions when
        ``rank_distribution="hybrid"``.
    sinkhorn_iterations : int, default=0
        Sinkhorn iterations making the matrix of rank distributions closer
        to doubly stochastic (§3.2); each scales every rank column, then every
        document row, to sum 1.
    discount_alpha : float, default=1.0
        Training discount, from -1 (super-linear :math:`1 - (r/N)^2`) through
        0 (linear :math:`1 - r/N`) to 1 (NDCG's :math:`1/\log_2(2 + r)`);
        see :class:`~skrank.losses.SoftRankLoss`. The metric used for
        early stopping and :meth:`score` does not change.
    truncation : int, default=None
        Train on SoftNDCG@R: discount 0 from rank ``truncation`` on. None
        uses every rank, as the paper.
    """ + SHARED_PARAMETERS + r"""

    Attributes
    ----------
    """ + SHARED_ATTRIBUTES + r"""

    See Also
    --------
    skrank.losses.SoftRankLoss : The loss on its own, and the rank
        distributions (:meth:`~skrank.losses.SoftRankLoss.rank_distributions`).
    ListNetRanker : Listwise ranking with top-one probabilities.

    Notes
    -----
    The score of document :math:`j` is smoothed,
    :math:`s_j \sim \mathcal N(f(x_j), \sigma^2)` (eq. 8), so that document
    :math:`i` beats :math:`j` with probability
    :math:`\pi_{ij} = \Phi((f(x_i) - f(x_j)) / (\sqrt 2 \sigma))` (eq. 9); the
    rank of each document is then a sum of independent Bernoulli contests,
    whose distribution :math:`p_j(r)` the Rank-Binomial recursion computes
    exactly (eq. 11-12). With gains :math:`g_j = 2^{l_j} - 1` and discount
    :math:`D(r) = 1/\log_2(2 + r)` (ranks from 0), the objective is

    .. math:: \frac{1}{|Q|} \sum_{q \in Q} \Big(1 - G_{\max,q}^{-1}
              \sum_{j \in q} g_j \sum_r D(r)\, p_j(r)\Big)
              + \frac{\alpha}{2} \|W\|^2,

    the mean over queries of one minus SoftNDCG (eq. 13-15) plus an L2
    penalty; queries without a relevant document contribute 0. Its gradient
    (eq. 16-23) is computed in reverse mode through the recursion,
    :math:`O(N^3)` per query (see :class:`~skrank.losses.SoftRankLoss` for
    the details, the normal approximation, Sinkhorn scaling and the
    discount family).

    *Scale and smoothing.* As in the paper (§3.5), :math:`\sigma` is fixed
    and the scale of :math:`f` is free: small initial weights make every
    contest close to a coin toss (heavy smoothing), and training sharpens
    the rank distributions by growing the scores, an automatic annealing.
    The L2 penalty ``alpha`` bounds that growth, so it also sets how much
    smoothing remains at the end: a larger ``alpha`` keeps SoftNDCG smoother
    and further from the true NDCG, a very small one lets it approach the
    piecewise-constant NDCG with vanishing gradients. Only the ratio of the
    scale of :math:`f` to ``sigma`` matters, so ``sigma`` and ``alpha``
    should be tuned together (or ``sigma`` left at its default).

    The paper trains a two-layer network of 3-10 hidden units with SGD on
    one query at a time and multiplies the step size by 0.8 whenever the
    training NDCG does not improve (§4.5): ``hidden_layer_sizes=(h,),
    solver="sgd", batch_size=1, learning_rate_decay=0.8``. The other defaults
    are the shared ones of the neural rankers (Adam on mini-batches of 8
    queries, early stopping on NDCG@10 of held-out queries). The default
    ``sigma=0.1`` is a compromise measured on two kinds of features. On the
    five OHSUMED folds of LETOR 3.0 (features scaled to [0, 1] per query,
    linear model, seed 0, early stopping on vali, mean test NDCG@10 with the
    LETOR convention) smaller was better: 0.400 for ``sigma=1``, 0.452 for
    0.1, 0.463 for 0.03, 0.460 for 0.01; from small initial weights a small
    ``sigma`` anneals fast, while ``sigma=1`` left the contests nearly coin
    tosses for the epochs that early stopping allowed. On standardised
    features (:func:`~skrank.datasets.make_ranking`, the bundled LightGBM
    sample) 0.1 to 1 did equally well and 0.03 stopped early on a poor
    model. Tune ``sigma`` with the rest for your features.

    The paper found a linear training discount (``discount_alpha`` near 0)
    to generalise best on web data. On OHSUMED the NDCG discount did: mean
    vali NDCG@10 over the five folds (default settings, early stopping on
    vali) was 0.456, 0.455, 0.450, 0.460 and 0.467 for ``discount_alpha`` =
    -1, -0.5, 0, 0.5 and 1, within a fold-to-fold spread of about 0.05; the
    default stays 1.

    References
    ----------
    .. [1] M. Taylor, J. Guiver, S. Robertson and T. Minka, "SoftRank:
       optimizing non-smooth rank metrics", WSDM 2008, pp. 77-86.

    Examples
    --------
    >>> from skrank import SoftRankRanker
    >>> from skrank.datasets import make_ranking
    >>> X, y, qid = make_ranking(n_queries=30, n_docs=10, random_state=0)
    >>> ranker = SoftRankRanker(random_state=0).fit(X, y, qid=qid)
    >>> ranker.predict(X[:3]).shape
    (3,)
    >>> round(ranker.score(X, y, qid=qid), 2) > 0.8
    True
    """

    _parameter_constraints = {
        **BaseNeuralRanker._parameter_constraints,
        "sigma": [Interval(Real, 0, None, closed="neither")],
        "rank_distribution": [StrOptions(set(RANK_DISTRIBUTIONS))],
        "n_exact": [Interval(Integral, 0, None, closed="left")],
        "sinkhorn_iterations": [Interval(Integral, 0, None, closed="left")],
        "discount_alpha": [Interval(Real, -1, 1, closed="both")],
        "truncation": [None, Interval(Integral, 1, None, closed="left")],
    }

    def __init__(
        self,
        *,
        sigma=0.1,
        rank_distribution="binomial",
        n_exact=10,
        sinkhorn_iterations=0,
        discount_alpha=1.0,
        truncation=None,
        hidden_layer_sizes=(),
        activation="tanh",
        solver="adam",
        alpha=1e-4,
        learning_rate_init=1e-2,
        batch_size=8,
        max_iter=200,
        tol=1e-4,
        early_stopping=True,
        validation_fraction=0.2,
        validation_scoring="ndcg@10",
        n_iter_no_change=10,
        learning_rate_decay=1.0,
        momentum=0.9,
        n_restarts=1,
        n_jobs=None,
        random_state=None,
        verbose=0,
        warm_start=False,
    ):
        super().__init__(
            hidden_layer_sizes=hidden_layer_sizes,
            activation=activation,
            solver=solver,
            alpha=alpha,
            learning_rate_init=learning_rate_init,
            batch_size=batch_size,
            max_iter=max_iter,
            tol=tol,
            early_stopping=early_stopping,
            validation_fraction=validation_fraction,
            validation_scoring=validation_scoring,
            n_iter_no_change=n_iter_no_change,
            learning_rate_decay=learning_rate_decay,
            momentum=momentum,
            n_restarts=n_restarts,
            n_jobs=n_jobs,
            random_state=random_state,
            verbose=verbose,
            warm_start=warm_start,
        )
        self.sigma = sigma
        self.rank_distribution = rank_distribution
        self.n_exact = n_exact
        self.sinkhorn_iterations = sinkhorn_iterations
        self.discount_alpha = discount_alpha
        self.truncation = truncation

    def _make_loss(self):
        return SoftRankLoss(
            self.sigma,
            rank_distribution=self.rank_distribution,
            n_exact=self.n_exact,
            sinkhorn_iterations=self.sinkhorn_iterations,
            discount_alpha=self.discount_alpha,
            truncation=self.truncation,
        )
