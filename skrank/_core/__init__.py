"""Private machinery of the rankers: scoring networks, solvers and the fit loop."""
