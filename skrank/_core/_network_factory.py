"""A ranker's network: made from its parameters, or rebuilt from its fitted attributes.

:func:`make_network` picks the network of a ranker's parameters for a fit:
a :class:`~skrank._core._networks.LinearNetwork`, an
:class:`~skrank._core._networks.MLPNetwork` or, with
``pairwise_hidden_layer_sizes``, a
:class:`~skrank._core._pairwise_network.PairwiseNetwork` around one of them. A
fitted ranker keeps only the attributes its network exports (their names
are :data:`FITTED_ATTRIBUTES`); :func:`restore_network` rebuilds the network
and its flat parameters from them (for ``predict``, and a warm start).

The top of the networks' modules: it imports :mod:`~skrank._core._networks` and
:mod:`~skrank._core._pairwise_network`, and none of them imports it.
"""

from ._networks import LinearNetwork, MLPNetwork, _restore_unary
from ._pairwise_network import PairwiseNetwork


def make_network(n_features, hidden_layer_sizes=(), activation="tanh",
                 output_activation="identity", pairwise_hidden_layer_sizes=None):
    """The scoring network of a ranker's parameters.

    The linear network for ``hidden_layer_sizes=()``, else an MLP; with
    ``pairwise_hidden_layer_sizes``, that network is the individual
    potential of a :class:`~skrank._core._pairwise_network.PairwiseNetwork` whose
    pairwise potential has the same ``activation`` and ``output_activation``
    (for a linear individual potential, ``output_activation`` is that of the
    pairwise potential only). A linear network alone has no output
    activation: ``output_activation`` must then be ``"identity"``.
    """
    if len(hidden_layer_sizes) > 0:
        unary = MLPNetwork(n_features, hidden_layer_sizes, activation, output_activation)
    elif output_activation != "identity" and pairwise_hidden_layer_sizes is None:
        raise ValueError(
            "the linear network (hidden_layer_sizes=()) has no output activation: "
            f"output_activation must be 'identity'; got {output_activation!r}."
        )
    else:
        unary = LinearNetwork(n_features)
    if pairwise_hidden_layer_sizes is None:
        return unary
    return PairwiseNetwork(
        unary,
        pairwise_hidden_layer_sizes,
        activation=activation,
        output_activation=output_activation,
    )


#: Names of the attributes the networks export.
FITTED_ATTRIBUTES = (
    "coef_",
    "coefs_",
    "intercepts_",
    "_activation",
    "_output_activation",
    "pairwise_coefs_",
    "pairwise_intercepts_",
)


def restore_network(attributes):
    """``(network, params)`` from fitted attributes.

    A :class:`~skrank._core._pairwise_network.PairwiseNetwork` if
    ``pairwise_coefs_`` is there; otherwise the linear network (``coef_``)
    or an MLP (``coefs_``/``intercepts_``).
    """
    if "pairwise_coefs_" in attributes:
        return PairwiseNetwork.restore(attributes)
    return _restore_unary(attributes)
