"""Fitted models in formats that leave Python.

:func:`to_onnx` writes a fitted ranker, or a pipeline ending in one, as an
ONNX graph that scores the documents of one query (run by ONNX Runtime and
the engines that load ONNX models); :func:`register_onnx_converters`
registers skrank's converters with skl2onnx for a direct call of
``skl2onnx.to_onnx``. Both import the optional packages onnx and skl2onnx
(the ``onnx`` extra) when called, never at import time.

Search engines rank with scoring functions of their own: :func:`to_es_linear`
writes a linear ranker (alone or after scikit-learn scalers in a Pipeline) as
the ``model/linear`` model of the Elasticsearch / OpenSearch Learning-to-Rank
plugin, and :func:`to_vespa_expression` as a Vespa ranking expression. Both
score documents as the model's ``predict`` does.
"""

from ._onnx import register_onnx_converters, to_onnx
from ._search_engines import to_es_linear, to_vespa_expression

__all__ = [
    "register_onnx_converters",
    "to_es_linear",
    "to_onnx",
    "to_vespa_expression",
]
