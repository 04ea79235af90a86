"""Predictions and ranking metrics over a source of whole queries, chunk by chunk."""

import numpy as np
from sklearn.utils.validation import check_is_fitted

from .._core._network_factory import restore_network
from ..metrics._scorer import RankingScorer, get_ranking_scorer
from ..utils._qid import check_qid
from ..utils._routing import predict_scores
from ._sources import _is_dask, _labelled, _WholeQueries, query_chunks

__all__ = ["predict_stream", "score_stream"]


def _scores_jointly(ranker):
    """Whether ``ranker`` scores the documents of a query together (needs whole queries)."""
    try:
        return bool(restore_network(vars(ranker))[0].needs_query)
    except (KeyError, ValueError, TypeError):  # not a skrank ranker: rows independently
        return False


def _check_whole(qid_parts, where):
    """Raise unless the queries of the computed ``qid_parts`` are whole (one pass over qid)."""
    checker = _WholeQueries(where)
    for i, part in enumerate(qid_parts):
        part = np.asarray(part.compute())
        if len(part):
            checker.check(check_qid(part), i)


def _predict_dask(ranker, source, label, qid):
    """Scores of a dask source as a dask array, one block per block or partition."""
    joint = _scores_jointly(ranker)
    needs = (f"{type(ranker).__name__} scores the documents of a query together, so "
             "predict_stream needs the query ids")
    if isinstance(source, tuple) or not hasattr(source, "columns"):  # dask arrays
        X, q = (source, None) if not isinstance(source, tuple) else (
            source[0], source[-1] if len(source) > 1 else None)
        dtype = np.float32 if X.dtype == np.float32 else np.float64
        if q is None:
            if joint:
                raise ValueError(f"{needs}: pass (X, qid) or (X, y, qid).")
            return X.map_blocks(lambda x: ranker.predict(x), drop_axis=1, dtype=dtype)
        if X.chunks[0] != q.chunks[0]:
            raise ValueError(
                "X and qid must be chunked alike along the rows (their blocks are scored "
                f"together); got row chunks {X.chunks[0]!r} and {q.chunks[0]!r}."
            )
        if joint:
            starts = np.r_[0, np.cumsum(q.chunks[0])]
            _check_whole(q.to_delayed(), lambda chunk, row: (
                f"row {row} of block {chunk} (row {starts[chunk] + row} of X)"))
        return X.map_blocks(lambda x, b: ranker.predict(x, qid=b[:, 0]), q[:, None],
                            drop_axis=1, dtype=dtype)
    frame = source
    if joint and qid is None:
        raise ValueError(f"{needs}: pass qid=... (a column, or the index's name).")
    features = [c for c in frame.columns if c not in (label, qid)]
    index_qid = qid is not None and qid not in frame.columns
    if joint:
        ids = frame.index if index_qid else frame[qid]
        _check_whole(ids.to_delayed(), lambda chunk, row: f"row {row} of partition {chunk}")

    def scores(part):
        q = None if qid is None else (
            part.index.to_numpy() if index_qid else part[qid].to_numpy())
        return np.asarray(ranker.predict(part[features].to_numpy(), qid=q), dtype=np.float64)

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
        ``qid`` of each chunk is passed to its ``predict`` when it takes one
        (a Pipeline's steps too, as in the scorers).
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
        partition) where it is computed, without gathering the data:
        float32 for float32 dask arrays, float64 otherwise. For a dask
        DataFrame pass ``label`` (that column is not a feature) and, for a
        ranker that scores a query's documents together (BoltzRank with
        ``pairwise_hidden_layer_sizes``), ``qid``: its queries are then
        checked to be whole in each partition first (one pass over the
        query ids), as they are for dask arrays ``(X, qid)``.

    Raises
    ------
    ValueError
        If a query is split between chunks, blocks or partitions and the
        ranker scores a query's documents together (naming the qid), if
        such a ranker gets no query ids, or if a dask ``X`` and ``qid`` are
        chunked differently.
    """
    check_is_fitted(ranker)
    if _is_dask(source) or (isinstance(source, tuple) and any(_is_dask(a) for a in source)):
        return _predict_dask(ranker, source, label, qid)
    chunks = query_chunks(source, **({} if chunk_rows is None else {"chunk_rows": chunk_rows}),
                          label=label, qid=qid, n_features=n_features, dtype=dtype,
                          zero_based=zero_based)
    return ((predict_scores(ranker, X, q), y, q) for X, y, q in chunks)


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
        metric skips such queries), a query is split between chunks, or a
        chunk has no labels (``y`` None).
    TypeError
        If ``scoring`` is neither a scorer name nor a
        :class:`~skrank.metrics.RankingScorer`.
    """
    check_is_fitted(ranker)
    if not isinstance(scoring, (str, RankingScorer)):
        raise TypeError(
            "scoring must be a scorer name such as 'ndcg@10' or a RankingScorer of "
            f"make_ranking_scorer; got {scoring!r}."
        )
    scorer = get_ranking_scorer(scoring)
    chunks = query_chunks(source, **({} if chunk_rows is None else {"chunk_rows": chunk_rows}),
                          label=label, qid=qid, n_features=n_features, dtype=dtype,
                          zero_based=zero_based)
    ids, values = [], []
    for X, y, q in _labelled(chunks, "score_stream"):
        values.append(np.asarray(scorer.score_predictions(
            y, predict_scores(ranker, X, q), qid=q, average=False), dtype=np.float64))
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
