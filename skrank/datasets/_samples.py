"""Small ranking data sets: a bundled real sample and synthetic generators."""

from contextlib import contextmanager
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import load_svmlight_files
from sklearn.utils import check_random_state

from ..utils._memory import NotEnoughMemoryError, check_memory, format_bytes
from ..utils._sklearn_compat import MAX_LENGTH, Float, Integer, StrOptions, validate_params
from ..utils._validation import is_integer, shortened_repr

# Labels 0 .. 1000 at most: the metrics' exponential gain 2**l - 1 overflows
# beyond (they refuse larger labels), so generated data stays scorable.
MAX_LEVELS = 1001

__all__ = ["load_rank_sample", "make_ranking", "make_web_ranking"]

_DATA_DIR = Path(__file__).resolve().parent / "data"
_RANK_SAMPLE_N_FEATURES = 300
# Order matters: train groups are numbered first, test groups after them.
_RANK_SAMPLE_FILES = {
    "train": ("rank.train.gz", "rank.train.query"),
    "test": ("rank.test.gz", "rank.test.query"),
}


def _group_sizes(name):
    """Group sizes listed one per line in the bundled file ``name``."""
    return np.loadtxt(_DATA_DIR / name, dtype=np.int64, ndmin=1)


@validate_params(
    {
        "subset": [StrOptions({"train", "test", "all"})],
        "dense": ["boolean"],
    },
    prefer_skip_nested_validation=True,
)
def load_rank_sample(*, subset="train", dense=True):
    """Load the lambdarank sample shipped with LightGBM.

    A small learning-to-rank data set bundled with skrank: 251 queries with
    300 sparse features and graded labels 0 .. 4, split into 201 training and
    50 test queries. It is LightGBM's ``examples/lambdarank`` example (MIT
    License, Copyright (c) Microsoft Corporation); the LightGBM repository
    does not say where the data come from.

    ================  ========================  ======================
    subset            train                     test
    ================  ========================  ======================
    rows              3005                      768
    queries           201                       50
    rows per query    1 - 27                    6 - 24
    labels 0/1/2/3/4  645/1211/858/222/69       206/256/252/44/10
    ================  ========================  ======================

    Parameters
    ----------
    subset : {"train", "test", "all"}, default="train"
        Part to load. ``"all"`` returns the training rows followed by the test
        rows.

    dense : bool, default=True
        Return ``X`` as a dense array. With ``False`` it is a scipy sparse CSR
        matrix.

    Returns
    -------
    X : ndarray of shape (n_samples, 300) or sparse CSR matrix
        Feature values, float64.

    y : ndarray of shape (n_samples,)
        Relevance labels 0 .. 4, float64.

    qid : ndarray of shape (n_samples,)
        Query id of each row, int64. Training queries are numbered 0 .. 200
        and test queries 201 .. 250, in file order, so the two subsets never
        share an id and ``subset="all"`` keeps every query apart.

    See Also
    --------
    make_ranking : Synthetic queries with a known scoring function.
    load_letor : Load a LETOR file from disk.

    Notes
    -----
    The data files carry no ``qid:`` field; LightGBM gives the queries as
    group sizes in ``rank.train.query`` and ``rank.test.query``, one per
    line in file order. The per-row ``qid`` is built from those sizes.

    Examples
    --------
    >>> import numpy as np
    >>> from skrank.datasets import load_rank_sample
    >>> X, y, qid = load_rank_sample()
    >>> X.shape
    (3005, 300)
    >>> np.unique(qid).size
    201
    >>> X, y, qid = load_rank_sample(subset="test", dense=False)
    >>> X.shape, int(qid.min()), int(qid.max())
    ((768, 300), 201, 250)
    """
    parts = ["train", "test"] if subset == "all" else [subset]
    matrices = load_svmlight_files(
        [_DATA_DIR / _RANK_SAMPLE_FILES[part][0] for part in parts],
        n_features=_RANK_SAMPLE_N_FEATURES,
        dtype=np.float64,
        zero_based=False,
    )
    n_train_queries = _group_sizes(_RANK_SAMPLE_FILES["train"][1]).shape[0]
    first_qid = {"train": 0, "test": n_train_queries}

    Xs, ys, qids = [], [], []
    for i, part in enumerate(parts):
        X, y = matrices[2 * i], matrices[2 * i + 1]
        sizes = _group_sizes(_RANK_SAMPLE_FILES[part][1])
        if sizes.sum() != X.shape[0]:  # pragma: no cover - damaged install
            raise RuntimeError(
                f"The bundled {part} sample is damaged: its group sizes sum to "
                f"{sizes.sum()} but it has {X.shape[0]} rows."
            )
        ids = np.arange(first_qid[part], first_qid[part] + sizes.shape[0])
        Xs.append(X)
        ys.append(np.asarray(y, dtype=np.float64))
        qids.append(np.repeat(ids.astype(np.int64), sizes))

    X = Xs[0] if len(Xs) == 1 else sp.vstack(Xs, format="csr")
    if dense:
        X = X.toarray()
    return X, np.concatenate(ys), np.concatenate(qids)


def _check_n_docs(n_docs):
    """Validate ``n_docs``; return it as ``(low, high)``."""
    if not isinstance(n_docs, tuple):
        return n_docs, n_docs
    if len(n_docs) != 2 or not all(
        is_integer(v) for v in n_docs
    ):
        raise ValueError(
            "n_docs must be a positive int or a (low, high) tuple of two ints, "
            f"got n_docs={n_docs!r}."
        )
    low, high = int(n_docs[0]), int(n_docs[1])
    if low < 1 or low > high or high > MAX_LENGTH:
        raise ValueError(
            f"n_docs=(low, high) needs 1 <= low <= high <= {MAX_LENGTH}, "
            f"got n_docs={n_docs!r}."
        )
    return low, high


def _check_cells(n_rows, n_features, what):
    """Raise if ``n_rows`` rows of ``n_features`` values exceed any array."""
    if float(n_rows) * n_features > MAX_LENGTH:
        raise ValueError(
            f"{what} and n_features={n_features} make {float(n_rows):.3g} rows of "
            f"{n_features} features, more values than an array holds ({MAX_LENGTH})."
        )


@validate_params(
    {
        "n_queries": [Integer(1, MAX_LENGTH, closed="both")],
        "n_docs": [Integer(1, MAX_LENGTH, closed="both"), tuple],
        "n_features": [Integer(1, MAX_LENGTH, closed="both")],
        "n_levels": [Integer(2, MAX_LEVELS, closed="both")],
        "noise": [Float(0, None, closed="left")],
        "nonlinear": ["boolean"],
        "return_coef": ["boolean"],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def make_ranking(
    n_queries=100,
    n_docs=20,
    n_features=10,
    *,
    n_levels=5,
    noise=0.1,
    nonlinear=False,
    return_coef=False,
    random_state=None,
):
    r"""Generate synthetic ranking queries with a known scoring function.

    Every document is a standard normal feature vector; its relevance label
    is a graded cut of a latent score plus noise, so the best possible ranker
    is known.

    Parameters
    ----------
    n_queries : int, default=100
        Number of queries.

    n_docs : int or tuple of (int, int), default=20
        Documents per query. An int gives every query that many documents; a
        tuple ``(low, high)`` draws each query's size uniformly from
        ``low .. high``, both ends included.

    n_features : int, default=10
        Number of features.

    n_levels : int, default=5
        Number of relevance levels; labels are ``0 .. n_levels - 1``. At
        most 1001: the metrics' exponential gain :math:`2^l - 1` overflows
        for labels above 1000.

    noise : float, default=0.1
        Standard deviation of the Gaussian noise added to the latent score
        before it is cut into labels. ``0`` makes the labels a deterministic,
        non-decreasing function of the latent score.

    nonlinear : bool, default=False
        Use the nonlinear latent score given in the Notes instead of the
        linear one.

    return_coef : bool, default=False
        Also return the unit vector ``coef`` of the linear part of the latent
        score.

    random_state : int, RandomState instance or None, default=None
        Seed of the data. It is passed to
        :func:`sklearn.utils.check_random_state`, and the resulting
        ``RandomState`` seeds a :class:`numpy.random.Generator` (PCG64) that
        makes every draw. Pass an int for the same data on every call.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
        Features, float64, independent standard normal.

    y : ndarray of shape (n_samples,)
        Relevance labels ``0 .. n_levels - 1`` as float64.

    qid : ndarray of shape (n_samples,)
        Query index ``0 .. n_queries - 1`` of each row, int64. Rows are grouped
        by query, in increasing order.

    coef : ndarray of shape (n_features,)
        Unit-norm weights of the linear part of the latent score. Only
        returned when ``return_coef=True``.

    Raises
    ------
    MemoryError
        If the rows the sizes make do not fit in the memory available, raised
        before they are drawn; the message names the sizes and the bytes.

    See Also
    --------
    load_rank_sample : A small real ranking data set.

    Notes
    -----
    Draws are made in this order: query sizes (only when ``n_docs`` is a
    tuple), ``X``, three directions ``w``, ``u`` and ``v``, each a standard
    normal vector scaled to unit norm (``coef`` is ``w``), then the noise. The
    latent score is

    .. math::

        f(x) = x^\top w

    and with ``nonlinear=True``

    .. math::

        f(x) = x^\top w + \tfrac12 \sin(3\, x^\top u)
               + \tfrac12 (x^\top v)^2 .

    The observed score is :math:`s = f(x) + \sigma \varepsilon` with
    :math:`\sigma` = ``noise`` and :math:`\varepsilon \sim N(0, 1)`.
    Labels cut :math:`s` at its empirical quantiles over all generated rows,
    so that level :math:`l` gets the fraction

    .. math::

        p_l = \frac{2^{-l}}{\sum_{k=0}^{L-1} 2^{-k}}, \quad l = 0, \dots, L-1,

    of the rows (:math:`L` = ``n_levels``): about half of the documents get
    label 0 and each higher grade is half as frequent as the one below, a
    skew toward low labels as in web-search benchmarks. A larger :math:`s`
    never gets a smaller label. The thresholds are computed from the whole
    generated sample, not from a fixed distribution.

    Examples
    --------
    >>> from skrank.datasets import make_ranking
    >>> X, y, qid = make_ranking(n_queries=3, n_docs=4, n_features=2,
    ...                          random_state=0)
    >>> X.shape, y.shape
    ((12, 2), (12,))
    >>> qid
    array([0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2])
    >>> X, y, qid, coef = make_ranking(n_queries=50, n_docs=(5, 10),
    ...                                return_coef=True, random_state=0)
    >>> coef.shape
    (10,)
    >>> sorted(set(y.tolist()))
    [0.0, 1.0, 2.0, 3.0, 4.0]
    """
    low, high = _check_n_docs(n_docs)
    _check_cells(n_queries * low, n_features, f"n_queries={n_queries}, n_docs={n_docs!r}")

    seed = check_random_state(random_state).randint(np.iinfo(np.int32).max, size=4)
    rng = np.random.default_rng(seed)

    sizes_given = f"n_queries={n_queries}, n_docs={n_docs!r}, n_features={n_features}"
    _check_fits("make_ranking", sizes_given, n_queries * low, n_features, 8)
    with _naming_sizes("make_ranking", sizes_given):
        if low == high:
            sizes = np.full(n_queries, low, dtype=np.int64)
        else:
            sizes = rng.integers(low, high, size=n_queries, endpoint=True)
        _check_cells(sizes.sum(dtype=np.float64), n_features,
                     f"n_queries={n_queries}, n_docs={n_docs!r}")
        _check_fits("make_ranking", sizes_given, int(sizes.sum()), n_features, 8)
        qid = np.repeat(np.arange(n_queries, dtype=np.int64), sizes)
        n_samples = qid.shape[0]

        X = rng.standard_normal((n_samples, n_features))
        level_share = 2.0 ** -np.arange(n_levels)
        y, coef = _graded_labels(
            X, rng, noise=noise, nonlinear=nonlinear, shares=level_share / level_share.sum()
        )

    if return_coef:
        return X, y, qid, coef
    return X, y, qid


#: Label shares of MSLR-WEB10K (labels 0 .. 4), rounded to whole percents.
_WEB_LABEL_SHARES = (0.52, 0.32, 0.13, 0.02, 0.01)


#: Bytes a generator holds per row besides ``X``: ``qid``, ``y``, and the
#: float64 score of the labels (three projections, the score, its noise).
_ROW_BYTES = 7 * 8


def _check_fits(function, sizes_given, n_rows, n_features, itemsize):
    """Refuse sizes whose rows do not fit in the memory available, before drawing them.

    The kernel would promise the arrays and kill the process once they are
    written (see :mod:`skrank.utils._memory`). Called with the fewest rows
    the sizes allow (``n_queries`` times the smallest ``n_docs``) before
    the query sizes are drawn, then with the rows drawn.
    """
    n_bytes = n_rows * (n_features * itemsize + _ROW_BYTES)
    check_memory(n_bytes, f"{function}({sizes_given}) needs about {format_bytes(n_bytes)} "
                 f"for {n_rows} rows of {n_features} feature{'s' * (n_features != 1)}",
                 "lower these sizes")


@contextmanager
def _naming_sizes(function, sizes_given):
    """Re-raise a MemoryError of the block naming the sizes that caused it.

    numpy's message gives an array's shape, not the parameters behind it.
    """
    try:
        yield
    except NotEnoughMemoryError:  # refused before allocating, naming the sizes
        raise
    except MemoryError as exc:
        raise MemoryError(
            f"{function}({sizes_given}) needs more memory than could be allocated "
            f"({exc}); lower these sizes."
        ) from exc


def _check_label_shares(label_shares):
    """Validate ``label_shares``; return it as a float64 array."""
    try:
        shares = np.asarray(label_shares, dtype=np.float64)
    except (TypeError, ValueError):  # e.g. strings
        shares = None
    if (
        shares is None
        or shares.ndim != 1
        or not 2 <= shares.size <= MAX_LEVELS
        or not np.all(np.isfinite(shares))
        or not np.all(shares > 0)
        or not np.isclose(shares.sum(), 1.0, rtol=0.0, atol=1e-6)
    ):
        raise ValueError(
            f"label_shares must be a 1-d sequence of 2 to {MAX_LEVELS} positive shares "
            f"summing to 1 (labels 0 .. {MAX_LEVELS - 1}, the largest the metrics' "
            f"exponential gain takes), got label_shares={shortened_repr(label_shares, 200)}."
        )
    return shares / shares.sum()


def _check_float_dtype(dtype):
    """Validate ``dtype``; return it as ``np.dtype('float32')`` or ``('float64')``."""
    try:
        # np.dtype(None) is float64: None is refused rather than read as a default
        checked = None if dtype is None else np.dtype(dtype)
    except (TypeError, ValueError):  # e.g. ("f8", -1): numpy's "invalid shape"
        checked = None
    if checked is None or checked not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise ValueError(
            f"dtype must be np.float64 or np.float32, got dtype={dtype!r}."
        )
    return checked


@validate_params(
    {
        "n_queries": [Integer(1, MAX_LENGTH, closed="both")],
        "n_features": [Integer(1, MAX_LENGTH, closed="both")],
        "n_docs": [Integer(1, MAX_LENGTH, closed="both"), tuple],
        "n_docs_log_mean": [Float(None, None, closed="neither")],
        "n_docs_log_sigma": [Float(0, None, closed="left")],
        "label_shares": ["array-like"],
        "noise": [Float(0, None, closed="left")],
        "shuffle": ["boolean"],
        "dtype": "no_validation",  # checked by _check_float_dtype
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def make_web_ranking(
    n_queries=100,
    n_features=136,
    *,
    n_docs=(2, 900),
    n_docs_log_mean=4.6,
    n_docs_log_sigma=0.6,
    label_shares=_WEB_LABEL_SHARES,
    noise=1.0,
    shuffle=True,
    dtype=np.float64,
    random_state=None,
):
    r"""Generate synthetic queries shaped like the MSLR-WEB10K web-search data.

    The data have the shape of Microsoft's MSLR-WEB10K learning-to-rank set:
    136 features, about 119 documents per query with a long tail of large
    queries, five relevance grades with half of the documents irrelevant, and
    rows not grouped by query. Labels come from the nonlinear latent score of
    :func:`make_ranking`, so the data are for timing and comparing rankers at
    scale, not a stand-in for the real judgements.

    Parameters
    ----------
    n_queries : int, default=100
        Number of queries. MSLR-WEB10K has 10,000 (about 1.2 million rows).

    n_features : int, default=136
        Number of features, independent standard normal.

    n_docs : int or tuple of (int, int), default=(2, 900)
        Bounds ``(low, high)`` of the documents per query: the drawn sizes
        are clipped to ``low .. high``. An int gives every query that many
        documents.

    n_docs_log_mean : float, default=4.6
        Mean of the logarithm of the query sizes before rounding and
        clipping.

    n_docs_log_sigma : float, default=0.6
        Standard deviation of the logarithm of the query sizes. ``0`` gives
        every query ``round(exp(n_docs_log_mean))`` documents (clipped).

    label_shares : array-like of shape (n_levels,), default=(0.52, 0.32, 0.13, 0.02, 0.01)
        Fraction of all rows that get label ``0, 1, ..., n_levels - 1``:
        positive, at least two and at most 1001 (labels up to 1000, beyond
        which the metrics' exponential gain overflows), summing to 1. The
        default is MSLR-WEB10K's
        label distribution.

    noise : float, default=1.0
        Standard deviation of the Gaussian noise added to the latent score
        before it is cut into labels. The default makes the noise about as
        large as the signal, so that no ranker comes near NDCG 1.

    shuffle : bool, default=True
        Rows in random order. With ``False`` the rows of each query are
        contiguous, queries in increasing order.

    dtype : {np.float64, np.float32}, default=np.float64
        Data type of ``X``. ``X`` is drawn directly in this type (a float32
        ``X`` is not a cast of a float64 one, and its values differ).

    random_state : int, RandomState instance or None, default=None
        Seed of the data. It is passed to
        :func:`sklearn.utils.check_random_state`, and the resulting
        ``RandomState`` seeds a :class:`numpy.random.Generator` (PCG64) that
        makes every draw. Pass an int for the same data on every call.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
        Features of type ``dtype``, independent standard normal.

    y : ndarray of shape (n_samples,)
        Relevance labels ``0 .. n_levels - 1`` as float64.

    qid : ndarray of shape (n_samples,)
        Query index ``0 .. n_queries - 1`` of each row, int64.

    Raises
    ------
    MemoryError
        If the rows the sizes make do not fit in the memory available, raised
        before they are drawn; the message names the sizes and the bytes.

    See Also
    --------
    make_ranking : Synthetic queries of a given size, linear or nonlinear score.
    load_letor : Load MSLR-WEB10K itself (LETOR format) from disk.

    Notes
    -----
    Draws are made in this order: the query sizes, ``X``, the directions and
    the noise of the latent score, then (with ``shuffle=True``) a permutation
    of the rows.

    *Query sizes.* Each of the ``n_queries`` sizes is
    :math:`\operatorname{round}(e^{\mu + \sigma z})`, :math:`z \sim N(0, 1)`,
    clipped to ``n_docs``, with :math:`\mu` = ``n_docs_log_mean`` and
    :math:`\sigma` = ``n_docs_log_sigma``. With the defaults the mean size is
    :math:`e^{\mu + \sigma^2/2} \approx 119` documents (clipping changes it by
    less than 0.1), the median :math:`e^{\mu} \approx 99`, and one query in a
    hundred has more than :math:`e^{\mu + 2.33\sigma} \approx 400`.

    *Labels.* They are those of :func:`make_ranking` with
    ``nonlinear=True``: with unit directions :math:`w, u, v` drawn at random,
    the observed score of a row is

    .. math::

        s = x^\top w + \tfrac12 \sin(3\, x^\top u) + \tfrac12 (x^\top v)^2
            + \sigma_\varepsilon \varepsilon ,

    :math:`\sigma_\varepsilon` = ``noise``, :math:`\varepsilon \sim N(0, 1)`,
    and the labels cut :math:`s` at its empirical quantiles over all rows, so
    that label :math:`l` gets the share ``label_shares[l]`` of the rows (up to
    one row per level). The score of a row does not depend on its query: a
    query's labels are a sample of the global mix, and about 1 % of the
    documents of every query are perfect.

    *Shuffle.* Rows are independent, so shuffling is done by permuting
    ``qid``: with the same ``random_state``, ``shuffle=True`` returns the
    same ``X`` and ``y`` as ``shuffle=False`` and a permuted ``qid``.

    *Memory and time.* ``X`` is drawn in place in its final type; besides it
    the generator holds a few arrays of one value per row, so its peak memory
    is below 1.5 times ``X.nbytes`` for ``n_features`` of 30 or more in float32
    (about 1.1 times in float64 with 136 features). 800,000 rows of 136
    features take a few seconds.

    Examples
    --------
    >>> import numpy as np
    >>> from skrank.datasets import make_web_ranking
    >>> X, y, qid = make_web_ranking(n_queries=50, random_state=0)
    >>> X.shape[1], X.dtype, y.dtype, qid.dtype
    (136, dtype('float64'), dtype('float64'), dtype('int64'))
    >>> sizes = np.bincount(qid)
    >>> sizes.size, int(sizes.sum()) == X.shape[0], int(sizes.min()) >= 2
    (50, True, True)
    >>> sorted(set(y.tolist()))
    [0.0, 1.0, 2.0, 3.0, 4.0]
    >>> X32, y32, qid32 = make_web_ranking(n_queries=5, n_docs=4, n_features=3,
    ...                                    shuffle=False, dtype=np.float32,
    ...                                    random_state=0)
    >>> X32.dtype, qid32
    (dtype('float32'), array([0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4]))
    """
    low, high = _check_n_docs(n_docs)
    shares = _check_label_shares(label_shares)
    dtype = _check_float_dtype(dtype)

    seed = check_random_state(random_state).randint(np.iinfo(np.int32).max, size=4)
    rng = np.random.default_rng(seed)

    _check_cells(n_queries * low, n_features, f"n_queries={n_queries}, n_docs={n_docs!r}")
    sizes_given = f"n_queries={n_queries}, n_docs={n_docs!r}, n_features={n_features}"
    _check_fits("make_web_ranking", sizes_given, n_queries * low, n_features, dtype.itemsize)
    with _naming_sizes("make_web_ranking", sizes_given):
        sizes = rng.lognormal(n_docs_log_mean, n_docs_log_sigma, size=n_queries)
        sizes = np.clip(np.rint(sizes), low, high)
        _check_cells(sizes.sum(), n_features, f"n_queries={n_queries} of lognormal sizes")
        sizes = sizes.astype(np.int64)
        _check_fits("make_web_ranking", sizes_given, int(sizes.sum()), n_features,
                    dtype.itemsize)
        qid = np.repeat(np.arange(n_queries, dtype=np.int64), sizes)

        X = np.empty((qid.shape[0], n_features), dtype=dtype)
        rng.standard_normal(out=X, dtype=dtype)
        y, _ = _graded_labels(X, rng, noise=noise, nonlinear=True, shares=shares)

        if shuffle:
            rng.shuffle(qid)
    return X, y, qid


def _graded_labels(X, rng, *, noise, nonlinear, shares):
    """Labels of the rows of ``X`` cut from a latent score; see make_ranking's Notes.

    Draws the three directions ``w``, ``u``, ``v`` and then the noise from
    ``rng``; level ``l`` gets the fraction ``shares[l]`` of the rows (the cuts
    are empirical quantiles of the observed score). ``X`` may be float32; the
    score is computed in float64 from its three projections. Returns the
    float64 labels and the unit vector ``w``.
    """
    n_samples, n_features = X.shape
    directions = rng.standard_normal((n_features, 3))
    directions /= np.linalg.norm(directions, axis=0)
    projections = np.asarray(X @ directions.astype(X.dtype, copy=False), dtype=np.float64)

    observed = projections[:, 0].copy()
    if nonlinear:
        observed += 0.5 * np.sin(3.0 * projections[:, 1])
        observed += 0.5 * projections[:, 2] ** 2
    del projections
    observed += noise * rng.standard_normal(n_samples)

    thresholds = np.quantile(observed, np.cumsum(shares)[:-1])
    y = np.searchsorted(thresholds, observed, side="right").astype(np.float64)
    return y, directions[:, 0].copy()
