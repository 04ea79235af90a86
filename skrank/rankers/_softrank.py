"""SoftRankRanker: SoftRank's smoothed NDCG (Taylor et al., WSDM 2008)."""

import inspect

from ..losses import SoftRankLoss
from ._neural import NeuralRanker
from ._params import DEFAULTS, fill_parameters

_LOSS_DEFAULTS = {
    name: p.default for name, p in inspect.signature(SoftRankLoss).parameters.items()
}


@fill_parameters
class SoftRankRanker(NeuralRanker):
    r"""SoftRank: listwise ranking by maximising a smoothed NDCG.

    Every score is treated as the mean of a Gaussian, which turns the ranks
    into distributions and NDCG into a smooth function of the scores
    (SoftNDCG); a scoring function :math:`f` (linear, or a small neural
    network) is trained to maximise it, averaged over queries.

    Parameters
    ----------
    sigma : float, default=0.1
        Standard deviation :math:`\sigma` of the Gaussian smoothing of the
        scores (see Notes for how it interacts with the scale of the scores
        and ``alpha``): a normal float up to about 1.5e307 (beyond either
        end the loss's arithmetic leaves the floats).
    rank_distribution : {"normal", "binomial", "hybrid"}, default="normal"
        ``"normal"``: the normal approximation of the rank distributions
        (§3.6), :math:`O(N^2)` per query of :math:`N` documents.
        ``"binomial"``: the exact Rank-Binomial recursion, :math:`O(N^3)`
        (a query of more than 500 documents warns). ``"hybrid"``: exact for
        the ``n_exact`` top and ``n_exact`` bottom documents of the current
        ranking of each query, normal for the rest. The default is the one
        that trained as well as the exact recursion, several times faster
        (see Notes).
    n_exact : int, default=10
        Documents at each end of the ranking with exact distributions when
        ``rank_distribution="hybrid"``.
    sinkhorn_iterations : int, default=0
        Sinkhorn iterations making the matrix of rank distributions closer
        to doubly stochastic (§3.2); each scales every rank column, then every
        document row, to sum 1. At most 10,000: there is no tolerance, every
        iteration runs at every evaluation of the loss, and more would take
        hours rather than change the model.
    discount_shape : float, default=1.0
        Shape of the training discount, from -1 (super-linear
        :math:`1 - (r/N)^2`) through 0 (linear :math:`1 - r/N`) to 1 (NDCG's
        :math:`1/\log_2(2 + r)`); see :class:`~skrank.losses.SoftRankLoss`.
        The metric used for early stopping and :meth:`score` does not change.
        Unrelated to the L2 penalty ``alpha``.
    truncation : int, default=None
        Train on SoftNDCG@R: discount 0 from rank ``truncation`` on, and
        only the first ``truncation`` ranks computed (cheaper by about
        ``N / truncation`` for ``"binomial"``; not with Sinkhorn scaling,
        which needs every rank). None uses every rank, as the paper. A
        ``truncation`` well below half the query length can fail to train
        from small initial weights (see Notes).
    %(network_parameters)s
    %(solver_parameters)s
    %(early_stopping_parameters)s
    %(restart_parameters)s

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        Weights of the linear model (only with ``hidden_layer_sizes=()``).
    coefs_ : list of ndarray
        Weight matrices of the MLP (only with hidden layers), ``coefs_[i]``
        of shape ``(n_units_in, n_units_out)``; the last one maps to the
        single score.
    intercepts_ : list of ndarray
        Biases of the MLP's hidden layers (the output layer has none).
    n_iter_ : int
        Epochs (or L-BFGS iterations) of the best run: the one with the best
        validation score (without early stopping, the lowest final training
        objective), also when ``restarts="average"`` combines all runs.
        ``partial_fit`` adds one per call.
    loss_curve_ : list of float
        Training objective (mean loss per query plus penalty) of each epoch
        of the best run: the mean over the epoch's mini-batches of the value
        at which each step was taken (for ``"lbfgs"``, the objective after
        each iteration). After ``partial_fit``, one entry per call.
    t_ : int
        Training queries the stochastic solver (``"adam"``, ``"sgd"``)
        stepped over: epochs times training queries after ``fit``, plus each
        ``partial_fit`` call's queries. Absent after an ``"lbfgs"`` fit.
    validation_scores_ : list of float or None
        ``scoring`` on the held-out queries after each epoch of the best
        run; None without early stopping.
    best_validation_score_ : float or None
        ``scoring`` of the fitted model on the held-out queries (with
        ``restarts="best"``, the best of ``validation_scores_``: the weights
        kept are from that epoch); None without early stopping.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Feature names seen during fit, when ``X`` has string column names.

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
    exactly (eq. 11-12; by default its normal approximation, §3.6, is used:
    see below). With gains :math:`g_j = 2^{l_j} - 1` and discount
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
    solver="sgd", batch_size=1, learning_rate_decay=0.8``. The defaults
    here are those of :class:`ListNetRanker` (a linear model, Adam on
    mini-batches of 8 queries, early stopping on NDCG@10 of held-out
    queries). ``sigma=0.1`` suits features of unit scale (standardised, or
    scaled to [0, 1] per query as LETOR's QueryLevelNorm): from small
    initial weights a smaller ``sigma`` sharpens the rank distributions in
    fewer epochs, a larger one keeps the contests close to coin tosses for
    longer; tune it with ``alpha`` for other features. The paper found a
    linear training discount (``discount_shape`` near 0) to generalise best
    on its web data; the default is NDCG's own discount, the metric the
    ranker is evaluated with. ``benchmarks/letor_ohsumed.py`` prints the
    measurements behind these choices on OHSUMED.

    *Rank distribution and truncation.* ``benchmarks/softrank_defaults.py``
    fits every ``rank_distribution``, with and without ``truncation``, on
    OHSUMED (LETOR 3.0, queries of 35-320 documents) and on the bundled
    sample (queries of 1-27 documents), next to LightGBM's lambdarank; its
    figures are in :ref:`reproducing-softrank`. The normal approximation
    trains as well as the exact recursion, at about a fifteenth of its cost
    on OHSUMED, hence the default. Truncation at :math:`R` well below half
    the query length fails on OHSUMED: from small initial weights the rank
    of every document is spread around :math:`N/2` and SoftNDCG@R has almost
    no gradient. It helps on short queries (the sample), so it is an option
    to tune, not a default.

    *float32.* A float32 ``X`` is kept as float32 (the network runs in it,
    ``predict`` returns it); the loss, the weights and the solver stay
    float64. See :ref:`float32-data`.

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
        **NeuralRanker._parameter_constraints,
        **SoftRankLoss._parameter_constraints,
    }

    def __init__(
        self,
        *,
        # the loss's defaults, written once in SoftRankLoss
        sigma=_LOSS_DEFAULTS["sigma"],
        rank_distribution=_LOSS_DEFAULTS["rank_distribution"],  # "normal": measured (Notes)
        n_exact=_LOSS_DEFAULTS["n_exact"],
        sinkhorn_iterations=_LOSS_DEFAULTS["sinkhorn_iterations"],
        discount_shape=_LOSS_DEFAULTS["discount_shape"],
        truncation=_LOSS_DEFAULTS["truncation"],
        hidden_layer_sizes=DEFAULTS["hidden_layer_sizes"],
        activation=DEFAULTS["activation"],
        solver=DEFAULTS["solver"],
        alpha=DEFAULTS["alpha"],
        learning_rate_init=DEFAULTS["learning_rate_init"],
        batch_size=DEFAULTS["batch_size"],
        max_iter=DEFAULTS["max_iter"],
        tol=DEFAULTS["tol"],
        learning_rate_decay=DEFAULTS["learning_rate_decay"],
        momentum=DEFAULTS["momentum"],
        early_stopping=DEFAULTS["early_stopping"],
        validation_fraction=DEFAULTS["validation_fraction"],
        scoring=DEFAULTS["scoring"],
        n_iter_no_change=DEFAULTS["n_iter_no_change"],
        n_init=DEFAULTS["n_init"],
        restarts=DEFAULTS["restarts"],
        n_jobs=DEFAULTS["n_jobs"],
        random_state=DEFAULTS["random_state"],
        verbose=DEFAULTS["verbose"],
        warm_start=DEFAULTS["warm_start"],
    ):
        self.sigma = sigma
        self.rank_distribution = rank_distribution
        self.n_exact = n_exact
        self.sinkhorn_iterations = sinkhorn_iterations
        self.discount_shape = discount_shape
        self.truncation = truncation
        self.hidden_layer_sizes = hidden_layer_sizes
        self.activation = activation
        self.solver = solver
        self.alpha = alpha
        self.learning_rate_init = learning_rate_init
        self.batch_size = batch_size
        self.max_iter = max_iter
        self.tol = tol
        self.learning_rate_decay = learning_rate_decay
        self.momentum = momentum
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.scoring = scoring
        self.n_iter_no_change = n_iter_no_change
        self.n_init = n_init
        self.restarts = restarts
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose
        self.warm_start = warm_start

    def _make_loss(self):
        return SoftRankLoss(
            sigma=self.sigma,
            rank_distribution=self.rank_distribution,
            n_exact=self.n_exact,
            sinkhorn_iterations=self.sinkhorn_iterations,
            discount_shape=self.discount_shape,
            truncation=self.truncation,
        )
