"""The protocols of the core's seams (skrank/_core/_types.py) hold for what implements them."""

import inspect

import numpy as np
import pytest

from skrank._core._folded_objective import FoldedObjective
from skrank._core._network_factory import make_network
from skrank._core._objective import Objective
from skrank._core._stopping import Monitor, StoppingRule
from skrank._core._types import Loss, Network, Problem, RunMonitor
from skrank.losses import LOSSES, LogRankLoss
from skrank.utils import QueryLayout


def _members(protocol):
    """The methods and attributes a protocol declares (its own, not Protocol's)."""
    return {name for name in vars(protocol) if not name.startswith("_")} | set(
        getattr(protocol, "__annotations__", {}))


def _same_parameters(protocol, implementation):
    """Each method of ``protocol`` has the parameter names of ``implementation``'s."""
    for name, member in vars(protocol).items():
        if name.startswith("_") or not callable(getattr(member, "__func__", member)):
            continue
        declared = inspect.signature(getattr(protocol, name))
        actual = inspect.signature(getattr(implementation, name))
        assert list(declared.parameters) == list(actual.parameters), (implementation, name)


@pytest.fixture
def problems():
    rng = np.random.default_rng(0)
    qid = np.repeat(np.arange(6), 5)
    X, y = rng.normal(size=(30, 4)), rng.integers(0, 3, size=30).astype(float)
    loss = LogRankLoss(n_rankings=4)
    state = loss.prepare(y, QueryLayout(qid), random_state=0)
    network = make_network(4, ())
    return (Objective(network, loss, state, y, X, None, 0.1),
            FoldedObjective(network, loss, state, y, X, None, 0.1))


@pytest.mark.parametrize("hidden, pairwise", [((), None), ((3,), None), ((3,), (2,))],
                         ids=["linear", "mlp", "pairwise"])
def test_every_network_is_a_network(hidden, pairwise):
    network = make_network(4, hidden, pairwise_hidden_layer_sizes=pairwise)
    assert isinstance(network, Network)
    assert _members(Network) <= set(dir(network))
    _same_parameters(Network, type(network))


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_every_loss_is_a_loss(name):
    loss = LOSSES[name]()
    assert isinstance(loss, Loss)
    _same_parameters(Loss, type(loss))


def test_both_objectives_are_problems(problems):
    for problem in problems:
        assert isinstance(problem, Problem)
        assert _members(Problem) <= set(dir(problem))
        _same_parameters(Problem, type(problem))


def test_the_monitor_is_a_run_monitor(problems):
    monitor = StoppingRule(tol=0.0, n_iter_no_change=2).monitor(problems[0], "Run 0")
    assert isinstance(monitor, RunMonitor)
    assert _members(RunMonitor) <= set(dir(monitor))
    _same_parameters(RunMonitor, Monitor)


def test_a_network_without_backward_is_not_one():
    class Scores:
        n_params, needs_query = 3, False

        def forward(self, params, X, layout=None):
            return X @ params, X

    assert not isinstance(Scores(), Network)
