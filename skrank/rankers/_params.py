"""The parameters the rankers share, in groups: each defined once.

A :class:`Parameter` holds what a ranker needs of one argument: its numpydoc
type, its default, its constraints (scikit-learn's parameter validation) and
its description. They come in four groups, by what they set up:

* :data:`NETWORK`: the scoring network (``hidden_layer_sizes``,
  ``activation``);
* :data:`SOLVER`: the stochastic (or L-BFGS) optimisation of the penalised
  objective (``solver``, ``alpha``, ``learning_rate_init``, ``batch_size``,
  ``max_iter``, ``tol``, ``learning_rate_decay``, ``momentum``);
* :data:`EARLY_STOPPING`: the held-out queries and the metric monitored on
  them (``early_stopping``, ``validation_fraction``, ``scoring``,
  ``n_iter_no_change``);
* :data:`RESTARTS`: the runs of a fit and their bookkeeping (``n_init``,
  ``restarts``, ``n_jobs``, ``random_state``, ``verbose``, ``warm_start``).

A ranker takes its ``_parameter_constraints`` from the groups
(:func:`constraints`) and its ``__init__`` defaults from :data:`DEFAULTS`
(or writes its own where it differs), and :func:`fill_parameters` writes the
groups' descriptions into its docstring when the class is created, with the
defaults of the ranker's own signature, so that ``help()``, numpydoc and
Sphinx see the full text. In the class docstring, a line ``%(<group>)s``
(``%(network_parameters)s``, ``%(solver_parameters)s``,
``%(early_stopping_parameters)s``, ``%(restart_parameters)s``) stands for a
whole group and ``%(<name>)s`` for one parameter; lines indented below a
parameter's placeholder are added to its description (what is particular to
that ranker).
"""

import inspect
import re
import textwrap
from typing import NamedTuple

from .._core._activations import ACTIVATIONS
from .._core._runs import COMBINE
from .._core._solvers import SOLVERS
from ..metrics._scorer import RankingScorer
from ..utils._sklearn_compat import MAX_LENGTH, Float, Integer, StrOptions

#: The width of one hidden layer: ``hidden_layer_sizes`` as an int, or each
#: of its entries (also of BoltzRank's ``pairwise_hidden_layer_sizes``).
LAYER_UNITS = Integer(1, MAX_LENGTH, closed="both")


class Parameter(NamedTuple):
    """One shared argument of the rankers: numpydoc type, default, constraints, description."""

    type: str
    default: object
    constraints: list
    description: str


def _parameter(type, default, constraints, description):
    return Parameter(type, default, constraints, textwrap.dedent(description).strip("\n"))


NETWORK = {
    "hidden_layer_sizes": _parameter("tuple of int", (), ["array-like", LAYER_UNITS], r"""
        Units of each hidden layer of the scoring network. ``()`` is the
        linear model :math:`f(x) = \langle w, x \rangle` (fitted ``coef_``);
        ``(h,)`` is a one-hidden-layer network (fitted ``coefs_`` and
        ``intercepts_``). The output layer has no bias: the loss is invariant
        to shifting all scores of a query. A network whose fit cannot fit in
        the memory available (its ``n_features`` times the first width of
        weights, a copy per ``n_init`` run, and the hidden activations of a
        query) raises a MemoryError naming ``hidden_layer_sizes`` at
        ``fit``, before anything is allocated.
        """),
    "activation": _parameter(
        '{"tanh", "scaled_tanh", "relu", "logistic"}', "tanh",
        [StrOptions(set(ACTIVATIONS))], r"""
        Hidden-layer activation; ``"scaled_tanh"`` is
        :math:`1.7159 \tanh(2x/3)`. Unused when ``hidden_layer_sizes=()``.
        """),
}

SOLVER = {
    "solver": _parameter('{"adam", "sgd", "lbfgs"}', "adam", [StrOptions(set(SOLVERS))], """
        ``"adam"`` and ``"sgd"`` take steps on mini-batches of whole
        queries; ``"lbfgs"`` minimises the full objective with
        :func:`scipy.optimize.minimize` (one iteration = one L-BFGS step).
        """),
    "alpha": _parameter("float", 1e-4, [Float(0, None, closed="left")], r"""
        Strength of the L2 penalty :math:`\frac{\alpha}{2}\|W\|^2` on the
        weights (not the hidden biases), added to the mean loss per query.
        """),
    "learning_rate_init": _parameter(
        "float", 1e-2, [Float(0, None, closed="neither")], """
        Step size of ``"adam"`` and ``"sgd"``.
        """),
    "batch_size": _parameter("int", 8, [Integer(1, None, closed="left")], """
        Number of *queries* per mini-batch (``"adam"``, ``"sgd"``); capped
        at the number of training queries.
        """),
    "max_iter": _parameter("int", 200, [Integer(1, None, closed="left")], """
        Maximum number of epochs (``"adam"``, ``"sgd"``) or L-BFGS
        iterations.
        """),
    "tol": _parameter("float", 1e-4, [Float(0, None, closed="left")], """
        Minimum improvement of the monitored quantity (``scoring`` on the
        validation queries with early stopping, otherwise the training
        objective) that resets the patience counter; also the gradient
        tolerance of ``"lbfgs"``.
        """),
    "learning_rate_decay": _parameter(
        "float", 1.0, [Float(0, 1, closed="right")], """
        Factor by which the step size is multiplied after an epoch in which
        ``scoring`` on the training queries did not improve; 1.0 keeps it
        constant. Unused by ``"lbfgs"``.
        """),
    "momentum": _parameter("float", 0.9, [Float(0, 1, closed="both")], """
        Momentum of ``solver="sgd"``.
        """),
}

EARLY_STOPPING = {
    "early_stopping": _parameter("bool", True, ["boolean"], """
        Hold out ``validation_fraction`` of the *queries* (chosen with
        ``random_state``), compute ``scoring`` on them after each epoch, stop
        after ``n_iter_no_change`` epochs without improvement and keep the
        weights of the best epoch. With fewer than two queries (e.g.
        ``qid=None``) a warning is issued and the training objective decides
        when to stop instead.
        """),
    "validation_fraction": _parameter(
        "float", 0.2, [Float(0, 1, closed="neither")], """
        Fraction of the queries held out for early stopping (at least one
        query, and at least one query left for training).
        """),
    "scoring": _parameter("str or RankingScorer", "ndcg@10", [str, RankingScorer], """
        Metric monitored on the held-out queries, e.g. ``"ndcg@10"`` or
        ``"map"`` (see :func:`skrank.metrics.get_ranking_scorer`).
        """),
    "n_iter_no_change": _parameter("int", 10, [Integer(1, None, closed="left")], """
        Patience, in epochs (or L-BFGS iterations).
        """),
}

RESTARTS = {
    "n_init": _parameter("int", 1, [Integer(1, MAX_LENGTH, closed="both")], """
        Number of independent random initialisations, each trained to the
        end; ``restarts`` says how they are combined.
        """),
    "restarts": _parameter(
        '{"average", "best"}', "average", [StrOptions(set(COMBINE))], """
        How the ``n_init`` runs are combined. ``"average"``: the model
        scores the mean of the runs' scores, each divided by its pooled
        within-query standard deviation on the training rows (for the linear
        model this is again one linear model; for an MLP, one MLP whose
        hidden layers hold the runs' units side by side). ``"best"``: the
        run with the best validation score (without early stopping, the
        lowest final training objective) is kept.
        """),
    "n_jobs": _parameter("int", None, [None, Integer()], """
        Number of runs trained in parallel with joblib (``None`` means 1
        unless in a :func:`joblib.parallel_backend` context, ``-1`` all
        processors). Results do not depend on it.
        """),
    "random_state": _parameter(
        "int, RandomState instance or None", None, ["random_state"], """
        Seed of every random draw of a fit, among the validation split
        (early stopping), the initialisations, the mini-batch order
        (stochastic solvers) and the sampled rankings (BoltzRank, LogRank).
        Pass an int for reproducible fits. With the same seed, a fit still
        depends on the query ids, not only on how they group the rows: the
        validation split and the mini-batches take the queries in sorted
        order of their ids, and each query's sampled rankings (BoltzRank,
        LogRank's ``sampler="walk"``) are drawn from a hash of the seed and
        the query's id, so that they do not change when other queries are
        added or removed (cross-validation folds, the early-stopping
        holdout). Renaming the queries therefore changes a fit much as
        another seed would: always with sampled rankings, otherwise when
        the renaming changes the ids' sorted order. See
        :ref:`query-ids-and-seeds`.
        """),
    "verbose": _parameter("int", 0, ["verbose"], """
        If positive, print one line per epoch to stdout, as scikit-learn's
        estimators do: loss, training and validation metric, elapsed
        seconds. ``python -m skrank`` sends these lines to stderr, keeping
        stdout for its results.
        """),
    "warm_start": _parameter("bool", False, ["boolean"], """
        If True and the ranker is fitted, start from its current weights
        (then there is a single run; ``n_init`` is ignored). The solver's
        state (Adam moments, SGD velocity, decayed step size, L-BFGS's
        curvature pairs) starts afresh and, where there is early stopping,
        the validation queries are drawn again from ``random_state``.
        """),
}

#: The groups by the name of their placeholder in a ranker's docstring.
GROUPS = {
    "network_parameters": NETWORK,
    "solver_parameters": SOLVER,
    "early_stopping_parameters": EARLY_STOPPING,
    "restart_parameters": RESTARTS,
}

#: Every shared parameter, by name.
PARAMETERS = {name: p for group in GROUPS.values() for name, p in group.items()}

#: The shared defaults (a ranker whose default differs writes its own).
DEFAULTS = {name: p.default for name, p in PARAMETERS.items()}


def constraints(*names):
    """``_parameter_constraints`` of some shared parameters: group dicts or names."""
    result = {}
    for item in names:
        for name in (item if isinstance(item, dict) else [item]):
            result[name] = PARAMETERS[name].constraints
    return result


def format_default(value):
    """A default as a numpydoc type line shows it: ``"adam"``, ``1e-4``, ``0.2``, ``()``."""
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, float) and 0 < abs(value) < 0.1:
        short = re.sub(r"e-0*", "e-", f"{value:.0e}")  # 1e-4, not 0.0001
        if float(short) == value:
            return short
    return repr(value)


_PLACEHOLDER = re.compile(r"^(?P<indent> *)%\((?P<name>\w+)\)s$")


def _entry(name, default, indent, extra=()):
    parameter = PARAMETERS[name]
    lines = [f"{indent}{name} : {parameter.type}, default={format_default(default)}"]
    lines += [f"{indent}    {line}" for line in parameter.description.splitlines()]
    lines += [f"{indent}    {line}" for line in extra]
    return lines


def fill_parameters(cls):
    """Class decorator: write the shared parameters into ``cls.__doc__`` (see the module).

    The default shown is the one of ``cls.__init__``'s signature; a
    placeholder of a parameter the signature lacks raises at import.
    """
    signature = inspect.signature(cls.__init__).parameters
    lines = cls.__doc__.splitlines()
    out, i = [], 0
    while i < len(lines):
        match = _PLACEHOLDER.match(lines[i])
        i += 1
        if match is None:
            out.append(lines[i - 1])
            continue
        indent, name = match["indent"], match["name"]
        names = list(GROUPS[name]) if name in GROUPS else [name]
        extra = []
        while name not in GROUPS and i < len(lines) and lines[i].startswith(indent + " "):
            extra.append(lines[i].strip())
            i += 1
        for each in names:
            if each not in signature:
                raise TypeError(f"{cls.__name__} documents {each!r}, which it does not take.")
            out += _entry(each, signature[each].default, indent, extra)
    cls.__doc__ = "\n".join(out)
    return cls
