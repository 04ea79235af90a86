"""skrank: listwise learning to rank for scikit-learn."""

__version__ = "0.1.0.dev0"
