"""Vectorised parsing of regular dense LETOR lines.

Most large learning-to-rank files (MSLR-WEB, Yahoo! LTR, the LETOR 3.0 and
4.0 data sets) list every feature on every line, in order::

    <label> qid:<qid> 1:<v> 2:<v> ... <d>:<v>[ #<comment>]

Such a block of lines is a table of numbers at fixed token positions, which
NumPy (or pandas' C reader) parses far faster than scikit-learn's line-by-line
SVMlight parser. This module checks that a block of text is exactly of that
form and parses it; any block it cannot prove regular is left to the caller's
careful parser, so that every error keeps its file and line number.

A line is regular when, before its first ``#``:

- it starts with the label, followed by exactly one space and ``qid:<qid>``;
- feature ``k`` is written ``<space>k:<value>`` with ``k`` running from the
  block's first index (0 or 1) without gaps, the same number on every line;
- the label, the qid and the values are made only of ``0-9 . e E + -`` (so
  ``nan``, ``inf``, hexadecimal and ``1_0`` go to the careful parser), and
  nothing but spaces or tabs follows the last value.

Numbers are parsed with correct rounding: NumPy's string-to-float cast and
pandas' C reader (fast_float since pandas 3.1; ``float_precision="round_trip"``
before it) both return the double nearest to the decimal string, as Python's
``float()``, which scikit-learn's parser calls, does. Query ids are cast with
NumPy as the careful parser casts them.
"""

import io

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

__all__ = ["parse_dense_block"]

_NEWLINE, _HASH, _COLON, _SPACE, _TAB = (ord(c) for c in "\n#: \t")

# Bytes that are not part of a number in a regular line: every such byte of
# the data part of a line must be one of the separators the parser checks
# position by position.
_ODD_BYTES = np.ones(256, dtype=bool)
_ODD_BYTES[np.frombuffer(b"0123456789.eE+-", dtype=np.uint8)] = False

# Tokens longer than this are parsed one by one, so that one long number
# does not widen the fixed-width byte matrix of a whole block.
_WIDE_TOKEN = 32
# Trailing spaces or tabs tolerated after the last value of a line.
_MAX_TRAILING = 8


def _gather_tokens(buf, starts, ends):
    """The byte strings ``buf[starts[i]:ends[i]]`` as a fixed-width ``S`` array."""
    lengths = ends - starts
    width = int(lengths.max()) if lengths.size else 1
    shortest = int(lengths.min()) if lengths.size else 0
    padded = np.concatenate([buf, np.zeros(width, dtype=np.uint8)])
    matrix = np.empty((starts.size, width), dtype=np.uint8)
    for offset in range(width):  # one gather per byte position, not per token
        column = padded[starts + offset]
        if offset >= shortest:
            column[lengths <= offset] = 0
        matrix[:, offset] = column
    return matrix.view(f"S{width}").ravel()


def _tokens_to_float(buf, starts, ends):
    """float64 of the number tokens ``buf[starts[i]:ends[i]]``; ValueError if one is not."""
    wide = np.flatnonzero(ends - starts > _WIDE_TOKEN)
    if not wide.size:
        return _gather_tokens(buf, starts, ends).astype(np.float64)
    out = np.empty(starts.size, dtype=np.float64)
    narrow = np.ones(starts.size, dtype=bool)
    narrow[wide] = False
    out[narrow] = _gather_tokens(buf, starts[narrow], ends[narrow]).astype(np.float64)
    for i in wide:  # rare: numbers of more than 32 characters
        out[i] = float(buf[starts[i] : ends[i]].tobytes())
    return out


def _read_with_pandas(pd, text, float_precision, **kwargs):
    """The float64 table pandas' C reader reads from ``text``, space-separated."""
    if float_precision is not None:
        kwargs["float_precision"] = float_precision
    frame = pd.read_csv(
        io.BytesIO(text),
        sep=" ",
        header=None,
        dtype=np.float64,
        engine="c",
        na_filter=False,
        quoting=3,  # csv.QUOTE_NONE: a quote is a byte like any other
        skip_blank_lines=False,
        **kwargs,
    )
    return frame.to_numpy(dtype=np.float64)


_COLONS_TO_SPACES = bytes.maketrans(b":", b" ")


def _first_index(text):
    """0 or 1, the first feature index of ``b":<qid> <index>"``, or None."""
    fields = text.split()
    return {b"0": 0, b"1": 1}.get(fields[-1]) if len(fields) == 2 else None


def parse_dense_block(text, *, first_index=None, n_columns=None, pandas=None):
    """Parse a block of regular dense LETOR lines, or return None.

    Parameters
    ----------
    text : bytes
        Whole lines, each ending in ``"\\n"``, with ``"\\n"`` as the only line
        end.

    first_index : {0, 1} or None, default=None
        Feature index every line must start with; None takes the first
        line's (which must be 0 or 1).

    n_columns : int or None, default=None
        Number of features every line must have; None takes the first line's.

    pandas : tuple or None, default=None
        ``(pandas_module, float_precision)`` to parse the numbers with
        pandas' C reader; None parses them with NumPy.

    Returns
    -------
    parsed : tuple or None
        ``(values, labels, qid, first_index)``: ``values`` of shape
        ``(n_lines, n_columns)`` and ``labels`` float64, ``qid`` int64. None
        when a line of the block is not regular (including a blank or
        comment-only line, a qid or a number that does not parse).
    """
    buf = np.frombuffer(text, dtype=np.uint8)
    # One pass over the block finds every byte that is not part of a number;
    # line ends, "#" and ":" are found among those.
    odd = np.flatnonzero(_ODD_BYTES[buf])
    odd_bytes = buf[odd]
    ends = odd[odd_bytes == _NEWLINE]
    n_lines = ends.size
    if n_lines == 0 or ends[-1] != buf.size - 1:
        return None
    starts = np.empty_like(ends)
    starts[0] = 0
    starts[1:] = ends[:-1] + 1

    # The data part of a line ends at its first "#".
    data_end = ends.copy()
    hashes = odd[odd_bytes == _HASH]
    if hashes.size:
        line_of = np.searchsorted(ends, hashes)
        first = np.ones(hashes.size, dtype=bool)
        first[1:] = line_of[1:] != line_of[:-1]
        data_end[line_of[first]] = hashes[first]

    colons = odd[odd_bytes == _COLON]
    if hashes.size:
        colons = colons[colons < data_end[np.searchsorted(ends, colons)]]
    per_line, rest = divmod(colons.size, n_lines)
    if rest or per_line < 2:
        return None
    d = per_line - 1
    if n_columns is not None and d != n_columns:
        return None
    where = colons.reshape(n_lines, per_line)
    # Sorted colons, as many as lines times per_line: each line holds its row
    # of ``where`` exactly when its first and last colons lie inside it.
    if (where[:, 0] < starts).any() or (where[:, -1] >= data_end).any():
        return None

    # The last value ends before trailing spaces or tabs.
    value_end = data_end.copy()
    for _ in range(_MAX_TRAILING + 1):
        last = buf[value_end - 1]
        trailing = (last == _SPACE) | (last == _TAB)
        if not trailing.any():
            break
        value_end[trailing] -= 1
    else:
        return None

    # A label of at least one byte before " qid:".
    qid_colon = where[:, 0]
    if (qid_colon - 4 <= starts).any():
        return None
    if first_index is None:
        first_index = _first_index(text[qid_colon[0] : where[0, 1]])
        if first_index is None:
            return None
    # " qid" before the first colon and " <k>" before colon k, k running from
    # the first index: the 8 bytes before each colon, read as one
    # little-endian uint64 and masked to the length of the name.
    names = [b" qid"] + [b" %d" % k for k in range(first_index, first_index + d)]
    lengths = np.fromiter(map(len, names), dtype=np.int64, count=d + 1)
    if lengths[-1] > 8:
        return None
    expected = np.array(
        [int.from_bytes(name.rjust(8, b"\0"), "little") for name in names], dtype=np.uint64
    )
    masks = np.array(
        [((1 << 8 * n) - 1) << 8 * (8 - n) for n in lengths.tolist()], dtype=np.uint64
    )
    padded = np.concatenate([np.zeros(8, dtype=np.uint8), buf])
    words = sliding_window_view(padded, 8)[where].view(np.uint64)[..., 0]
    if ((words & masks) != expected).any():
        return None
    lengths = lengths[1:] - 1  # digits of each feature index

    # Token bounds: label, qid, then the values.
    separators = where[:, 1:] - lengths - 1  # the space before each index
    label_end = qid_colon - 4
    qid_end = separators[:, 0]
    value_starts = where[:, 1:] + 1
    value_ends = np.empty_like(value_starts)
    value_ends[:, :-1] = separators[:, 1:]
    value_ends[:, -1] = value_end
    if (qid_end <= qid_colon + 1).any() or (value_ends <= value_starts).any():
        return None

    # Within [start, value_end) of each line, the only bytes that are not
    # number bytes are the d + 1 separating spaces, the d + 1 colons and
    # "qid": any other (a letter, a second space, a tab) makes the line
    # irregular.
    n_odd = np.searchsorted(odd, value_end) - np.searchsorted(odd, starts)
    if (n_odd != 2 * d + 5).any():
        return None

    try:
        qid = _gather_tokens(buf, qid_colon + 1, qid_end).astype(np.int64)
        if pandas is None:
            labels = _tokens_to_float(buf, starts, label_end)
            values = _tokens_to_float(buf, value_starts.ravel(), value_ends.ravel())
            values = values.reshape(n_lines, d)
        else:
            module, float_precision = pandas
            trailing = data_end - value_end
            if (trailing == trailing[0]).all() and (
                trailing[0] == 0 or trailing[0] == 1 and (buf[value_end] == _SPACE).all()
            ):
                # With ":" made a space, each line is the label, "qid", the
                # qid, then index and value d times, and an empty field
                # where one space ends the data; "#" starts a comment.
                n_fields = 2 * d + 3 + int(trailing[0])
                table = _read_with_pandas(
                    module,
                    text.translate(_COLONS_TO_SPACES),
                    float_precision,
                    names=range(n_fields),
                    usecols=[0, *range(4, 2 * d + 3, 2)],
                    comment="#" if hashes.size else None,
                )
            else:
                # Keep the label, each value and the line end, with one space
                # before each value: +1 where a kept run starts, -1 where it
                # ends, so that the running sum is 1 on kept bytes. A line
                # end and the label after it are one run. Each index array
                # holds distinct positions, so ``+=`` adds every one.
                edges = np.zeros(buf.size, dtype=np.int8)
                edges[0] = 1
                edges[label_end + 1] -= 1
                edges[value_starts] += 1
                edges[separators[:, 1:] + 1] -= 1
                edges[value_end] -= 1
                edges[ends] += 1
                keep = np.cumsum(edges, dtype=np.int8).view(bool)
                table = _read_with_pandas(
                    module, buf[keep].tobytes(), float_precision, names=range(d + 1)
                )
            if table.shape != (n_lines, d + 1):
                return None
            labels = table[:, 0].copy()  # not a view that would keep the table
            values = table[:, 1:]
    except (ValueError, OverflowError, TypeError):
        return None
    return values, labels, qid, first_index
