"""The network parameters of a ranker: ``hidden_layer_sizes`` and ``activation``.

:class:`NetworkMixin` builds a ranker's scoring network (a linear model or
an MLP) from them, refuses a network whose fit cannot fit in the memory
available and a fitted one that the current parameters cannot continue;
:func:`layer_sizes` reads a ``hidden_layer_sizes`` value as a tuple of
widths. Taken by :class:`~skrank.rankers._neural.NeuralRanker` and by
LogRank.
"""

from numbers import Integral

from .._core._network_factory import make_network
from .._core._networks import LinearNetwork
from ..utils._memory import check_memory, format_bytes
from ._params import LAYER_UNITS


def layer_sizes(value):
    """``value`` (an int or a sequence of them) as a tuple of widths; None if one is not
    a :data:`LAYER_UNITS` (e.g. ``True``, or 0)."""
    sizes = (value,) if isinstance(value, Integral) else tuple(value)
    return sizes if all(LAYER_UNITS.is_satisfied_by(h) for h in sizes) else None


class NetworkMixin:
    """The network of a ranker trained by the neural fit loop.

    From the parameters ``hidden_layer_sizes`` and ``activation``: builds
    the scoring network (``_make_network``), refuses one whose fit cannot
    fit in the memory available (``_check_network_fits``) and a fitted one
    that the current parameters cannot continue (``_check_warm_network``).
    Shared by the stochastic rankers (:class:`NeuralRanker`) and by
    LogRank, whose L-BFGS fit has no solver or stopping parameters.
    """

    def _hidden_sizes(self):
        sizes = layer_sizes(self.hidden_layer_sizes)
        if sizes is None:
            raise ValueError(
                "hidden_layer_sizes must hold positive integers; got "
                f"{self.hidden_layer_sizes!r} (each entry must be {LAYER_UNITS})."
            )
        return sizes

    def _make_network(self, n_features):
        return make_network(n_features, self._hidden_sizes(), self.activation)

    def _network_parameters(self):
        """The parameters that size the network, by name, as the user gave them."""
        return {"hidden_layer_sizes": self.hidden_layer_sizes}

    def _check_network_fits(self, network, n_init, largest_query):
        """Refuse a network whose fit cannot fit in the memory available, naming its sizes.

        The widths of the hidden layers come from the user, and an MLP's
        parameters grow as ``n_features`` times the first one: the kernel
        would promise their arrays and kill the process once they are
        written. What is counted is a floor of the fit's memory, 8 bytes a
        value: the ``n_init`` starting points and a gradient, and the
        hidden activations (pre-activations and activations) of the
        largest query. A larger fit may still run out of memory later.
        """
        given = self._network_parameters()
        units = sum(sum(layer_sizes(value)) for value in given.values() if value is not None)
        n_bytes = 8 * ((n_init + 1) * network.n_params + 2 * largest_query * units)
        shown = " and ".join(f"{name}={value!r}" for name, value in given.items())
        starts = "1 starting point" if n_init == 1 else f"n_init={n_init} starting points"
        check_memory(
            n_bytes,
            f"{shown} make{'s' if len(given) == 1 else ''} a network of {network.n_params} "
            f"parameters on {network.n_features} features, whose fit needs at least "
            f"{format_bytes(n_bytes)} ({starts} and a gradient, and the hidden "
            f"activations of a query of {largest_query} rows)",
            f"lower {' or '.join(self._network_culprits(given, n_init))}",
        )

    @staticmethod
    def _network_culprits(given, n_init):
        """The parameters of ``given`` (and ``n_init`` above 1) that make the network larger."""
        culprits = [name for name, value in given.items()
                    if value is not None and sum(layer_sizes(value))]
        if n_init > 1:
            culprits.append("n_init")
        return culprits or list(given)

    def _check_warm_network(self, network, by):
        """Raise if the fitted ``network`` cannot continue under the current parameters.

        ``by``: what continues it (:data:`WARM_START`, :data:`PARTIAL_FIT` or
        a stream's own :class:`Continuation`), for the messages.
        """
        linear = isinstance(network, LinearNetwork)
        hidden = self._hidden_sizes()
        if linear != (len(hidden) == 0):
            raise ValueError(
                f"{by.continues} the fitted {'linear' if linear else 'MLP'} "
                f"network, but hidden_layer_sizes={self.hidden_layer_sizes!r} asks for "
                f"{'an MLP' if linear else 'a linear model'}; {by.instead}."
            )
        if linear:
            return
        fitted = network.hidden_layer_sizes
        # after restarts="average" every layer is n_init times wider: that is the model
        widths_match = len(fitted) == len(hidden) and len(
            {f / h for f, h in zip(fitted, hidden)}
        ) == 1 and fitted[0] % hidden[0] == 0
        if not widths_match:
            raise ValueError(
                f"{by.continues} the fitted MLP of hidden layers {fitted}, but "
                f"hidden_layer_sizes={self.hidden_layer_sizes!r} asks for another network; "
                f"{by.instead}."
            )
        if network.activation != self.activation:
            raise ValueError(
                f"{by.continues} the MLP fitted with activation="
                f"{network.activation!r}, but got activation={self.activation!r}; "
                f"{by.instead}."
            )
