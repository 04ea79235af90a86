"""Streams of whole queries: sources, fit_stream, predict_stream and score_stream."""

import os
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.exceptions import ConvergenceWarning

from skrank import (
    BoltzRankRanker,
    ListNetRanker,
    LogRankRanker,
    SoftRankRanker,
    get_ranking_scorer,
    load_letor,
    make_ranking,
    make_ranking_scorer,
)
from skrank._core._network_factory import restore_network
from skrank.stream import fit_stream, predict_stream, query_chunks, score_stream


@pytest.fixture(scope="module")
def data():
    """80 queries of 10 documents (the first 60 for training, the last 20 for validation)."""
    return make_ranking(n_queries=80, n_docs=10, n_features=5, noise=0.5, random_state=0)


@pytest.fixture(scope="module")
def train(data):
    X, y, qid = data
    return X[:600], y[:600], qid[:600]


@pytest.fixture(scope="module")
def validation(data):
    X, y, qid = data
    return X[600:], y[600:], qid[600:]


def _params(ranker):
    return restore_network(vars(ranker))[1]


def _quiet(function, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return function(*args, **kwargs)


# ----------------------------------------------------------------------
# Sources
def test_array_chunks_hold_whole_queries(train):
    X, y, qid = train
    chunks = list(query_chunks((X, y, qid), chunk_rows=35))
    # 35 rows hold 3 queries of 10: chunks end at a query's end, and cover the data
    assert [len(c[2]) for c in chunks] == [30] * 20
    assert_array_equal(np.concatenate([c[0] for c in chunks]), X)
    assert_array_equal(np.concatenate([c[2] for c in chunks]), qid)
    # a query larger than chunk_rows is a chunk of its own
    assert [len(c[2]) for c in query_chunks((X, y, qid), chunk_rows=4)] == [10] * 60


def test_memory_mapped_chunks_are_slices_of_the_map(train, tmp_path):
    X, y, qid = train
    np.save(tmp_path / "X.npy", X.astype(np.float32))
    X_map = np.load(tmp_path / "X.npy", mmap_mode="r")
    for X_chunk, _, _ in query_chunks((X_map, y, qid), chunk_rows=100):
        # a view of the map (read when used), not a copy of it
        assert isinstance(X_chunk, np.memmap) and np.shares_memory(X_chunk, X_map)


def test_a_query_split_between_arrays_raises(train):
    X, y, qid = train
    parts = [(X[:95], y[:95], qid[:95]), (X[95:], y[95:], qid[95:])]
    with pytest.raises(ValueError, match=rf"qid={qid[95]} is split across two chunks: its rows "
                                         r"run to row 94 of array 0 and go on at row 0 of "
                                         r"array 1\."):
        list(query_chunks(parts))


def test_a_query_whose_rows_are_apart_raises(train):
    X, y, qid = train
    qid = qid.copy()
    qid[15] = qid[0]  # a row of query 0 inside query 1
    with pytest.raises(ValueError, match=rf"qid={qid[0]} is not contiguous: its rows stop at "
                                         r"row 9 and start again at row 15\."):
        list(query_chunks((X, y, qid)))
    # also when the rows are in two chunks
    with pytest.raises(ValueError, match=rf"qid={qid[0]} is not contiguous: its rows stop at "
                                         r"row 9 and start again at row 15\."):
        list(query_chunks((X, y, qid), chunk_rows=10))


@pytest.mark.parametrize("source, match", [
    ("nothing", r"No such file or directory: 'nothing'"),
    (42, r"source must be a path of a LETOR file, a tuple \(X, y, qid\)"),
    ((np.zeros((2, 2)), np.zeros(2)), r"source\[0\] must be a tuple \(X, y, qid\); got a "
                                      r"tuple of 2 items"),
])
def test_bad_sources_raise(source, match):
    with pytest.raises((TypeError, ValueError, FileNotFoundError), match=match):
        list(query_chunks(source))


@pytest.mark.parametrize("chunk_rows", [0, -1, 2.5, True])
def test_bad_chunk_rows_raise(train, chunk_rows):
    with pytest.raises(ValueError, match=rf"chunk_rows must be a positive integer; got "
                                         rf"{chunk_rows!r}"):
        query_chunks(train, chunk_rows=chunk_rows)


def _write_letor(path, X, y, qid):
    from sklearn.datasets import dump_svmlight_file

    dump_svmlight_file(X, y, str(path), query_id=qid, zero_based=False)


def test_a_letor_file_streams_as_its_arrays(train, tmp_path):
    """A file is re-read every epoch, in chunks of whole queries: the fit of its arrays."""
    _write_letor(tmp_path / "train.txt", *train)
    X, y, qid = load_letor(tmp_path / "train.txt")  # as written (17 digits are not kept)
    from_file = _quiet(fit_stream, _ranker(ListNetRanker, max_iter=2), tmp_path / "train.txt",
                       chunk_rows=100, n_features=5)
    from_arrays = _quiet(fit_stream, _ranker(ListNetRanker, max_iter=2), (X, y, qid),
                         chunk_rows=100)
    assert_array_equal(_params(from_file), _params(from_arrays))
    assert from_file.n_features_in_ == 5


def test_a_query_apart_in_a_file_raises(train, tmp_path):
    X, y, qid = train
    qid = qid.copy()
    qid[15] = qid[0]
    _write_letor(tmp_path / "train.txt", X, y, qid)
    with pytest.raises(ValueError, match=rf"Line 16 of '.*train.txt' has qid {qid[0]}, whose "
                                         r"earlier lines end on line 10"):
        fit_stream(_ranker(ListNetRanker), tmp_path / "train.txt", n_features=5)


# ----------------------------------------------------------------------
# fit_stream
STOCHASTIC = [ListNetRanker, SoftRankRanker, BoltzRankRanker]


def _ranker(cls, **params):
    return cls(**{"random_state": 0, "n_init": 1, "batch_size": 5, **params})


@pytest.mark.parametrize("cls", STOCHASTIC, ids=lambda c: c.__name__)
def test_an_epoch_in_source_order_is_partial_fit_on_each_chunk(cls, train):
    X, y, qid = train
    streamed = _quiet(fit_stream, _ranker(cls, max_iter=1), (X, y, qid), shuffle=False,
                      chunk_rows=100)
    stepped = _ranker(cls)
    for lo in range(0, 600, 100):
        stepped.partial_fit(X[lo:lo + 100], y[lo:lo + 100], qid=qid[lo:lo + 100])
    assert_array_equal(_params(streamed), _params(stepped))
    assert streamed.n_iter_ == 1 and streamed.t_ == 60 and len(streamed.loss_curve_) == 1
    # the epoch's loss is the mean of its batches' losses over its queries
    assert_allclose(streamed.loss_curve_[0], np.mean(stepped.loss_curve_), rtol=1e-12)


def test_epochs_continue_the_solver_state(train):
    X, y, qid = train
    two = _quiet(fit_stream, _ranker(ListNetRanker, max_iter=2, early_stopping=False),
                 (X, y, qid), shuffle=False)
    stepped = _ranker(ListNetRanker).partial_fit(X, y, qid=qid)
    # an epoch may open with the query the previous one ended with
    stepped._partial_fit(X, y, qid, None, check_split=False)
    assert_array_equal(_params(two), _params(stepped))
    assert two.n_iter_ == 2 and two.t_ == 120


def test_shuffling_is_seeded_by_random_state(train):
    X, y, qid = train
    fits = [_quiet(fit_stream, _ranker(ListNetRanker, max_iter=2, random_state=seed),
                   (X, y, qid), chunk_rows=100, buffer_chunks=3) for seed in (0, 0, 1)]
    assert_array_equal(_params(fits[0]), _params(fits[1]))
    unshuffled = _quiet(fit_stream, _ranker(ListNetRanker, max_iter=2), (X, y, qid),
                        chunk_rows=100, shuffle=False)
    assert np.abs(_params(fits[0]) - _params(unshuffled)).max() > 1e-6


def test_shuffled_epochs_step_each_buffer_in_its_drawn_order(train):
    # buffers of 100, 300 and 200 rows (one chunk each): the stacked rows
    # are kept in one array from buffer to buffer and epoch to epoch, which
    # must not leak a buffer's rows into the next
    X, y, qid = train
    cuts = [0, 100, 400, 600]
    source = [(X[a:b], y[a:b], qid[a:b]) for a, b in zip(cuts[:-1], cuts[1:])]
    streamed = _quiet(fit_stream, _ranker(ListNetRanker, max_iter=2, early_stopping=False),
                      source, buffer_chunks=1)
    # the same steps by hand: each buffer's queries (in sorted order of the
    # ids) permuted by the ranker's random_state, one draw per buffer
    rng = np.random.RandomState(0)
    stepped = _ranker(ListNetRanker)
    for _ in range(2):
        for X_part, y_part, qid_part in source:
            ids = np.unique(qid_part)[rng.permutation(len(np.unique(qid_part)))]
            rows = np.concatenate([np.flatnonzero(qid_part == q) for q in ids])
            stepped._partial_fit(X_part[rows], y_part[rows], qid_part[rows], None,
                                 check_split=False)
    assert_array_equal(_params(streamed), _params(stepped))
    assert streamed.t_ == stepped.t_ == 2 * 60  # queries seen


def test_early_stopping_keeps_the_best_epoch(train, validation):
    X, y, qid = train
    X_val, y_val, qid_val = validation
    ranker = _ranker(ListNetRanker, max_iter=60, n_iter_no_change=3, learning_rate_init=0.05,
                     tol=0.0)
    _quiet(fit_stream, ranker, (X, y, qid), X_val=X_val, y_val=y_val, qid_val=qid_val,
           chunk_rows=100)
    scores = ranker.validation_scores_
    assert len(scores) == ranker.n_iter_ == len(ranker.loss_curve_)
    best = int(np.argmax(scores))
    assert ranker.n_iter_ < 60 and ranker.n_iter_ == best + 1 + 3  # patience ran out
    assert ranker.best_validation_score_ == scores[best]
    # the kept weights are the best epoch's: they score it again
    assert ranker.score(X_val, y_val, qid=qid_val) == pytest.approx(scores[best], abs=1e-12)


def test_a_forgotten_qid_val_warns_naming_fit_stream(train, validation):
    X_val, y_val, _ = validation
    assert len(y_val) > 100
    with pytest.warns(UserWarning, match=rf"^fit_stream got qid_val=None, so all {len(y_val)} "
                                         r"rows are treated as ONE query"):
        _quiet(fit_stream, _ranker(ListNetRanker, max_iter=1), train, X_val=X_val, y_val=y_val)


def test_verbose_prints_each_epoch(train, validation, capsys):
    X, y, qid = train
    X_val, y_val, qid_val = validation
    _quiet(fit_stream, _ranker(ListNetRanker, max_iter=2, verbose=1), (X, y, qid),
           X_val=X_val, y_val=y_val, qid_val=qid_val)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("Epoch 1: 600 rows, 60 queries, loss = ")
    assert ", validation ndcg@10 = " in lines[0] and lines[0].endswith(" s")


def test_max_iter_reached_warns(train):
    with pytest.warns(ConvergenceWarning, match=r"maximum iterations \(2\) reached"):
        fit_stream(_ranker(ListNetRanker, max_iter=2), train)


def test_a_streamed_ranker_is_an_ordinary_fitted_ranker(train, tmp_path):
    import pickle

    X, y, qid = train
    ranker = _quiet(fit_stream, _ranker(BoltzRankRanker, max_iter=2), (X, y, qid))
    again = pickle.loads(pickle.dumps(ranker))
    assert_array_equal(again.predict(X), ranker.predict(X))
    # refitting in memory forgets the stream
    _quiet(again.fit, X, y, qid=qid)
    assert again.n_iter_ >= 1 and not hasattr(again, "_solver_memory")


@pytest.mark.parametrize("ranker, match", [
    (ListNetRanker(solver="lbfgs"), r"fit_stream steps with partial_fit, which ListNetRanker "
                                    r"has not"),
    (LogRankRanker(), r"fit_stream steps with partial_fit, which LogRankRanker has not"),
])
def test_full_batch_rankers_cannot_stream(train, ranker, match):
    with pytest.raises(TypeError, match=match):
        fit_stream(ranker, train)


def test_validation_without_early_stopping_raises(train, validation):
    with pytest.raises(ValueError, match=r"X_val/y_val are used for early stopping only"):
        fit_stream(_ranker(ListNetRanker, early_stopping=False), train, X_val=validation[0],
                   y_val=validation[1], qid_val=validation[2])


def test_a_split_query_stops_the_fit(train):
    X, y, qid = train
    parts = [(X[:95], y[:95], qid[:95]), (X[95:], y[95:], qid[95:])]
    with pytest.raises(ValueError, match=rf"qid={qid[95]} is split across two chunks"):
        fit_stream(_ranker(ListNetRanker), parts)


def test_float32_memory_map_trains_in_float32(train, tmp_path):
    X, y, qid = train
    np.save(tmp_path / "X.npy", X.astype(np.float32))
    X_map = np.load(tmp_path / "X.npy", mmap_mode="r")
    from_map = _quiet(fit_stream, _ranker(ListNetRanker, max_iter=2), (X_map, y, qid),
                      shuffle=False)
    in_memory = _quiet(fit_stream, _ranker(ListNetRanker, max_iter=2),
                       (X.astype(np.float32), y, qid), shuffle=False)
    assert_array_equal(_params(from_map), _params(in_memory))
    assert from_map.predict(X_map[:10]).dtype == np.float32


# ----------------------------------------------------------------------
# predict_stream and score_stream
@pytest.fixture(scope="module")
def fitted(train):
    return _quiet(_ranker(ListNetRanker, max_iter=5).fit, *train[:2], qid=train[2])


def test_predict_stream_scores_chunk_by_chunk(fitted, data):
    X, y, qid = data
    parts = list(predict_stream(fitted, (X, y, qid), chunk_rows=70))
    assert len(parts) == 12
    assert_array_equal(np.concatenate([s for s, _, _ in parts]), fitted.predict(X))
    assert_array_equal(np.concatenate([q for _, _, q in parts]), qid)


@pytest.mark.parametrize("scoring", [
    "ndcg@10", "map", "ndcg@3",
    make_ranking_scorer("ndcg", k=5, no_relevant="skip"),
])
def test_score_stream_is_the_in_memory_metric(fitted, data, scoring):
    X, y, qid = data
    y = y.copy()
    y[qid == qid[0]] = 0  # a query without a relevant document (skipped or 0)
    shuffled = np.random.RandomState(0).permutation(np.unique(qid))
    order = np.concatenate([np.flatnonzero(qid == q) for q in shuffled])
    scorer = get_ranking_scorer(scoring) if isinstance(scoring, str) else scoring
    expected = scorer(fitted, X, y, qid=qid)
    # chunks in another query order, of uneven sizes: the same number, to the bit
    assert score_stream(fitted, (X[order], y[order], qid[order]), scoring=scoring,
                        chunk_rows=37) == expected


# ----------------------------------------------------------------------
# Dask: an in-process cluster
@pytest.fixture(scope="module")
def dask_client(installed):
    distributed = installed("distributed", "dask")
    cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                       dashboard_address=None)
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


def test_dask_arrays_and_dataframe_on_a_local_cluster(train, fitted, dask_client, installed):
    da = installed("dask.array", "dask")
    dd = installed("dask.dataframe", "dask")
    pd = installed("pandas", "test")
    X, y, qid = train
    blocks = tuple(da.from_array(a, chunks=(100,) + a.shape[1:]) for a in (X, y, qid))
    on_dask = _quiet(fit_stream, _ranker(ListNetRanker, max_iter=2), blocks, shuffle=False)
    in_memory = _quiet(fit_stream, _ranker(ListNetRanker, max_iter=2), (X, y, qid),
                       shuffle=False, chunk_rows=100)
    assert_array_equal(_params(on_dask), _params(in_memory))
    # a DataFrame indexed by qid: its partitions hold whole queries
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])])
    frame["label"], frame["qid"] = y, qid
    frame = dd.from_pandas(frame, npartitions=3).set_index("qid", sorted=True)
    from_frame = _quiet(fit_stream, _ranker(ListNetRanker, max_iter=2), frame, label="label",
                        qid="qid", shuffle=False)
    assert from_frame.n_iter_ == 2 and from_frame.t_ == 120
    # predictions stay lazy, block by block, and equal predict in memory (up to
    # the rounding of a matrix product of other blocks)
    scores = predict_stream(fitted, blocks)
    assert isinstance(scores, da.Array) and scores.numblocks == (6,)
    assert_allclose(scores.compute(), fitted.predict(X), rtol=1e-12, atol=1e-15)
    assert_allclose(predict_stream(fitted, frame, label="label", qid="qid").compute(),
                    fitted.predict(X), rtol=1e-12, atol=1e-15)
    assert score_stream(fitted, frame, label="label", qid="qid") == pytest.approx(
        fitted.score(X, y, qid=qid), abs=1e-12)
    # a query across two blocks is refused, naming it
    split = tuple(da.from_array(a, chunks=(105,) + a.shape[1:]) for a in (X, y, qid))
    with pytest.raises(ValueError, match=rf"qid={qid[105]} is split across two chunks: its "
                                         r"rows run to row 104 of block 0 \(row 104 of X\)"):
        fit_stream(_ranker(ListNetRanker), split)


def test_dask_queries_in_a_column_and_empty_partitions(train, dask_client, installed):
    dd = installed("dask.dataframe", "dask")
    pd = installed("pandas", "test")
    X, y, qid = train
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])])
    frame["label"], frame["qid"] = y, qid
    # 6 partitions of 100 rows, whole queries, qid a column; one emptied by a filter
    frame = dd.from_pandas(frame, npartitions=6, sort=False)
    kept = frame[frame["qid"] >= 10]
    from_frame = _quiet(fit_stream, _ranker(ListNetRanker, max_iter=1), kept, label="label",
                        qid="qid", shuffle=False)
    in_memory = _quiet(fit_stream, _ranker(ListNetRanker, max_iter=1),
                       (X[100:], y[100:], qid[100:]), shuffle=False, chunk_rows=100)
    assert_array_equal(_params(from_frame), _params(in_memory))
    # a query across two partitions: refused by a fit, and by a prediction of a
    # model that scores a query's rows together
    split = dd.from_pandas(frame.compute(), npartitions=7, sort=False)
    with pytest.raises(ValueError, match=r"is split across two chunks: its rows run to row "
                                         r"\d+ of partition 0 and go on at row 0 of "
                                         r"partition 1"):
        fit_stream(_ranker(ListNetRanker), split, label="label", qid="qid")
    pairwise = _quiet(_ranker(BoltzRankRanker, pairwise_hidden_layer_sizes=(3,),
                              max_iter=1).fit, X, y, qid=qid)
    with pytest.raises(ValueError, match=r"is split across two chunks: its rows run to row "
                                         r"\d+ of partition 0"):
        predict_stream(pairwise, split, label="label", qid="qid")
    with pytest.raises(ValueError, match=r"BoltzRankRanker scores the documents of a query "
                                         r"together, so predict_stream needs the query ids"):
        predict_stream(pairwise, split, label="label")
    # a model scoring rows one by one needs no whole queries
    assert_allclose(predict_stream(from_frame, split, label="label", qid="qid").compute(),
                    from_frame.predict(X), rtol=1e-12, atol=1e-15)


def test_a_tuple_mixing_dask_and_numpy_is_refused(train, installed):
    da = installed("dask.array", "dask")
    X, y, qid = train
    with pytest.raises(TypeError, match=r"must be all dask arrays, chunked alike along the "
                                        r"rows; got Array, ndarray, ndarray"):
        query_chunks((da.from_array(X, chunks=(100, 5)), y, qid))


def _first_return(qid):
    """Brute force: (qid, row) of the first row whose query's rows stopped before it."""
    seen, previous = set(), None
    for row, q in enumerate(qid.tolist()):
        if q != previous:
            if q in seen:
                return q, row
            seen.add(q)
        previous = q
    return None


@pytest.mark.parametrize("seed", range(60))
def test_the_whole_query_check_against_brute_force(seed):
    """Random runs of ids (some coming back), cut into random chunks of whole runs."""
    rng = np.random.default_rng(seed)
    n_runs = int(rng.integers(1, 40))
    ids = rng.integers(0, 30 if seed % 2 else 1000, size=n_runs)
    if seed % 3 == 0:
        ids = np.sort(ids)  # increasing ids: the check's shortcut
    sizes = rng.integers(1, 4, size=n_runs)
    qid = np.repeat(ids, sizes)
    # merge equal neighbouring runs into one run, as a stream sees them
    X, y = np.zeros((len(qid), 1)), np.zeros(len(qid))
    cuts = np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]])
    chosen = np.sort(rng.choice(cuts[1:], size=min(len(cuts) - 1, int(rng.integers(0, 6))),
                                replace=False)) if len(cuts) > 1 else np.array([], int)
    parts = [(X[a:b], y[a:b], qid[a:b]) for a, b in zip(np.r_[0, chosen], np.r_[chosen, len(qid)])]
    expected = _first_return(qid)
    if expected is None:
        assert sum(len(c[2]) for c in query_chunks(parts)) == len(qid)
    else:
        q, row = expected
        part = int(np.searchsorted(np.r_[0, chosen], row, side="right")) - 1
        local = row - np.r_[0, chosen][part]
        where = f"row {local} of array {part}" if len(parts) > 1 else f"row {local}"
        with pytest.raises(ValueError, match=rf"qid={q} is not contiguous: .* start again at "
                                             rf"{where}\."):
            list(query_chunks(parts))


# ----------------------------------------------------------------------
# A failed streamed fit leaves the ranker as it was
def test_a_failed_fit_stream_keeps_the_previous_model(train):
    X, y, qid = train
    ranker = _quiet(_ranker(ListNetRanker, max_iter=3).fit, X, y, qid=qid)
    before = {k: v for k, v in vars(ranker).items()}
    parts = [(X[:95], y[:95], qid[:95]), (X[95:], y[95:], qid[95:])]
    with pytest.raises(ValueError, match=r"is split across two chunks"):
        fit_stream(ranker, parts)
    assert set(vars(ranker)) == set(before)
    assert_array_equal(ranker.coef_, before["coef_"])
    assert ranker.n_iter_ == before["n_iter_"] and not hasattr(ranker, "_last_query")


def test_a_bad_validation_set_is_found_at_the_first_chunk(train, validation, monkeypatch):
    X, y, qid = train
    X_val, y_val, qid_val = validation
    calls = []
    original = ListNetRanker._partial_fit
    monkeypatch.setattr(ListNetRanker, "_partial_fit",
                        lambda self, *a, **k: calls.append(1) or original(self, *a, **k))
    with pytest.raises(ValueError, match=r"X_val has 4 features, but ListNetRanker is "
                                         r"expecting 5"):
        fit_stream(_ranker(ListNetRanker), (X, y, qid), chunk_rows=100, X_val=X_val[:, :4],
                   y_val=y_val, qid_val=qid_val)
    assert len(calls) == 1  # not after a whole epoch
    # and what needs no data is refused before any
    with pytest.raises(ValueError, match=r"X_val and y_val must be given together; got only "
                                         r"X_val"):
        fit_stream(_ranker(ListNetRanker), (X, y, qid), X_val=X_val)
    assert len(calls) == 1


def test_learning_rate_decay_is_refused_before_reading(train):
    with pytest.raises(ValueError, match=r"learning_rate_decay=0\.5 decays the step size .* "
                                         r"which fit_stream does not compute"):
        fit_stream(_ranker(ListNetRanker, learning_rate_decay=0.5), train)


def test_early_stopping_drops_the_solver_state_of_later_epochs(train, validation):
    X, y, qid = train
    ranker = _ranker(ListNetRanker, max_iter=60, n_iter_no_change=2, tol=0.0,
                     learning_rate_init=0.05)
    _quiet(fit_stream, ranker, (X, y, qid), X_val=validation[0], y_val=validation[1],
           qid_val=validation[2])
    best = int(np.argmax(ranker.validation_scores_)) + 1
    assert best < ranker.n_iter_ and not hasattr(ranker, "_solver_memory")


@pytest.mark.parametrize("source, error, match", [
    ([], ValueError, r"source is an empty list: it holds no \(X, y, qid\) arrays"),
    ((np.zeros((0, 2)), np.zeros(0), np.zeros(0, dtype=int)), ValueError,
     r"The source QueryChunks\(1 array\) holds no rows"),
])
def test_empty_sources_raise(source, error, match):
    with pytest.raises(error, match=match):
        fit_stream(_ranker(ListNetRanker), source)


def test_memory_map_pages_are_released_chunk_by_chunk(tmp_path):
    """The resident memory grows with a chunk, not with the rows read so far."""
    if not os.path.exists("/proc/self/status"):
        pytest.skip("needs /proc to read the resident memory")
    np.save(tmp_path / "X.npy", np.random.default_rng(0).random((200_000, 64),
                                                                dtype=np.float32))
    X = np.load(tmp_path / "X.npy", mmap_mode="r")  # 51 MB
    qid = np.repeat(np.arange(2000), 100)
    before = _resident()
    for X_chunk, _, _ in query_chunks((X, np.zeros(len(qid)), qid), chunk_rows=10_000):
        float(np.asarray(X_chunk).sum())  # read every page of the chunk
    assert _resident() - before < X.nbytes / 4  # a chunk is 1/20 of X


def _resident():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS"))


def test_predict_stream_takes_rows_without_labels(fitted, data):
    X, _, qid = data
    scores = np.concatenate([s for s, _, _ in predict_stream(fitted, (X, None, qid))])
    assert_allclose(scores, fitted.predict(X), rtol=1e-12, atol=1e-15)


def test_a_validation_set_without_signal_warns_and_is_not_used(train, validation):
    X, y, qid = train
    X_val, _, qid_val = validation
    with pytest.warns(UserWarning, match=r"Early stopping would monitor scoring=.* on X_val, "
                                         r"but it scores the best and the worst ranking alike"):
        ranker = _quiet(fit_stream, _ranker(ListNetRanker, max_iter=3), (X, y, qid),
                        X_val=X_val, y_val=np.zeros(len(X_val)), qid_val=qid_val)
    assert ranker.validation_scores_ is None and ranker.best_validation_score_ is None


# ----------------------------------------------------------------------
# BoltzRank's prepared rows, drawn in the first epoch and read back from disk
@pytest.mark.parametrize("shuffle", [True, False])
def test_boltzrank_samples_are_drawn_once_and_read_back(shuffle, train, monkeypatch):
    from skrank.rankers import _base

    X, y, qid = train
    prepares = []
    original = _base.BaseRanker._prepared_rows
    monkeypatch.setattr(_base.BaseRanker, "_prepared_rows",
                        lambda self, *a, **k: prepares.append(1) or original(self, *a, **k))
    cached = _quiet(fit_stream, _ranker(BoltzRankRanker, max_iter=3, early_stopping=False),
                    (X, y, qid), chunk_rows=100, buffer_chunks=2, shuffle=shuffle)
    n_buffers = 3 if shuffle else 6  # 600 rows: chunks of 100, buffers of 2 chunks
    assert len(prepares) == n_buffers  # drawn in the first epoch only
    # the same fit with every buffer prepared in every epoch
    monkeypatch.setattr("skrank.stream._fit.BoltzRankLoss", type(None))
    fresh = _quiet(fit_stream, _ranker(BoltzRankRanker, max_iter=3, early_stopping=False),
                   (X, y, qid), chunk_rows=100, buffer_chunks=2, shuffle=shuffle)
    assert len(prepares) == n_buffers + 3 * n_buffers
    assert_array_equal(_params(cached), _params(fresh))
    assert cached.loss_curve_ == fresh.loss_curve_


def test_prepared_cache_is_used_only_for_the_same_labels_and_ids(tmp_path):
    from skrank.stream._fit import _PreparedCache

    cache = _PreparedCache(str(tmp_path))
    y, qid = np.array([2.0, 0.0, 1.0]), np.array([7, 7, 8])
    prepared = {"ranks": np.arange(6).reshape(3, 2)}
    assert cache.get(0, y, qid) is None
    cache.put(0, y, qid, prepared)
    assert_array_equal(cache.get(0, y, qid)["ranks"], prepared["ranks"])
    assert cache.get(1, y, qid) is None  # another buffer
    assert cache.get(0, y[::-1], qid) is None  # the labels changed
    assert cache.get(0, y, np.array([7, 8, 8])) is None  # the queries changed
    assert sorted(p.name for p in tmp_path.iterdir()) == ["buffer-0.joblib"]  # no .tmp left
    assert _PreparedCache(None).get(0, y, qid) is None  # a loss that is not cached


def test_the_samples_folder_is_deleted_after_the_fit_and_on_failure(train, tmp_path,
                                                                    monkeypatch):
    import tempfile

    X, y, qid = train
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    _quiet(fit_stream, _ranker(BoltzRankRanker, max_iter=2, early_stopping=False),
           (X, y, qid), chunk_rows=100, buffer_chunks=1)
    assert list(tmp_path.iterdir()) == []
    calls = []
    original = BoltzRankRanker._partial_fit

    def failing(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 8:  # in the second epoch, with the samples on disk
            assert len(list(tmp_path.glob("skrank-stream-*/buffer-*.joblib"))) == 6
            raise ValueError("the source broke")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(BoltzRankRanker, "_partial_fit", failing)
    with pytest.raises(ValueError, match="the source broke"):
        _quiet(fit_stream, _ranker(BoltzRankRanker, max_iter=2, early_stopping=False),
               (X, y, qid), chunk_rows=100, buffer_chunks=1)
    assert list(tmp_path.iterdir()) == []


def test_chunks_that_follow_each_other_are_one_view(tmp_path):
    from skrank.stream._fit import _one_view

    X = np.arange(40.0).reshape(20, 2)
    view = _one_view([X[:3], X[3:10], X[10:]])
    assert np.shares_memory(view, X) and not view.flags.writeable
    assert_array_equal(view, X)
    assert _one_view([X[:3], X[4:]]) is None  # a row apart
    assert _one_view([X[:3], X[3:].copy()]) is None  # another owner
    assert _one_view([X[:3], X[3:].astype(np.float32)]) is None
    assert _one_view([X[:, :1], X[:, 1:]]) is None  # not C-contiguous
    np.save(tmp_path / "X.npy", X)
    mapped = np.load(tmp_path / "X.npy", mmap_mode="r")
    assert np.shares_memory(_one_view([mapped[:5], mapped[5:]]), mapped)


def test_a_shuffled_memory_map_fits_as_copied_chunks(train, tmp_path):
    # buffers of a memory map are views of it; chunks given as separate arrays are
    # copied into one: the same rows, the same fit
    X, y, qid = train
    np.save(tmp_path / "X.npy", X)
    mapped = np.load(tmp_path / "X.npy", mmap_mode="r")
    on_map = _quiet(fit_stream, _ranker(ListNetRanker, max_iter=3, early_stopping=False),
                    (mapped, y, qid), chunk_rows=100, buffer_chunks=2)
    parts = [(X[a:a + 100].copy(), y[a:a + 100], qid[a:a + 100]) for a in range(0, 600, 100)]
    copied = _quiet(fit_stream, _ranker(ListNetRanker, max_iter=3, early_stopping=False),
                    parts, buffer_chunks=2)
    assert_array_equal(_params(on_map), _params(copied))


@pytest.mark.parametrize("parts, match", [
    (lambda X, y, q: (X, y[:5], q), r"source: y must hold one label per row of X \(600\); got 5"),
    (lambda X, y, q: (X, np.r_[y, y], q),
     r"source: y must hold one label per row of X \(600\); got 1200"),
    (lambda X, y, q: (X[:, 0], y, q), r"source: X must be a 2-D array .* shape \(600,\)"),
    (lambda X, y, q: [(X[:300], y[:300], q[:300]), (X[300:, :4], y[300:], q[300:])],
     r"source\[1\]: X has 4 columns, but the X of source\[0\] has 5"),
])
def test_arrays_of_a_source_must_agree(train, parts, match):
    # chunks cut from arrays of other lengths would pair rows with the wrong labels
    with pytest.raises(ValueError, match=match):
        query_chunks(parts(*train))


def test_dtype_converts_the_chunks_of_arrays(train):
    X, y, qid = train
    chunks = list(query_chunks((X, y, qid), chunk_rows=100, dtype=np.float32))
    assert {c[0].dtype for c in chunks} == {np.dtype(np.float32)}
    assert_array_equal(np.concatenate([c[0] for c in chunks]), X.astype(np.float32))
    with pytest.raises(ValueError, match=r"dtype must be np.float64 or np.float32, got "
                                         r"dtype='float16'"):
        query_chunks((X, y, qid), dtype="float16")


@pytest.mark.parametrize("option, match", [
    ({"n_features": 5}, r"n_features=5 applies to a LETOR file source; the source is arrays"),
    ({"zero_based": True}, r"zero_based=True applies to a LETOR file source"),
    ({"label": "y"}, r"label='y' applies to a dask DataFrame source"),
    ({"qid": "qid"}, r"qid='qid' applies to a dask DataFrame source"),
])
def test_options_of_another_kind_of_source_raise(train, option, match):
    with pytest.raises(ValueError, match=match):
        fit_stream(_ranker(ListNetRanker), train, **option)


def test_streams_that_need_labels_refuse_rows_without(fitted, train):
    X, _, qid = train
    with pytest.raises(ValueError, match=r"fit_stream needs the labels of every row, but the "
                                         r"source QueryChunks\(1 array\) gives y=None"):
        fit_stream(_ranker(ListNetRanker), (X, None, qid))
    with pytest.raises(ValueError, match=r"score_stream needs the labels of every row"):
        score_stream(fitted, (X, None, qid))


@pytest.mark.parametrize("scoring", [None, 3, len])
def test_score_stream_refuses_a_scoring_that_is_no_scorer(fitted, train, scoring):
    with pytest.raises(TypeError, match=r"scoring must be a scorer name such as 'ndcg@10' or "
                                        r"a RankingScorer of make_ranking_scorer; got "):
        score_stream(fitted, train, scoring=scoring)


def test_streams_score_with_an_estimator_whose_predict_takes_no_qid(train):
    from sklearn.linear_model import Ridge

    X, y, qid = train
    ridge = Ridge().fit(X, y)
    scores = np.concatenate([s for s, _, _ in predict_stream(ridge, train, chunk_rows=100)])
    assert_allclose(scores, ridge.predict(X))
    assert score_stream(ridge, train) == pytest.approx(
        get_ranking_scorer("ndcg@10")(ridge, X, y, qid=qid))


@pytest.mark.parametrize("ranker, match", [
    (ListNetRanker, r"ranker must be a ranker instance; got the class ListNetRanker"),
    (None, r"ranker must be a ListNetRanker, SoftRankRanker or BoltzRankRanker .* got "
           r"NoneType"),
])
def test_fit_stream_refuses_what_is_no_ranker(train, ranker, match):
    with pytest.raises(TypeError, match=match):
        fit_stream(ranker, train)


@pytest.mark.parametrize("shuffle", ["no", None, 0])
def test_fit_stream_shuffle_must_be_a_bool(train, shuffle):
    with pytest.raises(ValueError, match=rf"shuffle must be True or False; got {shuffle!r}"):
        fit_stream(_ranker(ListNetRanker), train, shuffle=shuffle)


def test_query_ids_of_two_kinds_raise(train):
    # integer and string ids cannot be compared to find a query that comes back
    X, y, qid = train
    parts = [(X[:300], y[:300], qid[:300].astype(str)), (X[300:], y[300:], qid[300:])]
    with pytest.raises(ValueError, match=r"The query ids of the chunk starting at row 0 of "
                                         r"array 1 are integers, but those of the chunks "
                                         r"before are strings"):
        list(query_chunks(parts))
