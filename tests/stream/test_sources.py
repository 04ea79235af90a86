"""Sources of whole queries (skrank/stream/_sources.py): query_chunks.

Arrays, memory maps, LETOR files and dask collections, cut into chunks that
hold whole queries; a query split across chunks is refused, naming it.
"""

import os

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from skrank import ListNetRanker, load_letor
from skrank.stream import fit_stream, query_chunks

from tests.stream._rankers import fitted_params, quiet, stream_ranker


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


def test_chunks_already_made_are_used_as_they_are(train):
    X, y, qid = train
    chunks = query_chunks((X, y, qid), chunk_rows=35)
    assert query_chunks(chunks) is chunks
    # options at their defaults (also as numpy scalars) are no change
    assert query_chunks(chunks, chunk_rows=np.int64(100_000), zero_based=np.False_) is chunks


@pytest.mark.parametrize("option, value", [
    ("chunk_rows", 10), ("dtype", np.float32), ("n_features", 5), ("zero_based", True),
    ("label", "y"), ("qid", "q"),
])
def test_options_beside_chunks_already_made_raise(train, option, value):
    # they were fixed when the chunks were made: given again they would do nothing
    X, y, qid = train
    chunks = query_chunks((X, y, qid), chunk_rows=35)
    with pytest.raises(ValueError, match=rf"{option}={value!r} applies when the chunks are "
                                         r"made; the source QueryChunks\(1 array\) was made "
                                         rf"by query_chunks already, with its own {option}"):
        query_chunks(chunks, **{option: value})
    with pytest.raises(ValueError, match=rf"{option}={value!r} applies when the chunks"):
        fit_stream(stream_ranker(ListNetRanker), chunks, **{option: value})


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
    from_file = quiet(fit_stream, stream_ranker(ListNetRanker, max_iter=2), tmp_path / "train.txt",
                       chunk_rows=100, n_features=5)
    from_arrays = quiet(fit_stream, stream_ranker(ListNetRanker, max_iter=2), (X, y, qid),
                         chunk_rows=100)
    assert_array_equal(fitted_params(from_file), fitted_params(from_arrays))
    assert from_file.n_features_in_ == 5


def test_a_query_apart_in_a_file_raises(train, tmp_path):
    X, y, qid = train
    qid = qid.copy()
    qid[15] = qid[0]
    _write_letor(tmp_path / "train.txt", X, y, qid)
    with pytest.raises(ValueError, match=rf"Line 16 of '.*train.txt' has qid {qid[0]}, whose "
                                         r"earlier lines end on line 10"):
        fit_stream(stream_ranker(ListNetRanker), tmp_path / "train.txt", n_features=5)


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


@pytest.mark.parametrize("source, error, match", [
    ([], ValueError, r"source is an empty list: it holds no \(X, y, qid\) arrays"),
    ((np.zeros((0, 2)), np.zeros(0), np.zeros(0, dtype=int)), ValueError,
     r"The source QueryChunks\(1 array\) holds no rows"),
])
def test_empty_sources_raise(source, error, match):
    with pytest.raises(error, match=match):
        fit_stream(stream_ranker(ListNetRanker), source)


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


def test_query_ids_of_two_kinds_raise(train):
    # integer and string ids cannot be compared to find a query that comes back
    X, y, qid = train
    parts = [(X[:300], y[:300], qid[:300].astype(str)), (X[300:], y[300:], qid[300:])]
    with pytest.raises(ValueError, match=r"The query ids of the chunk starting at row 0 of "
                                         r"array 1 are integers, but those of the chunks "
                                         r"before are strings"):
        list(query_chunks(parts))
