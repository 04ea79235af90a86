"""Utilities of skrank.

Public: :class:`QueryLayout` (rows grouped by query id, what the losses of
:mod:`skrank.losses` take besides the labels) and
:mod:`skrank.utils.estimator_checks` (the scikit-learn checks an estimator
fails by design). The modules whose names start with an underscore are
internal.
"""

from ._query_layout import QueryLayout

__all__ = ["QueryLayout"]
