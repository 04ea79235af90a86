"""Data larger than memory: fits, predictions and metrics over streams of whole queries.

A source (a LETOR file, arrays or memory maps, a dask collection) is read
chunk by chunk, each chunk holding whole queries (:func:`query_chunks`);
:func:`fit_stream` trains a ranker over it for several epochs with
``partial_fit``, :func:`predict_stream` scores it chunk by chunk and
:func:`score_stream` computes a ranking metric over it, equal to the metric
of the whole data in memory.
"""

from ._fit import fit_stream
from ._predict import predict_stream, score_stream
from ._sources import QueryChunks, query_chunks

__all__ = ["QueryChunks", "fit_stream", "predict_stream", "query_chunks", "score_stream"]
