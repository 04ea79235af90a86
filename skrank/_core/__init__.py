"""Private machinery of the rankers: scoring networks, solvers and the fit loop.

One concept per module, bottom to top (a module imports only those above it
in this list, and :mod:`skrank.losses` and :mod:`skrank.utils`):

* ``_types``: the protocols of the seams (a network, a loss as the fit
  loop uses it, the problem a solver minimises, the monitor of a run);
* ``_activations``: the units' activations and their derivatives;
* ``_networks``: networks that score every row on its own (the linear model,
  the MLP), and the interface every network has;
* ``_pairwise_network``: BoltzRank2's network, a row network plus pairwise
  potentials between the documents of a query;
* ``_network_factory``: the network of a ranker's parameters, or of its
  fitted attributes;
* ``_solvers``: Adam, SGD and L-BFGS, and what they need of an objective;
* ``_folded_objective``: a linear model's objective on a loss of sample
  logits, folded once per fit;
* ``_objective``: the objective a solver minimises (mean loss per query plus
  the L2 penalty), its mini-batches, and :func:`~skrank._core._objective.make_objective`;
* ``_stopping``: when a run stops and which parameters it keeps;
* ``_runs``: runs from several initialisations, in parallel, and how they
  are combined (the entry point of a fit).
"""
