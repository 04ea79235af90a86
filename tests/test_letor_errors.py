"""Bad inputs to skrank.datasets: each fails with an error naming what is wrong.

One test per cause (issue 27): bools taken for integers, corrupt compressed
files, lines scikit-learn's parser rejects, non-finite values.
"""

import bz2
import gzip
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skrank.datasets import load_letor, load_letor_fold, make_ranking, make_web_ranking

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


@pytest.mark.parametrize("name", ["n_queries", "n_docs", "n_features", "n_levels"])
def test_make_ranking_bool_integer_parameter_raises(name):
    # n_levels=True (1) was already below its bound of 2; the others loaded.
    with pytest.raises(ValueError, match=rf"'{name}' parameter .*not a bool.*Got True"):
        make_ranking(**{name: True}, random_state=0)


@pytest.mark.parametrize("name", ["n_queries", "n_docs", "n_features"])
def test_make_web_ranking_bool_integer_parameter_raises(name):
    with pytest.raises(ValueError, match=rf"'{name}' parameter .*not a bool.*Got True"):
        make_web_ranking(**{name: True}, random_state=0)


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
