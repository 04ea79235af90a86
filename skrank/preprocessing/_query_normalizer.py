"""Per-query feature normalisation (LETOR's QueryLevelNorm)."""

import numpy as np
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from ..utils._qid import resolve_qid
from ..utils._query_layout import QueryLayout
from ..utils._sklearn_compat import StrOptions, _fit_context, validate_data
from ..utils._validation import keep_fitted_state_on_error

__all__ = ["QueryNormalizer"]


def _query_normalize(X, layout, method):
    """Normalise each feature of ``X`` inside each query of ``layout``.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        Finite values, in row order.
    layout : QueryLayout
        Grouping of the rows by query.
    method : {"minmax", "zscore"}
        Normalisation to apply.

    Returns
    -------
    Xt : ndarray of shape (n_samples, n_features), dtype float64
        Normalised values, in row order.
    """
    Xs = layout.to_sorted(X).astype(np.float64)  # always a fresh array
    lo = layout.min(Xs)
    hi = layout.max(Xs)
    # A feature is constant inside a query exactly when its extremes coincide;
    # this also covers single-document queries.
    varying = hi > lo

    # Scale each (query, feature) block by a power of two that brings its
    # values into [-1, 1]. Such a scaling is exact (unless a tiny value becomes
    # subnormal), so the result equals the textbook formula, and ``x - min``
    # can no longer overflow for huge inputs.
    _, exponent = np.frexp(np.maximum(np.abs(lo), np.abs(hi)))
    np.ldexp(Xs, -layout.expand(exponent), out=Xs)
    lo = np.ldexp(lo, -exponent)
    hi = np.ldexp(hi, -exponent)

    # Min-max. For a constant feature x - min is exactly 0, so dividing it by 1
    # instead of by the zero range gives exactly 0 without a warning.
    span = np.where(varying, hi - lo, 1.0)
    Xs -= layout.expand(lo)
    Xs /= layout.expand(span)
    if method == "zscore":
        # The z-score is invariant to the affine map above, and computing it
        # from values in [0, 1] that attain both 0 and 1 keeps the variance
        # well away from 0 (at least 1 / (2 n_q)) for every varying feature.
        Xs -= layout.expand(layout.mean(Xs))
        std = np.sqrt(layout.mean(Xs * Xs))
        Xs /= layout.expand(np.where(varying, std, 1.0))
    return layout.to_rows(Xs)


def _check_transform_qid(qid, n_samples):
    """Refuse a 1-d ``qid`` of another length than ``X``, saying the likely cause.

    Inside a Pipeline with ``transform_input=["X_val"]``, scikit-learn
    transforms ``X_val`` with the metadata given to ``fit``: the training
    rows' ``qid``, never ``qid_val``. Other shapes are left to ``check_qid``.
    """
    if qid is None:
        return
    try:
        shape = np.shape(qid)
    except ValueError:  # ragged: check_qid names it
        return
    if len(shape) != 1 or shape[0] == n_samples:
        return
    raise ValueError(
        f"QueryNormalizer.transform got qid with {shape[0]} entries for X with "
        f"{n_samples} rows: qid must have one entry per row. If this QueryNormalizer "
        "is a step of a Pipeline with transform_input (such as "
        "transform_input=['X_val']), scikit-learn transforms X_val with the qid "
        "given to fit, the training rows' query ids, not with qid_val. Normalise the "
        "validation set yourself instead, "
        "X_val = QueryNormalizer().fit_transform(X_val, qid=qid_val) (it equals the "
        "pipeline's transform, since QueryNormalizer learns nothing across queries; "
        "apply any other step before the ranker the same way), and pass that X_val "
        "to fit without transform_input."
    )


class QueryNormalizer(OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    r"""Normalise every feature within each query.

    Each feature is rescaled using statistics of the documents of the same
    query only, as in LETOR's "QueryLevelNorm". This removes differences of
    scale between queries (a long query yields larger BM25 values for all its
    documents), which a ranker scoring documents one at a time cannot see.

    Parameters
    ----------
    method : {"minmax", "zscore"}, default="minmax"
        Normalisation applied to each feature of each query:

        - ``"minmax"``: subtract the query's minimum and divide by its range,
          giving values in ``[0, 1]``;
        - ``"zscore"``: subtract the query's mean and divide by its standard
          deviation (population, ``ddof=0``).

    Attributes
    ----------
    n_features_in_ : int
        Number of features seen during ``fit``.

    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during ``fit``. Defined only when `X`
        has feature names that are all strings.

    See Also
    --------
    sklearn.preprocessing.MinMaxScaler : Min-max scaling with statistics
        learnt over the whole training set.
    sklearn.preprocessing.StandardScaler : Standardisation with statistics
        learnt over the whole training set.

    Notes
    -----
    For the rows :math:`D_q` of query :math:`q` and a feature :math:`j`, with
    :math:`m_{qj} = \min_{i \in D_q} x_{ij}`,
    :math:`M_{qj} = \max_{i \in D_q} x_{ij}`,
    :math:`\mu_{qj} = \frac{1}{|D_q|} \sum_{i \in D_q} x_{ij}` and
    :math:`\sigma_{qj} = \sqrt{\frac{1}{|D_q|} \sum_{i \in D_q}
    (x_{ij} - \mu_{qj})^2}`, the transformed value of row :math:`i \in D_q` is

    .. math::

        \text{minmax:}\quad \tilde x_{ij} = \frac{x_{ij} - m_{qj}}
        {M_{qj} - m_{qj}}, \qquad
        \text{zscore:}\quad \tilde x_{ij} = \frac{x_{ij} - \mu_{qj}}
        {\sigma_{qj}}.

    A feature that is constant inside a query (:math:`M_{qj} = m_{qj}`, which
    includes every feature of a single-document query) is mapped to exactly 0
    by both methods, never to NaN or infinity.

    The transformer learns nothing from the data passed to :meth:`fit` beyond
    its number of features: the statistics are computed per query on the data
    being transformed, which is what makes the transform meaningful for new
    queries. As a consequence, transforming a subset of a query's rows gives
    different values than transforming the whole query.

    ``qid`` gives the query of each row; rows of one query need not be
    contiguous, and the output keeps the input's row order. ``qid=None``
    treats all rows as one query.

    scikit-learn's ``check_methods_subset_invariance`` fails by design (a
    subset of a query's rows is normalised with its own statistics):
    :func:`skrank.utils.estimator_checks.expected_failed_checks` lists it
    for ``check_estimator(..., expected_failed_checks=...)``.

    Float32 input gives float32 output; any other input gives float64 output.
    The computation itself is carried out in float64.

    With metadata routing enabled (``sklearn.set_config(
    enable_metadata_routing=True)``), this transformer requests ``qid`` by
    default in ``fit`` and ``transform``, so that a
    :class:`~sklearn.pipeline.Pipeline` passes ``qid`` given to its ``fit``,
    ``fit_transform`` or ``predict`` on to it. A pipeline fits this step with
    ``fit_transform``, which scikit-learn routes only when the ``fit`` and
    ``transform`` requests agree: change both ``set_fit_request`` and
    ``set_transform_request`` together. Without routing, a pipeline reaches it
    through ``pipeline.fit(X, y, step__qid=qid)`` in fit only, and its
    ``predict`` cannot pass ``qid``; :func:`skrank.model_selection.cross_validate_ranker`,
    :class:`~skrank.model_selection.RankerSearchCV` and the ranking scorers
    hand ``qid`` to such a pipeline's steps themselves.

    A Pipeline with ``transform_input=["X_val"]`` transforms the validation
    rows with the training ``qid`` (scikit-learn routes the metadata given to
    ``fit``, not ``qid_val``); ``transform`` refuses the mismatched lengths
    with a ValueError saying so (when the two sets happen to have as many
    rows, nothing can tell). Do not combine ``transform_input`` with this
    transformer: normalise the validation set yourself,
    ``QueryNormalizer().fit_transform(X_val, qid=qid_val)``, and pass it
    without ``transform_input``.

    References
    ----------
    .. [1] T. Qin, T.-Y. Liu, J. Xu and H. Li, "LETOR: A benchmark collection
       for research on learning to rank for information retrieval",
       Information Retrieval, 13(4), pp. 346-374, 2010.

    Examples
    --------
    >>> import numpy as np
    >>> from skrank.preprocessing import QueryNormalizer
    >>> X = np.array([[1.0, 5.0], [3.0, 5.0], [2.0, 5.0], [10.0, 0.0], [30.0, 4.0]])
    >>> qid = np.array([7, 7, 7, 2, 2])
    >>> QueryNormalizer().fit_transform(X, qid=qid)
    array([[0. , 0. ],
           [1. , 0. ],
           [0.5, 0. ],
           [0. , 0. ],
           [1. , 1. ]])
    >>> QueryNormalizer(method="zscore").fit_transform(X, qid=qid).round(3)
    array([[-1.225,  0.   ],
           [ 1.225,  0.   ],
           [ 0.   ,  0.   ],
           [-1.   , -1.   ],
           [ 1.   ,  1.   ]])
    """

    _parameter_constraints = {"method": [StrOptions({"minmax", "zscore"})]}

    # Request qid by default under metadata routing, so that a Pipeline hands
    # it over without a set_{fit,transform}_request call.
    __metadata_request__fit = {"qid": True}
    __metadata_request__transform = {"qid": True}

    def __init__(self, *, method="minmax"):
        self.method = method

    def _validate_X(self, X, *, reset):
        return validate_data(
            self,
            X,
            reset=reset,
            accept_sparse=False,
            dtype=[np.float64, np.float32],
            ensure_all_finite=True,
        )

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, *, qid=None):
        """Check the input; no statistics are learnt.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data. Sparse input is not supported.
        y : None
            Ignored.
        qid : array-like of shape (n_samples,), default=None
            Query id of each row. Only checked, and their number kept:
            ``transform`` without ``qid`` after a fit on several queries warns.
            None means all rows are one query (with more than 100 rows it
            warns, as every function given ``qid=None``).

        Returns
        -------
        self : object
            Fitted transformer.
        """
        with keep_fitted_state_on_error(self):
            X = self._validate_X(X, reset=True)
            n_queries = QueryLayout(resolve_qid(qid, X.shape[0], caller="QueryNormalizer.fit",
                                                routing_hint=True)).n_queries
        # transform without qid after a fit on several queries warns
        self._n_fit_queries = n_queries
        return self

    def transform(self, X, *, qid=None):
        """Normalise each feature within each query.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Data to normalise. Sparse input is not supported.
        qid : array-like of shape (n_samples,), default=None
            Query id of each row. None treats all rows as one query, and
            warns when the transformer was fitted on several queries (a
            forgotten ``qid``, e.g. ``Pipeline.predict`` with metadata
            routing off).

        Returns
        -------
        X_tr : ndarray of shape (n_samples, n_features)
            Normalised data, in the row order of `X`.
        """
        check_is_fitted(self)
        X = self._validate_X(X, reset=False)
        _check_transform_qid(qid, X.shape[0])
        layout = QueryLayout(resolve_qid(
            qid, X.shape[0], caller=f"{type(self).__name__}.transform",
            fitted_queries=getattr(self, "_n_fit_queries", 1),
        ))
        return _query_normalize(X, layout, self.method).astype(X.dtype, copy=False)

    def fit_transform(self, X, y=None, *, qid=None):
        """Fit to `X`, then normalise it within each query.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Data to normalise. Sparse input is not supported.
        y : None
            Ignored.
        qid : array-like of shape (n_samples,), default=None
            Query id of each row. None treats all rows as one query.

        Returns
        -------
        X_tr : ndarray of shape (n_samples, n_features)
            Normalised data, in the row order of `X`.
        """
        return self.fit(X, y, qid=qid).transform(X, qid=qid)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags
