"""The LETOR readers (skrank/datasets/_letor.py): load_letor, load_letor_fold, iter_letor_chunks.

Shapes, labels, query and document ids of OHSUMED and of files written here;
files read in blocks; and bad files and arguments, each refused with an error
naming the file, the line or the argument.
"""

import bz2
import gzip
import os
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skrank.datasets import iter_letor_chunks, load_letor, load_letor_fold, make_ranking

from tests.datasets._letor_text import ENGINES, assert_bits_equal, dense_text, write_text


def _docid_of_line(line):
    """Docid of a LETOR line, parsed without the package's code."""
    return line.split("#docid = ", 1)[1].split()[0]


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
    path = write_text(tmp_path / "noqid.txt", "1 1:0.5 2:0.3\n0 1:0.1 2:0.2\n")
    with pytest.raises(ValueError, match="no qid") as excinfo:
        load_letor(path)
    assert str(path) in str(excinfo.value)


def test_load_letor_partial_qid_raises(tmp_path):
    path = write_text(tmp_path / "partial.txt", "1 qid:1 1:0.5\n0 1:0.1\n")
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
    path = write_text(tmp_path / "comments.txt.gz", text)
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
    path = write_text(tmp_path / "mq.txt", text)
    *_, docids = load_letor(path, return_docids=True)
    assert docids.tolist() == ["GX008-86-4444840", "GX037-06-11625428"]


@pytest.mark.parametrize(
    "second_line", ["0 qid:1 1:0.2\n", "0 qid:1 1:0.2 # no id here\n"]
)
def test_load_letor_missing_docid_raises(tmp_path, second_line):
    path = write_text(tmp_path / "nodoc.txt", "1 qid:1 1:0.5 #docid = x\n" + second_line)
    with pytest.raises(ValueError, match="Line 2 .*no '#docid") as excinfo:
        load_letor(path, return_docids=True)
    assert str(path) in str(excinfo.value)
    # Without docids the same file loads.
    X, _, _ = load_letor(path)
    assert X.shape == (2, 1)


def test_load_letor_n_features_widens(tmp_path):
    path = write_text(tmp_path / "narrow.txt", "1 qid:1 1:0.5 3:0.25\n")
    X, _, _ = load_letor(path, n_features=5)
    np.testing.assert_array_equal(X, [[0.5, 0.0, 0.25, 0.0, 0.0]])
    with pytest.raises(ValueError, match="n_features"):
        load_letor(path, n_features=2)


@pytest.mark.parametrize("n_features", [0, -3, 2.5, "45"])
def test_load_letor_rejects_bad_n_features(tmp_path, n_features):
    path = write_text(tmp_path / "ok.txt", "1 qid:1 1:0.5\n")
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
        write_text(path.parent / f"{split}.txt", "1 qid:1 1:0.5\n")
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
        "from tests.datasets.test_letor import READERS\n"
        "try:\n"
        f"    READERS[{reader!r}](Path({str(pipe)!r}))\n"
        "except ValueError as exc:\n"
        "    print(exc)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60, cwd=Path(__file__).resolve().parents[2])
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
    write_text(tmp_path / "Fold1" / "train.txt", "1 qid:1 1:0.5\n")
    with pytest.raises(FileNotFoundError) as excinfo:
        load_letor_fold(tmp_path, 1)
    message = str(excinfo.value)
    for name in ("vali.txt", "vali.txt.gz", "test.txt", "test.txt.gz"):
        assert str(tmp_path / "Fold1" / name) in message
    assert str(tmp_path / "Fold1" / "train.txt") not in message


@pytest.mark.parametrize("fold", [2, np.int64(2), "Fold2"])
def test_load_letor_fold_missing_fold_is_named_by_its_folder(tmp_path, fold):
    # the folder's name, whatever the type of fold (not "Fold np.int64(2)")
    with pytest.raises(FileNotFoundError, match=r"^Fold2 of '.*' is incomplete; no file found "
                                                r"for train \("):
        load_letor_fold(tmp_path, fold)


def test_load_letor_fold_mixed_compression_same_width(tmp_path):
    folder = tmp_path / "Fold3"
    write_text(
        folder / "train.txt",
        "1 qid:1 1:0.5 #docid = t1\n0 qid:1 2:0.5 #docid = t2\n",
    )
    write_text(folder / "vali.txt.gz", "2 qid:2 4:1.0 #docid = v1\n")
    write_text(folder / "test.txt", "0 qid:3 3:0.1 #docid = s1\n")
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
    train = write_text(tmp_path / "train.txt", ONE_BASED_TRAIN)
    test = write_text(tmp_path / "test.txt", ZERO_BASED_TEST.format(field=field))
    X_train, _, _ = load_letor(train)
    np.testing.assert_array_equal(X_train, [[0.5, 0.25, 0.0], [0.0, 0.0, 1.0]])
    for kwargs in ({}, {"zero_based": False}):
        with pytest.raises(ValueError, match="Line 3 .*zero_based=True") as excinfo:
            load_letor(test, **kwargs)
        assert str(test) in str(excinfo.value)


def test_load_letor_zero_based_true_keeps_columns(tmp_path):
    train = write_text(tmp_path / "train.txt", ONE_BASED_TRAIN)
    test = write_text(tmp_path / "test.txt", ZERO_BASED_TEST.format(field="0:0.7"))
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
    write_text(folder / "train.txt", ONE_BASED_TRAIN)
    write_text(folder / "vali.txt", "2 qid:3 3:0.5\n")
    test = write_text(folder / "test.txt", ZERO_BASED_TEST.format(field="0:0.7"))
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
    path = write_text(tmp_path / "big.txt", f"1 qid:1 1:0.5\n0 qid:{value} 1:0.5\n")
    with pytest.raises(ValueError, match=rf"Line 2 .*qid.*{re.escape(value)}"):
        load_letor(path)
    # The largest int64 still loads.
    path.write_text("1 qid:9223372036854775807 1:0.5\n")
    assert load_letor(path)[2].tolist() == [2**63 - 1]


@pytest.mark.parametrize("zero_based", ["auto", 1, None])
def test_load_letor_rejects_bad_zero_based(tmp_path, zero_based):
    path = write_text(tmp_path / "Fold1" / "train.txt", "1 qid:1 1:0.5\n")
    pattern = rf"'zero_based' parameter.*Got {re.escape(repr(zero_based))}"
    with pytest.raises(ValueError, match=pattern):
        load_letor(path, zero_based=zero_based)
    with pytest.raises(ValueError, match=pattern):
        load_letor_fold(tmp_path, 1, zero_based=zero_based)


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
    assert_bits_equal(got, (X.toarray(), *rest))
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
    load_letor(write_text(tmp_path / "warm.txt", "1 qid:1 2:0.5\n0 qid:1 1:0.5\n"))  # imports
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
    load_letor(write_text(tmp_path / "warm.txt", "1 qid:1 1:0.5\n"), engine=engine)  # imports
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


def test_load_letor_verbose_prints_progress_to_stderr(tmp_path, capsys):
    path = write_text(tmp_path / "v.txt", dense_text(np.random.default_rng(5)))
    load_letor(path, verbose=True)
    out, err = capsys.readouterr()
    assert out == ""
    assert re.search(r"load_letor: .*v\.txt: \d[\d,]* rows, [\d.]+ of [\d.]+ MB read in "
                     r"[\d.]+ s \([\d.]+ MB/s\) - done", err)
    load_letor(path)
    assert capsys.readouterr().err == ""


def test_load_letor_verbose_without_stderr_keeps_stdout_clean(tmp_path, capsys, monkeypatch):
    # with sys.stderr None (pythonw, a closed stderr), print(file=None) would write the
    # progress among a program's own output on stdout
    path = write_text(tmp_path / "v.txt", dense_text(np.random.default_rng(5)))
    monkeypatch.setattr("sys.stderr", None)
    X, _, _ = load_letor(path, verbose=True)
    assert capsys.readouterr().out == "" and X.shape[0] > 0


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
    path = write_text(tmp_path / "ok.txt", "1 qid:1 1:0.5\n")
    with pytest.raises(ValueError, match=pattern):
        load_letor(path, **kwargs)


def test_load_letor_fold_passes_dtype(shared_data, ohsumed_fold1):
    data = load_letor_fold(shared_data / "ohsumed", 1, dtype=np.float32, engine="numpy")
    for split in ("train", "vali", "test"):
        X32 = getattr(data, split)[0]
        assert_bits_equal([X32], [getattr(ohsumed_fold1, split)[0].astype(np.float32)])


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
    got = load_letor(write_text(tmp_path / "s.txt", with_qid), engine=engine, n_features=300)
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
    text = dense_text(rng, n_queries=150, docids=True) + (
        "# a comment\n\n2 qid:500 1:0.5 3:0.25\n0 qid:500 2:1.5\n1 qid:501 7:1e-3\n"
    )
    path = tmp_path / f"c{suffix}"
    compress = {".gz": gzip.compress, ".bz2": __import__("bz2").compress}.get(
        path.suffix, lambda data: data
    )
    path.write_bytes(compress(text.encode()))
    chunks = list(iter_letor_chunks(path, chunk_rows=chunk_rows, engine=engine))
    expected = load_letor(path, engine="sklearn")
    assert_bits_equal(_concatenated(chunks), expected)
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
    assert_bits_equal(
        _concatenated(chunks),
        [ohsumed_test[0].astype(np.float32), ohsumed_test[1], ohsumed_test[2]],
    )


@pytest.mark.parametrize("engine", ["numpy", "sklearn"], indirect=True)
def test_iter_letor_chunks_split_query_names_lines(tmp_path, engine):
    from skrank.datasets import iter_letor_chunks

    rng = np.random.default_rng(7)
    head = dense_text(rng, n_queries=200, n_features=3)
    n_head = head.count("\n")
    text = head + "1 qid:7 1:0.5 2:0.5 3:0.5\n"
    path = write_text(tmp_path / "split.txt.gz", text)
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
    head = "# header\n\n" + dense_text(rng, n_queries=200)
    lineno = head.count("\n") + 1
    path = write_text(tmp_path / "late.txt", head + bad_line + "\n")
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
    path = write_text(tmp_path / "ok.txt", "1 qid:1 1:0.5\n")
    with pytest.raises(ValueError, match=r"'chunk_rows' parameter .* Got 0"):
        iter_letor_chunks(path, chunk_rows=0)
    with pytest.raises(ValueError, match=r"dtype must be np.float64 or np.float32"):
        iter_letor_chunks(path, dtype=int)
    empty = write_text(tmp_path / "empty.txt", "# nothing\n")
    with pytest.raises(ValueError, match="has no data lines"):
        list(iter_letor_chunks(empty))


# ----------------------------------------------------------------------------
# Bad files and arguments: each fails with an error naming what is wrong
GOOD = (
    "2 qid:1 1:0.5 2:0.1 #docid = d1\n"
    "0 qid:1 1:0.2 2:0.3 #docid = d2\n"
    "1 qid:2 1:0.9 2:0.7 #docid = d3\n"
)


# GOOD repeated to a few hundred lines, so that its compressed forms have
# several blocks' worth of data to cut and damage.
LONG = GOOD * 100


def _write_bytes(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


@pytest.fixture
def fold_root(tmp_path):
    """A data set folder whose Fold1 .. Fold5 each hold three small files."""
    for k in range(1, 6):
        for split in ("train", "vali", "test"):
            _write_bytes(tmp_path / f"Fold{k}" / f"{split}.txt", GOOD.encode())
    return tmp_path


# --------------------------------------------------------------------------
# Cause 4: a bool is not an integer
# --------------------------------------------------------------------------


@pytest.mark.parametrize("value", [True, False])
def test_load_letor_fold_bool_fold_raises(fold_root, value):
    # fold=True used to load Fold1 (True == 1).
    with pytest.raises(ValueError, match=rf"'fold' parameter .*not a bool.*Got {value!r}"):
        load_letor_fold(fold_root, value)


@pytest.mark.parametrize("value", [True, False])
def test_load_letor_fold_bool_n_features_raises(fold_root, value):
    with pytest.raises(ValueError, match=rf"'n_features' parameter .*Got {value!r}"):
        load_letor_fold(fold_root, 1, n_features=value)


@pytest.mark.parametrize("value", [True, False])
def test_load_letor_bool_n_features_raises(tmp_path, value):
    path = _write_bytes(tmp_path / "a.txt", b"1 qid:1 1:0.5\n")
    # n_features=True used to load one column.
    with pytest.raises(ValueError, match=rf"'n_features' parameter .*Got {value!r}"):
        load_letor(path, n_features=value)


def test_integer_parameters_still_take_numpy_integers(fold_root):
    data = load_letor_fold(fold_root, np.int64(2), n_features=np.int32(3))
    assert data.train[0].shape == (3, 3)
    X, _, _ = make_ranking(n_queries=np.int64(2), n_docs=np.int8(3), random_state=0)
    assert X.shape == (6, 10)


# --------------------------------------------------------------------------
# Cause 5: corrupt compressed files
# --------------------------------------------------------------------------


def _gzip(data):
    return gzip.compress(data, mtime=0)


def _raises_naming(path, pattern):
    """``pytest.raises`` for a ValueError whose message starts by naming ``path``."""
    return pytest.raises(
        ValueError, match=rf"^The file {re.escape(repr(str(path)))} {pattern}"
    )


def test_truncated_gzip_names_file(shared_data, tmp_path):
    # A real LETOR file cut in the middle, as an interrupted download leaves it.
    data = (shared_data / "ohsumed" / "Fold1" / "test.txt.gz").read_bytes()
    path = _write_bytes(tmp_path / "test.txt.gz", data[: len(data) // 2])
    with _raises_naming(path, "is truncated: its gzip data end before") as excinfo:
        load_letor(path)
    assert isinstance(excinfo.value.__cause__, EOFError)


def test_truncated_bz2_names_file(tmp_path):
    data = bz2.compress(LONG.encode())
    path = _write_bytes(tmp_path / "train.txt.bz2", data[:-10])
    with _raises_naming(path, "is truncated: its bzip2 data end before"):
        load_letor(path)


def test_plain_text_named_gz_names_file(tmp_path):
    path = _write_bytes(tmp_path / "train.txt.gz", GOOD.encode())
    pattern = r"is not a valid gzip file: its name ends in '.gz' .* starts with b'2 '"
    with _raises_naming(path, pattern) as excinfo:
        load_letor(path)
    assert isinstance(excinfo.value.__cause__, gzip.BadGzipFile)


def test_plain_text_named_bz2_names_file(tmp_path):
    path = _write_bytes(tmp_path / "train.txt.bz2", GOOD.encode())
    with _raises_naming(path, r"is not a valid bzip2 file: its name ends in '.bz2'"):
        load_letor(path)


def test_gzip_bad_crc_names_file(tmp_path):
    data = bytearray(_gzip(LONG.encode()))
    data[-8] ^= 0x01  # the stored CRC-32 (little-endian), bytes -8 .. -5
    path = _write_bytes(tmp_path / "train.txt.gz", bytes(data))
    with _raises_naming(path, r"failed its CRC check: its gzip data are corrupt"):
        load_letor(path)


def test_gzip_bad_length_names_file(tmp_path):
    data = bytearray(_gzip(LONG.encode()))
    data[-1] ^= 0x01  # the stored length modulo 2**32, bytes -4 .. -1
    path = _write_bytes(tmp_path / "train.txt.gz", bytes(data))
    with _raises_naming(path, r"failed its length check: its gzip data are corrupt"):
        load_letor(path)


def test_gzip_corrupt_deflate_data_names_file(tmp_path):
    # A gzip header, then a final deflate block of the reserved type 3
    # (bits 1, 11): zlib.error "invalid block type".
    header = b"\x1f\x8b\x08\x00" + bytes(4) + b"\x00\xff"
    path = _write_bytes(tmp_path / "train.txt.gz", header + b"\x07" + bytes(20))
    with _raises_naming(path, r"is a corrupt gzip file \(error: .*invalid block type"):
        load_letor(path)


def test_gzip_trailing_garbage_names_file(tmp_path):
    path = _write_bytes(tmp_path / "train.txt.gz", _gzip(GOOD.encode()) + b"garbage")
    pattern = r"is a corrupt gzip file: bytes that are not gzip follow its first"
    with _raises_naming(path, pattern):
        load_letor(path)


def test_corrupt_bz2_names_file(tmp_path):
    data = bytearray(bz2.compress(LONG.encode()))
    data[len(data) // 2] ^= 0x55
    path = _write_bytes(tmp_path / "train.txt.bz2", bytes(data))
    with _raises_naming(path, r"is a corrupt bzip2 file \(OSError: Invalid data"):
        load_letor(path)


def test_load_letor_fold_corrupt_split_names_its_file(fold_root):
    vali = fold_root / "Fold2" / "vali.txt"
    vali.unlink()
    path = _write_bytes(vali.with_suffix(".txt.gz"), _gzip(GOOD.encode())[:-3])
    with _raises_naming(path, "is truncated"):
        load_letor_fold(fold_root, 2)


@pytest.fixture(scope="module")
def long_gzip():
    return _gzip(LONG.encode())


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_truncation_of_gzip_names_file(tmp_path, long_gzip, data):
    cut = data.draw(st.integers(0, len(long_gzip) - 1), label="cut")
    path = _write_bytes(tmp_path / "cut.txt.gz", long_gzip[:cut])
    # An empty file is an empty gzip stream, a file without data lines.
    with _raises_naming(path, "is truncated" if cut else "has no data lines"):
        load_letor(path)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_damaged_gzip_byte_loads_the_same_or_names_file(tmp_path, long_gzip, data):
    where = data.draw(st.integers(0, len(long_gzip) - 1), label="where")
    flip = data.draw(st.integers(1, 255), label="flip")
    damaged = bytearray(long_gzip)
    damaged[where] ^= flip
    path = _write_bytes(tmp_path / "damaged.txt.gz", bytes(damaged))
    try:
        got = load_letor(path)
    except ValueError as exc:
        assert str(exc).startswith(f"The file {str(path)!r} ")
    else:  # a byte of the header the reader does not check (mtime, OS)
        expected = load_letor(_write_bytes(tmp_path / "good.txt.gz", long_gzip))
        for a, b in zip(got, expected):
            np.testing.assert_array_equal(a, b)


# --------------------------------------------------------------------------
# Cause 6: lines scikit-learn's parser rejects, located
# --------------------------------------------------------------------------

BOM = b"\xef\xbb\xbf"


def _raises_at_line(path, lineno, pattern):
    """``pytest.raises`` for a ValueError naming line ``lineno`` of ``path``."""
    return pytest.raises(
        ValueError, match=rf"^Line {lineno} of {re.escape(repr(str(path)))} {pattern}"
    )


def _bad_file(tmp_path, last_line, name="bad.txt"):
    """GOOD, a comment and a blank line, then ``last_line`` as line 6."""
    text = GOOD.encode() + b"# a comment\n\n" + last_line
    return _write_bytes(tmp_path / name, text)


@pytest.mark.parametrize("suffix", [".txt", ".txt.gz"])
def test_utf8_bom_is_stripped(tmp_path, suffix):
    def write(name, data):
        return _write_bytes(tmp_path / (name + suffix),
                            _gzip(data) if suffix.endswith(".gz") else data)

    plain = write("plain", LONG.encode())
    bom = write("bom", BOM + LONG.encode())
    for a, b in zip(load_letor(bom, return_docids=True),
                    load_letor(plain, return_docids=True)):
        np.testing.assert_array_equal(a, b)
    # The mark is not a line: a bad line keeps its number.
    bad = write("bad", BOM + b"1 qid:1 1:0.5\n1 qid:1 x:0.5\n")
    with _raises_at_line(bad, 2, "has a feature index 'x'"):
        load_letor(bad)


# Lines of a valid file, in any order and number (at least one data line).
valid_texts = st.lists(
    st.sampled_from(GOOD.splitlines(keepends=True) + ["# comment\n", "\n"]),
    min_size=1, max_size=12,
).map("".join).filter(lambda text: "qid" in text)


@settings(max_examples=50, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=valid_texts)
def test_utf8_bom_file_loads_as_without(tmp_path, text):
    plain = _write_bytes(tmp_path / "plain.txt", text.encode())
    bom = _write_bytes(tmp_path / "bom.txt", BOM + text.encode())
    for a, b in zip(load_letor(bom, return_docids=True),
                    load_letor(plain, return_docids=True)):
        np.testing.assert_array_equal(a, b)


def test_truncated_last_line_names_file_and_line(tmp_path):
    # The last line of a file cut after "2:", without its end of line.
    path = _bad_file(tmp_path, b"1 qid:3 1:0.5 2:")
    pattern = r"has a feature '2:' without a value; the line reads '1 qid:3 1:0.5 2:'\.$"
    with _raises_at_line(path, 6, pattern) as excinfo:
        load_letor(path)
    # scikit-learn's message is kept as the cause.
    assert isinstance(excinfo.value.__cause__, ValueError)
    assert "could not convert string to float" in str(excinfo.value.__cause__)


def test_missing_label_names_file_and_line(tmp_path):
    path = _bad_file(tmp_path, b"qid:3 1:0.5 #docid = d4\n")
    pattern = (r"has no label: its first field 'qid:3' is not a number; "
               r"the line reads 'qid:3 1:0.5 #docid = d4'\.$")
    with _raises_at_line(path, 6, pattern):
        load_letor(path)


def test_two_qid_fields_names_file_and_line(tmp_path):
    path = _bad_file(tmp_path, b"1 qid:3 qid:4 1:0.5\n")
    pattern = r"has 2 'qid:' fields, where one is expected; the line reads '1 qid:3 qid:4"
    with _raises_at_line(path, 6, pattern):
        load_letor(path)


def test_non_utf8_byte_in_number_names_file_and_line(tmp_path):
    path = _bad_file(tmp_path, b"1 qid:3 1:0.\xff5\n")
    pattern = (r"has a feature value '0\.\\xff5' that is not a number: it holds a "
               r"byte that is not UTF-8 \(in '1:0\.\\xff5'\)")
    with _raises_at_line(path, 6, pattern):
        load_letor(path)


def test_non_integer_feature_index_names_file_and_line(tmp_path):
    path = _bad_file(tmp_path, b"1 qid:3 x:0.1\n")
    pattern = r"has a feature index 'x' that is not an integer \(in 'x:0\.1'\)"
    with _raises_at_line(path, 6, pattern):
        load_letor(path)


@pytest.mark.parametrize(
    "line, pattern",
    [
        (b"abc qid:3 1:0.5", r"has a label 'abc' that is not a number;"),
        (b"1 1:0.5 qid:3", r"has its qid field 'qid:3' after a feature;"),
        (b"1 qid 1:0.5", r"has a field 'qid' that is not '<index>:<value>';"),
        (b"1 qid:3 0.5", r"has a field '0\.5' that is not '<index>:<value>';"),
        (b"1 qid:3 2:0.5 1:0.5", r"has feature indices that do not increase \(2 then 1\)"),
        (b"1 qid:3 1:0.5 1:0.5", r"has feature indices that do not increase \(1 then 1\)"),
        (b"1 qid:3 -1:0.5", r"has a feature index -1 out of the range 0 \.\. 2147483647"),
        (b"1 qid:3 2147483648:0.5", r"has a feature index 2147483648 out of the range"),
        (b"1 qid:3 1:abc", r"has a feature value 'abc' that is not a number \(in '1:abc'\)"),
    ],
    ids=["label", "qid-after-feature", "qid-without-colon", "no-colon",
         "decreasing", "repeated", "negative", "beyond-int", "value"],
)
def test_other_unparsable_lines_name_file_and_line(tmp_path, line, pattern):
    path = _bad_file(tmp_path, line + b"\n")
    with _raises_at_line(path, 6, pattern):
        load_letor(path)


def test_long_bad_line_is_shortened(tmp_path):
    line = b"1 qid:3 " + b" ".join(b"%d:0.5" % k for k in range(1, 200)) + b" 200:"
    path = _bad_file(tmp_path, line)
    with _raises_at_line(path, 6, r"has a feature '200:' without a value") as excinfo:
        load_letor(path)
    shown = str(excinfo.value).split("the line reads ")[1]
    assert shown == repr(line[:77] + b"...")[1:] + "."


def test_bad_line_of_real_file_names_file_and_line(shared_data, tmp_path):
    with gzip.open(shared_data / "ohsumed" / "Fold1" / "test.txt.gz", "rb") as f:
        lines = f.read().splitlines(keepends=True)
    lines[2999] = lines[2999].replace(b" 7:", b" x:", 1)
    path = _write_bytes(tmp_path / "test.txt.gz", _gzip(b"".join(lines)))
    with _raises_at_line(path, 3000, r"has a feature index 'x' that is not an integer"):
        load_letor(path)


def test_load_letor_fold_bad_line_names_its_file(fold_root):
    path = _bad_file(fold_root / "Fold4", b"1 qid:3 x:0.1\n", name="test.txt")
    with _raises_at_line(path, 6, r"has a feature index 'x'"):
        load_letor_fold(fold_root, 4)


BAD_FIELDS = [b"2:", b"x:0.1", b"qid:9", b"0.5", b"3:0.\xff5", b"1:nope"]


@settings(max_examples=50, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(st.sampled_from(GOOD.splitlines() + ["# comment", ""]),
                      min_size=1, max_size=30),
       where=st.integers(0, 30), field=st.sampled_from(BAD_FIELDS),
       newline=st.sampled_from(["\n", "\r\n", "\r"]))
def test_first_bad_line_is_named_wherever_it_is(tmp_path, lines, where, field, newline):
    # A bad field appended to a line of qid 5: the error names that line,
    # counting blank and comment lines and every kind of line end.
    where = min(where, len(lines))
    lines = [line.encode() for line in lines]
    lines.insert(where, b"1 qid:5 2:0.5 " + field)
    path = _write_bytes(tmp_path / "bad.txt", newline.encode().join(lines))
    with _raises_at_line(path, where + 1, r"has "):
        load_letor(path)


# --------------------------------------------------------------------------
# Cause 7: non-finite values warn
# --------------------------------------------------------------------------


def _warns_naming(path, pattern):
    return pytest.warns(
        UserWarning, match=rf"^The file {re.escape(repr(str(path)))} has {pattern}"
    )


def test_nan_label_warns_naming_file_and_count(tmp_path):
    path = _bad_file(tmp_path, b"nan qid:3 1:0.5\nNaN qid:3 1:0.7\n")
    with _warns_naming(path, r"2 non-finite labels \(the first on line 6\): NaN or "
                             r"infinity, loaded as they are\.$") as record:
        X, y, qid = load_letor(path)
    assert len(record) == 1
    # Loaded as before.
    assert np.isnan(y[-2:]).all() and np.isfinite(y[:-2]).all()
    np.testing.assert_array_equal(X[-2:, 0], [0.5, 0.7])


def test_infinite_label_warns_naming_file_and_count(tmp_path):
    path = _bad_file(tmp_path, b"-inf qid:3 1:0.5\n")
    with _warns_naming(path, r"1 non-finite label \(the first on line 6\)"):
        _, y, _ = load_letor(path)
    assert y[-1] == -np.inf


@pytest.mark.parametrize("dense", [True, False])
def test_non_finite_features_warn_naming_file_and_count(tmp_path, dense):
    path = _bad_file(tmp_path, b"1 qid:3 1:inf 2:nan\n0 qid:3 1:-Infinity\n")
    pattern = r"3 non-finite feature values \(the first on line 6\): NaN or infinity"
    with _warns_naming(path, pattern):
        X, _, _ = load_letor(path, dense=dense)
    X = X if dense else X.toarray()
    np.testing.assert_array_equal(X[-2:], [[np.inf, np.nan], [-np.inf, 0.0]])


def test_non_finite_labels_and_features_warn_once(tmp_path):
    path = _bad_file(tmp_path, b"1 qid:3 1:0.5\nnan qid:3 2:inf\n")
    pattern = (r"1 non-finite label \(the first on line 7\) and 1 non-finite "
               r"feature value \(the first on line 7\)")
    with _warns_naming(path, pattern) as record:
        load_letor(path)
    assert len(record) == 1


def test_non_finite_warning_points_at_the_caller(tmp_path, fold_root):
    path = _bad_file(tmp_path, b"nan qid:3 1:0.5\n")
    with pytest.warns(UserWarning) as record:
        load_letor(path)
    assert record[0].filename == __file__
    _bad_file(fold_root / "Fold1", b"nan qid:3 1:0.5\n", name="vali.txt")
    with pytest.warns(UserWarning, match="vali.txt") as record:
        load_letor_fold(fold_root, 1)
    assert len(record) == 1 and record[0].filename == __file__


def test_finite_values_do_not_warn(tmp_path, recwarn):
    # Huge values whose sum overflows are finite: counted, no warning.
    path = _write_bytes(tmp_path / "huge.txt",
                        b"1e308 qid:1 1:1e308\n1e308 qid:1 1:1e308\n")
    _, y, _ = load_letor(path)
    assert np.isinf(y.sum())
    assert not [w for w in recwarn if issubclass(w.category, UserWarning)]


def test_rejected_file_does_not_warn_first(tmp_path, recwarn):
    # A feature 0: in a one-based file raises; its nan label is not warned of.
    path = _bad_file(tmp_path, b"nan qid:3 0:0.5\n")
    with _raises_at_line(path, 6, r"has the feature index 0"):
        load_letor(path)
    assert not [w for w in recwarn if issubclass(w.category, UserWarning)]


def test_n_features_beyond_any_array_names_it(tmp_path):
    """Was numpy's or scipy's size error, naming nothing."""
    path = _write_bytes(tmp_path / "a.txt", b"1 qid:1 1:0.5\n0 qid:1 2:0.1\n")
    with pytest.raises(ValueError, match=r"^n_features=9223372036854775807 is too large "
                                         r"for '.*a\.txt': 2 rows x 9223372036854775807 "
                                         r"columns as a dense array cannot be built"):
        load_letor(path, n_features=2**63 - 1)


# --------------------------------------------------------------------------
# Found after the 8 causes: a NUL character in the path
# --------------------------------------------------------------------------
def test_nul_in_path_names_the_path(tmp_path):
    # open() says only "embedded null byte"
    with pytest.raises(ValueError, match=r"path must not contain a NUL character; got '.*a\\x00b'"):
        load_letor(str(tmp_path / "a\x00b"))


def test_nul_in_fold_root_names_the_root(tmp_path):
    # not "Fold 1 ... is incomplete": no file name holds a NUL
    with pytest.raises(ValueError, match=r"root must not contain a NUL character; got '.*a\\x00b'"):
        load_letor_fold(str(tmp_path / "a\x00b"), 1)


# --------------------------------------------------------------------------
# A dense X larger than the memory available is refused before it is made
# --------------------------------------------------------------------------
# A tiny file whose line 1 has feature 1000000000: a dense X of 2 rows x 10**9
# columns, 14.9 GiB, which the kernel promised and killed the process for at
# its first write. Checked for real in a subprocess under ulimit -v (4 GB);
# the other tests set the memory available (memory_available) and use small
# widths, so that nothing large is ever allocated.
_HUGE_INDEX = b"1 qid:1 1000000000:0.5\n0 qid:1 1:0.5\n"

_UNDER_ULIMIT = r'''
import sys
import skrank
from skrank.stream import query_chunks

path = sys.argv[1]
for engine in ("numpy", "pandas", "sklearn"):
    try:
        skrank.load_letor(path, engine=engine)
    except MemoryError as exc:
        print(type(exc).__name__, exc)
    try:
        list(skrank.iter_letor_chunks(path, engine=engine))
    except MemoryError as exc:
        print(type(exc).__name__, exc)
try:
    list(query_chunks(path))
except MemoryError as exc:
    print(type(exc).__name__, exc)
X, y, qid = skrank.load_letor(path, dense=False)
print("sparse", type(X).__name__, X.shape, X.nnz)
try:  # a line beyond n_features is an error, without a dense X as wide as it
    skrank.load_letor(path, n_features=46)
except ValueError as exc:
    print("ValueError", exc)
try:
    list(skrank.iter_letor_chunks(path, n_features=5))
except ValueError as exc:
    print("ValueError", exc)
'''


def test_huge_feature_index_is_refused_under_a_memory_limit(tmp_path):
    """The 2-line file: refused at once by every reader, with 4 GB of address space."""
    import subprocess
    import sys

    if sys.platform != "linux":
        pytest.skip("ulimit -v is Linux's")
    path = _write_bytes(tmp_path / "huge.txt", _HUGE_INDEX)
    script = _write_bytes(tmp_path / "read.py", _UNDER_ULIMIT.encode())
    run = subprocess.run(
        ["bash", "-c", f'ulimit -v 4000000; exec "{sys.executable}" "{script}" "{path}"'],
        capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    shown = re.escape(repr(str(path)))
    refused = (rf"^NotEnoughMemoryError Line 1 of {shown} has the feature index 1000000000, "
               r"the largest, which makes a dense X of 2 rows x 1000000000 columns of "
               r"float64, 14\.9 GiB, more than the [\d.]+ [KMG]iB of memory available now; "
               r"pass ")
    assert len(lines) == 10
    for line in lines[:6]:  # load_letor then iter_letor_chunks, each engine
        assert re.match(refused, line), line
    assert "dense=False" in lines[0] and "chunk_rows" in lines[1]
    assert re.match(refused, lines[6])  # skrank.stream reads the file with iter_letor_chunks
    assert lines[7] == "sparse csr_matrix (2, 1000000000) 2"
    assert lines[8].startswith(f"ValueError n_features was set to 46, but {str(path)!r} has "
                               "1000000000 features")
    assert lines[9].startswith(f"ValueError Line 1 of {str(path)!r} has a feature in column "
                               "1000000000, beyond the 5 columns of the chunks")


@pytest.mark.parametrize("engine", ["numpy", "pandas", "sklearn"])
@pytest.mark.parametrize("text, line, index", [
    (b"1 qid:1 3000:0.5\n0 qid:1 3000:0.25\n", 1, 3000),  # regular lines: the fast path
    (b"0 qid:1 1:0.5\n1 qid:1 2:0.1 3000:0.5\n", 2, 3000),  # the careful path
])
def test_dense_x_beyond_the_memory_available_names_the_line(tmp_path, memory_available,
                                                            installed, engine, text, line,
                                                            index):
    if engine == "pandas":
        installed("pandas", "fast")
    path = _write_bytes(tmp_path / "wide.txt", text)
    memory_available(40_000)  # X takes 2 x 3000 x 8 = 48,000 bytes
    pattern = (rf"^Line {line} of {re.escape(repr(str(path)))} has the feature index "
               rf"{index}, the largest, which makes a dense X of 2 rows x 3000 columns of "
               r"float64, 46\.9 KiB, more than the 39\.1 KiB of memory available now; pass "
               r"dense=False for a sparse X, which holds only the values written, or "
               r"n_features=<the data set's width> to have a feature beyond it refused\.$")
    with pytest.raises(MemoryError, match=pattern):
        load_letor(path, engine=engine)
    X, _, _ = load_letor(path, engine=engine, dense=False)  # the way out
    assert X.shape == (2, 3000) and X.nnz == text.count(b":") - 2
    memory_available(48_000)  # just fits
    X, _, _ = load_letor(path, engine=engine)
    assert X.shape == (2, 3000) and X[:, 2999].max() == 0.5


def test_zero_based_index_is_named_as_written(tmp_path, memory_available):
    path = _write_bytes(tmp_path / "wide.txt", b"0 qid:1 0:0.5\n1 qid:1 2999:0.5\n")
    memory_available(40_000)
    with pytest.raises(MemoryError, match=r"^Line 2 of .* has the feature index 2999, the "
                                          r"largest, which makes a dense X of 2 rows x 3000 "):
        load_letor(path, zero_based=True)


@pytest.mark.parametrize("engine", ["numpy", "sklearn"])
def test_n_features_beyond_the_memory_available_names_it(tmp_path, memory_available, engine):
    path = _write_bytes(tmp_path / "a.txt", b"1 qid:1 1:0.5\n0 qid:1 2:0.1\n")
    memory_available(20_000)
    with pytest.raises(MemoryError, match=rf"^n_features=3000 makes the dense X of "
                                          rf"{re.escape(repr(str(path)))} 2 rows x 3000 "
                                          r"columns of float32, 23\.4 KiB, more than the "):
        load_letor(path, n_features=3000, dtype=np.float32, engine=engine)
    with pytest.raises(MemoryError, match=r"^n_features=5000 makes the dense X of .* 2 rows x "
                                          r"5000 columns of float64, 78\.1 KiB"):
        load_letor(path, n_features=5000, engine=engine)


def test_growing_x_of_a_compressed_file_is_checked(tmp_path, memory_available, monkeypatch):
    """A compressed file's X grows block by block: each growth must fit."""
    import skrank.datasets._letor as letor

    monkeypatch.setattr(letor, "_BLOCK_SIZE", 256)
    lines = "".join(f"{i % 3} qid:{i // 4} 1:0.5 2:0.25 3:0.125\n" for i in range(400))
    path = _write_bytes(tmp_path / "rows.txt.gz", gzip.compress(lines.encode()))
    # the first block's rows fit; X grows by a quarter, and once it holds some
    # 100 rows, the next quarter (held ones are no longer available) does not
    memory_available(500)
    with pytest.raises(MemoryError, match=r"^Line 1 of .*rows\.txt\.gz' has the feature index "
                                          r"3, the largest, which makes a dense X of \d+ rows "
                                          r"x 3 columns of float64"):
        load_letor(path)
    memory_available(None)  # unknown: nothing is refused
    assert load_letor(path)[0].shape == (400, 3)


def test_fold_widened_to_its_largest_index_is_checked(tmp_path, memory_available):
    """A file narrower than its fold is widened: the file and line of the index are named."""
    _write_bytes(tmp_path / "Fold1" / "train.txt", b"1 qid:1 1000:0.5\n")
    _write_bytes(tmp_path / "Fold1" / "vali.txt", b"1 qid:2 1:0.5\n" * 3)
    _write_bytes(tmp_path / "Fold1" / "test.txt", b"1 qid:3 1:0.5\n")
    memory_available(10_000)  # train's 1 x 1000 fits, vali's 3 x 1000 does not
    train = re.escape(repr(str(tmp_path / "Fold1" / "train.txt")))
    vali = re.escape(repr(str(tmp_path / "Fold1" / "vali.txt")))
    with pytest.raises(MemoryError, match=rf"^Line 1 of {train} has the feature index 1000, "
                                          rf"the largest, which makes the dense X of {vali} 3 "
                                          r"rows x 1000 columns of float64, 23\.4 KiB"):
        load_letor_fold(tmp_path, 1)
    data = load_letor_fold(tmp_path, 1, dense=False)
    assert data.vali[0].shape == (3, 1000)


@pytest.mark.parametrize("engine", ["numpy", "sklearn"])
def test_chunk_beyond_the_memory_available_names_the_line(tmp_path, memory_available, engine):
    from skrank.datasets import iter_letor_chunks

    path = _write_bytes(tmp_path / "wide.txt",
                        b"1 qid:1 1:0.5\n0 qid:1 1:0.5\n1 qid:2 2:0.5 3000:0.5\n")
    memory_available(60_000)  # the chunk of 3 rows x 3000 takes 72,000 bytes
    pattern = (rf"^Line 3 of {re.escape(repr(str(path)))} has the feature index 3000, the "
               r"largest, which makes a dense X of 3 rows x 3000 columns of float64, 70\.3 "
               r"KiB, more than the 58\.6 KiB of memory available now; pass "
               r"n_features=<the data set's width>, beyond which a feature is an error "
               r"naming its line, or a smaller chunk_rows\.$")
    with pytest.raises(MemoryError, match=pattern):
        list(iter_letor_chunks(path, engine=engine))
    # two rows a chunk fit, and fix the width at 1; the third line is beyond it
    with pytest.raises(ValueError, match=r"^Line 3 of .* has a feature in column 3000, beyond "
                                         r"the 1 columns of the chunks"):
        list(iter_letor_chunks(path, engine=engine, chunk_rows=2))
    with pytest.raises(MemoryError, match=r"^n_features=3000 makes the dense X of .* 3 rows"):
        list(iter_letor_chunks(path, engine=engine, n_features=3000))
