"""write_atomically (skrank/utils/_files.py): a failed write leaves the old file whole."""

import os
import subprocess
import sys
import textwrap

import pytest

from skrank.utils import write_atomically

resource = pytest.importorskip("resource")  # the file-size limit: POSIX only


def _run_limited(code, limit_bytes, cwd):
    """Run ``code`` in a Python child whose files may not grow past ``limit_bytes``."""
    prelude = textwrap.dedent(f"""
        import resource
        resource.setrlimit(resource.RLIMIT_FSIZE, ({limit_bytes}, {limit_bytes}))
    """)
    return subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)],
                          capture_output=True, text=True, cwd=cwd, timeout=120)


def test_writes_the_content(tmp_path):
    path = tmp_path / "scores.txt"
    assert write_atomically(path, lambda f: f.write("0.5\n")) == path
    assert path.read_text() == "0.5\n"
    assert write_atomically(str(path), lambda f: f.write(b"\x00\x01"), binary=True) == path
    assert path.read_bytes() == b"\x00\x01"
    assert os.listdir(tmp_path) == ["scores.txt"]


def test_a_file_size_limit_leaves_the_old_file(tmp_path):
    # a real limit of the kernel (as a full disk gives): the write fails part-way
    path = tmp_path / "model.bin"
    path.write_bytes(b"the previous, good model")
    result = _run_limited("""
        from skrank.utils import write_atomically
        try:
            write_atomically("model.bin", lambda f: f.write(b"x" * 100_000), binary=True)
        except OSError as exc:
            print(type(exc).__name__, exc.errno)
        else:
            print("written")
    """, 4096, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[0] == "OSError"
    assert int(result.stdout.split()[1]) == __import__("errno").EFBIG
    assert path.read_bytes() == b"the previous, good model"
    assert os.listdir(tmp_path) == ["model.bin"]  # no temporary file left


def test_an_error_in_write_leaves_the_old_file(tmp_path):
    path = tmp_path / "scores.txt"
    path.write_text("1.0\n2.0\n")

    def write(f):
        f.write("3.0\n")
        raise ValueError("a score is NaN")

    with pytest.raises(ValueError, match="a score is NaN"):
        write_atomically(path, write)
    assert path.read_text() == "1.0\n2.0\n"
    assert os.listdir(tmp_path) == ["scores.txt"]


def test_an_interrupt_leaves_no_file(tmp_path):
    def write(f):
        f.write("half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_atomically(tmp_path / "new.txt", write)
    assert os.listdir(tmp_path) == []


def test_a_missing_folder_is_an_oserror(tmp_path):
    with pytest.raises(FileNotFoundError):
        write_atomically(tmp_path / "no" / "such.txt", lambda f: f.write("x"))


def test_new_files_get_the_permissions_open_gives(tmp_path):
    old = os.umask(0o027)
    try:
        write_atomically(tmp_path / "a.txt", lambda f: f.write("x"))
        with open(tmp_path / "b.txt", "w") as f:
            f.write("x")
    finally:
        os.umask(old)
    mode = os.stat(tmp_path / "a.txt").st_mode & 0o777
    assert mode == os.stat(tmp_path / "b.txt").st_mode & 0o777 == 0o640


def test_the_stream_cache_keeps_no_half_written_entry(tmp_path):
    # fit_stream's cache of BoltzRank's prepared rows goes through the same
    # writer: an entry that could not be written whole is absent, not truncated;
    # the cache warns and stops writing (the fit goes on, sampling again)
    result = _run_limited("""
        import warnings
        import numpy as np
        from skrank.stream._fit import _PreparedCache
        cache = _PreparedCache(".")
        y, qid = np.zeros(10), np.arange(10)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            cache.put(0, y, qid, np.ones(100_000))
        print(any("could not keep" in str(w.message) for w in caught), cache.writing)
        print(cache.get(0, y, qid) is None)
    """, 65536, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "False", "True"]
    assert os.listdir(tmp_path) == []


def test_a_replaced_file_keeps_its_permissions(tmp_path):
    path = tmp_path / "model.bin"
    path.write_bytes(b"old")
    os.chmod(path, 0o600)
    write_atomically(path, lambda f: f.write(b"new"), binary=True)
    assert path.read_bytes() == b"new"
    assert os.stat(path).st_mode & 0o777 == 0o600


def test_a_symlink_has_its_target_replaced(tmp_path):
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "scores.txt"
    target.write_text("old\n")
    link = tmp_path / "scores.txt"
    link.symlink_to(target)
    assert write_atomically(link, lambda f: f.write("new\n")) == target.resolve()
    assert link.is_symlink() and target.read_text() == "new\n"
    assert sorted(os.listdir(tmp_path / "real")) == ["scores.txt"]
