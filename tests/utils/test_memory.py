"""skrank.utils._memory: the memory available, and the refusal of what does not fit."""

import subprocess
import sys

import pytest

from skrank.utils import _memory
from skrank.utils._memory import (
    NotEnoughMemoryError,
    available_memory,
    check_memory,
    format_bytes,
)


def test_refusal_is_a_memory_error_naming_what_and_the_way_out(memory_available):
    memory_available(3 * 2**30)
    with pytest.raises(NotEnoughMemoryError, match=(
            r"^n_things=5 needs 4\.0 GiB, more than the 3\.0 GiB of memory available now; "
            r"lower n_things\.$")) as info:
        check_memory(4 * 2**30, "n_things=5 needs 4.0 GiB", "lower n_things")
    # what numpy raises when an allocation fails: the same handlers catch both
    assert isinstance(info.value, MemoryError)


def test_what_fits_is_not_refused(memory_available):
    memory_available(100)
    check_memory(100, "x", "y")
    check_memory(0, "x", "y")


def test_unknown_memory_refuses_nothing(memory_available):
    memory_available(None)
    check_memory(10**18, "x", "y")


@pytest.mark.parametrize("n_bytes, text", [
    (0, "0 bytes"), (1023, "1023 bytes"), (1024, "1.0 KiB"), (3 * 2**20 // 2, "1.5 MiB"),
    (16 * 10**9, "14.9 GiB"), (2**40, "1.0 TiB"), (10**18, "888.2 PiB"),
])
def test_format_bytes(n_bytes, text):
    assert format_bytes(n_bytes) == text


def test_meminfo_available_reads_mem_available(tmp_path):
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       24683584 kB\nMemFree:         1000 kB\n"
                       "MemAvailable:   2048 kB\nBuffers: 5788 kB\n")
    assert _memory._meminfo_available(meminfo) == 2048 * 1024
    meminfo.write_text("MemTotal:       24683584 kB\n")  # before Linux 3.14
    assert _memory._meminfo_available(meminfo) is None
    assert _memory._meminfo_available(tmp_path / "missing") is None


def test_available_memory_is_a_positive_size_or_unknown():
    available = available_memory()
    assert available is None or available > 0


def test_address_space_limit_bounds_the_available_memory():
    """Under ``ulimit -v`` an allocation beyond the limit fails: it is not available."""
    if sys.platform != "linux":
        pytest.skip("ulimit -v and /proc/self/status are Linux's")
    limit_kib = 4_000_000
    code = ("from skrank.utils._memory import available_memory; "
            "print(available_memory())")
    out = subprocess.run(["bash", "-c", f"ulimit -v {limit_kib}; {sys.executable} -c '{code}'"],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    assert 0 < int(out) < limit_kib * 1024


def _cgroup_files(tmp_path, version, limit, usage, inactive=0, group="box"):
    """A fake /proc/self/cgroup and /sys/fs/cgroup of one memory cgroup."""
    root = tmp_path / "sys"
    if version == 2:
        folder = root / group
        names = ("memory.max", "memory.current", "inactive_file")
        line = f"0::/{group}\n"
    else:
        folder = root / "memory" / group
        names = ("memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file")
        line = f"12:cpu:/other\n4:memory:/{group}\n"
    folder.mkdir(parents=True)
    (folder / names[0]).write_text(f"{limit}\n")
    (folder / names[1]).write_text(f"{usage}\n")
    (folder / "memory.stat").write_text(f"anon 5\n{names[2]} {inactive}\n")
    cgroup = tmp_path / "cgroup"
    cgroup.write_text(line)
    return str(cgroup), str(root)


@pytest.mark.parametrize("version", [1, 2])
def test_a_container_limit_bounds_the_available_memory(tmp_path, version):
    # in a container MemAvailable is the host's; the OOM killer acts at the limit
    cgroup, root = _cgroup_files(tmp_path, version, limit=1000, usage=700, inactive=50)
    assert _memory._cgroup_left(cgroup, root) == 350
    # the inactive page cache counts as free, never beyond the limit
    cgroup, root = _cgroup_files(tmp_path / "b", version, limit=1000, usage=100, inactive=5000)
    assert _memory._cgroup_left(cgroup, root) == 1000


@pytest.mark.parametrize("version, limit", [(1, 9223372036854771712), (2, "max")])
def test_no_container_limit_leaves_the_system_figure(tmp_path, version, limit):
    cgroup, root = _cgroup_files(tmp_path, version, limit=limit, usage=700)
    assert _memory._cgroup_left(cgroup, root) is None
    assert _memory._cgroup_left(str(tmp_path / "missing"), root) is None


def test_the_container_limit_is_part_of_the_available_memory(monkeypatch):
    monkeypatch.setattr(_memory, "_meminfo_available", lambda: 10**12)
    monkeypatch.setattr(_memory, "_cgroup_left", lambda: 12345)
    monkeypatch.setattr(_memory, "_address_space_left", lambda: None)
    assert available_memory() == 12345
