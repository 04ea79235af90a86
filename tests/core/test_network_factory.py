"""make_network (skrank/_core/_network_factory.py): the network a ranker's parameters give."""

import pytest

from skrank._core._network_factory import make_network
from skrank._core._networks import LinearNetwork, MLPNetwork
from skrank._core._pairwise_network import PairwiseNetwork

from tests._network_helpers import N_FEATURES


def test_make_network_picks_linear_or_mlp():
    assert isinstance(make_network(N_FEATURES, ()), LinearNetwork)
    mlp = make_network(N_FEATURES, (4, 2), "relu")
    assert isinstance(mlp, MLPNetwork)
    assert mlp.hidden_layer_sizes == (4, 2) and mlp.activation == "relu"
    with pytest.raises(ValueError, match="at least one hidden layer; use LinearNetwork"):
        MLPNetwork(N_FEATURES, ())


def test_make_network_output_activation():
    mlp = make_network(N_FEATURES, (4,), "relu", output_activation="logistic")
    assert isinstance(mlp, MLPNetwork) and mlp.output_activation == "logistic"
    assert make_network(N_FEATURES, (4,)).output_activation == "identity"
    assert isinstance(make_network(N_FEATURES, (), output_activation="identity"), LinearNetwork)
    with pytest.raises(ValueError, match="output_activation must be 'identity'; got 'tanh'"):
        make_network(N_FEATURES, (), output_activation="tanh")
    with pytest.raises(ValueError, match="output_activation must be one of .*; got 'relu'"):
        MLPNetwork(N_FEATURES, (4,), output_activation="relu")
    with pytest.raises(ValueError, match="activation must be one of .*; got 'sigmoid'"):
        MLPNetwork(N_FEATURES, (4,), activation="sigmoid")


def test_make_network_builds_the_pairwise_network():
    network = make_network(
        N_FEATURES, (4,), "scaled_tanh", output_activation="tanh",
        pairwise_hidden_layer_sizes=(5,),
    )
    assert isinstance(network, PairwiseNetwork) and network.needs_query
    assert isinstance(network.unary, MLPNetwork) and network.unary.output_activation == "tanh"
    assert network.activation == "scaled_tanh" and network.output_activation == "tanh"
    assert network.pairwise_hidden_layer_sizes == (5,)
    # a linear individual potential: the output activation is the pairwise potential's
    linear = make_network(
        N_FEATURES, (), "relu", output_activation="tanh", pairwise_hidden_layer_sizes=(2,)
    )
    assert isinstance(linear.unary, LinearNetwork)
    assert linear.activation == "relu" and linear.output_activation == "tanh"
    assert not LinearNetwork.needs_query and not MLPNetwork.needs_query
