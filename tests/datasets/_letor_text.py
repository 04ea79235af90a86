"""LETOR text written by the tests of the readers, and their bit-exact comparison."""

import gzip

import numpy as np


def write_text(path, text):
    """``text`` at ``path`` (gzip-compressed for a ``.gz`` suffix); the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".gz":
        with gzip.open(path, "wt") as f:
            f.write(text)
    else:
        path.write_text(text)
    return path


#: The engines of load_letor.
ENGINES = ["auto", "numpy", "pandas", "sklearn"]


def dense_text(rng, n_queries=30, n_features=7, values=None, docids=False, start=1):
    """A regular dense LETOR text: every line lists features start .. start+d-1."""
    lines = []
    k = 0
    for q in range(1, n_queries + 1):
        for _ in range(int(rng.integers(1, 12))):
            if values is None:
                row = [f"{v:.6f}" for v in rng.random(n_features)]
            else:
                row = [values[(k + j) % len(values)] for j in range(n_features)]
            k += 1
            fields = " ".join(f"{j + start}:{v}" for j, v in enumerate(row))
            comment = f" #docid = d{k}" if docids else ""
            lines.append(f"{int(rng.integers(0, 5))} qid:{q} {fields}{comment}\n")
    return "".join(lines)


def assert_bits_equal(got, expected):
    """The arrays of ``got`` and ``expected`` have the same dtypes, shapes and bits."""
    for a, b in zip(got, expected):
        assert a.dtype == b.dtype and a.shape == b.shape
        if a.dtype.kind == "f":
            np.testing.assert_array_equal(a.view(f"u{a.itemsize}"), b.view(f"u{b.itemsize}"))
        else:
            np.testing.assert_array_equal(a, b)
