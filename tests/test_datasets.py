"""Tests of skrank.datasets: LETOR loaders, the bundled sample, the generator."""

import gzip
import os
import subprocess
import sys
import warnings
import hashlib
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from skrank.datasets import (
    iter_letor_chunks,
    load_letor,
    load_letor_fold,
    load_rank_sample,
    make_ranking,
    make_web_ranking,
)

BUNDLED_DIR = Path(__file__).resolve().parents[1] / "skrank" / "datasets" / "data"
RANK_SAMPLE_FILES = [
    "rank.train.gz",
    "rank.train.query",
    "rank.test.gz",
    "rank.test.query",
]


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".gz":
        with gzip.open(path, "wt") as f:
            f.write(text)
    else:
        path.write_text(text)
    return path


def _docid_of_line(line):
    """Docid of a LETOR line, parsed without the package's code."""
    return line.split("#docid = ", 1)[1].split()[0]


# --------------------------------------------------------------------------
# load_letor
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ohsumed_test_path(shared_data):
    return shared_data / "ohsumed" / "Fold1" / "test.txt.gz"


@pytest.fixture(scope="module")
def ohsumed_test(ohsumed_test_path):
    return load_letor(ohsumed_test_path, return_docids=True)


def test_load_letor_ohsumed_shapes_labels_qid(ohsumed_test):
    X, y, qid, docids = ohsumed_test
    assert isinstance(X, np.ndarray)
    assert X.shape == (3383, 45)
    assert X.dtype == np.float64
    assert y.dtype == np.float64
    assert qid.dtype == np.int64
    assert y.shape == qid.shape == docids.shape == (3383,)
    assert np.unique(qid).size == 22
    labels, counts = np.unique(y, return_counts=True)
    np.testing.assert_array_equal(labels, [0.0, 1.0, 2.0])
    np.testing.assert_array_equal(counts, [2794, 274, 315])
    assert qid[0] == 85
    assert qid[-1] == 106


def test_load_letor_docids_follow_the_file(ohsumed_test, ohsumed_test_path):
    X, y, qid, docids = ohsumed_test
    with gzip.open(ohsumed_test_path, "rt") as f:
        lines = f.read().splitlines()
    assert _docid_of_line(lines[0]) == docids[0] == "57950"
    assert _docid_of_line(lines[-1]) == docids[-1]
    # The qid and label of the last line agree with the last row too.
    last = lines[-1].split()
    assert float(last[0]) == y[-1]
    assert int(last[1].split(":")[1]) == qid[-1]
    # No duplicate docids within a query (see shared/data/README.md).
    pairs = {(q, d) for q, d in zip(qid.tolist(), docids.tolist())}
    assert len(pairs) == len(docids)


def test_load_letor_dense_and_sparse_agree(ohsumed_test, ohsumed_test_path):
    X, y, qid, _ = ohsumed_test
    X_sp, y_sp, qid_sp = load_letor(ohsumed_test_path, dense=False)
    assert sp.issparse(X_sp)
    assert X_sp.format == "csr"
    np.testing.assert_array_equal(X_sp.toarray(), X)
    np.testing.assert_array_equal(y_sp, y)
    np.testing.assert_array_equal(qid_sp, qid)


def test_load_letor_plain_text_copy(ohsumed_test, ohsumed_test_path, tmp_path):
    plain = tmp_path / "test.txt"
    with gzip.open(ohsumed_test_path, "rb") as src, open(plain, "wb") as dst:
        shutil.copyfileobj(src, dst)
    for path in (plain, str(plain)):
        result = load_letor(path, return_docids=True)
        for got, expected in zip(result, ohsumed_test):
            np.testing.assert_array_equal(got, expected)


def test_load_letor_without_qid_raises(tmp_path):
    path = _write(tmp_path / "noqid.txt", "1 1:0.5 2:0.3\n0 1:0.1 2:0.2\n")
    with pytest.raises(ValueError, match="no qid") as excinfo:
        load_letor(path)
    assert str(path) in str(excinfo.value)


def test_load_letor_partial_qid_raises(tmp_path):
    path = _write(tmp_path / "partial.txt", "1 qid:1 1:0.5\n0 1:0.1\n")
    with pytest.raises(ValueError, match="qid on only 1 of its 2"):
        load_letor(path)


def test_load_letor_skips_blank_and_comment_lines(tmp_path):
    text = (
        "# a header comment\n"
        "\n"
        "2 qid:7 1:1.0 #docid = a\n"
        "   # an indented comment\n"
        "   \n"
        "0 qid:7 2:1.0 #docid = b\n"
        "1 qid:9 1:0.5 2:0.5 # docid=c extra words\n"
    )
    path = _write(tmp_path / "comments.txt.gz", text)
    X, y, qid, docids = load_letor(path, return_docids=True)
    np.testing.assert_array_equal(y, [2.0, 0.0, 1.0])
    np.testing.assert_array_equal(qid, [7, 7, 9])
    np.testing.assert_array_equal(X, [[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
    assert docids.tolist() == ["a", "b", "c"]


def test_load_letor_reads_letor4_docids(tmp_path):
    text = (
        "2 qid:10002 1:0.1 2:0.2 #docid = GX008-86-4444840 inc = 1 prob = 0.086\n"
        "0 qid:10002 1:0.3 2:0.4 #docid = GX037-06-11625428 inc = 0.03 prob = 0.1\n"
    )
    path = _write(tmp_path / "mq.txt", text)
    *_, docids = load_letor(path, return_docids=True)
    assert docids.tolist() == ["GX008-86-4444840", "GX037-06-11625428"]


@pytest.mark.parametrize(
    "second_line", ["0 qid:1 1:0.2\n", "0 qid:1 1:0.2 # no id here\n"]
)
def test_load_letor_missing_docid_raises(tmp_path, second_line):
    path = _write(tmp_path / "nodoc.txt", "1 qid:1 1:0.5 #docid = x\n" + second_line)
    with pytest.raises(ValueError, match="Line 2 .*no '#docid") as excinfo:
        load_letor(path, return_docids=True)
    assert str(path) in str(excinfo.value)
    # Without docids the same file loads.
    X, _, _ = load_letor(path)
    assert X.shape == (2, 1)


def test_load_letor_n_features_widens(tmp_path):
    path = _write(tmp_path / "narrow.txt", "1 qid:1 1:0.5 3:0.25\n")
    X, _, _ = load_letor(path, n_features=5)
    np.testing.assert_array_equal(X, [[0.5, 0.0, 0.25, 0.0, 0.0]])
    with pytest.raises(ValueError, match="n_features"):
        load_letor(path, n_features=2)


@pytest.mark.parametrize("n_features", [0, -3, 2.5, "45"])
def test_load_letor_rejects_bad_n_features(tmp_path, n_features):
    path = _write(tmp_path / "ok.txt", "1 qid:1 1:0.5\n")
    pattern = rf"n_features.*Got {re.escape(repr(n_features))}"
    with pytest.raises(ValueError, match=pattern):
        load_letor(path, n_features=n_features)


def test_load_letor_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_letor(tmp_path / "absent.txt")


# What is not a regular file: each reader refuses it when called, before
# opening it (opening a named pipe waits for a writer, forever if none comes).
READERS = {
    "load_letor": lambda path: load_letor(path),
    "iter_letor_chunks": lambda path: iter_letor_chunks(path),
    "load_letor_fold": lambda path: load_letor_fold(path.parent.parent, 1),
}


def _fold_around(path):
    """A complete Fold1 whose vali split is ``path`` (``tmp/Fold1/vali.txt``)."""
    for split in ("train", "test"):
        _write(path.parent / f"{split}.txt", "1 qid:1 1:0.5\n")
    return path


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes (os.mkfifo)")
@pytest.mark.parametrize("reader", list(READERS))
def test_readers_refuse_a_named_pipe_at_once(reader, tmp_path):
    pipe = _fold_around(tmp_path / "Fold1" / "vali.txt")
    os.mkfifo(pipe)
    # in a process of its own: a reader that opened the pipe would wait
    # forever, and the timeout makes that a failure, not a hung suite
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from test_datasets import READERS\n"
        "try:\n"
        f"    READERS[{reader!r}](Path({str(pipe)!r}))\n"
        "except ValueError as exc:\n"
        "    print(exc)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60, cwd=Path(__file__).parent)
    assert result.returncode == 0, result.stderr
    assert result.stdout == (
        f"{str(pipe)!r} is a named pipe, not a regular file; {reader} reads regular files "
        "only. Save the data to a file and pass its path.\n"
    )


@pytest.mark.skipif(not Path("/dev/null").is_char_device(), reason="no /dev/null")
@pytest.mark.parametrize("reader", ["load_letor", "iter_letor_chunks"])
def test_readers_refuse_a_device(reader):
    with pytest.raises(ValueError, match=(
            f"^'/dev/null' is a character device, not a regular file; {reader} reads "
            "regular files only")):
        READERS[reader](Path("/dev/null"))


@pytest.mark.parametrize("reader", list(READERS))
def test_readers_refuse_a_folder_at_once(reader, tmp_path):
    folder = _fold_around(tmp_path / "Fold1" / "vali.txt")
    folder.mkdir()
    with pytest.raises(IsADirectoryError, match=re.escape(repr(str(folder)))):
        READERS[reader](folder)  # iter_letor_chunks: before any chunk is asked for


# --------------------------------------------------------------------------
# load_letor_fold
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ohsumed_fold1(shared_data):
    return load_letor_fold(shared_data / "ohsumed", 1)


def test_load_letor_fold_ohsumed_shapes(ohsumed_fold1):
    expected_rows = {"train": 9219, "vali": 3538, "test": 3383}
    for split, n_rows in expected_rows.items():
        X, y, qid = getattr(ohsumed_fold1, split)
        assert X.shape == (n_rows, 45)
        assert y.shape == qid.shape == (n_rows,)


def test_load_letor_fold_splits_are_disjoint_and_cover(ohsumed_fold1):
    qids = {
        split: set(getattr(ohsumed_fold1, split)[2].tolist())
        for split in ("train", "vali", "test")
    }
    assert not qids["train"] & qids["vali"]
    assert not qids["train"] & qids["test"]
    assert not qids["vali"] & qids["test"]
    assert qids["train"] | qids["vali"] | qids["test"] == set(range(1, 107))


def test_load_letor_fold_by_name(shared_data, ohsumed_fold1):
    fold2 = load_letor_fold(shared_data / "ohsumed", "Fold2", return_docids=True)
    assert fold2.train[0].shape == (10187, 45)
    assert fold2.test[0].shape == (2570, 45)
    assert len(fold2.vali) == 4
    # Fold2's validation file is Fold1's test file (the folds are cyclic).
    for got, expected in zip(fold2.vali[:3], ohsumed_fold1.test):
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("fold", [0, 6, "foo", "fold1", "Fold6", 1.5])
def test_load_letor_fold_rejects_bad_fold(shared_data, fold):
    with pytest.raises(ValueError, match=r"'fold' parameter"):
        load_letor_fold(shared_data / "ohsumed", fold)


def test_load_letor_fold_missing_files_are_listed(tmp_path):
    _write(tmp_path / "Fold1" / "train.txt", "1 qid:1 1:0.5\n")
    with pytest.raises(FileNotFoundError) as excinfo:
        load_letor_fold(tmp_path, 1)
    message = str(excinfo.value)
    for name in ("vali.txt", "vali.txt.gz", "test.txt", "test.txt.gz"):
        assert str(tmp_path / "Fold1" / name) in message
    assert str(tmp_path / "Fold1" / "train.txt") not in message


def test_load_letor_fold_mixed_compression_same_width(tmp_path):
    folder = tmp_path / "Fold3"
    _write(
        folder / "train.txt",
        "1 qid:1 1:0.5 #docid = t1\n0 qid:1 2:0.5 #docid = t2\n",
    )
    _write(folder / "vali.txt.gz", "2 qid:2 4:1.0 #docid = v1\n")
    _write(folder / "test.txt", "0 qid:3 3:0.1 #docid = s1\n")
    data = load_letor_fold(tmp_path, 3, dense=False, return_docids=True)
    assert [getattr(data, s)[0].shape for s in ("train", "vali", "test")] == [
        (2, 4),
        (1, 4),
        (1, 4),
    ]
    assert sp.issparse(data.vali[0])
    assert data.vali[0][0, 3] == 1.0
    assert data.train[3].tolist() == ["t1", "t2"]
    assert data.test[3].tolist() == ["s1"]


# --------------------------------------------------------------------------
# load_rank_sample
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def rank_train():
    return load_rank_sample(subset="train")


@pytest.fixture(scope="module")
def rank_test():
    return load_rank_sample(subset="test")


def test_load_rank_sample_shapes_and_groups(rank_train, rank_test):
    X_tr, y_tr, qid_tr = rank_train
    X_te, y_te, qid_te = rank_test
    assert X_tr.shape == (3005, 300)
    assert X_te.shape == (768, 300)
    assert X_tr.dtype == y_tr.dtype == np.float64
    assert qid_tr.dtype == qid_te.dtype == np.int64
    np.testing.assert_array_equal(np.unique(qid_tr), np.arange(201))
    np.testing.assert_array_equal(np.unique(qid_te), np.arange(201, 251))
    assert not set(qid_tr.tolist()) & set(qid_te.tolist())
    # Rows of one query are contiguous, in increasing qid order.
    assert np.all(np.diff(qid_tr) >= 0)
    assert np.all(np.diff(qid_te) >= 0)
    # Label counts from shared/data/README.md.
    counts_tr = np.bincount(y_tr.astype(int))
    counts_te = np.bincount(y_te.astype(int))
    np.testing.assert_array_equal(counts_tr, [645, 1211, 858, 222, 69])
    np.testing.assert_array_equal(counts_te, [206, 256, 252, 44, 10])


def test_load_rank_sample_group_sizes_follow_query_files(rank_train, rank_test):
    for (_, _, qid), name in [(rank_train, "train"), (rank_test, "test")]:
        sizes = np.loadtxt(BUNDLED_DIR / f"rank.{name}.query", dtype=int)
        np.testing.assert_array_equal(np.unique(qid, return_counts=True)[1], sizes)


def test_load_rank_sample_all_and_sparse(rank_train, rank_test):
    X, y, qid = load_rank_sample(subset="all", dense=False)
    assert sp.issparse(X)
    assert X.shape == (3005 + 768, 300)
    X_expected = np.vstack([rank_train[0], rank_test[0]])
    np.testing.assert_array_equal(X.toarray(), X_expected)
    np.testing.assert_array_equal(y, np.concatenate([rank_train[1], rank_test[1]]))
    np.testing.assert_array_equal(qid, np.concatenate([rank_train[2], rank_test[2]]))
    assert np.unique(qid).size == 251


def test_load_rank_sample_rejects_bad_subset():
    with pytest.raises(ValueError, match="'subset' parameter.*Got 'vali'"):
        load_rank_sample(subset="vali")


@pytest.mark.parametrize("name", RANK_SAMPLE_FILES)
def test_bundled_files_identical_to_shared(shared_data, name):
    def sha256(path):
        return hashlib.sha256(path.read_bytes()).hexdigest()

    shared = shared_data / "lightgbm_lambdarank" / name
    assert sha256(BUNDLED_DIR / name) == sha256(shared)


def test_bundled_license_and_readme():
    license_text = (BUNDLED_DIR / "LICENSE_lightgbm_lambdarank.txt").read_text()
    assert "MIT License" in license_text
    assert "Copyright (c) Microsoft Corporation." in license_text
    readme = (BUNDLED_DIR / "README.md").read_text()
    assert "microsoft/LightGBM" in readme
    assert "bae0b7ba953341a32b2a9c5c5c437a1b976f576f" in readme


def test_only_the_lightgbm_sample_is_bundled():
    names = sorted(p.name for p in BUNDLED_DIR.iterdir())
    assert names == sorted(
        RANK_SAMPLE_FILES + ["LICENSE_lightgbm_lambdarank.txt", "README.md"]
    )


# --------------------------------------------------------------------------
# make_ranking
# --------------------------------------------------------------------------


def test_make_ranking_shapes_and_dtypes():
    X, y, qid = make_ranking(n_queries=7, n_docs=5, n_features=3, random_state=0)
    assert X.shape == (35, 3)
    assert y.shape == qid.shape == (35,)
    assert X.dtype == y.dtype == np.float64
    assert qid.dtype == np.int64
    np.testing.assert_array_equal(qid, np.repeat(np.arange(7), 5))


def test_make_ranking_labels_follow_the_documented_skew():
    n_levels = 4
    X, y, qid = make_ranking(
        n_queries=200, n_docs=50, n_levels=n_levels, random_state=1
    )
    assert set(np.unique(y).tolist()) == set(range(n_levels))
    np.testing.assert_array_equal(y, np.round(y))
    share = 2.0 ** -np.arange(n_levels)
    share /= share.sum()
    np.testing.assert_allclose(np.bincount(y.astype(int)) / y.size, share, atol=2e-3)


def test_make_ranking_variable_n_docs():
    X, y, qid = make_ranking(n_queries=500, n_docs=(3, 7), random_state=2)
    sizes = np.bincount(qid)
    assert sizes.size == 500
    assert sizes.min() == 3
    assert sizes.max() == 7
    assert set(sizes.tolist()) == {3, 4, 5, 6, 7}
    assert np.all(np.diff(qid) >= 0)
    assert X.shape[0] == sizes.sum()


def test_make_ranking_equal_bounds_fix_the_size():
    _, _, qid = make_ranking(n_queries=10, n_docs=(4, 4), random_state=0)
    np.testing.assert_array_equal(np.bincount(qid), np.full(10, 4))


def test_make_ranking_is_deterministic():
    kwargs = dict(n_queries=20, n_docs=(2, 9), nonlinear=True, return_coef=True)
    first = make_ranking(random_state=3, **kwargs)
    second = make_ranking(random_state=np.random.RandomState(3), **kwargs)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    other = make_ranking(random_state=4, **kwargs)
    assert not np.array_equal(first[0][:10], other[0][:10])


def test_make_ranking_noiseless_labels_are_monotone_in_score():
    X, y, qid, coef = make_ranking(
        n_queries=50,
        n_docs=20,
        n_features=6,
        noise=0.0,
        return_coef=True,
        random_state=5,
    )
    assert coef.shape == (6,)
    np.testing.assert_allclose(np.linalg.norm(coef), 1.0)
    y_sorted = y[np.argsort(X @ coef)]
    assert np.all(np.diff(y_sorted) >= 0)
    assert y_sorted[0] == 0 and y_sorted[-1] == 4


def test_make_ranking_noise_breaks_monotonicity():
    X, y, qid, coef = make_ranking(
        n_queries=50, n_docs=20, noise=1.0, return_coef=True, random_state=5
    )
    assert np.any(np.diff(y[np.argsort(X @ coef)]) < 0)


def test_make_ranking_nonlinear_differs_from_linear():
    kwargs = dict(n_queries=50, n_docs=20, noise=0.0, return_coef=True, random_state=6)
    X_lin, y_lin, _, coef_lin = make_ranking(**kwargs)
    X_nl, y_nl, _, coef_nl = make_ranking(nonlinear=True, **kwargs)
    # Same features and linear direction; only the scoring function changes.
    np.testing.assert_array_equal(X_lin, X_nl)
    np.testing.assert_array_equal(coef_lin, coef_nl)
    assert not np.array_equal(y_lin, y_nl)
    # The nonlinear labels are no longer a monotone function of x @ coef ...
    assert np.any(np.diff(y_nl[np.argsort(X_nl @ coef_nl)]) < 0)
    # ... but the linear part still dominates.
    assert np.corrcoef(X_nl @ coef_nl, y_nl)[0, 1] > 0.5


@pytest.mark.parametrize(
    "kwargs, pattern",
    [
        (dict(n_queries=0), r"'n_queries' parameter.*Got 0"),
        (dict(n_queries=2.5), r"'n_queries' parameter.*Got 2.5"),
        (dict(n_docs=0), r"'n_docs' parameter.*Got 0"),
        (dict(n_docs=[2, 5]), r"'n_docs' parameter.*Got \[2, 5\]"),
        (dict(n_docs=(5, 2)), r"low <= high.*n_docs=\(5, 2\)"),
        (dict(n_docs=(0, 3)), r"n_docs=\(0, 3\)"),
        (dict(n_docs=(1, 2, 3)), r"n_docs=\(1, 2, 3\)"),
        (dict(n_docs=(1.0, 3)), r"n_docs=\(1.0, 3\)"),
        (dict(n_features=0), r"'n_features' parameter.*Got 0"),
        (dict(n_levels=1), r"'n_levels' parameter.*Got 1"),
        (dict(noise=-0.1), r"'noise' parameter.*Got -0.1"),
        (dict(noise=np.nan), r"'noise' parameter.*Got nan"),
        (dict(random_state="seed"), r"'random_state' parameter.*Got 'seed'"),
    ],
)
def test_make_ranking_rejects_bad_parameters(kwargs, pattern):
    with pytest.raises(ValueError, match=pattern):
        make_ranking(**kwargs)


# --------------------------------------------------------------------------
# make_web_ranking
# --------------------------------------------------------------------------

WEB_SHARES = [0.52, 0.32, 0.13, 0.02, 0.01]


@pytest.mark.parametrize(
    "dtype, expected",
    [(np.float64, np.float64), (np.float32, np.float32), ("float32", np.float32),
     (np.dtype("float64"), np.float64)],
)
def test_make_web_ranking_shapes_and_dtypes(dtype, expected):
    X, y, qid = make_web_ranking(n_queries=30, dtype=dtype, random_state=0)
    assert X.dtype == expected
    assert X.shape[1] == 136
    assert y.dtype == np.float64
    assert qid.dtype == np.int64
    assert y.shape == qid.shape == (X.shape[0],)
    np.testing.assert_array_equal(np.unique(qid), np.arange(30))
    assert np.all(np.isfinite(X))
    assert set(np.unique(y).tolist()) <= set(range(5))


def test_make_web_ranking_query_sizes_follow_the_lognormal():
    mu, sigma = 4.6, 0.6
    _, _, qid = make_web_ranking(n_queries=20000, n_features=1, random_state=0)
    sizes = np.bincount(qid)
    assert sizes.size == 20000
    # E[size] = exp(mu + sigma^2 / 2) = 119.1 (clipping and rounding move it
    # by less than 0.1); the standard error of the mean is 0.56.
    expected_mean = np.exp(mu + sigma**2 / 2)
    assert 117 < expected_mean < 121
    assert abs(sizes.mean() - expected_mean) < 4 * sizes.std() / np.sqrt(sizes.size)
    # Median exp(mu) = 99.5; the log of the sizes is N(mu, sigma) up to rounding.
    assert abs(np.median(sizes) - np.exp(mu)) < 3
    assert abs(np.log(sizes).std() - sigma) < 0.02
    assert sizes.min() >= 2 and sizes.max() <= 900


def test_make_web_ranking_clips_query_sizes():
    _, _, qid = make_web_ranking(
        n_queries=2000, n_features=1, n_docs=(50, 150), random_state=1
    )
    sizes = np.bincount(qid)
    assert sizes.min() == 50 and sizes.max() == 150
    # P(size <= 50) = P(z < (log 50.5 - 4.6) / 0.6) = 13 %; P(size >= 150) = 25 %
    assert 0.10 < np.mean(sizes == 50) < 0.16
    assert 0.21 < np.mean(sizes == 150) < 0.29


@pytest.mark.parametrize(
    "kwargs, size",
    [(dict(n_docs=7), 7), (dict(n_docs_log_sigma=0.0), 99),
     (dict(n_docs_log_sigma=0.0, n_docs=(2, 40)), 40)],
)
def test_make_web_ranking_fixed_query_size(kwargs, size):
    _, _, qid = make_web_ranking(n_queries=20, n_features=2, random_state=0, **kwargs)
    np.testing.assert_array_equal(np.bincount(qid), np.full(20, size))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_make_web_ranking_label_shares(dtype):
    X, y, qid = make_web_ranking(
        n_queries=1000, n_features=8, dtype=dtype, random_state=2
    )
    assert X.shape[0] > 100000
    np.testing.assert_array_equal(y, np.round(y))
    shares = np.bincount(y.astype(int), minlength=5) / y.size
    # empirical quantile cuts: each share is exact up to a row per level
    np.testing.assert_allclose(shares, WEB_SHARES, atol=5 / y.size)


def test_make_web_ranking_custom_label_shares():
    _, y, _ = make_web_ranking(
        n_queries=200, n_features=4, label_shares=[0.2, 0.3, 0.5], random_state=3
    )
    np.testing.assert_array_equal(np.unique(y), [0.0, 1.0, 2.0])
    np.testing.assert_allclose(np.bincount(y.astype(int)) / y.size, [0.2, 0.3, 0.5],
                               atol=3 / y.size)


def test_make_web_ranking_labels_are_nonlinear_in_x():
    """Noise-free labels depend on x beyond a linear score.

    The least-squares linear fit of the noise-free labels explains only part
    of them; adding the squares of the features (which can express the
    ``(x @ v) ** 2`` term) explains much more.
    """
    X, y, _ = make_web_ranking(n_queries=300, n_features=4, noise=0.0, random_state=4)

    def r2(design):
        design = np.column_stack([np.ones(len(y)), design])
        residual = y - design @ np.linalg.lstsq(design, y, rcond=None)[0]
        return 1 - residual.var() / y.var()

    X2 = np.column_stack([X] + [X[:, i] * X[:, j] for i in range(4) for j in range(i, 4)])
    linear, quadratic = r2(X), r2(X2)
    assert quadratic > linear + 0.1


def test_make_web_ranking_is_deterministic():
    kwargs = dict(n_queries=40, n_features=5)
    first = make_web_ranking(random_state=3, **kwargs)
    second = make_web_ranking(random_state=np.random.RandomState(3), **kwargs)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    other = make_web_ranking(random_state=4, **kwargs)
    assert not np.array_equal(first[0][:10], other[0][:10])


def test_make_web_ranking_shuffles_rows_across_queries():
    kwargs = dict(n_queries=200, n_features=3, random_state=5)
    X, y, qid = make_web_ranking(**kwargs)
    X_g, y_g, qid_g = make_web_ranking(shuffle=False, **kwargs)
    # grouped: contiguous queries in increasing order
    assert np.all(np.diff(qid_g) >= 0)
    np.testing.assert_array_equal(np.unique(qid_g), np.arange(200))
    # shuffled: the same rows and labels, each query's rows scattered
    np.testing.assert_array_equal(X, X_g)
    np.testing.assert_array_equal(y, y_g)
    np.testing.assert_array_equal(np.sort(qid), qid_g)
    # neighbours share a query about as often as two random rows do
    same_neighbour = np.mean(qid[1:] == qid[:-1])
    sizes = np.bincount(qid)
    by_chance = np.sum(sizes * (sizes - 1)) / (qid.size * (qid.size - 1))
    assert same_neighbour < 3 * by_chance
    # a query's first and last row lie far apart
    first = np.array([np.flatnonzero(qid == q)[0] for q in range(5)])
    last = np.array([np.flatnonzero(qid == q)[-1] for q in range(5)])
    assert np.all(last - first > qid.size / 2)


def test_make_web_ranking_memory_is_about_x():
    """X is drawn in its own dtype: no float64 copy of a float32 X."""
    import tracemalloc

    kwargs = dict(n_queries=200, dtype=np.float32, random_state=0)
    make_web_ranking(**kwargs)  # warm-up: first-call allocations
    tracemalloc.start()
    try:
        X, _, _ = make_web_ranking(**kwargs)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # a float64 copy alone would be 2 * X.nbytes
    assert X.nbytes > 5_000_000
    assert peak < 1.5 * X.nbytes


@pytest.mark.parametrize(
    "kwargs, pattern",
    [
        (dict(n_queries=0), r"'n_queries' parameter.*Got 0"),
        (dict(n_features=0), r"'n_features' parameter.*Got 0"),
        (dict(n_docs=0), r"'n_docs' parameter.*Got 0"),
        (dict(n_docs=(9, 3)), r"low <= high.*n_docs=\(9, 3\)"),
        (dict(n_docs=(0, 3)), r"n_docs=\(0, 3\)"),
        (dict(n_docs_log_mean=np.inf), r"'n_docs_log_mean' parameter.*Got inf"),
        (dict(n_docs_log_sigma=-0.5), r"'n_docs_log_sigma' parameter.*Got -0.5"),
        (dict(label_shares=[0.5, 0.6]), r"label_shares=\[0.5, 0.6\]"),
        (dict(label_shares=[1.0]), r"label_shares=\[1.0\]"),
        (dict(label_shares=[1.2, -0.2]), r"label_shares=\[1.2, -0.2\]"),
        (dict(label_shares=[[0.5, 0.5]]), r"label_shares=\[\[0.5, 0.5\]\]"),
        (dict(label_shares=[0.5, np.nan]), r"label_shares=\[0.5, nan\]"),
        (dict(label_shares="ab"), r"'label_shares' parameter.*Got 'ab'"),
        (dict(label_shares=["a", "b"]), r"label_shares=\['a', 'b'\]"),
        (dict(noise=-1.0), r"'noise' parameter.*Got -1.0"),
        (dict(shuffle="yes"), r"'shuffle' parameter.*Got 'yes'"),
        (dict(dtype=np.int64), r"dtype=<class 'numpy.int64'>"),
        (dict(dtype="float16"), r"dtype='float16'"),
        (dict(dtype=None), r"dtype=None"),
        (dict(dtype="no such type"), r"dtype='no such type'"),
        # issue 27: numpy's ValueError for a sub-array dtype, not its words
        (dict(dtype=("f8", -1)), r"dtype=\('f8', -1\)"),
        # issue 27: labels past 1000 would be refused by the metrics
        (dict(label_shares=[1 / 1002] * 1002), r"2 to 1001 positive shares.*\(\d+ characters\)"),
        (dict(random_state="seed"), r"'random_state' parameter.*Got 'seed'"),
    ],
)
def test_make_web_ranking_rejects_bad_parameters(kwargs, pattern):
    with pytest.raises(ValueError, match=pattern):
        make_web_ranking(n_queries=kwargs.pop("n_queries", 3), **kwargs)


def test_make_web_ranking_takes_the_most_levels_the_metrics_score():
    _, y, qid = make_web_ranking(n_queries=40, n_features=2, n_docs=(30, 60),
                                 label_shares=[1 / 1001] * 1001, random_state=0)
    assert y.max() <= 1000
    from skrank.metrics import ndcg_score

    assert ndcg_score(y, y, qid=qid) == 1.0  # every label is scorable


def test_load_letor_qid_equals_sklearn_parser(shared_data):
    """skrank reads qid itself (linear time); it must equal sklearn's parse."""
    from sklearn.datasets import load_svmlight_file

    path = shared_data / "ohsumed" / "Fold1" / "train.txt.gz"
    _, _, qid = load_letor(path)
    _, _, expected = load_svmlight_file(str(path), query_id=True, n_features=45)
    np.testing.assert_array_equal(qid, expected)


def test_load_letor_qid_only_from_the_data_part(tmp_path):
    path = tmp_path / "comment.txt"
    path.write_text("1 qid:7 1:0.5 # qid:9\n0 1:0.5 # qid:3\n")
    with pytest.raises(ValueError, match="qid on only 1 of its 2 data lines"):
        load_letor(path)
    path.write_text("1 qid:7 1:0.5 # qid:9\n0 qid:-2 1:0.5\n")
    np.testing.assert_array_equal(load_letor(path)[2], [7, -2])


def test_load_letor_non_integer_qid(tmp_path):
    path = tmp_path / "strings.txt"
    path.write_text("1 qid:7 1:0.5\n0 qid:7.5 1:0.5\n")
    with pytest.raises(ValueError, match=rf"^Line 2 of {re.escape(repr(str(path)))} "
                                         r"has a non-integer qid '7\.5'\.$"):
        load_letor(path)


# --------------------------------------------------------------------------
# load_letor: zero- or one-based indices, line endings, qid range
# --------------------------------------------------------------------------

ONE_BASED_TRAIN = "1 qid:1 1:0.5 2:0.25\n0 qid:1 3:1.0\n"
# Line 3 (after a comment and a data line) is the first with a feature 0.
ZERO_BASED_TEST = "# zero-based\n0 qid:2 1:0.5\n1 qid:2 {field} 2:0.3\n"


@pytest.mark.parametrize("field", ["0:0.7", "0:0.0"])
def test_load_letor_zero_index_raises_when_one_based(tmp_path, field):
    # An explicit zero ("0:0.0") is a stored entry too, and raises the same.
    train = _write(tmp_path / "train.txt", ONE_BASED_TRAIN)
    test = _write(tmp_path / "test.txt", ZERO_BASED_TEST.format(field=field))
    X_train, _, _ = load_letor(train)
    np.testing.assert_array_equal(X_train, [[0.5, 0.25, 0.0], [0.0, 0.0, 1.0]])
    for kwargs in ({}, {"zero_based": False}):
        with pytest.raises(ValueError, match="Line 3 .*zero_based=True") as excinfo:
            load_letor(test, **kwargs)
        assert str(test) in str(excinfo.value)


def test_load_letor_zero_based_true_keeps_columns(tmp_path):
    train = _write(tmp_path / "train.txt", ONE_BASED_TRAIN)
    test = _write(tmp_path / "test.txt", ZERO_BASED_TEST.format(field="0:0.7"))
    X_train, _, _ = load_letor(train, zero_based=True, n_features=4)
    X_test, _, qid = load_letor(test, zero_based=True, n_features=4)
    np.testing.assert_array_equal(X_train, [[0, 0.5, 0.25, 0], [0, 0, 0, 1.0]])
    np.testing.assert_array_equal(X_test, [[0, 0.5, 0, 0], [0.7, 0, 0.3, 0]])
    np.testing.assert_array_equal(qid, [2, 2])
    # n_features is the number of columns in either mode: index 3 needs 4.
    assert load_letor(train, zero_based=True)[0].shape == (2, 4)
    assert load_letor(train, zero_based=False)[0].shape == (2, 3)
    with pytest.raises(ValueError, match="n_features"):
        load_letor(train, zero_based=True, n_features=3)


def test_load_letor_fold_passes_zero_based(tmp_path):
    folder = tmp_path / "Fold2"
    _write(folder / "train.txt", ONE_BASED_TRAIN)
    _write(folder / "vali.txt", "2 qid:3 3:0.5\n")
    test = _write(folder / "test.txt", ZERO_BASED_TEST.format(field="0:0.7"))
    with pytest.raises(ValueError, match="Line 3 .*zero_based=True") as excinfo:
        load_letor_fold(tmp_path, 2)
    assert str(test) in str(excinfo.value)
    data = load_letor_fold(tmp_path, 2, zero_based=True)
    np.testing.assert_array_equal(data.train[0], [[0, 0.5, 0.25, 0], [0, 0, 0, 1.0]])
    np.testing.assert_array_equal(data.vali[0], [[0, 0, 0, 0.5]])
    np.testing.assert_array_equal(data.test[0], [[0, 0.5, 0, 0], [0.7, 0, 0.3, 0]])


@pytest.mark.parametrize("zero_based", [True, False])
@pytest.mark.parametrize("dense", [True, False])
def test_load_letor_round_trip_dump_svmlight(tmp_path, zero_based, dense):
    from sklearn.datasets import dump_svmlight_file

    rng = np.random.RandomState(0)
    X = np.round(rng.uniform(size=(6, 4)), 3)
    X[:, 0] = 0.0  # no "0:" in a zero-based file, no "1:" in a one-based one
    X[1, 2] = 0.0
    y = np.array([2.0, 0.0, 1.0, 1.0, 0.0, 2.0])
    qid = np.array([3, 3, 3, 8, 8, 8])
    path = tmp_path / "dumped.txt"
    dump_svmlight_file(X, y, str(path), query_id=qid, zero_based=zero_based)
    X_got, y_got, qid_got = load_letor(path, zero_based=zero_based, dense=dense)
    if not dense:
        X_got = X_got.toarray()
    np.testing.assert_array_equal(X_got, X)
    np.testing.assert_array_equal(y_got, y)
    np.testing.assert_array_equal(qid_got, qid)


LF_LINES = [
    "# a header comment",
    "2 qid:7 1:1.0 3:0.5 #docid = a",
    "",
    "0 qid:7 2:1.0 #docid = b inc = 1",
    "   # an indented comment",
    "1 qid:9 1:0.5 2:0.5 # docid=c extra words",
]


@pytest.mark.parametrize("newline", ["\r", "\r\n"], ids=["CR", "CRLF"])
@pytest.mark.parametrize("suffix", [".txt", ".txt.gz"])
def test_load_letor_line_endings(tmp_path, newline, suffix):
    def write(name, text):
        data = text.encode()
        path = tmp_path / (name + suffix)
        path.write_bytes(gzip.compress(data) if suffix.endswith(".gz") else data)
        return path

    lf = write("lf", "\n".join(LF_LINES) + "\n")
    other = write("other", newline.join(LF_LINES) + newline)
    expected = load_letor(lf, return_docids=True)
    assert expected[3].tolist() == ["a", "b", "c"]
    got = load_letor(other, return_docids=True)
    for a, b in zip(got, expected):
        np.testing.assert_array_equal(a, b)
    # A line number counts a lone "\r" as a line end too.
    bad = write("bad", newline.join(LF_LINES + ["1 qid:9 0:0.5"]))
    with pytest.raises(ValueError, match="Line 7 "):
        load_letor(bad)


@pytest.mark.parametrize(
    "value", ["99999999999999999999", "-99999999999999999999", "9223372036854775808"]
)
def test_load_letor_qid_beyond_int64_raises(tmp_path, value):
    path = _write(tmp_path / "big.txt", f"1 qid:1 1:0.5\n0 qid:{value} 1:0.5\n")
    with pytest.raises(ValueError, match=rf"Line 2 .*qid.*{re.escape(value)}"):
        load_letor(path)
    # The largest int64 still loads.
    path.write_text("1 qid:9223372036854775807 1:0.5\n")
    assert load_letor(path)[2].tolist() == [2**63 - 1]


@pytest.mark.parametrize("zero_based", ["auto", 1, None])
def test_load_letor_rejects_bad_zero_based(tmp_path, zero_based):
    path = _write(tmp_path / "Fold1" / "train.txt", "1 qid:1 1:0.5\n")
    pattern = rf"'zero_based' parameter.*Got {re.escape(repr(zero_based))}"
    with pytest.raises(ValueError, match=pattern):
        load_letor(path, zero_based=zero_based)
    with pytest.raises(ValueError, match=pattern):
        load_letor_fold(tmp_path, 1, zero_based=zero_based)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"n_docs": 2**63}, r"'n_docs' parameter .* Got 9223372036854775808"),
        ({"n_docs": (1, 2**63)}, r"n_docs=\(low, high\) needs 1 <= low <= high <= "),
        ({"n_levels": 2**31}, r"'n_levels' parameter .* range \[2, 1001\]"),
        ({"n_queries": 2**62, "n_docs": 4}, r"make 1.84e\+19 rows of 10 features, more"),
        ({"n_queries": 10, "n_docs": (2**61, 2**62)}, r"n_docs=.* more values than an"),
    ],
)
def test_make_ranking_sizes_beyond_any_array_are_named(kwargs, match):
    """Refused before anything is drawn (they were OverflowError, numpy's
    dimension errors, or n_levels=2**31 allocating 16 GiB)."""
    with pytest.raises(ValueError, match=match):
        make_ranking(**kwargs, random_state=0)


def test_make_web_ranking_total_size_is_checked():
    with pytest.raises(ValueError, match=r"n_queries=4611686018427387904, .* more values"):
        make_web_ranking(n_queries=2**62, random_state=0)
    # a clip bound beyond any array is only a bound: the drawn sizes are small
    X, _, _ = make_web_ranking(n_queries=10, n_docs=(2, 2**62), n_features=3,
                               random_state=0)
    assert X.shape[1] == 3


@pytest.mark.parametrize("make", [make_ranking, make_web_ranking])
def test_generator_out_of_memory_names_the_sizes(make, monkeypatch):
    # issue 27: numpy's MemoryError names an array's shape, not the parameters
    import skrank.datasets._samples as samples

    def exhausted(*args, **kwargs):
        raise MemoryError("Unable to allocate 7.28 TiB for an array")

    monkeypatch.setattr(samples, "_graded_labels", exhausted)
    pattern = (rf"{make.__name__}\(n_queries=3, n_docs=4, n_features=2\) needs more memory "
               r"than could be allocated \(Unable to allocate 7.28 TiB for an array\); lower")
    with pytest.raises(MemoryError, match=pattern):
        make(n_queries=3, n_docs=4, n_features=2)


@pytest.mark.parametrize("make", [make_ranking, make_web_ranking])
def test_generator_beyond_the_memory_available_is_refused(make, memory_available):
    """The kernel promised X and killed the process at its first write: refused first."""
    memory_available(5_000)  # 120 rows of 2 features take 120 x (16 + 56) = 8,640 bytes
    with pytest.raises(MemoryError, match=(
            rf"^{make.__name__}\(n_queries=30, n_docs=4, n_features=2\) needs about 8\.4 KiB "
            r"for 120 rows of 2 features, more than the 4\.9 KiB of memory available now; "
            r"lower these sizes\.$")):
        make(n_queries=30, n_docs=4, n_features=2)
    # the fewest rows fit; the query sizes drawn do not
    with pytest.raises(MemoryError, match=(
            rf"^{make.__name__}\(n_queries=3, n_docs=\(1, 1000\), n_features=1\) needs about "
            r"[\d.]+ KiB for \d+ rows of 1 feature, more than the 4\.9 KiB")):
        make(n_queries=3, n_docs=(1, 1000), n_features=1, random_state=0)


@pytest.mark.parametrize("make", [make_ranking, make_web_ranking])
def test_generator_sizes_beyond_any_memory_are_refused_before_drawing(make):
    with pytest.raises(MemoryError, match=(
            rf"^{make.__name__}\(n_queries=1000000000000, n_docs=2, n_features=1\) needs about "
            r"116\.4 TiB for 2000000000000 rows of 1 feature, more than the ")):
        make(n_queries=10**12, n_docs=2, n_features=1)


# --------------------------------------------------------------------------
# load_letor: dtype, engines, blocks; iter_letor_chunks
# --------------------------------------------------------------------------

ENGINES = ["auto", "numpy", "pandas", "sklearn"]

# Decimal strings whose double is hard to get right: 17 and more digits,
# halfway cases, subnormals, the largest double and beyond, signed zeros.
NASTY_VALUES = [
    "0.1", "0.30000000000000004", "9007199254740993", "2.2250738585072011e-308",
    "4.9e-324", "2.4703282292062328e-324", "2.4703282292062327e-324",
    "1.7976931348623157e308", "1.7976931348623158e308", "1e308", "1e-400", "-0",
    "-0.0", "+.5", "5.", "1E5", "1.e5", "00001", "0.1000000000000000055511151231257827",
    "3.4028235677973366e38", "3.4028235e38", "1.401298464324817e-45",
    "123456789012345678901234567890.123456789012345678901234567890e-12",
]


@pytest.fixture
def engine(request, monkeypatch):
    """The engine of load_letor's fast path, with blocks of 4 KiB to have many."""
    import skrank.datasets._letor as letor

    monkeypatch.setattr(letor, "_BLOCK_SIZE", 4096)
    return request.param


def _dense_text(rng, n_queries=30, n_features=7, values=None, docids=False, start=1):
    """A regular dense LETOR text: every line lists features start .. start+d-1."""
    lines = []
    k = 0
    for q in range(1, n_queries + 1):
        for _ in range(int(rng.integers(1, 12))):
            if values is None:
                row = [f"{v:.6f}" for v in rng.random(n_features)]
            else:
                row = [values[(k + j) % len(values)] for j in range(n_features)]
            k += 1
            fields = " ".join(f"{j + start}:{v}" for j, v in enumerate(row))
            comment = f" #docid = d{k}" if docids else ""
            lines.append(f"{int(rng.integers(0, 5))} qid:{q} {fields}{comment}\n")
    return "".join(lines)


def _assert_bits_equal(got, expected):
    for a, b in zip(got, expected):
        assert a.dtype == b.dtype and a.shape == b.shape
        if a.dtype.kind == "f":
            np.testing.assert_array_equal(a.view(f"u{a.itemsize}"), b.view(f"u{b.itemsize}"))
        else:
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("engine", ENGINES, indirect=True)
@pytest.mark.parametrize("docids", [False, True])
def test_load_letor_engines_agree_to_the_bit(tmp_path, engine, docids, installed):
    if engine == "pandas":
        installed("pandas", "fast")
    rng = np.random.default_rng(0)
    text = _dense_text(rng, n_queries=200, values=NASTY_VALUES, docids=docids)
    path = _write(tmp_path / "nasty.txt", text)
    expected = load_letor(path, engine="sklearn", return_docids=docids)
    got = load_letor(path, engine=engine, return_docids=docids)
    _assert_bits_equal(got, expected)
    # "-0" is 0.0 in X, as scipy's toarray makes it on the careful path.
    assert (got[0] == 0).any() and not np.signbit(got[0]).any()
    # Each value is the double float() reads, as scikit-learn's parser reads it.
    lines = text.splitlines()
    np.testing.assert_array_equal(
        got[0][len(lines) - 1], [float(f.split(":")[1]) for f in lines[-1].split()[2:9]]
    )


@pytest.mark.parametrize("engine", ENGINES, indirect=True)
@pytest.mark.parametrize("suffix", [".txt", ".txt.gz", ".txt.bz2"])
def test_load_letor_float32_is_the_float64_parse_cast(tmp_path, engine, suffix, installed):
    if engine == "pandas":
        installed("pandas", "fast")
    rng = np.random.default_rng(1)
    text = _dense_text(rng, n_queries=60, values=NASTY_VALUES + ["0.123456", "7"])
    path = tmp_path / f"f32{suffix}"
    compress = {".gz": gzip.compress, ".bz2": __import__("bz2").compress}.get(
        path.suffix, lambda data: data
    )
    path.write_bytes(compress(text.encode()))
    with pytest.warns(UserWarning, match="non-finite feature values"):  # 1e308 -> inf
        X32, y, qid = load_letor(path, engine=engine, dtype=np.float32)
    X64 = load_letor(path, engine="sklearn")[0]
    assert X32.dtype == np.float32
    with np.errstate(over="ignore"):
        _assert_bits_equal([X32], [X64.astype(np.float32)])


def _sparse_text(rng, n_queries=40, n_features=9, late_feature=None, docids=True):
    """LETOR lines that list different features (the careful path's files).

    Values include signed zeros, NaN and infinities; every few lines is a
    comment or blank. ``late_feature``: a feature index that only the last
    line lists (a later block then needs more columns than the first).
    """
    specials = ["-0", "-0.0", "nan", "inf", "-inf", "1e-320", "3.4028236e38"]
    lines, k = [], 0
    for q in range(1, n_queries + 1):
        for _ in range(int(rng.integers(1, 9))):
            features = np.flatnonzero(rng.random(n_features) < 0.6) + 1
            values = [specials[int(rng.integers(len(specials)))] if rng.random() < 0.05
                      else f"{rng.normal():.5f}" for _ in features]
            fields = " ".join(f"{j}:{v}" for j, v in zip(features, values))
            k += 1
            comment = f" #docid = d{k}" if docids else ""
            lines.append(f"{int(rng.integers(0, 5))} qid:{q} {fields}{comment}\n")
            if rng.random() < 0.1:
                lines.append("# a comment line\n" if rng.random() < 0.5 else "\n")
    if late_feature is not None:
        lines.append(f"1 qid:{n_queries} 1:0.5 {late_feature}:0.25 #docid = last\n")
    return "".join(lines)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("case", ["plain", "gzip", "late feature", "n_features", "zero-based"])
def test_load_letor_irregular_file_in_blocks_equals_the_whole_file_read(
        tmp_path, monkeypatch, case, dtype):
    # dense=True reads an irregular file block by block (here blocks of 256
    # bytes); dense=False reads it whole into a sparse matrix: the same
    # numbers to the bit, the same rows, ids and warnings
    import skrank.datasets._letor as letor

    monkeypatch.setattr(letor, "_BLOCK_SIZE", 256)
    rng = np.random.default_rng(5)
    text = _sparse_text(rng, late_feature=30 if case == "late feature" else None)
    if case == "zero-based":
        text = text.replace(" 1:", " 0:")
    path = tmp_path / ("data.txt.gz" if case == "gzip" else "data.txt")
    if case == "gzip":
        with gzip.open(path, "wt") as f:
            f.write(text)
    else:
        path.write_text(text)
    kwargs = {"return_docids": True, "dtype": dtype, "zero_based": case == "zero-based",
              "n_features": 40 if case == "n_features" else None}
    with warnings.catch_warnings(record=True) as dense_warnings:
        warnings.simplefilter("always")
        got = load_letor(path, **kwargs)
    with warnings.catch_warnings(record=True) as sparse_warnings:
        warnings.simplefilter("always")
        X, *rest = load_letor(path, dense=False, **kwargs)
    _assert_bits_equal(got, (X.toarray(), *rest))
    assert [str(w.message) for w in dense_warnings] == [str(w.message) for w in sparse_warnings]
    assert len(dense_warnings) == 1  # the non-finite values, with the first line
    if case == "late feature":
        assert got[0].shape[1] == 30


def test_load_letor_irregular_file_peak_is_x_plus_a_block(tmp_path, monkeypatch):
    import tracemalloc

    import skrank.datasets._letor as letor

    monkeypatch.setattr(letor, "_BLOCK_SIZE", 2**16)
    rng = np.random.default_rng(3)
    n_rows, n_features = 20_000, 40
    keep = rng.random((n_rows, n_features)) < 0.7  # 30 % of the features left out
    values = np.char.mod("%.4f", rng.random((n_rows, n_features)))
    index = np.char.add(np.arange(1, n_features + 1).astype(str), ":")
    fields = np.where(keep, np.char.add(index, values), "")
    qid = np.repeat(np.arange(n_rows // 100), 100)
    lines = [f"1 qid:{q} " + " ".join(f for f in row if f)
             for q, row in zip(qid.tolist(), fields.tolist())]
    path = tmp_path / "sparse.txt"
    path.write_text("\n".join(lines) + "\n")
    load_letor(_write(tmp_path / "warm.txt", "1 qid:1 2:0.5\n0 qid:1 1:0.5\n"))  # imports
    tracemalloc.start()
    try:
        X, _, _ = load_letor(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert X.shape == (n_rows, n_features)
    # X, y and qid plus one block's text and pieces (the whole text and its
    # sparse matrix held at once came to about 4 times X)
    assert peak < 1.5 * X.nbytes, (peak, X.nbytes)


@pytest.mark.parametrize("engine", ["numpy", "pandas"])
def test_load_letor_float32_makes_no_float64_copy(tmp_path, engine, installed, monkeypatch):
    import tracemalloc

    import skrank.datasets._letor as letor

    if engine == "pandas":
        installed("pandas", "fast")
    monkeypatch.setattr(letor, "_BLOCK_SIZE", 2**16)
    monkeypatch.setattr(letor, "_n_threads", lambda: 1)
    rng = np.random.default_rng(2)
    n_rows, n_features = 20_000, 50
    values = np.char.mod("%.4f", rng.random((n_rows, n_features)))
    index = np.char.add(np.arange(1, n_features + 1).astype(str), ":")
    body = np.char.add(index, values)
    qid = np.repeat(np.arange(n_rows // 100), 100)
    heads = np.char.add("1 qid:", qid.astype(str))
    lines = [" ".join(row) for row in np.column_stack([heads, body]).tolist()]
    path = tmp_path / "big.txt"
    path.write_text("\n".join(lines) + "\n")
    load_letor(_write(tmp_path / "warm.txt", "1 qid:1 1:0.5\n"), engine=engine)  # imports
    tracemalloc.start()
    try:
        X, _, _ = load_letor(path, engine=engine, dtype=np.float32)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    float64_X = n_rows * n_features * 8
    assert X.dtype == np.float32 and X.shape == (n_rows, n_features)
    # float32 X (half of float64_X) and blocks of 64 KiB: a float64 copy of
    # X would bring the peak above float64_X.
    assert peak < float64_X, (peak, float64_X)


def test_load_letor_without_pandas(tmp_path, monkeypatch):
    """The fast extra missing: engine="auto" parses with NumPy; "pandas" says what to install."""
    import builtins

    real_import = builtins.__import__

    def no_pandas(name, *args, **kwargs):
        if name == "pandas" or name.startswith("pandas."):
            raise ImportError("No module named 'pandas'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pandas)
    path = _write(tmp_path / "a.txt", _dense_text(np.random.default_rng(3)))
    expected = load_letor(path, engine="sklearn")
    _assert_bits_equal(load_letor(path), expected)
    with pytest.raises(ImportError, match=r"engine='pandas' needs pandas.*skrank\[fast\]"):
        load_letor(path, engine="pandas")


def test_import_skrank_does_not_need_pandas():
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['pandas'] = None; sys.modules['pyarrow'] = None\n"
        "import skrank\n"
        "from skrank.datasets import _dense_text, _letor\n"
        "print('ok')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout.strip() == "ok", result.stderr


@pytest.mark.parametrize("engine", ["numpy", "pandas"], indirect=True)
@pytest.mark.parametrize(
    "bad_line, pattern",
    [
        ("1 qid:5 1:0.5 2:0.5 3:x", r"has a feature value 'x' that is not a number"),
        ("1 qid:5 0:0.5 1:0.5 2:0.5", r"has the feature index 0"),
        ("1 qid:5.5 1:0.5 2:0.5 3:0.5", r"has a non-integer qid '5.5'"),
        ("1 qid:5 1:0.5 2:0.5", None),  # a missing feature: not regular, loads
        ("nan qid:5 1:0.5 2:0.5 3:0.5", None),
    ],
)
def test_load_letor_late_irregular_line_is_read_carefully(tmp_path, engine, bad_line, pattern,
                                                           installed):
    """Lines after many regular blocks: the careful path's result or message."""
    if engine == "pandas":
        installed("pandas", "fast")
    rng = np.random.default_rng(4)
    good = _dense_text(rng, n_queries=300, n_features=3)
    n_good = good.count("\n")
    path = _write(tmp_path / "late.txt", good + bad_line + "\n" + good)
    if pattern is not None:
        with pytest.raises(ValueError, match=rf"^Line {n_good + 1} of .*{pattern}"):
            load_letor(path, engine=engine)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _assert_bits_equal(load_letor(path, engine=engine), load_letor(path, engine="sklearn"))


def test_load_letor_verbose_prints_progress_to_stderr(tmp_path, capsys):
    path = _write(tmp_path / "v.txt", _dense_text(np.random.default_rng(5)))
    load_letor(path, verbose=True)
    out, err = capsys.readouterr()
    assert out == ""
    assert re.search(r"load_letor: .*v\.txt: \d[\d,]* rows, [\d.]+ of [\d.]+ MB read in "
                     r"[\d.]+ s \([\d.]+ MB/s\) - done", err)
    load_letor(path)
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(
    "kwargs, pattern",
    [
        ({"dtype": np.int64}, r"dtype must be np.float64 or np.float32, got dtype="),
        ({"dtype": "float16"}, r"dtype must be np.float64 or np.float32, got dtype='float16'"),
        ({"engine": "arrow"}, r"'engine' parameter .* Got 'arrow'"),
        ({"verbose": "yes"}, r"'verbose' parameter .* Got 'yes'"),
    ],
)
def test_load_letor_rejects_bad_new_parameters(tmp_path, kwargs, pattern):
    path = _write(tmp_path / "ok.txt", "1 qid:1 1:0.5\n")
    with pytest.raises(ValueError, match=pattern):
        load_letor(path, **kwargs)


def test_load_letor_fold_passes_dtype(shared_data, ohsumed_fold1):
    data = load_letor_fold(shared_data / "ohsumed", 1, dtype=np.float32, engine="numpy")
    for split in ("train", "vali", "test"):
        X32 = getattr(data, split)[0]
        _assert_bits_equal([X32], [getattr(ohsumed_fold1, split)[0].astype(np.float32)])


@pytest.mark.parametrize("engine", ENGINES, indirect=True)
def test_load_letor_ohsumed_engines_agree(ohsumed_test, ohsumed_test_path, engine, installed):
    if engine == "pandas":
        installed("pandas", "fast")
    got = load_letor(ohsumed_test_path, engine=engine, return_docids=True)
    _assert_bits_equal(got[:3], ohsumed_test[:3])
    assert got[3].tolist() == ohsumed_test[3].tolist()


@pytest.mark.parametrize("engine", ENGINES, indirect=True)
def test_load_letor_sparse_sample_unchanged(shared_data, tmp_path, engine):
    """The LightGBM sample's lines miss features: read by the careful path."""
    from sklearn.datasets import load_svmlight_file

    path = shared_data / "lightgbm_lambdarank" / "rank.test.gz"
    X, y = load_svmlight_file(str(path), n_features=300, zero_based=False)
    lines = gzip.decompress(path.read_bytes()).decode().splitlines()
    # The sample has no qid: one is added, ten lines to a query.
    with_qid = "".join(
        f"{line.split(' ', 1)[0]} qid:{i // 10} {line.split(' ', 1)[1]}\n"
        for i, line in enumerate(lines)
    )
    got = load_letor(_write(tmp_path / "s.txt", with_qid), engine=engine, n_features=300)
    np.testing.assert_array_equal(got[0], X.toarray())
    np.testing.assert_array_equal(got[1], y)


# iter_letor_chunks


def _concatenated(chunks):
    return [np.concatenate(parts) for parts in zip(*chunks)]


@pytest.mark.parametrize("engine", ENGINES, indirect=True)
@pytest.mark.parametrize("suffix", [".txt", ".txt.gz", ".txt.bz2"])
@pytest.mark.parametrize("chunk_rows", [1, 37, 10_000])
def test_iter_letor_chunks_whole_queries_equal_load_letor(tmp_path, engine, suffix, chunk_rows,
                                                          installed):
    from skrank.datasets import iter_letor_chunks

    if engine == "pandas":
        installed("pandas", "fast")
    rng = np.random.default_rng(6)
    # Regular blocks, then sparse lines and comments: both paths in one file.
    text = _dense_text(rng, n_queries=150, docids=True) + (
        "# a comment\n\n2 qid:500 1:0.5 3:0.25\n0 qid:500 2:1.5\n1 qid:501 7:1e-3\n"
    )
    path = tmp_path / f"c{suffix}"
    compress = {".gz": gzip.compress, ".bz2": __import__("bz2").compress}.get(
        path.suffix, lambda data: data
    )
    path.write_bytes(compress(text.encode()))
    chunks = list(iter_letor_chunks(path, chunk_rows=chunk_rows, engine=engine))
    expected = load_letor(path, engine="sklearn")
    _assert_bits_equal(_concatenated(chunks), expected)
    seen = set()
    for X, y, qid in chunks:
        assert X.shape == (y.size, 7) and qid.size == y.size
        queries = set(np.unique(qid).tolist())
        assert not queries & seen  # every query in one chunk only
        seen |= queries
        sizes = np.unique(qid, return_counts=True)[1]
        assert y.size <= chunk_rows or sizes.size == 1


def test_iter_letor_chunks_ohsumed(ohsumed_test, ohsumed_test_path):
    from skrank.datasets import iter_letor_chunks

    chunks = list(iter_letor_chunks(ohsumed_test_path, chunk_rows=1000, dtype=np.float32))
    assert 3 <= len(chunks) <= 5
    _assert_bits_equal(
        _concatenated(chunks),
        [ohsumed_test[0].astype(np.float32), ohsumed_test[1], ohsumed_test[2]],
    )


@pytest.mark.parametrize("engine", ["numpy", "sklearn"], indirect=True)
def test_iter_letor_chunks_split_query_names_lines(tmp_path, engine):
    from skrank.datasets import iter_letor_chunks

    rng = np.random.default_rng(7)
    head = _dense_text(rng, n_queries=200, n_features=3)
    n_head = head.count("\n")
    text = head + "1 qid:7 1:0.5 2:0.5 3:0.5\n"
    path = _write(tmp_path / "split.txt.gz", text)
    last_of_7 = max(i for i, line in enumerate(head.splitlines(), 1) if " qid:7 " in line)
    pattern = (rf"^Line {n_head + 1} of {re.escape(repr(str(path)))} has qid 7, whose "
               rf"earlier lines end on line {last_of_7}: the lines of a query must be "
               "contiguous")
    with pytest.raises(ValueError, match=pattern):
        list(iter_letor_chunks(path, chunk_rows=50, engine=engine))


@pytest.mark.parametrize("engine", ["numpy", "sklearn"], indirect=True)
@pytest.mark.parametrize(
    "bad_line, pattern",
    [
        ("1 qid:900 1:0.5 x:0.5", r"has a feature index 'x' that is not an integer"),
        ("1 1:0.5 2:0.5", r"has no 'qid:<id>' field"),
        ("1 qid:900 0:0.5", r"has the feature index 0"),
        ("1 qid:99999999999999999999 1:0.5", r"has qid 99999999999999999999, beyond"),
        ("1 qid:900 9:0.5", r"has a feature in column 9, beyond the 7 columns"),
    ],
)
def test_iter_letor_chunks_errors_count_lines_from_the_file_start(tmp_path, engine, bad_line,
                                                                  pattern):
    from skrank.datasets import iter_letor_chunks

    rng = np.random.default_rng(8)
    head = "# header\n\n" + _dense_text(rng, n_queries=200)
    lineno = head.count("\n") + 1
    path = _write(tmp_path / "late.txt", head + bad_line + "\n")
    chunks = iter_letor_chunks(path, chunk_rows=100, engine=engine)
    first = next(chunks)  # chunks before the bad line come out
    assert first[0].shape[1] == 7
    with pytest.raises(ValueError, match=rf"^Line {lineno} of {re.escape(repr(str(path)))} "
                                         rf"{pattern}"):
        list(chunks)


def test_iter_letor_chunks_checks_its_arguments(tmp_path):
    from skrank.datasets import iter_letor_chunks

    with pytest.raises(FileNotFoundError):
        iter_letor_chunks(tmp_path / "absent.txt")
    path = _write(tmp_path / "ok.txt", "1 qid:1 1:0.5\n")
    with pytest.raises(ValueError, match=r"'chunk_rows' parameter .* Got 0"):
        iter_letor_chunks(path, chunk_rows=0)
    with pytest.raises(ValueError, match=r"dtype must be np.float64 or np.float32"):
        iter_letor_chunks(path, dtype=int)
    empty = _write(tmp_path / "empty.txt", "# nothing\n")
    with pytest.raises(ValueError, match="has no data lines"):
        list(iter_letor_chunks(empty))
