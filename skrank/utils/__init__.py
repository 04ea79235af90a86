"""Utilities of skrank.

Public: :mod:`skrank.utils.estimator_checks` (the scikit-learn checks an
estimator fails by design). The modules whose names start with an
underscore are internal.
"""
