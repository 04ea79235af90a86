"""Utilities of skrank.

Public: :class:`QueryLayout` (rows grouped by query id, what the losses of
:mod:`skrank.losses` take besides the labels), :func:`write_atomically` (how
skrank writes every file: a failed write leaves the old file whole) and
:mod:`skrank.utils.estimator_checks` (the scikit-learn checks an estimator
fails by design). The modules whose names start with an underscore are
internal.
"""

from ._files import write_atomically
from ._query_layout import QueryLayout

__all__ = ["QueryLayout", "write_atomically"]
