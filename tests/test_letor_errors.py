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
