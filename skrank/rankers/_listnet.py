"""ListNetRanker: the ListNet listwise ranker (Cao et al., ICML 2007)."""

from ..losses import ListNetLoss
from ._neural import NeuralRanker
from ._params import DEFAULTS, fill_parameters


@fill_parameters
class ListNetRanker(NeuralRanker):
    r"""ListNet: listwise ranking with top-one probabilities.

    Learns a scoring function :math:`f` (linear, or a small neural network)
    by minimising, over queries, the cross entropy between the top-one
    probability distributions given by the relevance labels and by the
    scores.

    Parameters
    ----------
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

    def __init__(
        self,
        *,
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
        return ListNetLoss()
