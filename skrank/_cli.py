"""The command line, ``python -m skrank {fit,predict,evaluate,compare,export}``.

``fit``, ``predict`` and ``evaluate`` work on one's own LETOR / SVMlight
files (read with :func:`skrank.datasets.load_letor`; ``--zero-based`` for
files whose feature indices start at 0); ``compare`` runs the grouped
comparison of :mod:`skrank._compare`, or on fold folders the LETOR protocol
of :func:`skrank.model_selection.letor_protocol`, in the metric convention
of ``--convention``; ``export`` writes a saved model as ONNX or as the
Elasticsearch / OpenSearch plugin's linear model (:mod:`skrank.export`).
``python -m skrank --version`` prints the version.

Results go to stdout (``predict``'s scores, ``evaluate``'s metrics,
``compare``'s table), and nothing else does: progress and errors go to
stderr. ``compare`` prints a line as each fold (cross-validation) or grid
point (LETOR protocol) ends, with its time and an estimate of the time left;
``fit`` names the ranker's parameters that differ from its class defaults.
The rankers' ``verbose`` lines, which the library prints to stdout as
scikit-learn's estimators do, are sent to stderr while the command line fits
or scores. Results that cannot be written are an error: a closed stdout
(found before the work), a full disk. A pipe whose reader has gone
(``predict ... | head -1``) ends the command with exit status 1 and no
message, as Python's documentation advises for SIGPIPE. A closed stderr
loses the messages, never the exit status.

The files read are regular files: a named pipe, a socket or a device
(``/dev/null``) is refused before it is opened, since opening a pipe waits
for a writer, forever if none comes, and a file may be read more than once
(a LETOR file whose lines turn out irregular, ``fit --stream``'s at every
epoch); ``evaluate`` reads piped scores from stdin (``-``). ``--out`` is
written to a temporary file beside it, moved into place once complete, and
is never a pipe or a device, which the move would replace. ``predict``
refuses to write scores that are not finite (NaN or infinity), as
``evaluate`` refuses to read them.

Errors follow two conventions:

* an error in the files or the data (missing, a folder, a named pipe or a
  device, unreadable, truncated or corrupt, not a model saved by ``fit``,
  labels the metrics reject, an incomplete LETOR fold, an output that
  cannot be written, stdout included, data a ranker cannot fit or score,
  scores that are not finite, a file, fit or prediction that runs out of
  memory or would: a dense ``X`` or a network refused before it is made)
  is :class:`CommandError`: one line on stderr, ``<prog> <command>: error:
  <message>``, naming the file (and the ranker), and exit status 1;
* a usage error, an option value that is invalid whatever the files hold
  (an unknown ``--param`` name, ``--cv 1``, ``--k 0``, ``--n-jobs 0``), is
  argparse's: its usage line, then one ``error:`` line, and exit status 2,
  as for an unknown option. It is rejected before any file is read.

Anything else is a bug and shows its traceback: the handlers catch the
exception types a file or data error raises, at the step that reads or
checks that file, never ``Exception``; a ranker's fit or scores fail on the
data with the library's input errors, ValueError or TypeError, or with
MemoryError, and only these are caught there.
"""

import argparse
import ast
import contextlib
import json
import lzma
import os
import pickle
import struct
import sys
import time
import warnings
import zlib
from pathlib import Path

import joblib
import numpy as np

from . import __version__
from ._compare import changed_params, run_cv
from .datasets import iter_letor_chunks, load_letor, load_rank_sample
from .datasets._letor import FeatureWidthError, _file_kind, _lines_of_rows
from .export import to_es_linear, to_onnx
from .metrics import CONVENTIONS, map_score, ndcg_score
from .model_selection import letor_protocol
from .model_selection._comparison import (
    DataError,
    check_labels,
    format_table,
    out_of_memory_text,
    ranker_call,
)
from .model_selection._letor_protocol import _letor_folds
from .rankers._registry import ABSENT, RANKERS
from .stream import fit_stream, query_chunks
from .stream._sources import DEFAULT_CHUNK_ROWS
from .utils import write_atomically
from .utils._routing import fit_qid_params, predict_scores

__all__ = ["main"]

PROG = "python -m skrank"

#: What ``fit`` saves with :func:`joblib.dump` and ``predict`` checks it reads.
MODEL_FORMAT = "skrank-model/1"
#: The keys of the dict that ``fit`` saves.
_MODEL_KEYS = ("format", "skrank_version", "ranker", "params", "n_features", "estimator")

#: What :func:`joblib.load` raises on a file that is no joblib pickle, or a
#: truncated or damaged one (no skrank code runs while unpickling: no class of
#: skrank defines ``__setstate__``): pickle's opcodes read from foreign bytes
#: fail as UnpicklingError, EOFError, IndexError, KeyError, ValueError,
#: TypeError or struct.error; a class the pickle names may be missing
#: (ImportError, AttributeError); joblib's compressed files add OSError,
#: zlib.error and lzma.LZMAError.
_UNPICKLE_ERRORS = (
    pickle.UnpicklingError, EOFError, IndexError, KeyError, ValueError, TypeError,
    struct.error, ImportError, AttributeError, OSError, zlib.error, lzma.LZMAError,
)

DEFAULT_CUTOFFS = (1, 3, 5, 10)


class CommandError(Exception):
    """An error of the user's files or data: reported in one line, exit status 1."""


class _ReaderGone(Exception):
    """stdout is a pipe whose reader has exited (``| head -1``): the command stops quietly."""


def _log(line):
    """Print ``line`` (a progress, status or error line) on stderr, when it can be.

    Messages are not results: a stderr that fails to take them (a full disk,
    a pipe whose reader has gone) loses the messages, never the command or
    its exit status. A closed stderr is the null device (see
    :func:`_stderr_or_null`).
    """
    with contextlib.suppress(OSError):
        print(line, file=sys.stderr, flush=True)


def _open_standard_descriptors():
    """Open the null device on those of descriptors 0, 1 and 2 that are closed.

    A command started with a closed stream (``exec 1>&-``) has None for
    ``sys.stdout`` (``sys.stderr``, ``sys.stdin``), and the next file it
    opens takes the lowest free descriptor: a model or data file opened as
    descriptor 1 would receive what joblib's workers print, and
    :func:`_progress_on_stderr` would replace it with stderr. Held by the
    null device, descriptors 0 to 2 are never a file's; ``sys.stdout``
    stays None, which is how a command learns that it cannot write its
    results (:func:`_check_stdout`). They are inheritable, as standard
    streams are: a joblib worker started without a stderr fails at once.
    """
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            # the lowest free descriptor: fd, the lower ones being open
            os.set_inheritable(os.open(os.devnull, os.O_RDWR), True)


@contextlib.contextmanager
def _stderr_or_null():
    """A context in which a closed stderr (``sys.stderr`` None) is the null device.

    With ``sys.stderr`` None, ``print(file=sys.stderr)`` would write to
    stdout, among the results, and joblib's process pool, which flushes
    ``sys.stdout`` (stderr, in :func:`_progress_on_stderr`) as it starts a
    worker, would fail. Messages are lost; the exit status tells the outcome.
    """
    if sys.stderr is not None:
        yield
        return
    with open(os.devnull, "w") as null:
        sys.stderr = null
        try:
            yield
        finally:
            sys.stderr = None


def _check_stdout(what, advice=""):
    """Raise :class:`CommandError` when stdout is closed, before the work that fills it.

    ``what`` names the results ("scores"); ``advice`` ends the message.
    """
    if sys.stdout is None:
        raise CommandError(f"cannot write the {what} to stdout: it is closed{advice}")


def _write_stdout(text, what):
    """Write ``text`` to stdout and flush it; errors as :class:`CommandError`.

    Flushed here, so that a full disk or a closed pipe is found while the
    command can report it, not when Python flushes stdout at exit. A pipe
    whose reader has gone (``| head -1``) raises :class:`_ReaderGone`: the
    reader took what it wanted, and the command ends with status 1 and no
    message, as Python's documentation advises for SIGPIPE.
    """
    _check_stdout(what)
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        _discard_stdout()
        raise _ReaderGone from None
    except OSError as exc:
        _discard_stdout()
        raise CommandError(f"cannot write the {what} to stdout: {exc}") from None


def _discard_stdout():
    """Point descriptor 1 at the null device after a failed write.

    What the failed write left in ``sys.stdout``'s buffer is flushed again
    when Python exits, and would fail again there with a message of its
    own; the null device takes it. A ``sys.stdout`` without a descriptor (a
    test's capture) is left as it is.
    """
    try:
        fd = sys.stdout.fileno()
    except (OSError, ValueError):  # io.UnsupportedOperation is both
        return
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, fd)
    os.close(null)


@contextlib.contextmanager
def _progress_on_stderr():
    """A context in which what the library prints (``verbose``'s lines) goes to stderr.

    The rankers print their epoch lines to stdout, as scikit-learn's
    estimators do; the command line keeps stdout for its results (the scores
    of ``predict``, the table of ``compare``). Python's ``sys.stdout`` is
    redirected, and so is file descriptor 1, which the processes of joblib
    workers started inside (``n_init`` runs with ``n_jobs``) write to.
    """
    if sys.stdout is not None:  # None: a closed stdout, see _check_stdout
        sys.stdout.flush()
    with contextlib.suppress(OSError):  # messages only: see _log
        sys.stderr.flush()
    try:
        saved = os.dup(1)
    except OSError:  # no descriptor 1 (a closed stdout): Python's redirect only
        saved = None
    if saved is not None:
        os.dup2(2, 1)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        if saved is not None:
            with contextlib.suppress(OSError):
                sys.stderr.flush()
            os.dup2(saved, 1)
            os.close(saved)


# ----------------------------------------------------------------------
# Argument types
def _param(text):
    """``name=value`` of ``--param``: value by :func:`ast.literal_eval`, else the string."""
    name, sep, value = text.partition("=")
    name = name.strip()
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected name=value; got {text!r}")
    try:
        value = ast.literal_eval(value)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        pass  # a bare word such as adam or relu is the string itself
    return name, value


def _path(text):
    """A file or folder name; not empty, which ``Path("")`` would make the current folder."""
    if not text:
        raise argparse.ArgumentTypeError("expected a file name; got an empty string ''")
    return Path(text)


def _positive_int(text):
    """An int >= 1 (``--k``, ``--n-features``)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer; got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer; got {text!r}")
    return value


def _n_jobs(text):
    """A joblib worker count (``--n-jobs``): an int other than 0, which joblib rejects.

    A usage error (exit status 2) rather than a data error: 0 is wrong
    whatever the files hold, and argparse reports it before any is read.
    """
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value == 0:
        raise argparse.ArgumentTypeError(
            f"expected a nonzero integer (N workers, or -1 for all CPUs); got {text!r}"
        )
    return value


# ----------------------------------------------------------------------
# Files
#: What a named pipe, a socket or a device given as a file is told.
REGULAR_FILES_ONLY = f"{PROG} reads regular files only"


def _check_file(path, advice=""):
    """Raise :class:`CommandError` unless ``path`` is an existing regular file.

    A named pipe, a socket or a device (``/dev/null``) is refused before it
    is opened: opening a pipe waits for a writer, forever if none comes, and
    the commands read a file more than once (a LETOR file whose lines turn
    out irregular, the training file of ``fit --stream`` at every epoch).
    ``advice`` ends that message.
    """
    try:
        kind = _file_kind(path)
    except (FileNotFoundError, NotADirectoryError, ValueError):  # ValueError: a NUL byte
        raise CommandError(f"{path}: no such file") from None
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc}") from None
    if kind == "a folder":
        raise CommandError(f"{path} is a folder; expected a file")
    if kind is not None:
        raise CommandError(f"{path} is {kind}, not a regular file; {REGULAR_FILES_ONLY}{advice}")


def _check_output(path, inputs=()):
    """Raise :class:`CommandError` when ``path`` cannot be a file to write.

    Checked before the work, so that a typo in ``--out`` costs no fit; a
    folder that refuses writing is still found when the file is written.
    ``path`` must not be one of the command's ``inputs`` (the same file
    under any name): the output would replace what the command reads.
    A named pipe, a socket or a device is refused: the file written beside
    it would replace it, not write to it (a root user's ``--out /dev/null``
    would replace the null device).
    """
    if path is None or str(path) == "-":
        return
    path = Path(path)
    if path.is_dir():
        raise CommandError(f"cannot write {path}: it is a folder; expected a file name")
    if not path.parent.is_dir():
        raise CommandError(f"cannot write {path}: no such folder {path.parent}")
    try:
        kind = _file_kind(path)
    except (OSError, ValueError):  # nothing there yet: a new file
        kind = None
    if kind is not None:
        raise CommandError(
            f"cannot write {path}: it is {kind}, not a regular file; --out names a "
            "file, replaced once it is completely written"
        )
    for given in inputs:
        if given is not None and path.exists() and Path(given).exists() and os.path.samefile(
                path, given):
            raise CommandError(
                f"--out {path} is the input {given}: the command would write over what it "
                "reads; choose another file"
            )


#: The loaders' advice in their messages, and the command line's for the same.
_CLI_TERMS = {
    # a file with a feature index 0
    "pass zero_based=True.": "pass --zero-based.",
    # a dense X too large for the memory: the command line has no sparse X
    ("pass dense=False for a sparse X, which holds only the values written, or "
     "n_features=<the data set's width> to have a feature beyond it refused."):
        "the command line reads X dense, as wide as the largest feature index: fix "
        "that line if its index is a mistake.",
    # a chunk of a streamed file too large for the memory
    ("pass n_features=<the data set's width>, beyond which a feature is an error "
     "naming its line, or a smaller chunk_rows."):
        "pass --n-features N (the data set's width), beyond which a feature is an "
        "error naming its line, or a smaller --chunk-rows.",
}


def _in_cli_terms(message):
    """A loader's ``message`` with its advice in the command line's terms (:data:`_CLI_TERMS`).

    The loader says to "pass zero_based=True." of a file with a feature
    index 0; here that is the option ``--zero-based``.
    """
    for said, meant in _CLI_TERMS.items():
        message = message.replace(said, meant)
    return message


def _too_wide_for_model(exc, model):
    """The message of a :class:`FeatureWidthError` ``exc`` when ``model`` fixed the width."""
    where = exc.path if exc.line is None else f"line {exc.line} of {exc.path}"
    return (f"{where} has a feature in column {exc.column}, but the model {model} was "
            f"fitted on {exc.width} features: score files with the features of its "
            "training data")


def _load(path, *, n_features=None, zero_based=False, verbose=False, model=None):
    """``(X, y, qid)`` of a LETOR file, logging its size; errors as :class:`CommandError`.

    ``verbose`` adds the loader's progress lines (rows, MB read, MB/s) on stderr.
    ``model``: the model file whose width ``n_features`` is, for the message
    of a file with more features.
    """
    path = Path(path)
    _check_file(path)
    start = time.perf_counter()
    try:
        X, y, qid = load_letor(
            path, n_features=n_features, zero_based=zero_based, verbose=verbose
        )
    except FeatureWidthError as exc:
        if model is None:
            raise CommandError(str(exc)) from None
        raise CommandError(_too_wide_for_model(exc, model)) from None
    except ValueError as exc:  # the loader's messages name the file
        raise CommandError(_in_cli_terms(str(exc))) from None
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc}") from None
    except MemoryError as exc:  # a dense X too large, refused before it is made
        raise _out_of_memory(f"read {path}", exc, "use a smaller file") from None
    _log(f"loaded {X.shape[0]} rows, {np.unique(qid).size} queries, {X.shape[1]} features "
         f"from {path} in {time.perf_counter() - start:.1f} s")
    return X, y, qid


def _describe(exc):
    """The message of ``exc``, after its type where the message alone is vague.

    A ValueError or OSError says what is wrong; an EOFError ("Compressed file
    ended before the end-of-stream marker was reached") or a zlib.error
    ("Error -3 while decompressing data") is clearer with its type.
    """
    if isinstance(exc, (ValueError, OSError)) and str(exc):
        return str(exc)
    name = "zlib.error" if isinstance(exc, zlib.error) else type(exc).__name__
    return f"{name}: {exc}" if str(exc) else name


def _out_of_memory(what, exc, advice):
    """:class:`CommandError` for a MemoryError while doing ``what``, with ``advice``.

    A refusal of skrank's says what to do itself, in the library's terms
    (:func:`_in_cli_terms`); ``advice`` is for numpy's, which does not
    (:func:`~skrank.model_selection._comparison.out_of_memory_text`).
    """
    return CommandError(_in_cli_terms(out_of_memory_text(what, exc, advice)))


def _check_labels(y, qid, *, convention, where):
    """The comparison's ``check_labels``, its error as :class:`CommandError`."""
    try:
        check_labels(y, qid, convention=convention, where=where)
    except DataError as exc:
        raise CommandError(str(exc)) from None


def _read_scores(path):
    """One float per non-blank line of ``path`` (``-``: stdin)."""
    name = "stdin" if path == "-" else str(path)
    if path != "-":
        _check_file(Path(path), advice=": give '-' to read the scores from stdin")
    elif sys.stdin is None:
        raise CommandError("cannot read the scores from stdin: it is closed")
    try:
        if path == "-":
            lines = sys.stdin.read().splitlines()
        else:
            lines = Path(path).read_text().splitlines()
    except FileNotFoundError:
        raise CommandError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CommandError(f"cannot read {name}: {exc}") from None
    scores = []
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            value = float(line)
        except ValueError:
            raise CommandError(
                f"line {lineno} of {name} is not a number: {line.strip()!r}; "
                "expected one score per line"
            ) from None
        if not np.isfinite(value):
            raise CommandError(f"line {lineno} of {name} is not a finite score: {line.strip()!r}")
        scores.append(value)
    return np.asarray(scores, dtype=np.float64)


def _write_lines(lines, out, what):
    """Write ``lines`` to the file ``out``, or to stdout when ``out`` is None or ``-``.

    ``what`` names the lines in an error message ("scores").
    """
    text = "".join(f"{line}\n" for line in lines)
    if out is None or str(out) == "-":
        _write_stdout(text, what)
        return
    try:
        write_atomically(out, lambda f: f.write(text))
    except OSError as exc:
        raise CommandError(f"cannot write {out}: {exc}") from None


# ----------------------------------------------------------------------
# Subcommands
def _cmd_fit(args, parser):
    entry = RANKERS[args.ranker]
    est = entry.make()
    params = dict(args.param or [])
    valid = est.get_params()
    unknown = [name for name in params if name not in valid]
    if unknown:
        parser.error(
            f"--param: {args.ranker} has no parameter {', '.join(map(repr, unknown))}; "
            f"its parameters are {', '.join(sorted(valid))}"
        )
    est.set_params(**params)
    if not args.stream:
        for flag, given in (("--vali", args.vali), ("--chunk-rows", args.chunk_rows),
                            ("--epochs", args.epochs)):
            if given is not None:
                parser.error(f"{flag} is an option of the streamed fit: add --stream")
    if args.epochs is not None:
        est.set_params(max_iter=args.epochs)
    if args.stream and not hasattr(est, "partial_fit"):
        parser.error(f"--stream trains with partial_fit, which {args.ranker} has not "
                     f"({'solver=lbfgs' if params.get('solver') == 'lbfgs' else 'not a '}"
                     f"{'' if params.get('solver') == 'lbfgs' else 'stochastic ranker'}): "
                     "use ListNet, SoftRank or BoltzRank with solver adam or sgd")
    # before the file is read and the ranker fitted
    _check_output(args.out, inputs=(args.train, args.vali))
    # the registry's settings and --param's: what differs from the class defaults
    shown = ranker_call(args.ranker, changed_params(est))
    if args.stream:
        start = _fit_streamed(est, args, shown)
    else:
        # --param verbose=1 shows the reading's progress too, before the fit's
        X, y, qid = _load(args.train, n_features=args.n_features, zero_based=args.zero_based,
                          verbose=bool(params.get("verbose")))
        kwargs = fit_qid_params(est, qid)
        _log(f"fitting {shown} ...")
        start = time.perf_counter()
        try:
            with _progress_on_stderr():
                est.fit(X, y, **kwargs)
        except (ValueError, TypeError) as exc:  # invalid parameter values among them
            raise CommandError(f"fitting {args.ranker} failed: {exc}") from None
        except MemoryError as exc:  # sizes in --param, or a file, too large for the machine
            raise _out_of_memory(f"fit {shown}", exc,
                                 "lower the sizes in --param or use a smaller file") from None
    _log(f"fitted {args.ranker} in {time.perf_counter() - start:.1f} s")
    payload = {
        "format": MODEL_FORMAT,
        "skrank_version": __version__,
        "ranker": args.ranker,
        "params": params,
        "n_features": int(est.n_features_in_),
        "zero_based": args.zero_based,  # how predict reads files by default
        "estimator": est,
    }
    try:
        write_atomically(args.out, lambda f: joblib.dump(payload, f), binary=True)
    except OSError as exc:
        raise CommandError(f"cannot write {args.out}: {exc}") from None
    _log(f"saved model to {args.out}")
    return 0


def _fit_streamed(est, args, shown):
    """Fit ``est`` over the epochs of the file ``args.train``, read chunk by chunk.

    Returns the time the fit started; errors as :class:`CommandError`.
    """
    _check_file(args.train)
    validation, n_features = {}, args.n_features
    chunk_rows = DEFAULT_CHUNK_ROWS if args.chunk_rows is None else args.chunk_rows
    if args.vali is not None:
        X_val, y_val, qid_val = _load(args.vali, n_features=n_features,
                                      zero_based=args.zero_based)
        if n_features is None:  # the stream's width, fixed by its first chunk
            n_features = _first_chunk_width(args.train, chunk_rows, args.zero_based)
            if X_val.shape[1] > n_features:
                raise CommandError(
                    f"{args.vali} has {X_val.shape[1]} features, but the stream of "
                    f"{args.train} has {n_features}, the width of its first chunk (about "
                    f"{chunk_rows} rows): pass --n-features with the width of the data set"
                )
            X_val = np.hstack([X_val, np.zeros((X_val.shape[0], n_features - X_val.shape[1]),
                                               dtype=X_val.dtype)])
        validation = {"X_val": X_val, "y_val": y_val, "qid_val": qid_val}
    _log(f"fitting {shown} over {args.train}, read in chunks of about {chunk_rows} rows "
         f"at every epoch (at most {est.max_iter}) ...")
    start = time.perf_counter()
    try:
        with _progress_on_stderr():
            fit_stream(est, args.train, chunk_rows=chunk_rows, n_features=n_features,
                       zero_based=args.zero_based, **validation)
    except FeatureWidthError as exc:
        where = exc.path if exc.line is None else f"line {exc.line} of {exc.path}"
        fixed = (f"--n-features {exc.width}" if args.n_features is not None else
                 f"the {exc.width} features of the first chunk (about {chunk_rows} rows), "
                 "which fix the width of the stream")
        raise CommandError(
            f"fitting {args.ranker} over {args.train} failed: {where} has a feature in "
            f"column {exc.column}, beyond {fixed}: pass --n-features with the width of "
            "the data set"
        ) from None
    except (ValueError, TypeError) as exc:  # the reader's messages name the file
        raise CommandError(
            f"fitting {args.ranker} over {args.train} failed: {_in_cli_terms(str(exc))}"
        ) from None
    except OSError as exc:
        raise CommandError(f"cannot read {args.train}: {exc}") from None
    except MemoryError as exc:
        raise _out_of_memory(f"fit {shown}", exc,
                             "lower --chunk-rows or the sizes in --param") from None
    return start


def _first_chunk_width(path, chunk_rows, zero_based):
    """The number of features a stream of ``path`` takes from its first chunk."""
    try:
        X, _, _ = next(iter(iter_letor_chunks(path, chunk_rows=chunk_rows,
                                              zero_based=zero_based)))
    except ValueError as exc:
        raise CommandError(_in_cli_terms(str(exc))) from None
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc}") from None
    except MemoryError as exc:  # a first chunk too large, refused before it is made
        raise _out_of_memory(f"read {path}", exc, "lower --chunk-rows") from None
    except StopIteration:
        raise CommandError(f"{path} holds no rows") from None
    return X.shape[1]


def _load_model(path):
    """The payload saved by ``fit``; errors as :class:`CommandError`."""
    path = Path(path)
    _check_file(path)
    not_model = (f"{path} is not a skrank model saved by '{PROG} fit' "
                 f"(a joblib file of format {MODEL_FORMAT!r})")
    try:
        empty = path.stat().st_size == 0
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc}") from None
    if empty:
        raise CommandError(f"{not_model}: the file is empty")
    try:
        payload = joblib.load(path)
    except PermissionError as exc:
        raise CommandError(f"cannot read {path}: {exc}") from None
    except _UNPICKLE_ERRORS as exc:
        raise CommandError(f"{not_model}: joblib cannot load it ({_describe(exc)})") from None
    found = payload.get("format") if isinstance(payload, dict) else None
    if not (isinstance(found, str) and found.startswith("skrank-model/")):
        what = "a dict without a skrank 'format'" if isinstance(payload, dict) else (
            f"a {type(payload).__name__}")
        raise CommandError(f"{not_model}: it holds {what}")
    if found != MODEL_FORMAT:
        raise CommandError(
            f"{path} is a skrank model of format {found!r}; skrank {__version__} "
            f"reads {MODEL_FORMAT!r}: fit the model again with this version"
        )
    missing = [key for key in _MODEL_KEYS if key not in payload]
    if missing:
        raise CommandError(f"{not_model}: it has no {', '.join(map(repr, missing))}")
    if not hasattr(payload["estimator"], "predict"):
        raise CommandError(
            f"{not_model}: its 'estimator' is a {type(payload['estimator']).__name__} "
            "without predict"
        )
    n_features = payload["n_features"]
    if not isinstance(n_features, int) or isinstance(n_features, bool) or n_features < 1:
        raise CommandError(
            f"{not_model}: its 'n_features' is {n_features!r}, not a positive integer"
        )
    return payload


#: The most line numbers an error names.
_SHOWN_LINES = 5


def _check_finite_scores(scores, payload, args, *, first_row=0, chunk=False, written=0):
    """Raise :class:`CommandError` when ``scores`` hold NaN or infinity.

    A fitted ranker gives such scores when its parameters are not finite
    (a diverged fit, an edited or damaged model file) or its arithmetic
    overflows on extreme features. They rank nothing, and ``evaluate``
    refuses them; they are never written. ``scores`` are those of the rows
    ``first_row``, ``first_row + 1``, ... (0-based) of ``args.file``; the
    message names the first lines they are on. ``chunk``: the scores of one
    chunk of a streamed ``predict``, which stops there; ``written`` scores
    went to stdout before it.
    """
    bad = np.flatnonzero(~np.isfinite(scores))
    if not bad.size:
        return
    lines = _lines_of_rows(args.file, first_row + bad[:_SHOWN_LINES])
    shown = ", ".join(map(str, lines)) + (", ..." if bad.size > _SHOWN_LINES else "")
    n, total = bad.size, scores.size
    of = (f"the {total} scores of rows {first_row + 1} to {first_row + total}" if chunk
          else f"the {total} scores")
    if args.out is not None and str(args.out) != "-":
        outcome = f"no scores written to {args.out}"
    elif written:
        outcome = f"stopped there, after writing the first {written} scores to stdout"
    else:
        outcome = "no scores written to stdout"
    raise CommandError(
        f"{n} of {of} of {args.file} by the {payload['ranker']} of {args.model} "
        f"{'are' if n > 1 else 'is'} not finite (NaN or infinity): "
        f"line{'s' * (lines.size > 1)} {shown} of {args.file}; {outcome}"
    )


def _cmd_predict(args, parser):
    if args.out is None or str(args.out) == "-":
        _check_stdout("scores", "; give --out SCORES")
    _check_output(args.out, inputs=(args.model, args.file))
    payload = _load_model(args.model)
    _log(f"model: {payload['ranker']} with {payload['n_features']} features "
         f"(skrank {payload['skrank_version']})")
    # files are read as the model's training file was (older models: one-based)
    zero_based = args.zero_based or payload.get("zero_based", False) is True
    if zero_based and not args.zero_based:
        _log(f"reading {args.file} with zero-based feature indices, as the model's "
             "training file (fit --zero-based)")
    if args.chunk_rows is not None:
        return _predict_streamed(payload, args, zero_based)
    X, _, qid = _load(args.file, n_features=payload["n_features"], zero_based=zero_based,
                      model=args.model)
    start = time.perf_counter()
    try:
        with _progress_on_stderr():
            scores = predict_scores(payload["estimator"], X, qid)
    except ValueError as exc:
        raise CommandError(f"predicting {args.file} failed: {exc}") from None
    except MemoryError as exc:
        raise _out_of_memory(f"score {args.file} with the {payload['ranker']} of {args.model}",
                             exc, "score a smaller file") from None
    _log(f"scored {scores.shape[0]} rows in {time.perf_counter() - start:.1f} s")
    scores = np.asarray(scores, dtype=np.float64)
    _check_finite_scores(scores, payload, args)
    # repr: the shortest text that reads back to the same float
    _write_lines(map(repr, scores.tolist()), args.out, "scores")
    if args.out is not None and str(args.out) != "-":
        _log(f"wrote {scores.shape[0]} scores to {args.out}")
    return 0


def _predict_streamed(payload, args, zero_based):
    """``predict`` of a file read chunk by chunk, each chunk's scores written as it comes."""
    _check_file(args.file)
    estimator = payload["estimator"]
    chunks = query_chunks(args.file, chunk_rows=args.chunk_rows,
                          n_features=payload["n_features"], zero_based=zero_based)
    start, n_rows = time.perf_counter(), 0

    def write(emit):
        nonlocal n_rows
        for X, _, qid in chunks:
            with _progress_on_stderr():
                scores = np.asarray(predict_scores(estimator, X, qid), np.float64)
            _check_finite_scores(scores, payload, args, first_row=n_rows, chunk=True,
                                 written=n_rows)
            # repr: the shortest text that reads back to the same float
            emit("".join(f"{v!r}\n" for v in scores.tolist()))
            n_rows += len(scores)

    try:
        if args.out is None or str(args.out) == "-":
            write(lambda text: _write_stdout(text, "scores"))
        else:
            write_atomically(args.out, lambda f: write(f.write))
    except FeatureWidthError as exc:
        raise CommandError(_too_wide_for_model(exc, args.model)) from None
    except ValueError as exc:
        raise CommandError(
            f"predicting {args.file} failed: {_in_cli_terms(str(exc))}") from None
    except OSError as exc:
        raise CommandError(f"cannot read {args.file} or write the scores: {exc}") from None
    except MemoryError as exc:
        raise _out_of_memory(f"score {args.file} with the {payload['ranker']} of {args.model}",
                             exc, "lower --chunk-rows") from None
    _log(f"scored {n_rows} rows in chunks of about {args.chunk_rows} rows in "
         f"{time.perf_counter() - start:.1f} s")
    if args.out is not None and str(args.out) != "-":
        _log(f"wrote {n_rows} scores to {args.out}")
    return 0


def _cmd_export(args, parser):
    if str(args.out) == "-":
        parser.error("--out must name a file; export does not write to stdout ('-')")
    given = {"onnx": [("--feature-names", args.feature_names), ("--name", args.name)],
             "es-linear": [("--dtype", args.dtype)]}[args.format]
    for flag, value in given:
        if value is not None:
            parser.error(f"{flag} is not an option of --format {args.format}")
    if args.name is not None and not args.name.strip():
        parser.error("--name must not be empty")
    if args.feature_names is not None and not all(
            name.strip() for name in args.feature_names.split(",")):
        parser.error(f"--feature-names has an empty name: {args.feature_names!r}")
    _check_output(args.out, inputs=(args.model,))
    payload = _load_model(args.model)
    estimator = payload["estimator"]
    what = f"the {payload['ranker']} of {args.model}"
    if args.format == "onnx":
        try:
            data = to_onnx(estimator, dtype=args.dtype or "float32").SerializeToString()
        except ImportError as exc:
            raise CommandError(str(exc)) from None
        except ValueError as exc:
            raise CommandError(f"cannot export {what} to ONNX: {exc}") from None
        _write_export(args.out, data)
        _log(f"wrote {what} to {args.out} (ONNX, {args.dtype or 'float32'}; input 'X' of shape "
             f"(n_docs, {payload['n_features']}), the documents of one query)")
        return 0
    names = args.feature_names
    if names is None:  # the features' numbers in the LETOR file the model was fitted on
        first = 0 if payload.get("zero_based", False) is True else 1
        names = [str(first + i) for i in range(payload["n_features"])]
    else:
        names = [name.strip() for name in names.split(",")]
    try:
        body = to_es_linear(estimator, feature_names=names, name=args.name or "skrank_model")
    except ValueError as exc:
        raise CommandError(f"cannot export {what} as es-linear: {exc}") from None
    _write_export(args.out, (json.dumps(body, indent=2) + "\n").encode())
    _log(f"wrote {what} to {args.out} (Elasticsearch / OpenSearch LTR model/linear, "
         f"{len(names)} features)")
    return 0


def _write_export(path, data):
    """Write the bytes ``data`` to ``path`` atomically; errors as :class:`CommandError`."""
    try:
        write_atomically(path, lambda f: f.write(data), binary=True)
    except OSError as exc:
        raise CommandError(f"cannot write {path}: {exc}") from None


def _cmd_evaluate(args, parser):
    _check_stdout("metrics")
    _, y, qid = _load(args.file, zero_based=args.zero_based)
    conv = args.convention
    _check_labels(y, qid, convention=conv, where=args.file)
    scores = _read_scores(args.scores)
    if scores.shape[0] != y.shape[0]:
        raise CommandError(
            f"{args.scores} has {scores.shape[0]} scores but {args.file} has {y.shape[0]} "
            "rows; expected one score per row, in the file's order"
        )
    _log(f"convention {conv!r}: " + ", ".join(f"{k}={v}" for k, v in CONVENTIONS[conv].items())
         + "; MAP counts label >= 1 as relevant")
    lines = [f"NDCG@{k}\t{ndcg_score(y, scores, qid=qid, k=k, convention=conv):.6f}"
             for k in args.k]
    lines.append(f"MAP\t{map_score(y, scores, qid=qid, convention=conv):.6f}")
    _write_lines(lines, None, "metrics")
    return 0


def _cmd_compare(args, parser):
    if args.cv < 2:
        parser.error(f"--cv must be at least 2; got {args.cv}")
    _check_stdout("table")  # before the folds are run
    for note in ABSENT:  # an optional baseline whose package is missing
        _log(note)
    if args.path is not None and args.data is not None:
        parser.error(f"give DATA or --data, not both; got {args.path} and --data {args.data}")
    path = args.path if args.path is not None else args.data
    if path is None and args.zero_based:
        parser.error("--zero-based reads DATA; the bundled sample is given without it")
    if path is None:
        X, y, qid = load_rank_sample(subset="all")
        _log(f"LightGBM lambdarank sample: {X.shape[0]} rows, {np.unique(qid).size} queries")
        where = "the bundled sample"
    elif path.exists() and not path.is_dir():  # _load refuses what is no regular file
        X, y, qid = _load(path, zero_based=args.zero_based)
        where = str(path)
    elif path.is_dir():
        try:
            folds = _letor_folds(path)  # every fold is complete, before any is run
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        if not folds:
            raise CommandError(
                f"{path}: expected a LETOR file, a LETOR fold folder (train/vali/test files) "
                "or a folder holding Fold1..Fold5."
            )
        rankers = list(dict.fromkeys(args.rankers))  # a name given twice runs once, as in CV
        try:
            with _progress_on_stderr():
                result = letor_protocol(rankers, path, convention=args.convention or "letor",
                                        zero_based=args.zero_based, n_jobs=args.n_jobs, log=_log)
        except DataError as exc:  # a fold's file or labels, or a ranker that fails on it
            raise CommandError(_in_cli_terms(str(exc))) from None
        except ValueError as exc:  # an argument the protocol refuses
            raise CommandError(str(exc)) from None
        _write_stdout(result.format_table() + "\n", "table")
        return 0
    else:
        raise CommandError(f"{path}: no such file or folder")
    conv = args.convention or "skrank"
    if path is not None:
        _check_labels(y, qid, convention=conv, where=where)
    n_queries = np.unique(qid).size
    if n_queries < args.cv:
        raise CommandError(
            f"--cv {args.cv} needs at least {args.cv} queries; {where} has {n_queries}"
        )
    try:
        with _progress_on_stderr():
            results = run_cv(args.rankers, X, y, qid, cv=args.cv, n_jobs=args.n_jobs,
                             log=_log, where=where, convention=conv)
    except DataError as exc:  # a ranker that fails on the data, or runs out of memory
        raise CommandError(str(exc)) from None
    _write_stdout(format_table(results, (
        f"{args.cv}-fold grouped CV on {where}, {conv!r} convention: mean ± std over folds"))
        + "\n", "table")
    return 0


# ----------------------------------------------------------------------
# Parser
ZERO_BASED_HELP = (
    "the files' feature indices start at 0 (as sklearn.datasets.dump_svmlight_file"
    "(..., zero_based=True) writes them), not at 1 as in LETOR"
)


def _build_parser():
    """The parser of ``python -m skrank`` and its four subcommands."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Listwise learning to rank for scikit-learn.",
        epilog=(f"'{PROG} COMMAND --help' describes each command. Files are regular "
                "files: a named pipe or a device is refused ('evaluate' reads piped scores "
                "from stdin, '-'). Results go to stdout, progress and errors to stderr."),
    )
    parser.add_argument("--version", action="version", version=f"skrank {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    names = ", ".join(RANKERS)

    fit = sub.add_parser(
        "fit", help="fit a ranker on a LETOR file and save it",
        description=(
            "Fit a ranker on a LETOR / SVMlight file (<label> qid:<id> <index>:<value> ..., "
            "one-based feature indices unless --zero-based) and save it with joblib. The "
            f"rankers are those of 'compare' ({names}) with their default parameters "
            "(random_state=0), changed by --param; the log names the parameters that "
            "differ from the class defaults. Progress, and the epoch lines of "
            "--param verbose=1, go to stderr."
        ),
    )
    fit.add_argument("train", type=_path, metavar="TRAIN", help="LETOR file to fit on")
    fit.add_argument("--ranker", required=True, choices=list(RANKERS), help="ranker to fit")
    fit.add_argument("--out", required=True, type=_path, help="where to save the model (joblib)")
    fit.add_argument(
        "--param", type=_param, action="append", metavar="NAME=VALUE",
        help=("set a parameter of the ranker; repeat for several. VALUE is a Python literal "
              "(10, 1e-3, (5,), None, True) or else a string (--param solver=adam)"),
    )
    fit.add_argument(
        "--n-features", type=_positive_int, metavar="N",
        help="width of X (default: the largest feature index in TRAIN)",
    )
    fit.add_argument("--zero-based", action="store_true", help=ZERO_BASED_HELP)
    fit.add_argument(
        "--stream", action="store_true",
        help=("fit over TRAIN read chunk by chunk at every epoch, never all in memory "
              "(skrank.stream.fit_stream; ListNet, SoftRank, BoltzRank), for files larger "
              "than memory; TRAIN is a regular file, read again at every epoch"),
    )
    fit.add_argument("--chunk-rows", type=_positive_int, metavar="N",
                     help=f"--stream: rows per chunk (default {DEFAULT_CHUNK_ROWS})")
    fit.add_argument("--epochs", type=_positive_int, metavar="N",
                     help="--stream: the most epochs (the ranker's max_iter)")
    fit.add_argument("--vali", type=_path, metavar="FILE",
                     help=("--stream: LETOR file of validation queries for early stopping "
                           "(read into memory)"))
    fit.set_defaults(run=_cmd_fit, parser=fit)

    predict = sub.add_parser(
        "predict", help="score a LETOR file with a saved model",
        description=(
            "Score every row of a LETOR file with a model saved by 'fit': one score per "
            "line, in the file's row order. The file is read with the model's number of "
            "features, and rankers that score a query's documents jointly get its qid. "
            "Only the scores go to stdout. FILE is read as the model's training file was: "
            "zero-based when the model was fitted with --zero-based (a model records it). "
            "Scores that are not finite (NaN or infinity) are an error, and none is written."
        ),
    )
    predict.add_argument("model", type=_path, metavar="MODEL", help="model saved by 'fit'")
    predict.add_argument("file", type=_path, metavar="FILE", help="LETOR file to score")
    predict.add_argument("--out", type=_path, metavar="SCORES",
                         help="file for the scores (default: stdout)")
    predict.add_argument("--zero-based", action="store_true",
                         help=ZERO_BASED_HELP + " (default: as the model's training file)")
    predict.add_argument("--chunk-rows", type=_positive_int, metavar="N",
                         help=("read FILE in chunks of whole queries of about N rows and "
                               "write each chunk's scores as they come (for files larger "
                               "than memory; --out is replaced only once all are written)"))
    predict.set_defaults(run=_cmd_predict, parser=predict)

    export = sub.add_parser(
        "export", help="write a saved model as ONNX or as an Elasticsearch / OpenSearch model",
        description=(
            "Write a model saved by 'fit' in a format that serving systems load: 'onnx', "
            "an ONNX graph scoring the documents of one query (input 'X' of shape "
            "(n_docs, n_features), output 'scores'; needs the onnx extra), or 'es-linear', "
            "the Elasticsearch / OpenSearch learning-to-rank plugin's model/linear "
            "definition of a linear ranker, as JSON. --out is replaced only once it is "
            "completely written."
        ),
    )
    export.add_argument("model", type=_path, metavar="MODEL", help="model saved by 'fit'")
    export.add_argument("--format", required=True, choices=["onnx", "es-linear"],
                        help="what to write")
    export.add_argument("--out", required=True, type=_path, help="file to write")
    export.add_argument("--dtype", choices=["float32", "float64"],
                        help="onnx: element type of the graph (default: float32)")
    export.add_argument("--feature-names", metavar="NAMES",
                        help=("es-linear: the features' names in the plugin's featureset, "
                              "comma-separated, in the order of the model's features "
                              "(default: their numbers in the training file, '1', '2', ...)"))
    export.add_argument("--name",
                        help="es-linear: the model's name (default: skrank_model)")
    export.set_defaults(run=_cmd_export, parser=export)

    evaluate = sub.add_parser(
        "evaluate", help="NDCG@k and MAP of scores against a LETOR file's labels",
        description=(
            "Print NDCG@k for each k and MAP (mean over queries) of the scores, one "
            "'NAME<TAB>VALUE' line each. SCORES holds one float per line, one line per "
            "row of FILE in its order ('-': stdin). The metric convention is skrank's "
            "(gain 2^label - 1, log2 discount, tied scores averaged over their orders) "
            "unless --convention says otherwise; 'letor' is the official LETOR 3.0 "
            "script's (Eval-Score-3.0.pl)."
        ),
    )
    evaluate.add_argument("file", type=_path, metavar="FILE", help="LETOR file with labels and qid")
    evaluate.add_argument("scores", metavar="SCORES", help="scores, one per line ('-': stdin)")
    evaluate.add_argument("--k", type=_positive_int, nargs="+", default=list(DEFAULT_CUTOFFS),
                          help="NDCG cutoffs (default: 1 3 5 10)")
    evaluate.add_argument("--convention", choices=list(CONVENTIONS), default="skrank",
                          help="metric convention (default: skrank)")
    evaluate.add_argument("--zero-based", action="store_true", help=ZERO_BASED_HELP)
    evaluate.set_defaults(run=_cmd_evaluate, parser=evaluate)

    compare = sub.add_parser(
        "compare",
        help="compare the rankers (grouped CV, or the LETOR protocol on fold folders)",
        description=(
            "Without DATA: grouped K-fold cross-validation of every ranker with "
            "default parameters on the bundled LightGBM sample (skrank's metric "
            "convention unless --convention). With DATA a LETOR file: the same "
            "cross-validation on that file's queries. With DATA a folder: the LETOR "
            "protocol on each fold (train on train, choose the grid point with the best "
            "vali NDCG@10, report test; all with the LETOR convention unless "
            "--convention); mean ± std over folds. A line goes to stderr as each fold "
            "(cross-validation) or grid point (LETOR) ends, with its time and an "
            "estimate of the time left."
        ),
    )
    compare.add_argument(
        "path", nargs="?", type=_path, metavar="DATA",
        help="a LETOR file, a LETOR fold folder, or a folder of Fold1..Fold5 (same as --data)",
    )
    compare.add_argument("--data", type=_path,
                         help="a LETOR file, a fold folder, or a folder of Fold1..Fold5")
    compare.add_argument("--cv", type=int, default=5,
                         help="number of grouped folds of the cross-validation (default 5)")
    compare.add_argument(
        "--rankers", nargs="+", choices=list(RANKERS), default=list(RANKERS),
        help="rankers to compare (default: all)",
    )
    compare.add_argument(
        "--n-jobs", type=_n_jobs, default=None, metavar="N",
        help=("joblib workers for the folds of the cross-validation, or for the grid "
              "points of each LETOR fold (-1: all CPUs; default 1)"),
    )
    compare.add_argument(
        "--convention", choices=list(CONVENTIONS), default=None,
        help=("metric convention of the table, the labels check and (LETOR protocol) the "
              "vali NDCG@10 that chooses the grid point (default: skrank for the "
              "cross-validation, letor for the LETOR protocol)"),
    )
    compare.add_argument("--zero-based", action="store_true", help=ZERO_BASED_HELP)
    compare.set_defaults(run=_cmd_compare, parser=compare)
    return parser


def main(argv=None):
    """Run ``python -m skrank`` with the command-line arguments ``argv``.

    Parameters
    ----------
    argv : list of str, default=None
        The arguments after the program name, e.g.
        ``["fit", "train.txt", "--ranker", "ListNet", "--out", "model.joblib"]``.
        None reads ``sys.argv[1:]``.

    Returns
    -------
    status : int
        0 on success; 1 when a file is missing, a folder, a named pipe or a
        device, unreadable, truncated or corrupt, not a model saved by
        ``fit``, or its data do not fit the command (labels the metrics
        reject, an incomplete LETOR fold, features a ranker cannot fit,
        scores that are not finite, not enough memory, ...), or when the
        results cannot be written (a closed stdout, a full disk): the
        message, one line naming the file, is printed on stderr. Also 1,
        without a message, when stdout is a pipe whose reader has gone.

    Raises
    ------
    SystemExit
        On a usage error, an option value invalid whatever the files hold
        such as ``--n-jobs 0`` (exit status 2, from :mod:`argparse`: usage
        and message on stderr), and for ``--help``.

    See Also
    --------
    skrank.datasets.load_letor : How the LETOR files are read.
    skrank.metrics.ndcg_score : The NDCG that ``evaluate`` prints.

    Examples
    --------
    >>> import os, tempfile
    >>> from skrank._cli import main
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     data = os.path.join(folder, "data.txt")
    ...     scores = os.path.join(folder, "scores.txt")
    ...     with open(data, "w") as f:
    ...         _ = f.write("2 qid:1 1:0.9\\n0 qid:1 1:0.1\\n1 qid:2 1:0.5\\n0 qid:2 1:0.7\\n")
    ...     with open(scores, "w") as f:
    ...         _ = f.write("0.9\\n0.1\\n0.5\\n0.7\\n")
    ...     main(["evaluate", data, scores, "--k", "1"])  # doctest: +NORMALIZE_WHITESPACE
    NDCG@1 0.500000
    MAP 0.750000
    0
    """
    _open_standard_descriptors()
    parser = _build_parser()
    args = parser.parse_args(argv)

    def one_line(kind, text):
        text = " ".join(str(text).splitlines())  # one line, whatever a library wrote
        _log(f"{PROG} {args.command}: {kind}: {text}")

    with _stderr_or_null(), warnings.catch_warnings():
        # a warning (non-finite values in a file, a fit that did not
        # converge) is one line too, without the source line Python adds
        warnings.showwarning = lambda message, *rest, **kw: one_line("warning", message)
        try:
            return args.run(args, args.parser)
        except CommandError as exc:
            one_line("error", exc)
            return 1
        except _ReaderGone:  # the reader of a pipe has all it wanted (| head)
            return 1
