"""LogRankRanker: conditional log-linear models over rankings (Dubey et al., ICDM 2009)."""

import inspect
import warnings

import numpy as np

from .._core._runs import Restarts
from .._core._stopping import StoppingRule
from .._core._solvers import LBFGS
from ..losses import LogRankLoss
from ..losses._logrank import parse_gain, resolve_sampler
from ..metrics._ranking import check_relevance_threshold
from ..metrics._scorer import get_ranking_scorer
from ..utils._sklearn_compat import Float, StrOptions, _fit_context
from ..utils._validation import keep_fitted_state_on_error
from ._base import EXTREME, BaseRanker
from ._network_mixin import NetworkMixin
from ._params import DEFAULTS, NETWORK, constraints, fill_parameters

_LOSS_DEFAULTS = {
    name: p.default for name, p in inspect.signature(LogRankLoss).parameters.items()
}


@fill_parameters
class LogRankRanker(NetworkMixin, BaseRanker):
    r"""LogRank: conditional log-linear models over rankings, trained by L-BFGS.

    Each query's rankings of its good (relevant) and bad documents get the
    log-linear probability :math:`\Pr(y | x_q; w) \propto \exp(w \cdot
    \phi(x_q, y))`, with :math:`\phi` summing :math:`\pm(x_g - x_b)` over
    the (good, bad) pairs; the weights are fitted by maximum likelihood of
    the ideal ranking (MLE), by maximising the expected gain (ExpGain), or by
    the convex upper bounds L3 and ConvexLoss that add the expected loss
    :math:`1 - G` of AUC, MAP or NDCG. Sums over rankings are closed forms
    for AUC, or run over a fixed sample of rankings drawn by a random walk.

    Parameters
    ----------
    objective : {"likelihood", "expected_gain", "l3", "convex"}, default="l3"
        ``"likelihood"``: the likelihood of the ideal ranking (the paper's
        MLE, eq. 10); over the whole relaxed space this is the pairwise
        logistic loss. ``"expected_gain"``: the expected gain (the paper's
        ExpGain, eq. 6-7), not convex: ``n_init`` restarts keep the lowest
        objective. ``"l3"``: MLE plus the expected loss (eq. 12).
        ``"convex"``: ConvexLoss (eq. 14), the paper's best.
    metric : {"auc", "map", "ndcg"} or "ndcg@<k>", default="ndcg@10"
        The gain :math:`G` of a ranking of the good and bad documents
        (§1.6): the fraction of (good, bad) pairs in order, the average
        precision, or NDCG (binary gain, :math:`\log_2` discount), at ``k``
        with ``"ndcg@<k>"``. A ``k`` at least the size of the largest query
        cuts nothing. Unused by ``"likelihood"``, except by
        ``walk_restart="graded"``.
    sampler : {"auto", "exact", "walk"}, default="auto"
        ``"exact"``: sums over the whole relaxed space of rankings in closed
        form, :math:`O(n^+ n^-)` per query (``metric="auc"`` or
        ``objective="likelihood"`` only). ``"walk"``: over ``n_rankings``
        rankings per query, drawn once per fit by the random walk of §4.
        ``"auto"``: exact where a closed form exists, otherwise the walk.
    n_rankings : int, default=101
        Rankings per training query in the sample, the ideal one included:
        the ideal ranking and ``n_rankings - 1`` states of the walk (the
        paper's 100).
    walk_length : int, default=10
        States of each walk, all in the sample: its restart state and those
        after each of the next ``walk_length - 1`` swap transitions. Any
        ``walk_length`` from ``n_rankings - 1`` on is one walk per query.
    walk_restart : {"two", "graded"}, default="graded"
        Restart states of the walk: ``"two"``, the ideal ranking (probability
        0.9) or the worst one; ``"graded"``, the good documents as one block
        below :math:`0, \dots, n^-` bad ones, drawn with probability
        :math:`\propto \exp(\kappa \Delta)`.
    walk_restart_skew : float, default=-10.0
        :math:`\kappa \le 0` of ``walk_restart="graded"`` (the paper: -10 to
        -20).
    normalize_pairs : bool, default=True
        Divide the feature map by the query's number of (good, bad) pairs
        (eq. 2; the paper drops the factor after cross-validation). Without
        it the scores of whole rankings differ by sums over many pairs and
        the sampled models fit worse (see Notes); ``alpha`` then needs to be
        much larger.
    relevance_threshold : float, default=1
        A document is good when its label is at least this: graded labels
        are thresholded (as for MAP in :mod:`skrank.metrics`). Queries with
        no good or no bad document contribute nothing.
    alpha : "auto" or float, default="auto"
        Strength of the L2 penalty, as in the other rankers: the fit
        minimises the mean of the queries' losses plus :math:`\alpha/2
        \|w\|^2`. ``"auto"`` is the paper's form, the sum of the losses plus
        :math:`\|w\|^2` (its :math:`C = 1`): :math:`\alpha = 2 / n` on
        :math:`n` training queries, so that it regularises less on more
        queries. With ``sample_weight`` the mean is weighted, and ``"auto"``
        takes :math:`n` as the total query weight (multiplying every weight
        by :math:`c` acts as dividing ``alpha`` by :math:`c`, as integer
        weights act as repeated queries); weights summing beyond the largest
        float leave no penalty, and tiny weights make it overwhelming.
    %(network_parameters)s
    max_iter : int, default=500
        Maximum number of L-BFGS iterations.
    tol : float, default=1e-6
        L-BFGS stops when the largest gradient component of the objective
        (divided by the number of training queries) falls below this.
    n_init : int, default=1
        Number of random initialisations, each run by L-BFGS to the end; the
        one with the lowest objective is kept (this matters for the
        non-convex ``"expected_gain"``, and for hidden layers, in which no
        objective is convex).
    %(n_jobs)s
    %(random_state)s
    verbose : int, default=0
        If positive, print one line per L-BFGS iteration: objective, training
        NDCG@10, elapsed seconds.
    %(warm_start)s

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        Weights of the linear model (only with ``hidden_layer_sizes=()``).
    coefs_ : list of ndarray
        Weight matrices of the MLP (only with hidden layers), ``coefs_[i]``
        of shape ``(n_units_in, n_units_out)``; the last one maps to the
        single score.
    intercepts_ : list of ndarray
        Biases of the MLP's hidden layers (only with hidden layers).
    n_iter_ : int
        L-BFGS iterations of the kept run.
    loss_curve_ : list of float
        Objective (mean loss per query plus penalty) after each iteration of
        the kept run.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Feature names seen during fit, when ``X`` has string column names.

    See Also
    --------
    skrank.losses.LogRankLoss : The objectives on their own, the exact forms
        and the random walk.
    BoltzRankRanker : Expected NDCG over sampled rankings with a Boltzmann
        distribution.
    ListNetRanker : Listwise ranking with top-one probabilities.

    Notes
    -----
    With :math:`n^+` good and :math:`n^-` bad documents, a ranking is
    :math:`y \in \{\pm 1\}^{n^+ n^-}` (:math:`y_{gb} = +1` when good
    :math:`g` is above bad :math:`b`), :math:`\phi(x_q, y) = \sum_{g,b}
    y_{gb}(x_g - x_b)` (eq. 2) and :math:`\Pr(y | x_q; w) \propto
    \exp(w \cdot \phi(x_q, y))` (eq. 3). With
    :math:`\delta\phi_q(y) = \phi(x_q, y_q) - \phi(x_q, y)` (§1.3) and
    :math:`\Delta = 1 - G`, the fit minimises :math:`\sum_q L_q + \|w\|^2/C`
    (:math:`C = 2 / (\alpha n)` on :math:`n` training queries; ``alpha="auto"``
    is :math:`C = 1`) with

    .. math::

       L_q^{\mathrm{MLE}} &= \log \textstyle\sum_{y'} e^{-w\cdot\delta\phi_q(y')}
       \quad (10), \qquad
       L_q^{\mathrm{ExpGain}} = -\log \textstyle\sum_y \Pr(y|x_q;w) \, G_q(y)
       \quad (6\text{-}7), \\
       L_q^{\mathrm{L3}} &= L_q^{\mathrm{MLE}} + \textstyle\sum_y \Pr(y|x_q;w)
       \, \Delta_q(y) \quad (12), \qquad
       L_q^{\mathrm{Convex}} = \log \textstyle\sum_{y'}
       e^{-w\cdot\delta\phi_q(y') + \Delta_q(y')} \quad (14),

    and :math:`L^{\mathrm{Convex}} \ge L^{\mathrm{L3}}` (Jensen, §3). MLE,
    L3 and ConvexLoss are convex in :math:`w` for the linear model, so every
    start reaches the same optimum; ExpGain is not (§2.2). (Internally the
    mean over the training queries is minimised, with the penalty divided by
    their number: the same minimiser; this is ``alpha``'s form.) The sums over :math:`y` are exact
    closed forms over the relaxed space :math:`\{\pm 1\}^{n^+ n^-}` for AUC
    (§2.3; that space also holds bit patterns that are no total order), or
    run over the fixed sample :math:`\hat Y_q \cup \{y_q\}` of the random
    walk of §4, drawn once per fit (see :class:`~skrank.losses.LogRankLoss`
    for both). Because :math:`w \cdot \phi(x_q, y) = \sum_j c_j(y) s_j` with
    one integer :math:`c_j(y)` per document, :math:`k` sampled rankings cost
    one :math:`(m \times k)` product per query, as BoltzRank's energies.

    *The folded objective.* For the linear model the sampled rankings'
    logits are linear in the weights: with :math:`C_q` the :math:`(m_q
    \times k)` coefficients of query :math:`q` (:math:`k` = ``n_rankings``) they are :math:`(C_q^\top X_q) \, w`, times the query's
    factor (:math:`1 / (n^+ n^-)` with ``normalize_pairs``). The fit then
    builds :math:`\Phi_q = C_q^\top X_q` once (a few queries at a time),
    stacked into one :math:`(Q k \times d)` matrix for the :math:`Q`
    training queries with a (good, bad) pair and :math:`d` features, and
    every L-BFGS evaluation is the two products :math:`\Phi w` and
    :math:`\Phi^\top g` around the objective of the :math:`(Q, k)` logits,
    with no loop over queries. It is used for the walk's samples
    (``sampler="walk"``, or ``"auto"`` with MAP and NDCG gains other than
    the likelihood) with ``hidden_layer_sizes=()`` where it is cheaper: :math:`Q k d \le n d + n
    k` for the :math:`n` training rows, i.e. queries of more than about
    :math:`k d / (k + d)` documents on average (31 for 101 rankings and 45
    features); shorter queries, the closed forms and hidden layers keep the
    per-query products. :math:`\Phi` holds :math:`Q k d` values in ``X``'s
    dtype (by that rule at most :math:`n (d + k)`) in place of the grouped
    copy of the training rows that L-BFGS would otherwise keep (``X`` itself
    still scores the rows for ``verbose``). On OHSUMED (queries of 35-320
    documents) this makes an evaluation of the default model several times
    cheaper than the per-query products (``benchmarks/bench_logrank.py``;
    figures in :ref:`reproducing-logrank`).

    *Reading of the paper.* Graded labels are made binary with
    ``relevance_threshold``, as the paper's binary model needs; the scores
    reported by ``score`` still use the graded labels. A query without a
    (good, bad) pair is dropped (§5.1.1). The paper's NDCG in the gains
    is NDCG at ``k`` of the binary labels. The paper's OHSUMED figures are on
    cleaned, binarised data and are not comparable with the LETOR protocol
    (``benchmarks/letor_ohsumed.py``).

    *Defaults, by measurement.* Under the LETOR protocol on OHSUMED
    (``benchmarks/letor_ohsumed.py``: five folds, the penalty and
    ``normalize_pairs`` chosen on vali, as the paper chose them) and on the
    bundled LightGBM sample (both chosen by grouped 5-fold CV),
    L3-NDCG had the best test NDCG@10 of the ten models on OHSUMED and shared
    the top with ConvexLoss-NDCG on the sample; hence
    ``objective="l3", metric="ndcg@10"``: the difference from ConvexLoss-NDCG
    (the paper's favourite) is within the noise. Both data sets chose the
    normalised feature map for nearly every model, hence
    ``normalize_pairs=True``. ``alpha="auto"`` (the paper's :math:`C = 1`)
    is a middle value of the penalties measured for L3-NDCG. The figures are
    in :ref:`reproducing-logrank`.

    *Sampling choices.* With the unnormalised map and restarts ``"two"``,
    the sampled models trailed on OHSUMED, the ExpGain ones worst: the
    scores of whole rankings differ by sums over many pairs, so the softmax
    over the sample is nearly an argmax, and walks from the ideal and the
    worst rankings only perturb the middle of the ranking (where the good
    block meets the bad one), which NDCG@10 and MAP do not see. Graded
    restarts put bad documents at the top, where the gains differ, and the
    normalised map keeps the softmax soft: together they lifted every
    sampled model, hence ``walk_restart="graded"``. The paper's 100 walk
    states in walks of 10 are kept: 50 or 200 rankings instead of 100, and
    walks of 50 instead of 10, changed results by less than the spread over
    sampling seeds.

    *float32.* A float32 ``X`` is kept as float32 (the network runs in it,
    ``predict`` returns it); the loss, the weights and the solver stay
    float64. See :ref:`float32-data`.

    References
    ----------
    .. [1] A. Dubey, J. Machchhar, C. Bhattacharyya and S. Chakrabarti,
       "Conditional models for non-smooth ranking loss functions", ICDM 2009,
       pp. 129-138.

    Examples
    --------
    >>> from skrank import LogRankRanker
    >>> from skrank.datasets import make_ranking
    >>> X, y, qid = make_ranking(n_queries=30, n_docs=10, random_state=0)
    >>> ranker = LogRankRanker(random_state=0).fit(X, y, qid=qid)
    >>> ranker.coef_.shape
    (10,)
    >>> round(ranker.score(X, y, qid=qid), 2) > 0.8
    True
    """

    # the loss's parameters, alpha, and the network / L-BFGS / run parameters
    # shared with the other rankers (and only those)
    _parameter_constraints = {
        **LogRankLoss._parameter_constraints,
        "alpha": [StrOptions({"auto"}), Float(0, None, closed="left")],
        **constraints(NETWORK, "max_iter", "tol", "n_init", "n_jobs", "random_state",
                      "verbose", "warm_start"),
    }

    def __init__(
        self,
        *,
        # the loss's defaults, written once in LogRankLoss
        objective=_LOSS_DEFAULTS["objective"],
        metric=_LOSS_DEFAULTS["metric"],
        sampler=_LOSS_DEFAULTS["sampler"],
        n_rankings=_LOSS_DEFAULTS["n_rankings"],
        walk_length=_LOSS_DEFAULTS["walk_length"],
        walk_restart=_LOSS_DEFAULTS["walk_restart"],
        walk_restart_skew=_LOSS_DEFAULTS["walk_restart_skew"],
        normalize_pairs=_LOSS_DEFAULTS["normalize_pairs"],
        relevance_threshold=_LOSS_DEFAULTS["relevance_threshold"],
        alpha="auto",
        hidden_layer_sizes=DEFAULTS["hidden_layer_sizes"],
        activation=DEFAULTS["activation"],
        max_iter=500,  # L-BFGS to convergence (tol, ftol)
        tol=1e-6,
        n_init=DEFAULTS["n_init"],
        n_jobs=DEFAULTS["n_jobs"],
        random_state=DEFAULTS["random_state"],
        verbose=DEFAULTS["verbose"],
        warm_start=DEFAULTS["warm_start"],
    ):
        self.objective = objective
        self.metric = metric
        self.sampler = sampler
        self.n_rankings = n_rankings
        self.walk_length = walk_length
        self.walk_restart = walk_restart
        self.walk_restart_skew = walk_restart_skew
        self.normalize_pairs = normalize_pairs
        self.relevance_threshold = relevance_threshold
        self.alpha = alpha
        self.hidden_layer_sizes = hidden_layer_sizes
        self.activation = activation
        self.max_iter = max_iter
        self.tol = tol
        self.n_init = n_init
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose
        self.warm_start = warm_start

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, *, qid=None, sample_weight=None):
        """Fit the ranker by L-BFGS on all the training queries.

        LogRank has no early stopping, so ``fit`` takes no validation set:
        choose ``alpha`` and the other parameters on held-out queries (e.g.
        with :class:`~skrank.model_selection.RankerSearchCV`).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Feature rows. float32 is kept; other dtypes become float64.
        y : array-like of shape (n_samples,)
            Relevance labels (numbers; larger is more relevant).
        qid : array-like of shape (n_samples,), default=None
            Query id of each row (rows in any order). None means all rows
            belong to one query; with more than 100 rows it warns.
        sample_weight : array-like of shape (n_samples,), default=None
            Query weights, the same for all rows of a query: the objective is
            the weighted mean of the query losses (see ``alpha`` for
            ``"auto"``). None weighs queries equally.

        Returns
        -------
        self : object
            The fitted ranker.
        """
        with keep_fitted_state_on_error(self):
            return self._fit(
                X, y, qid, sample_weight,
                solver=LBFGS(max_iter=self.max_iter, tol=self.tol, ftol=self.tol),
                # the runs differ for "expected_gain" and hidden layers only: keep
                # the one of lowest objective
                restarts=Restarts(n_init=self.n_init, combine="best", n_jobs=self.n_jobs),
                validation_fraction=None,  # no early stopping
                random_state=self.random_state,
                warm_start=self.warm_start,
            )

    def _partial_fit_refusal(self):
        """Why this ranker has no ``partial_fit`` (for :func:`skrank.stream.fit_stream`)."""
        return ("LogRank is fitted by L-BFGS on the full objective of all its training "
                "queries, which has no partial steps: use fit.")

    def _check_labels(self, y, layout):
        check_relevance_threshold(self.relevance_threshold)
        resolve_sampler(self.sampler, self.objective, parse_gain(self.metric)[0])
        good = layout.to_sorted(y >= self.relevance_threshold)
        if not good.any():
            raise ValueError(
                f"relevance_threshold={self.relevance_threshold!r} is above every label "
                f"(largest: {np.max(y)!r}): no document is good, so there is nothing to "
                "rank. Lower relevance_threshold."
            )
        n_pos = layout.sum(good.astype(np.intp))
        if not np.any((n_pos > 0) & (n_pos < layout.sizes)):
            warnings.warn(
                f"{type(self).__name__}: no query has both a good document (label >= "
                f"relevance_threshold={self.relevance_threshold!r}) and a bad one, so the "
                "loss is 0 and only the penalty is minimised (qid=None makes all rows one "
                "query).",
                UserWarning,
            )

    def _penalty_advice(self, alpha, weights):
        # a numeric alpha is the other rankers' penalty; alpha="auto" is
        # 2 / (total query weight): blame the number of queries or the
        # scale of sample_weight
        if self.alpha != "auto":
            return super()._penalty_advice(alpha, weights)
        if EXTREME > alpha >= 1.0 / EXTREME:
            return None, False
        total = 2.0 / alpha if alpha > 0 else np.inf
        if weights is None:
            counted = f"on {round(total)} training queries gives it the strength 2 / n"
        else:
            counted = (f"with sample_weight summing to {total:.3g} over the training queries "
                       "gives it the strength 2 / (total query weight)")
        what = f"the penalty alpha/2 ||w||^2: alpha='auto' {counted} = {alpha:.3g}"
        rescale = ("" if weights is None else
                   ", or rescale sample_weight (alpha='auto' divides by their sum)")
        if alpha >= EXTREME:
            return (f"{what}, an extreme strength (the weights it allows are about 0, and "
                    f"its gradient throws the solver's steps out of range): pass a smaller "
                    f"alpha{rescale}"), True
        return (f"{what}, too weak to keep the weights bounded when the training queries "
                f"can be ranked perfectly: pass a larger alpha{rescale}"), False

    def _penalty_strength(self, n_queries):
        # alpha="auto": mean loss + alpha/2 ||w||^2 = (sum of losses + ||w||^2) / n_queries
        return 2.0 / n_queries if self.alpha == "auto" else self.alpha

    def _make_loss(self):
        # the fit needs the samples' coefficients, not their ranks
        return LogRankLoss(
            objective=self.objective,
            metric=self.metric,
            sampler=self.sampler,
            n_rankings=self.n_rankings,
            walk_length=self.walk_length,
            walk_restart=self.walk_restart,
            walk_restart_skew=self.walk_restart_skew,
            normalize_pairs=self.normalize_pairs,
            relevance_threshold=self.relevance_threshold,
            store_ranks=False,
        )

    def _make_stopping(self):
        # L-BFGS decides when to stop (gtol, and scipy's relative decrease):
        # no patience; NDCG@10 on the training queries is printed with verbose only
        return StoppingRule(tol=self.tol, n_iter_no_change=None,
                            scorer=get_ranking_scorer("ndcg@10"), verbose=self.verbose)
