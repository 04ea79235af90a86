"""fit_stream (skrank/stream/_fit.py): epochs over streams of whole queries."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.exceptions import ConvergenceWarning

from skrank import BoltzRankRanker, ListNetRanker, LogRankRanker, SoftRankRanker
from skrank.stream import fit_stream, predict_stream, score_stream

from tests.stream._rankers import fitted_params, quiet, stream_ranker


@pytest.fixture(scope="module")
def validation(stream_data):
    X, y, qid = stream_data
    return X[600:], y[600:], qid[600:]


# ----------------------------------------------------------------------
# fit_stream
STOCHASTIC = [ListNetRanker, SoftRankRanker, BoltzRankRanker]


@pytest.mark.parametrize("cls", STOCHASTIC, ids=lambda c: c.__name__)
def test_an_epoch_in_source_order_is_partial_fit_on_each_chunk(cls, train):
    X, y, qid = train
    streamed = quiet(fit_stream, stream_ranker(cls, max_iter=1), (X, y, qid), shuffle=False,
                      chunk_rows=100)
    stepped = stream_ranker(cls)
    for lo in range(0, 600, 100):
        stepped.partial_fit(X[lo:lo + 100], y[lo:lo + 100], qid=qid[lo:lo + 100])
    assert_array_equal(fitted_params(streamed), fitted_params(stepped))
    assert streamed.n_iter_ == 1 and streamed.t_ == 60 and len(streamed.loss_curve_) == 1
    # the epoch's loss is the mean of its batches' losses over its queries
    assert_allclose(streamed.loss_curve_[0], np.mean(stepped.loss_curve_), rtol=1e-12)


def test_epochs_continue_the_solver_state(train):
    X, y, qid = train
    two = quiet(fit_stream, stream_ranker(ListNetRanker, max_iter=2, early_stopping=False),
                 (X, y, qid), shuffle=False)
    stepped = stream_ranker(ListNetRanker).partial_fit(X, y, qid=qid)
    # an epoch may open with the query the previous one ended with
    stepped._partial_fit(X, y, qid, None, check_split=False)
    assert_array_equal(fitted_params(two), fitted_params(stepped))
    assert two.n_iter_ == 2 and two.t_ == 120


def test_shuffling_is_seeded_by_random_state(train):
    X, y, qid = train
    fits = [quiet(fit_stream, stream_ranker(ListNetRanker, max_iter=2, random_state=seed),
                   (X, y, qid), chunk_rows=100, buffer_chunks=3) for seed in (0, 0, 1)]
    assert_array_equal(fitted_params(fits[0]), fitted_params(fits[1]))
    unshuffled = quiet(fit_stream, stream_ranker(ListNetRanker, max_iter=2), (X, y, qid),
                        chunk_rows=100, shuffle=False)
    assert np.abs(fitted_params(fits[0]) - fitted_params(unshuffled)).max() > 1e-6


def test_shuffled_epochs_step_each_buffer_in_its_drawn_order(train):
    # buffers of 100, 300 and 200 rows (one chunk each): the stacked rows
    # are kept in one array from buffer to buffer and epoch to epoch, which
    # must not leak a buffer's rows into the next
    X, y, qid = train
    cuts = [0, 100, 400, 600]
    source = [(X[a:b], y[a:b], qid[a:b]) for a, b in zip(cuts[:-1], cuts[1:])]
    streamed = quiet(fit_stream, stream_ranker(ListNetRanker, max_iter=2, early_stopping=False),
                      source, buffer_chunks=1)
    # the same steps by hand: each buffer's queries (in sorted order of the
    # ids) permuted by the ranker's random_state, one draw per buffer
    rng = np.random.RandomState(0)
    stepped = stream_ranker(ListNetRanker)
    for _ in range(2):
        for X_part, y_part, qid_part in source:
            ids = np.unique(qid_part)[rng.permutation(len(np.unique(qid_part)))]
            rows = np.concatenate([np.flatnonzero(qid_part == q) for q in ids])
            stepped._partial_fit(X_part[rows], y_part[rows], qid_part[rows], None,
                                 check_split=False)
    assert_array_equal(fitted_params(streamed), fitted_params(stepped))
    assert streamed.t_ == stepped.t_ == 2 * 60  # queries seen


def test_early_stopping_keeps_the_best_epoch(train, validation):
    X, y, qid = train
    X_val, y_val, qid_val = validation
    ranker = stream_ranker(ListNetRanker, max_iter=60, n_iter_no_change=3, learning_rate_init=0.05,
                     tol=0.0)
    quiet(fit_stream, ranker, (X, y, qid), X_val=X_val, y_val=y_val, qid_val=qid_val,
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
        quiet(fit_stream, stream_ranker(ListNetRanker, max_iter=1), train, X_val=X_val, y_val=y_val)


def test_verbose_prints_each_epoch(train, validation, capsys):
    X, y, qid = train
    X_val, y_val, qid_val = validation
    quiet(fit_stream, stream_ranker(ListNetRanker, max_iter=2, verbose=1), (X, y, qid),
           X_val=X_val, y_val=y_val, qid_val=qid_val)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("Epoch 1: 600 rows, 60 queries, loss = ")
    assert ", validation ndcg@10 = " in lines[0] and lines[0].endswith(" s")


def test_max_iter_reached_warns(train):
    with pytest.warns(ConvergenceWarning, match=r"maximum iterations \(2\) reached"):
        fit_stream(stream_ranker(ListNetRanker, max_iter=2), train)


def test_a_streamed_ranker_is_an_ordinary_fitted_ranker(train, tmp_path):
    import pickle

    X, y, qid = train
    ranker = quiet(fit_stream, stream_ranker(BoltzRankRanker, max_iter=2), (X, y, qid))
    again = pickle.loads(pickle.dumps(ranker))
    assert_array_equal(again.predict(X), ranker.predict(X))
    # refitting in memory forgets the stream
    quiet(again.fit, X, y, qid=qid)
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
        fit_stream(stream_ranker(ListNetRanker, early_stopping=False), train, X_val=validation[0],
                   y_val=validation[1], qid_val=validation[2])


def test_a_split_query_stops_the_fit(train):
    X, y, qid = train
    parts = [(X[:95], y[:95], qid[:95]), (X[95:], y[95:], qid[95:])]
    with pytest.raises(ValueError, match=rf"qid={qid[95]} is split across two chunks"):
        fit_stream(stream_ranker(ListNetRanker), parts)


def test_float32_memory_map_trains_in_float32(train, tmp_path):
    X, y, qid = train
    np.save(tmp_path / "X.npy", X.astype(np.float32))
    X_map = np.load(tmp_path / "X.npy", mmap_mode="r")
    from_map = quiet(fit_stream, stream_ranker(ListNetRanker, max_iter=2), (X_map, y, qid),
                      shuffle=False)
    in_memory = quiet(fit_stream, stream_ranker(ListNetRanker, max_iter=2),
                       (X.astype(np.float32), y, qid), shuffle=False)
    assert_array_equal(fitted_params(from_map), fitted_params(in_memory))
    assert from_map.predict(X_map[:10]).dtype == np.float32


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


def test_dask_arrays_and_dataframe_on_a_local_cluster(train, fitted_listnet, dask_client, installed):
    da = installed("dask.array", "dask")
    dd = installed("dask.dataframe", "dask")
    pd = installed("pandas", "test")
    X, y, qid = train
    blocks = tuple(da.from_array(a, chunks=(100,) + a.shape[1:]) for a in (X, y, qid))
    on_dask = quiet(fit_stream, stream_ranker(ListNetRanker, max_iter=2), blocks, shuffle=False)
    in_memory = quiet(fit_stream, stream_ranker(ListNetRanker, max_iter=2), (X, y, qid),
                       shuffle=False, chunk_rows=100)
    assert_array_equal(fitted_params(on_dask), fitted_params(in_memory))
    # a DataFrame indexed by qid: its partitions hold whole queries
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])])
    frame["label"], frame["qid"] = y, qid
    frame = dd.from_pandas(frame, npartitions=3).set_index("qid", sorted=True)
    from_frame = quiet(fit_stream, stream_ranker(ListNetRanker, max_iter=2), frame, label="label",
                        qid="qid", shuffle=False)
    assert from_frame.n_iter_ == 2 and from_frame.t_ == 120
    # predictions stay lazy, block by block, and equal predict in memory (up to
    # the rounding of a matrix product of other blocks)
    scores = predict_stream(fitted_listnet, blocks)
    assert isinstance(scores, da.Array) and scores.numblocks == (6,)
    assert_allclose(scores.compute(), fitted_listnet.predict(X), rtol=1e-12, atol=1e-15)
    assert_allclose(predict_stream(fitted_listnet, frame, label="label", qid="qid").compute(),
                    fitted_listnet.predict(X), rtol=1e-12, atol=1e-15)
    assert score_stream(fitted_listnet, frame, label="label", qid="qid") == pytest.approx(
        fitted_listnet.score(X, y, qid=qid), abs=1e-12)
    # a query across two blocks is refused, naming it
    split = tuple(da.from_array(a, chunks=(105,) + a.shape[1:]) for a in (X, y, qid))
    with pytest.raises(ValueError, match=rf"qid={qid[105]} is split across two chunks: its "
                                         r"rows run to row 104 of block 0 \(row 104 of X\)"):
        fit_stream(stream_ranker(ListNetRanker), split)


def test_dask_queries_in_a_column_and_empty_partitions(train, dask_client, installed):
    dd = installed("dask.dataframe", "dask")
    pd = installed("pandas", "test")
    X, y, qid = train
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])])
    frame["label"], frame["qid"] = y, qid
    # 6 partitions of 100 rows, whole queries, qid a column; one emptied by a filter
    frame = dd.from_pandas(frame, npartitions=6, sort=False)
    kept = frame[frame["qid"] >= 10]
    from_frame = quiet(fit_stream, stream_ranker(ListNetRanker, max_iter=1), kept, label="label",
                        qid="qid", shuffle=False)
    in_memory = quiet(fit_stream, stream_ranker(ListNetRanker, max_iter=1),
                       (X[100:], y[100:], qid[100:]), shuffle=False, chunk_rows=100)
    assert_array_equal(fitted_params(from_frame), fitted_params(in_memory))
    # a query across two partitions: refused by a fit, and by a prediction of a
    # model that scores a query's rows together
    split = dd.from_pandas(frame.compute(), npartitions=7, sort=False)
    with pytest.raises(ValueError, match=r"is split across two chunks: its rows run to row "
                                         r"\d+ of partition 0 and go on at row 0 of "
                                         r"partition 1"):
        fit_stream(stream_ranker(ListNetRanker), split, label="label", qid="qid")
    pairwise = quiet(stream_ranker(BoltzRankRanker, pairwise_hidden_layer_sizes=(3,),
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


# ----------------------------------------------------------------------
# A failed streamed fit leaves the ranker as it was
def test_a_failed_fit_stream_keeps_the_previous_model(train):
    X, y, qid = train
    ranker = quiet(stream_ranker(ListNetRanker, max_iter=3).fit, X, y, qid=qid)
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
        fit_stream(stream_ranker(ListNetRanker), (X, y, qid), chunk_rows=100, X_val=X_val[:, :4],
                   y_val=y_val, qid_val=qid_val)
    assert len(calls) == 1  # not after a whole epoch
    # and what needs no data is refused before any
    with pytest.raises(ValueError, match=r"X_val and y_val must be given together; got only "
                                         r"X_val"):
        fit_stream(stream_ranker(ListNetRanker), (X, y, qid), X_val=X_val)
    assert len(calls) == 1


def test_learning_rate_decay_is_refused_before_reading(train):
    with pytest.raises(ValueError, match=r"learning_rate_decay=0\.5 decays the step size .* "
                                         r"which fit_stream does not compute"):
        fit_stream(stream_ranker(ListNetRanker, learning_rate_decay=0.5), train)


def test_early_stopping_drops_the_solver_state_of_later_epochs(train, validation):
    X, y, qid = train
    ranker = stream_ranker(ListNetRanker, max_iter=60, n_iter_no_change=2, tol=0.0,
                     learning_rate_init=0.05)
    quiet(fit_stream, ranker, (X, y, qid), X_val=validation[0], y_val=validation[1],
           qid_val=validation[2])
    best = int(np.argmax(ranker.validation_scores_)) + 1
    assert best < ranker.n_iter_ and not hasattr(ranker, "_solver_memory")


def test_a_validation_set_without_signal_warns_and_is_not_used(train, validation):
    X, y, qid = train
    X_val, _, qid_val = validation
    with pytest.warns(UserWarning, match=r"Early stopping would monitor scoring=.* on X_val, "
                                         r"but it scores the best and the worst ranking alike"):
        ranker = quiet(fit_stream, stream_ranker(ListNetRanker, max_iter=3), (X, y, qid),
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
    cached = quiet(fit_stream, stream_ranker(BoltzRankRanker, max_iter=3, early_stopping=False),
                    (X, y, qid), chunk_rows=100, buffer_chunks=2, shuffle=shuffle)
    n_buffers = 3 if shuffle else 6  # 600 rows: chunks of 100, buffers of 2 chunks
    assert len(prepares) == n_buffers  # drawn in the first epoch only
    # the same fit with every buffer prepared in every epoch
    monkeypatch.setattr("skrank.stream._fit.BoltzRankLoss", type(None))
    fresh = quiet(fit_stream, stream_ranker(BoltzRankRanker, max_iter=3, early_stopping=False),
                   (X, y, qid), chunk_rows=100, buffer_chunks=2, shuffle=shuffle)
    assert len(prepares) == n_buffers + 3 * n_buffers
    assert_array_equal(fitted_params(cached), fitted_params(fresh))
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


def test_a_full_disk_for_the_samples_warns_and_the_fit_goes_on(tmp_path):
    # a real limit of the kernel (as a full disk gives), in a child process: the
    # first buffer's samples cannot be written; the fit draws them again each
    # epoch and ends with the same weights as a fit that never kept them
    pytest.importorskip("resource")
    code = textwrap.dedent("""
        import resource, warnings
        import numpy as np
        from sklearn.exceptions import ConvergenceWarning
        from skrank import BoltzRankRanker, make_ranking
        from skrank.stream import fit_stream
        import skrank.stream._fit as stream_fit
        from skrank._core._network_factory import restore_network

        X, y, qid = make_ranking(n_queries=30, n_docs=10, n_features=4, random_state=0)
        warnings.simplefilter("ignore", ConvergenceWarning)

        def fit():
            ranker = BoltzRankRanker(random_state=0, n_init=1, batch_size=5, max_iter=3,
                                     early_stopping=False)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", UserWarning)
                fit_stream(ranker, (X, y, qid), chunk_rows=100, buffer_chunks=1)
            caught = [w for w in caught if not issubclass(w.category, ConvergenceWarning)]
            return restore_network(vars(ranker))[1], ranker.loss_curve_, caught

        resource.setrlimit(resource.RLIMIT_FSIZE, (1000, 1000))
        limited, limited_curve, caught = fit()
        print(len(caught), " | ".join(str(w.message) for w in caught))
        stream_fit.BoltzRankLoss = type(None)  # never kept: sampled in every epoch
        fresh, fresh_curve, _ = fit()
        print(np.array_equal(limited, fresh) and limited_curve == fresh_curve)
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            cwd=tmp_path, timeout=300)
    assert result.returncode == 0, result.stderr
    first, last = result.stdout.strip().splitlines()
    assert first.startswith("1 fit_stream could not keep the rank samples of a buffer on disk")
    assert "File too large" in first and "sampled again in every epoch" in first
    assert last == "True"


def test_the_samples_folder_is_deleted_after_the_fit_and_on_failure(train, tmp_path,
                                                                    monkeypatch):
    import tempfile

    X, y, qid = train
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    quiet(fit_stream, stream_ranker(BoltzRankRanker, max_iter=2, early_stopping=False),
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
        quiet(fit_stream, stream_ranker(BoltzRankRanker, max_iter=2, early_stopping=False),
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
    on_map = quiet(fit_stream, stream_ranker(ListNetRanker, max_iter=3, early_stopping=False),
                    (mapped, y, qid), chunk_rows=100, buffer_chunks=2)
    parts = [(X[a:a + 100].copy(), y[a:a + 100], qid[a:a + 100]) for a in range(0, 600, 100)]
    copied = quiet(fit_stream, stream_ranker(ListNetRanker, max_iter=3, early_stopping=False),
                    parts, buffer_chunks=2)
    assert_array_equal(fitted_params(on_map), fitted_params(copied))


@pytest.mark.parametrize("option, match", [
    ({"n_features": 5}, r"n_features=5 applies to a LETOR file source; the source is arrays"),
    ({"zero_based": True}, r"zero_based=True applies to a LETOR file source"),
    ({"label": "y"}, r"label='y' applies to a dask DataFrame source"),
    ({"qid": "qid"}, r"qid='qid' applies to a dask DataFrame source"),
])
def test_options_of_another_kind_of_source_raise(train, option, match):
    with pytest.raises(ValueError, match=match):
        fit_stream(stream_ranker(ListNetRanker), train, **option)


def test_streams_that_need_labels_refuse_rows_without(fitted_listnet, train):
    X, _, qid = train
    with pytest.raises(ValueError, match=r"fit_stream needs the labels of every row, but the "
                                         r"source QueryChunks\(1 array\) gives y=None"):
        fit_stream(stream_ranker(ListNetRanker), (X, None, qid))
    with pytest.raises(ValueError, match=r"score_stream needs the labels of every row"):
        score_stream(fitted_listnet, (X, None, qid))


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
        fit_stream(stream_ranker(ListNetRanker), train, shuffle=shuffle)
