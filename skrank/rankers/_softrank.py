"""SoftRankRanker: SoftRank's smoothed NDCG (Taylor et al., WSDM 2008)."""

import inspect

from ..losses import SoftRankLoss
from ._base import NeuralRanker

_LOSS_DEFAULTS = {
    name: p.default for name, p in inspect.signature(SoftRankLoss).parameters.items()
}


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
        and ``alpha``).
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
    hidden_layer_sizes : tuple of int, default=()
        Units of each hidden layer of the scoring network. ``()`` is the
        linear model :math:`f(x) = \langle w, x \rangle` (fitted ``coef_``);
        ``(h,)`` is a one-hidden-layer network (fitted ``coefs_`` and
        ``intercepts_``). The output layer has no bias: the loss is invariant
        to shifting all scores of a query.
    activation : {"tanh", "scaled_tanh", "relu", "logistic"}, default="tanh"
        Hidden-layer activation; ``"scaled_tanh"`` is
        :math:`1.7159 \tanh(2x/3)`. Unused when ``hidden_layer_sizes=()``.
    solver : {"adam", "sgd", "lbfgs"}, default="adam"
        ``"adam"`` and ``"sgd"`` take steps on mini-batches of whole
        queries; ``"lbfgs"`` minimises the full objective with
        :func:`scipy.optimize.minimize` (one iteration = one L-BFGS step).
    alpha : float, default=1e-4
        Strength of the L2 penalty :math:`\frac{\alpha}{2}\|W\|^2` on the
        weights (not the hidden biases), added to the mean loss per query.
    learning_rate_init : float, default=1e-2
        Step size of ``"adam"`` and ``"sgd"``.
    batch_size : int, default=8
        Number of *queries* per mini-batch (``"adam"``, ``"sgd"``); capped
        at the number of training queries.
    max_iter : int, default=200
        Maximum number of epochs (``"adam"``, ``"sgd"``) or L-BFGS
        iterations.
    tol : float, default=1e-4
        Minimum improvement of the monitored quantity (``scoring`` on the
        validation queries with early stopping, otherwise the training
        objective) that resets the patience counter; also the gradient
        tolerance of ``"lbfgs"``.
    early_stopping : bool, default=True
        Hold out ``validation_fraction`` of the *queries* (chosen with
        ``random_state``), compute ``scoring`` on them after each epoch, stop
        after ``n_iter_no_change`` epochs without improvement and keep the
        weights of the best epoch. With fewer than two queries (e.g.
        ``qid=None``) a warning is issued and the training objective decides
        when to stop instead.
    validation_fraction : float, default=0.2
        Fraction of the queries held out for early stopping (at least one
        query, and at least one query left for training).
    scoring : str or RankingScorer, default="ndcg@10"
        Metric monitored on the held-out queries, e.g. ``"ndcg@10"`` or
        ``"map"`` (see :func:`skrank.metrics.get_ranking_scorer`).
    n_iter_no_change : int, default=10
        Patience, in epochs (or L-BFGS iterations).
    learning_rate_decay : float, default=1.0
        Factor by which the step size is multiplied after an epoch in which
        ``scoring`` on the training queries did not improve; 1.0 keeps it
        constant. Unused by ``"lbfgs"``.
    momentum : float, default=0.9
        Momentum of ``solver="sgd"``.
    n_init : int, default=1
        Number of independent random initialisations, each trained to the
        end; ``restarts`` says how they are combined.
    restarts : {"average", "best"}, default="average"
        How the ``n_init`` runs are combined. ``"average"``: the model
        scores the mean of the runs' scores, each divided by its pooled
        within-query standard deviation on the training rows (for the linear
        model this is again one linear model; for an MLP, one MLP whose
        hidden layers hold the runs' units side by side). ``"best"``: the
        run with the best validation score (without early stopping, the
        lowest final training objective) is kept.
    n_jobs : int, default=None
        Number of runs trained in parallel with joblib (``None`` means 1
        unless in a :func:`joblib.parallel_backend` context, ``-1`` all
        processors). Results do not depend on it.
    random_state : int, RandomState instance or None, default=None
        Seed of the validation split, of the initialisations and of the
        mini-batch order. Pass an int for reproducible fits.
    verbose : int, default=0
        If positive, print one line per epoch: loss, training and validation
        metric, elapsed seconds.
    warm_start : bool, default=False
        If True and the ranker is fitted, start from its current weights
        (then there is a single run; ``n_init`` is ignored). The solver's
        state (Adam moments, SGD velocity, decayed step size) starts afresh,
        and the validation queries are drawn again from ``random_state``.

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
    loss_curve_ : list of float
        Training objective (mean loss per query plus penalty) of each epoch
        of the best run: the mean over the epoch's mini-batches of the value
        at which each step was taken (for ``"lbfgs"``, the objective after
        each iteration).
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

    _loss = "softrank"
    _loss_parameters = tuple(SoftRankLoss._parameter_constraints)
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
        scoring="ndcg@10",
        n_iter_no_change=10,
        learning_rate_decay=1.0,
        momentum=0.9,
        n_init=1,
        restarts="average",
        n_jobs=None,
        random_state=None,
        verbose=0,
        warm_start=False,
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
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.scoring = scoring
        self.n_iter_no_change = n_iter_no_change
        self.learning_rate_decay = learning_rate_decay
        self.momentum = momentum
        self.n_init = n_init
        self.restarts = restarts
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose
        self.warm_start = warm_start
