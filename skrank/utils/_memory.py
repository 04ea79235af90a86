"""The memory available to this process, and a check of an allocation against it.

On Linux an array far larger than the machine's memory is usually *not*
refused: the kernel promises the pages (overcommit) and numpy's
``np.empty`` / ``np.zeros`` succeed. The first time the pages are written,
the kernel runs out of memory and its OOM killer ends the process (often
others with it), with no Python error to catch. A size that comes from the
input (the largest feature index of a file, a hidden layer's width, a number
of samples) must therefore be compared with the memory available before the
array is made: :func:`check_memory` does that, and raises
:class:`NotEnoughMemoryError` with the caller's words for what was asked.
"""

import os

__all__ = ["NotEnoughMemoryError", "available_memory", "check_memory", "format_bytes"]


class NotEnoughMemoryError(MemoryError):
    """An allocation refused before it was made, as larger than the memory available.

    A subclass of :class:`MemoryError`, not of ValueError: the request is
    valid, and the same call succeeds on a machine with more memory (a size
    that no array can hold on any machine is a ValueError). It is what
    numpy raises when an allocation fails, so the command line's handlers of
    a ``MemoryError`` (:func:`skrank.model_selection._comparison.out_of_memory_text`) and a
    user's ``except MemoryError`` treat both alike; the subclass lets a
    reader that falls back to another parser on numpy's ``MemoryError``
    tell a refusal that the fallback would meet again.
    """


def _meminfo_available(path="/proc/meminfo"):
    """``MemAvailable`` of Linux's ``/proc/meminfo`` in bytes, or None."""
    try:
        with open(path, "rb") as f:
            for line in f:
                if line.startswith(b"MemAvailable:"):
                    return int(line.split()[1]) * 1024  # the kernel writes kB
    except (OSError, ValueError, IndexError):
        pass
    return None


def _sysconf_available():
    """Free physical pages times the page size (``os.sysconf``), or None."""
    try:
        pages, size = os.sysconf("SC_AVPHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):  # Windows has no sysconf, macOS no AVPHYS
        return None
    return pages * size if pages > 0 and size > 0 else None


def _read_number(path):
    """The first number of a cgroup file, or None ("max", missing, unreadable)."""
    try:
        with open(path, "rb") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _inactive_file(path, key):
    """The page cache a cgroup can drop at once (``key`` of its ``memory.stat``), or 0."""
    try:
        with open(path, "rb") as f:
            for line in f:
                name, _, value = line.partition(b" ")
                if name == key:
                    return int(value)
    except (OSError, ValueError):
        pass
    return 0


def _cgroup_left(cgroup_path="/proc/self/cgroup", root="/sys/fs/cgroup"):
    """What the process's memory cgroup (a container's limit) leaves, in bytes, or None.

    In a container, ``MemAvailable`` is the host's: the kernel's OOM killer
    ends the process at the container's limit, long before. The limit less
    the cgroup's use, counting its inactive page cache as free (the kernel
    drops it first), for cgroup v2 (``memory.max``) and v1
    (``memory.limit_in_bytes``), in the process's own group or, inside a
    container, at the root of the mounted hierarchy. None without a limit.
    """
    try:
        with open(cgroup_path) as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    candidates = []
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, group = parts
        group = group.lstrip("/")
        if controllers == "":  # cgroup v2
            for folder in (os.path.join(root, group), root):
                candidates.append((folder, "memory.max", "memory.current", b"inactive_file"))
        elif "memory" in controllers.split(","):  # cgroup v1
            for folder in (os.path.join(root, "memory", group), os.path.join(root, "memory")):
                candidates.append((folder, "memory.limit_in_bytes", "memory.usage_in_bytes",
                                   b"total_inactive_file"))
    for folder, limit_file, usage_file, inactive in candidates:
        limit = _read_number(os.path.join(folder, limit_file))
        usage = _read_number(os.path.join(folder, usage_file))
        if limit is None or usage is None:
            continue
        if limit >= 2**60:  # "no limit" (v1 writes the largest page-aligned int64)
            return None
        free = limit - usage + _inactive_file(os.path.join(folder, "memory.stat"), inactive)
        return max(min(free, limit), 0)
    return None


def _address_space_left(status_path="/proc/self/status"):
    """What ``ulimit -v`` (RLIMIT_AS) leaves to map, in bytes, or None without a limit.

    Under such a limit an allocation beyond it fails at once with numpy's
    MemoryError, naming no parameter; counting it here makes the refusal the
    caller's, with its words.
    """
    try:
        import resource
    except ImportError:  # Windows
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        return None
    try:
        with open(status_path, "rb") as f:
            for line in f:
                if line.startswith(b"VmSize:"):
                    return max(soft - int(line.split()[1]) * 1024, 0)
    except (OSError, ValueError, IndexError):
        pass
    return None


def available_memory():
    """Bytes this process can allocate now and use without swapping, or None if unknown.

    The memory the system can give without swapping (``MemAvailable`` of
    ``/proc/meminfo`` on Linux; elsewhere the free physical pages of
    ``os.sysconf``), and no more than what the process's memory cgroup (a
    container's memory limit) and its address-space limit (``ulimit -v``)
    leave. None where neither can be read: the caller then
    does not refuse anything.

    Returns
    -------
    available : int or None
        Bytes, or None.
    """
    physical = _meminfo_available()
    if physical is None:
        physical = _sysconf_available()
    known = [n for n in (physical, _cgroup_left(), _address_space_left()) if n is not None]
    return min(known) if known else None


def format_bytes(n_bytes):
    """``n_bytes`` in words for a message: ``"14.9 GiB"``, ``"3.0 MiB"``, ``"512 bytes"``."""
    for unit, size in (("PiB", 2**50), ("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20),
                       ("KiB", 2**10)):
        if n_bytes >= size:
            return f"{n_bytes / size:.1f} {unit}"
    return f"{int(n_bytes)} bytes"


def check_memory(n_bytes, what, advice):
    """Raise :class:`NotEnoughMemoryError` if ``n_bytes`` exceed the memory available.

    Called before an allocation whose size comes from the input, so that
    nothing is allocated when it cannot fit (see the module). The
    comparison is with :func:`available_memory` at the time of the call;
    where that is unknown, nothing is refused.

    Parameters
    ----------
    n_bytes : int
        Bytes the allocation (or the allocations held at once) will take.
    what : str
        What takes them and how much, naming the parameter or the file and
        the value received, e.g. ``"hidden_layer_sizes=(1000000000,) makes
        ... of 37.3 GiB"`` (:func:`format_bytes` writes the size).
    advice : str
        The way out, e.g. ``"lower hidden_layer_sizes"``.

    Raises
    ------
    NotEnoughMemoryError
        ``"<what>, more than the <available> of memory available now;
        <advice>."``
    """
    available = available_memory()
    if available is None or n_bytes <= available:
        return
    raise NotEnoughMemoryError(
        f"{what}, more than the {format_bytes(available)} of memory available now; {advice}."
    )
