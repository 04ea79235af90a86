"""Query ids: check_qid validates them, resolve_qid reads qid=None (skrank/utils/_qid.py)."""

import warnings

import numpy as np
import pytest

import skrank
from skrank import ListNetRanker, QueryNormalizer, ndcg_score
from skrank.losses import SoftRankLoss
from skrank.utils import QueryLayout
from skrank.utils._qid import IMPLICIT_QUERY_MAX_ROWS, check_qid, resolve_qid


@pytest.mark.parametrize(
    "bad, error, match",
    [
        (None, TypeError, "qid is required"),
        (3, ValueError, "1-D array"),
        ([[1, 2]], ValueError, "1-D array"),
        ([], ValueError, "qid is empty"),
        ([1.0, np.nan], ValueError, "qid contains NaN"),
        ([1.0, 1.5], ValueError, "non-integral value 1.5"),
        (np.array([1, "a", 2.5], dtype=object), TypeError, "integers or strings"),
        (np.array([1 + 2j]), TypeError, "dtype complex"),
        ([10**20, 1], ValueError, "the integer 100000000000000000000, beyond the 64-bit"),
        ([-(2**63) - 1, 1], ValueError, "the integer -9223372036854775809, beyond"),
        ([2**63, -1], ValueError, "both -1 and 9223372036854775808, which no one"),
        (np.array([10**20, 1], dtype=object), ValueError, "beyond the 64-bit integers"),
    ],
)
def test_check_qid_errors(bad, error, match):
    with pytest.raises(error, match=match):
        check_qid(bad)


def _missing_ids():
    """Query ids with one missing value at row 2, as pandas and numpy hold them."""
    pd = pytest.importorskip("pandas")
    return [
        pytest.param(pd.array(["a", "a", None, "b"], dtype="string"), "pd.NA", id="pd-string"),
        pytest.param(np.array([1, 1, np.nan, 2], dtype=object), "NaN", id="object-nan"),
        pytest.param([1, 1, None, 2], "None", id="list-none"),
        pytest.param(["a", "a", None, "b"], "None", id="list-str-none"),
        pytest.param(["a", "a", np.nan, "b"], "NaN", id="list-str-nan"),
        pytest.param(pd.Series(["a", "a", pd.NA, "b"], dtype=object), "pd.NA", id="pd-object"),
        pytest.param(pd.Series(["a", "a", None, "b"]), "NaN", id="pd-default-str"),
        pytest.param(pd.Categorical(["a", "a", None, "b"]), "NaN", id="pd-categorical"),
        pytest.param(pd.array([1, 1, None, 2], dtype="Int64"), "NaN", id="pd-Int64"),
        pytest.param(np.array([1.0, 1.0, np.nan, 2.0]), "NaN", id="float-nan"),
    ]


@pytest.mark.parametrize("qid, what", _missing_ids())
def test_a_missing_query_id_is_named_with_its_row(qid, what):
    # an id missing from strings or an object array read as "a mix of types"
    with pytest.raises(ValueError, match=rf"^qid contains {what} at row 2: a missing query id "
                                         r"\(1 of 4 rows\); every row needs a query id\.$"):
        check_qid(qid)


def test_a_missing_query_id_is_named_by_the_public_functions():
    pd = pytest.importorskip("pandas")
    qid = pd.array(["a", "a", None, "b"], dtype="string")
    X, y = np.arange(8.0).reshape(4, 2), np.array([0, 1, 0, 1])
    with pytest.raises(ValueError, match="^qid contains pd.NA at row 2: a missing query id"):
        skrank.ListNetRanker(max_iter=2).fit(X, y, qid=qid)
    with pytest.raises(ValueError, match="^qid contains pd.NA at row 2: a missing query id"):
        skrank.ndcg_score(y, [0.1, 0.2, 0.3, 0.4], qid=qid)


def test_python_integer_ids_up_to_uint64_are_kept_exact():
    """numpy turns [2**64 - 1, 1] into floats; the ids stay distinct integers."""
    ids = check_qid([2**64 - 1, 2**64 - 2, 1])
    assert ids.dtype == np.uint64
    assert ids.tolist() == [2**64 - 1, 2**64 - 2, 1]
    assert check_qid([-(2**63), 2**63 - 1]).dtype == np.int64


def test_check_qid_length_and_accepted_types():
    with pytest.raises(ValueError, match="expected 3 entries, got 2"):
        check_qid([1, 2], n_samples=3)
    np.testing.assert_array_equal(check_qid([3.0, 1.0]), [3, 1])
    assert check_qid(np.array(["a", "b"], dtype=object)).dtype.kind == "U"
    assert check_qid(np.array([4, 5], dtype=object)).dtype.kind == "i"


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.uint8, np.uint64])
def test_small_and_unsigned_integer_qid_are_not_wrapped(dtype):
    info = np.iinfo(dtype)
    ids = np.array([info.min, info.min + 5, info.max - 7, info.max], dtype=dtype)
    qid = np.repeat(ids, 3)[::-1].copy()
    layout = QueryLayout(qid)
    assert layout.n_queries == 4
    assert layout.unique_qid.tolist() == sorted(ids.tolist())
    np.testing.assert_array_equal(layout.sizes, [3, 3, 3, 3])


def test_float_qid_beyond_exact_integers_rejected():
    with pytest.raises(ValueError, match="beyond 2\\*\\*53"):
        check_qid([1e19, 2e19])


def test_ragged_qid_names_qid():
    # not numpy's "inhomogeneous shape" error, which does not name the parameter
    with pytest.raises(ValueError, match="qid must be a 1-D array of query ids, one per "
                       "row; got a ragged nested sequence") as info:
        skrank.ndcg_score([1, 0], [1, 0], qid=[[1], [2, 3]])
    assert "inhomogeneous" in str(info.value.__cause__)
    with pytest.raises(ValueError, match="qid_val must be a 1-D array .* ragged"):
        check_qid([[1], [2, 3]], name="qid_val")


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_float_qid_raises_no_spurious_warning(dtype):
    # comparing float16 ids with 2**53 must not overflow in the cast and warn
    qid = np.array([0, 0, 1, 1], dtype=dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = skrank.ndcg_score([1, 0, 2, 0], [0.1, 0.2, 0.3, 0.4], qid=qid)
        ids = check_qid(qid)
    assert got == skrank.ndcg_score([1, 0, 2, 0], [0.1, 0.2, 0.3, 0.4], qid=[0, 0, 1, 1])
    assert ids.dtype == np.int64 and ids.tolist() == [0, 0, 1, 1]


# ----------------------------------------------------------------------
# resolve_qid: the one reading of qid=None

def test_a_given_qid_is_checked_and_none_is_one_query():
    assert resolve_qid([3, 3, 1], 3, caller="f").tolist() == [3, 3, 1]
    with pytest.raises(ValueError, match="qid_val"):
        resolve_qid([1, 2], 3, caller="f", name="qid_val")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        one = resolve_qid(None, IMPLICIT_QUERY_MAX_ROWS, caller="f")
    assert one.dtype == np.int64 and one.shape == (IMPLICIT_QUERY_MAX_ROWS,) and not one.any()


@pytest.mark.parametrize("routing_hint", [False, True])
def test_none_past_the_largest_plausible_query_warns_naming_the_caller(routing_hint):
    n = IMPLICIT_QUERY_MAX_ROWS + 1
    with pytest.warns(UserWarning, match=rf"^ndcg_score got qid_val=None, so all {n} rows are "
                                         r"treated as ONE query\. .*pass qid_val=\.\.\.") as record:
        resolve_qid(None, n, caller="ndcg_score", name="qid_val", routing_hint=routing_hint)
    assert ("metadata routing" in str(record[0].message)) == routing_hint
    assert record[0].filename == __file__  # the user's line, not the package's


def test_none_after_a_fit_on_several_queries_warns_or_raises():
    with pytest.warns(UserWarning, match=r"^QueryNormalizer was fitted on 3 queries, but "
                                         r"transform got qid=None, which treats all 2 rows "
                                         r"as one query\."):
        resolve_qid(None, 2, caller="QueryNormalizer.transform", fitted_queries=3)
    with pytest.raises(ValueError, match=r"^ListNetRanker was fitted on 3 queries, but score "
                                         r"got qid=None.*pass qid=np\.zeros\(n\)\.$"):
        resolve_qid(None, 2, caller="ListNetRanker.score", fitted_queries=3, strict=True)
    with warnings.catch_warnings():  # one row, or a fit on one query: nothing to warn about
        warnings.simplefilter("error")
        resolve_qid(None, 1, caller="ListNetRanker.score", fitted_queries=3, strict=True)
        resolve_qid(None, 10 * IMPLICIT_QUERY_MAX_ROWS, caller="ListNetRanker.predict",
                    fitted_queries=1)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_a_forgotten_qid_val_warns_like_a_forgotten_qid(rng):
    X = rng.normal(size=(2 * IMPLICIT_QUERY_MAX_ROWS, 3))
    y = rng.integers(0, 3, size=len(X)).astype(float)
    qid = np.repeat(np.arange(len(X) // 20), 20)
    with pytest.warns(UserWarning, match=r"^ListNetRanker\.fit got qid_val=None, so all 200 "
                                         r"rows are treated as ONE query"):
        skrank.ListNetRanker(max_iter=2).fit(X, y, qid=qid, X_val=X, y_val=y)


# ----------------------------------------------------------------------------
# The warning's line
@pytest.mark.parametrize("call", [
    lambda X, y: ndcg_score(y, X[:, 0]),
    lambda X, y: ListNetRanker(max_iter=1).fit(X, y),
    lambda X, y: QueryNormalizer().fit(X),
    lambda X, y: SoftRankLoss().rank_distributions(X[:, 0]),
], ids=["metric", "ranker fit", "QueryNormalizer.fit", "loss"])
def test_a_forgotten_qid_warns_at_the_users_line(call):
    """However deep the package warns from (validate_params, _fit_context), the warning
    points at the caller's line, so that it is seen and not merged with others."""
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(150, 3)), rng.integers(0, 3, 150).astype(float)
    with pytest.warns(UserWarning, match="ONE query") as record:
        call(X, y)
    assert {w.filename for w in record if "ONE query" in str(w.message)} == {__file__}
