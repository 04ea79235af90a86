"""ListNetRanker: the ListNet listwise ranker (Cao et al., ICML 2007)."""

from ._base import NeuralRanker


class ListNetRanker(NeuralRanker):
    r"""ListNet: listwise ranking with top-one probabilities.

    Learns a scoring function :math:`f` (linear, or a small neural network)
    by minimising, over queries, the cross entropy between the top-one
    probability distributions given by the relevance labels and by the
    scores.

    Parameters
    ----------
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
    skrank.losses.ListNetLoss : The loss on its own.
    SoftRankRanker : Listwise ranking by maximising a smoothed NDCG.
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
    stay finite. The paper sums over queries; we average, so that the step
    size and ``alpha`` do not depend on the number of queries.

    The defaults (Adam, step 0.01, batches of 8 queries, early stopping on
    NDCG@10 of a fifth of the queries) were chosen on the five OHSUMED folds
    of LETOR 3.0 and checked on the bundled LightGBM sample
    (``benchmarks/letor_ohsumed.py`` prints the measurements). On small data
    sets the validation metric is noisy: ``n_init`` runs averaged
    (``restarts="average"``) make results steadier than one run, and
    steadier than keeping the run that did best on the validation queries,
    which overfits them (``benchmarks/letor_ohsumed.py --restarts-study``;
    see :ref:`reproducing-listnet`).

    *float32.* A float32 ``X`` is kept as float32 (the network runs in it,
    ``predict`` returns it); the loss, the weights and the solver stay
    float64. See :ref:`float32-data`.

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
    >>> ranker.coef_.shape
    (10,)
    >>> round(ranker.score(X, y, qid=qid), 2) > 0.8
    True
    """

    _loss = "listnet"

    def __init__(
        self,
        *,
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
