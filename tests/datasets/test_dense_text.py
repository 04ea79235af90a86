"""The fast path of load_letor for dense files (skrank/datasets/_dense_text.py).

Every engine ("numpy", "pandas", and "auto") gives scikit-learn's parse to
the bit, in float64 and float32, also on the careful path's late irregular
lines; pandas is optional.
"""

import gzip
import warnings

import numpy as np
import pytest

from skrank.datasets import load_letor

from tests.datasets._letor_text import ENGINES, assert_bits_equal, dense_text, write_text

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


@pytest.mark.parametrize("engine", ENGINES, indirect=True)
@pytest.mark.parametrize("docids", [False, True])
def test_load_letor_engines_agree_to_the_bit(tmp_path, engine, docids, installed):
    if engine == "pandas":
        installed("pandas", "fast")
    rng = np.random.default_rng(0)
    text = dense_text(rng, n_queries=200, values=NASTY_VALUES, docids=docids)
    path = write_text(tmp_path / "nasty.txt", text)
    expected = load_letor(path, engine="sklearn", return_docids=docids)
    got = load_letor(path, engine=engine, return_docids=docids)
    assert_bits_equal(got, expected)
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
    text = dense_text(rng, n_queries=60, values=NASTY_VALUES + ["0.123456", "7"])
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
        assert_bits_equal([X32], [X64.astype(np.float32)])


def test_load_letor_without_pandas(tmp_path, monkeypatch):
    """The fast extra missing: engine="auto" parses with NumPy; "pandas" says what to install."""
    import builtins

    real_import = builtins.__import__

    def no_pandas(name, *args, **kwargs):
        if name == "pandas" or name.startswith("pandas."):
            raise ImportError("No module named 'pandas'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pandas)
    path = write_text(tmp_path / "a.txt", dense_text(np.random.default_rng(3)))
    expected = load_letor(path, engine="sklearn")
    assert_bits_equal(load_letor(path), expected)
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
    good = dense_text(rng, n_queries=300, n_features=3)
    n_good = good.count("\n")
    path = write_text(tmp_path / "late.txt", good + bad_line + "\n" + good)
    if pattern is not None:
        with pytest.raises(ValueError, match=rf"^Line {n_good + 1} of .*{pattern}"):
            load_letor(path, engine=engine)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_bits_equal(load_letor(path, engine=engine), load_letor(path, engine="sklearn"))


@pytest.mark.parametrize("engine", ENGINES, indirect=True)
def test_load_letor_ohsumed_engines_agree(ohsumed_test, ohsumed_test_path, engine, installed):
    if engine == "pandas":
        installed("pandas", "fast")
    got = load_letor(ohsumed_test_path, engine=engine, return_docids=True)
    assert_bits_equal(got[:3], ohsumed_test[:3])
    assert got[3].tolist() == ohsumed_test[3].tolist()
