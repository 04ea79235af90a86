"""Fitted models in formats that leave Python.

Search engines rank with scoring functions of their own: :func:`to_es_linear`
writes a linear ranker (alone or after scikit-learn scalers in a Pipeline) as
the ``model/linear`` model of the Elasticsearch / OpenSearch Learning-to-Rank
plugin, and :func:`to_vespa_expression` as a Vespa ranking expression. Both
score documents as the model's ``predict`` does.
"""

from ._search_engines import to_es_linear, to_vespa_expression

__all__ = [
    "to_es_linear",
    "to_vespa_expression",
]
