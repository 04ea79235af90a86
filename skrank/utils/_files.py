"""Writing files so that a failure never leaves half a file over a good one."""

import contextlib
import os
import tempfile
from pathlib import Path


def write_atomically(path, write, *, binary=False):
    """Call ``write(f)`` on a temporary file beside ``path``, then move it onto ``path``.

    Every file skrank writes (a model, scores, an export, a cache entry, a
    report) goes through this function, so that a write that fails part-way
    (a full disk, a file-size limit, an error or an interruption in
    ``write``) leaves ``path`` as it was, and no temporary file behind.

    Parameters
    ----------
    path : str or os.PathLike
        The file to create or replace.
    write : callable
        Called once with the open temporary file; writes the whole content.
    binary : bool, default=False
        Open the temporary file for bytes instead of text.

    Returns
    -------
    path : pathlib.Path
        ``path`` with its symbolic links resolved, now holding what ``write``
        wrote.

    Raises
    ------
    OSError
        When the temporary file cannot be created, written or moved (for
        example a folder that refuses writing, or a full disk); ``path`` is
        unchanged. Whatever ``write`` raises is raised too, ``path`` unchanged.

    Notes
    -----
    The temporary file is created in the folder of ``path`` (a hidden name
    starting with ``.`` and ending in ``.tmp``), so that the final
    ``os.replace`` is a rename within one file system, which POSIX makes
    atomic: a reader of ``path`` sees the old file or the new one, never a
    mixture. Its content is flushed to disk (``os.fsync``) before the
    rename, so that a crash just after it cannot leave an empty file under
    the name. A ``path`` that is a symbolic link has its target replaced
    (the link stays a link). A file replaced keeps its permissions; a new
    one gets those ``open`` would give it (``0o666`` less the umask), not
    the ``0o600`` of ``tempfile.mkstemp``. The returned path is the
    resolved one.

    Examples
    --------
    >>> import os, tempfile
    >>> from skrank.utils import write_atomically
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = os.path.join(folder, "scores.txt")
    ...     _ = write_atomically(path, lambda f: f.write("0.5\\n"))
    ...     with open(path) as f:
    ...         print(f.read().strip())
    0.5
    """
    path = Path(os.path.realpath(path))  # a symlink's target is replaced, not the link
    try:
        mode = os.stat(path).st_mode & 0o7777  # a file replaced keeps its permissions
    except FileNotFoundError:
        umask = os.umask(0)  # read the umask: setting it is the only way
        os.umask(umask)
        mode = 0o666 & ~umask
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb" if binary else "w") as f:
            if hasattr(os, "fchmod"):
                os.fchmod(f.fileno(), mode)
            write(f)
            f.flush()
            os.fsync(f.fileno())  # on disk before the name points at it
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    return path
