"""Predictions and ranking metrics over a source of whole queries, chunk by chunk."""

import numpy as np
from sklearn.utils.validation import check_is_fitted

from ..metrics._scorer import get_ranking_scorer
from ._sources import _is_dask, query_chunks

__all__ = ["predict_stream", "score_stream"]


def _predict_dask(ranker, source, label, qid):
    """Scores of a dask source as a dask array, one block per block or partition."""
    if isinstance(source, tuple):  # dask arrays: (X, y, qid), (X, qid) or X alone
        X, q = source[0], source[-1] if len(source) > 1 else None
        if q is None:
            return X.map_blocks(lambda x: ranker.predict(x), drop_axis=1, dtype=np.float64)
        return X.map_blocks(lambda x, b: ranker.predict(x, qid=b[:, 0]), q[:, None],
                            drop_axis=1, dtype=np.float64)
    if not hasattr(source, "columns"):  # one dask array X
        return source.map_blocks(lambda x: ranker.predict(x), drop_axis=1, dtype=np.float64)
    frame = source
    features = [c for c in frame.columns if c not in (label, qid)]
    index_qid = qid is not None and qid not in frame.columns

    def scores(part):
        q = None if qid is None else (
            part.index.to_numpy() if index_qid else part[qid].to_numpy())
        return ranker.predict(part[features].to_numpy(), qid=q)

    return frame.map_partitions(lambda part: _series(scores(part), part.index),
                                meta=(None, "float64")).to_dask_array()


def _series(values, index):
    import pandas as pd  # a dask DataFrame brings pandas

    return pd.Series(values, index=index)


def predict_stream(ranker, source, *, chunk_rows=None, label=None, qid=None, n_features=None,
                   dtype=None, zero_based=False):
    """Scores of a source too large for memory, chunk by chunk.

    Parameters
    ----------
    ranker : fitted ranker
        Any fitted skrank ranker (or estimator with ``predict``); the
        ``qid`` of each chunk is passed to its ``predict``.
    source : path, tuple, list of tuples, dask collection or QueryChunks
        As :func:`query_chunks` takes it. A dask source may also be one dask
        array ``X``, or dask arrays ``(X, qid)``.
    chunk_rows, label, qid, n_features, dtype, zero_based
        As :func:`query_chunks` takes them.

    Returns
    -------
    scores : generator of (scores, y, qid), or dask array
        For a file or arrays, a generator yielding each chunk's scores with
        its labels and query ids, in the order of the source (write them
        out as they come: nothing accumulates). For a dask source, a dask
        array of the scores, computed block by block (partition by
        partition) where it is computed, without gathering the data.
    """
    check_is_fitted(ranker)
    if _is_dask(source) or (isinstance(source, tuple) and any(_is_dask(a) for a in source)):
        return _predict_dask(ranker, source, label, qid)
    chunks = query_chunks(source, **({} if chunk_rows is None else {"chunk_rows": chunk_rows}),
                          label=label, qid=qid, n_features=n_features, dtype=dtype,
                          zero_based=zero_based)
    return ((ranker.predict(X, qid=q), y, q) for X, y, q in chunks)


def score_stream(ranker, source, *, scoring="ndcg@10", chunk_rows=None, label=None, qid=None,
                 n_features=None, dtype=None, zero_based=False):
    """A ranking metric of ``ranker`` over a source too large for memory.

    Each chunk's queries are scored and their per-query values kept (one
    float per query); the result is their mean, taken as the in-memory
    metric takes it (the queries in the order of their ids, those the
    metric leaves out, NaN, skipped): equal to ``scorer(ranker, X, y,
    qid=qid)`` on the whole data in memory, for skrank's metrics.

    Parameters
    ----------
    ranker : fitted ranker
        Any fitted skrank ranker.
    source : path, tuple, list of tuples, dask collection or QueryChunks
        As :func:`query_chunks` takes it.
    scoring : str or RankingScorer, default="ndcg@10"
        A scorer name of :func:`~skrank.metrics.get_ranking_scorer`, or a
        scorer of :func:`~skrank.metrics.make_ranking_scorer`.
    chunk_rows, label, qid, n_features, dtype, zero_based
        As :func:`query_chunks` takes them.

    Returns
    -------
    score : float
        The mean over the queries of the source.

    Raises
    ------
    ValueError
        If no query has a value (e.g. none has a relevant document and the
        metric skips such queries), or a query is split between chunks.
    """
    check_is_fitted(ranker)
    scorer = get_ranking_scorer(scoring) if isinstance(scoring, str) else scoring
    chunks = query_chunks(source, **({} if chunk_rows is None else {"chunk_rows": chunk_rows}),
                          label=label, qid=qid, n_features=n_features, dtype=dtype,
                          zero_based=zero_based)
    ids, values = [], []
    for X, y, q in chunks:
        values.append(np.asarray(scorer.score_predictions(
            y, ranker.predict(X, qid=q), qid=q, average=False), dtype=np.float64))
        ids.append(np.unique(q))  # the order of the per-query values
    if not values:
        raise ValueError(f"The source {chunks!r} holds no rows.")
    per_query = np.concatenate(values)[np.argsort(np.concatenate(ids), kind="stable")]
    kept = ~np.isnan(per_query)
    if not kept.any():
        raise ValueError(
            f"{scorer!r}: no query of the source has a value (e.g. none has a relevant "
            "document and the metric skips such queries), so the mean is undefined."
        )
    return float(per_query[kept].mean())
