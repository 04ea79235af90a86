"""The optional gradient-boosted baselines of ``compare`` (skrank/rankers/_gbdt.py).

LightGBM's lambdarank and XGBoost's rank:ndcg behind skrank's fit: rows
sorted by query inside fit, early stopping on the same held-out queries as
skrank's rankers, and rows of ``python -m skrank compare`` that are absent,
with a note, when the package is missing. The tests skip without lightgbm or
xgboost (the 'gbdt' extra), and fail then under ``CI=true``.
"""

import functools
import importlib
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
from sklearn.datasets import dump_svmlight_file
from sklearn.exceptions import ConvergenceWarning

from skrank import ListNetRanker, make_ranking
from skrank._cli import main
from skrank._compare import run_cv
from skrank.rankers import _holdout
from skrank.rankers._gbdt import ROW_NAMES, GBDTRanker
from skrank.rankers._registry import RANKERS
from skrank.utils import QueryLayout

LIBRARIES = list(ROW_NAMES)
NOTE = "[{name}] row absent: {library} is not installed (pip install {library}, or skrank's 'gbdt' extra)"


@pytest.fixture(autouse=True)
def _gbdt_packages(installed):
    """Every test here needs both libraries: skip without them (fail under CI=true)."""
    for library in LIBRARIES:
        installed(library, "gbdt")


def _data(n_queries=20, seed=0):
    """Queries of 5..12 documents, integer labels 0..4, grouped by query."""
    return make_ranking(n_queries=n_queries, n_docs=(5, 12), n_features=4, random_state=seed)


def _interleaved(qid, seed):
    """A row order that mixes the queries but keeps each query's rows in their order.

    ``rows`` such that ``qid[rows]`` is not sorted, while a stable sort of
    ``qid[rows]`` gives back ``rows`` in the original (grouped) order.
    """
    slots = np.random.default_rng(seed).permutation(qid.shape[0])
    positions = np.argsort(qid[slots], kind="stable")  # where query-sorted row i goes
    rows = np.empty_like(positions)
    rows[positions] = np.arange(qid.shape[0])
    return rows


def _spy_on_fit(monkeypatch, library):
    """Record ``(X, y, kwargs)`` of every call of the library's ranker's fit."""
    cls = getattr(importlib.import_module(library), ROW_NAMES[library])
    original, calls = cls.fit, []

    @functools.wraps(original)  # (its signature: fit inspects it)
    def fit(self, X, y, **kwargs):
        calls.append((X, y, kwargs))
        return original(self, X, y, **kwargs)

    monkeypatch.setattr(cls, "fit", fit)
    return calls


def _sizes_of(sorted_codes):
    """Group sizes of query numbers that must be sorted (XGBoost's qid)."""
    assert np.all(np.diff(sorted_codes) >= 0)
    return np.unique(sorted_codes, return_counts=True)[1]


def _train_set(library, call):
    """``(X, y, group sizes)`` the library was given to train on."""
    X, y, kwargs = call
    return X, y, kwargs["group"] if library == "lightgbm" else _sizes_of(kwargs["qid"])


def _eval_set(library, call):
    """``(X, y, group sizes)`` the library monitored for early stopping."""
    kwargs = call[2]
    if library == "lightgbm":
        X, y = ((kwargs["eval_X"][0], kwargs["eval_y"][0]) if "eval_X" in kwargs
                else kwargs["eval_set"][0])
        return X, y, kwargs["eval_group"][0]
    X, y = kwargs["eval_set"][0]
    return X, y, _sizes_of(kwargs["eval_qid"][0])


# ----------------------------------------------------------------------
# The estimator
@pytest.mark.parametrize("library", LIBRARIES)
def test_rows_in_any_order_give_the_fit_of_rows_grouped_by_query(library):
    X, y, qid = _data()
    X_test = _data(seed=1)[0]
    rows = _interleaved(qid, seed=0)
    assert np.any(np.diff(qid[rows]) < 0)  # the queries are mixed
    grouped = GBDTRanker(library=library, random_state=0).fit(X, y, qid=qid)
    mixed = GBDTRanker(library=library, random_state=0).fit(X[rows], y[rows], qid=qid[rows])
    np.testing.assert_array_equal(mixed.predict(X_test), grouped.predict(X_test))
    assert mixed.n_iter_ == grouped.n_iter_
    # scores come back in the caller's row order
    np.testing.assert_array_equal(mixed.predict(X[rows]), grouped.predict(X)[rows])


@pytest.mark.parametrize("library", LIBRARIES)
def test_early_stopping_monitors_exactly_the_given_validation_queries(library, monkeypatch):
    X, y, qid = _data()
    X_val, y_val, qid_val = _data(n_queries=8, seed=2)
    qid_val = qid_val + 100
    rows = _interleaved(qid_val, seed=1)
    calls = _spy_on_fit(monkeypatch, library)
    ranker = GBDTRanker(library=library, random_state=0).fit(
        X, y, qid=qid, X_val=X_val[rows], y_val=y_val[rows], qid_val=qid_val[rows])
    (call,) = calls
    X_e, y_e, sizes_e = _eval_set(library, call)
    # the given queries, grouped again (the original order of X_val)
    np.testing.assert_array_equal(X_e, X_val)
    np.testing.assert_array_equal(y_e, y_val)
    np.testing.assert_array_equal(sizes_e, QueryLayout(qid_val).sizes)
    # and every query of X trains
    X_t, y_t, sizes_t = _train_set(library, call)
    np.testing.assert_array_equal(X_t, X)
    np.testing.assert_array_equal(sizes_t, QueryLayout(qid).sizes)
    assert ranker.best_validation_score_ is not None and 1 <= ranker.n_iter_ < ranker.n_estimators


@pytest.mark.parametrize("library", LIBRARIES)
def test_held_out_queries_are_those_a_skrank_ranker_holds_out(library, monkeypatch):
    X, y, qid = _data(n_queries=30, seed=3)
    X = np.column_stack([np.arange(X.shape[0]), X])  # column 0: the row's number
    rows = _interleaved(qid, seed=2)
    X, y, qid = X[rows], y[rows], qid[rows]
    held_out = []

    def split(layout, validation_fraction, rng):
        train, val = split_queries(layout, validation_fraction, rng)
        held_out.append(layout.unique_qid[val])
        return train, val

    split_queries = _holdout._split_queries
    with monkeypatch.context() as patch, warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        patch.setattr(_holdout, "_split_queries", split)
        ListNetRanker(random_state=7, validation_fraction=0.3, max_iter=1).fit(X, y, qid=qid)
    (expected,) = held_out
    assert 0 < expected.size < np.unique(qid).size
    calls = _spy_on_fit(monkeypatch, library)
    GBDTRanker(library=library, random_state=7, validation_fraction=0.3).fit(X, y, qid=qid)
    (call,) = calls
    monitored = _eval_set(library, call)[0][:, 0].astype(int)
    trained = _train_set(library, call)[0][:, 0].astype(int)
    is_held_out = np.isin(qid, expected)
    assert sorted(monitored) == sorted(X[is_held_out, 0].astype(int))
    assert sorted(trained) == sorted(X[~is_held_out, 0].astype(int))  # never trains on them


@pytest.mark.parametrize("library", LIBRARIES)
@pytest.mark.parametrize("label, where", [(0.5, "y"), (31, "y"), (-1, "y"), (0.5, "y_val")])
def test_labels_other_than_integers_0_to_30_are_refused(library, label, where):
    X, y, qid = _data()
    y_val = y.copy()
    (y if where == "y" else y_val)[3] = label
    with pytest.raises(ValueError, match=rf"needs integer relevance labels in 0 \.\. 30 "
                                         rf"for its exponential gain; {where} holds 1 other"):
        GBDTRanker(library=library).fit(X, y, qid=qid, X_val=X, y_val=y_val, qid_val=qid)


def test_validation_set_without_early_stopping_is_refused():
    X, y, qid = _data()
    with pytest.raises(ValueError, match="X_val/y_val are used for early stopping only"):
        GBDTRanker(early_stopping=False).fit(X, y, qid=qid, X_val=X, y_val=y, qid_val=qid)


@pytest.mark.parametrize("library", LIBRARIES)
def test_without_early_stopping_all_trees_are_grown(library):
    X, y, qid = _data()
    ranker = GBDTRanker(library=library, early_stopping=False, n_estimators=7).fit(X, y, qid=qid)
    assert ranker.n_iter_ == 7 and ranker.best_validation_score_ is None


# ----------------------------------------------------------------------
# The rows of compare
def _write_letor(path, X, y, qid):
    dump_svmlight_file(X, y, str(path), query_id=qid, zero_based=False)
    return path


def _table_rows(out):
    return [line.split()[0] for line in out.strip().splitlines()[2:]]


def test_registry_lists_the_baselines_after_the_skrank_rankers():
    names = list(RANKERS)
    first = names.index("LGBMRanker")
    assert names[first:first + 2] == ["LGBMRanker", "XGBRanker"]
    assert {"Ridge", "ListNet", "SoftRank", "BoltzRank", "LogRank"} <= set(names[:first])
    for name, library in [("LGBMRanker", "lightgbm"), ("XGBRanker", "xgboost")]:
        ranker = RANKERS[name].make()
        assert (ranker.library, ranker.random_state) == (library, 0)


def test_cross_validation_lists_the_rows(tmp_path, capsys):
    X, y, qid = _data()
    names = ["Ridge", "LGBMRanker", "XGBRanker"]
    results = run_cv(names, X, y, qid, cv=2, n_jobs=None, log=lambda line: None)
    assert list(results) == names
    assert all(np.isfinite(table).all() for table, _ in results.values())
    path = _write_letor(tmp_path / "data.txt", X, y, qid)
    assert main(["compare", str(path), "--cv", "2", "--rankers", *names]) == 0
    captured = capsys.readouterr()
    assert _table_rows(captured.out) == names
    assert "row absent" not in captured.err


@pytest.mark.parametrize("library", LIBRARIES)
def test_letor_protocol_lists_the_rows_and_stops_on_vali(library, tmp_path, capsys, monkeypatch):
    vali_rows = []
    for fold in ("Fold1", "Fold2"):
        (tmp_path / fold).mkdir()
        for k, split in enumerate(("train", "vali", "test")):
            X, y, qid = _data(n_queries=12, seed=10 * int(fold[-1]) + k)
            _write_letor(tmp_path / fold / f"{split}.txt", X, y, qid)
            if split == "vali":
                vali_rows.append(X.shape[0])
    calls = _spy_on_fit(monkeypatch, library)
    name = ROW_NAMES[library]
    assert main(["compare", "--data", str(tmp_path), "--rankers", "Ridge", name]) == 0
    captured = capsys.readouterr()
    assert _table_rows(captured.out) == ["Ridge", name]
    assert f"[Fold2] {name}: chose {{'learning_rate'" in captured.err
    # each grid point of each fold stopped on that fold's vali split
    grid = len(RANKERS[name].grid["learning_rate"])
    assert [_eval_set(library, call)[0].shape[0] for call in calls] == [
        n for n in vali_rows for _ in range(grid)]


@pytest.mark.parametrize("library", LIBRARIES)
def test_rows_are_absent_with_a_note_without_the_package(library, tmp_path):
    """In a Python where ``library`` cannot be imported (one process: they are slow)."""
    path = _write_letor(tmp_path / "data.txt", *_data())
    name, other = ROW_NAMES[library], next(n for lib, n in ROW_NAMES.items() if lib != library)
    result = subprocess.run([sys.executable, "-c", f"""
import sys
sys.modules[{library!r}] = None  # as if it were not installed
import skrank, skrank._compare, skrank._cli
# importing skrank imports no library, also where one is installed
print(sorted(m for m in ('lightgbm', 'xgboost') if sys.modules.get(m) is not None))
status = skrank._cli.main(['compare', {str(path)!r}, '--cv', '2', '--rankers', 'Ridge', {other!r}])
try:
    skrank._cli.main(['compare', {str(path)!r}, '--rankers', {name!r}])
except SystemExit as exc:
    print('exit', exc.code)
sys.exit(status)
"""], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    first, *table, last = result.stdout.strip().splitlines()
    assert first == "[]"
    assert _table_rows("\n".join(table)) == ["Ridge", other]
    assert NOTE.format(name=name, library=library) in result.stderr.splitlines()
    # the absent row cannot be asked for
    assert last == "exit 2" and f"invalid choice: '{name}'" in result.stderr


@pytest.mark.parametrize("protocol", ["cv", "letor"])
def test_rows_are_left_out_on_labels_their_objectives_refuse(protocol, tmp_path, capsys):
    """Labels skrank's rankers fit (here halves) leave the rows out with a note, before
    any fit, instead of failing the comparison after the other rows ran."""
    X, y, qid = _data()
    y = y / 2.0  # 0, 0.5, ..., 2
    if protocol == "cv":
        data = where = _write_letor(tmp_path / "data.txt", X, y, qid)
        argv = ["compare", str(data), "--cv", "2"]
    else:
        (tmp_path / "Fold1").mkdir()
        for split in ("train", "vali", "test"):
            _write_letor(tmp_path / "Fold1" / f"{split}.txt", X, y, qid)
        data, where = tmp_path, tmp_path / "Fold1" / "train.txt"
        argv = ["compare", "--data", str(data)]
    assert main([*argv, "--rankers", "Ridge", "LGBMRanker", "XGBRanker"]) == 0
    captured = capsys.readouterr()
    assert _table_rows(captured.out) == ["Ridge"]
    n_bad = int((y != np.round(y)).sum())
    for name in ("LGBMRanker", "XGBRanker"):
        assert (f"[{name}] row absent: its objective needs integer relevance labels in "
                f"0 .. 30; {where} holds {n_bad} other label(s), e.g. 0.5") in captured.err
        assert f"[{name}] fold" not in captured.err and f"{name}(" not in captured.err
    # with no other row, nothing is left to compare: one line, exit 1
    assert main([*argv, "--rankers", "LGBMRanker"]) == 1
    assert capsys.readouterr().err.splitlines()[-1].startswith(
        "python -m skrank compare: error: no ranker left to compare (LGBMRanker: ")


def test_a_package_that_fails_to_load_is_a_note(tmp_path):
    """find_spec finds a package whose import fails (e.g. a missing OpenMP library)."""
    fake = tmp_path / "site" / "lightgbm"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise OSError('libgomp.so.1: cannot open shared object file')\n")
    path = _write_letor(tmp_path / "data.txt", *_data())
    result = subprocess.run(
        [sys.executable, "-m", "skrank", "compare", str(path), "--cv", "2",
         "--rankers", "Ridge", "LGBMRanker"],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(
            [str(fake.parent), *filter(None, [os.environ.get("PYTHONPATH")])])},
    )
    assert result.returncode == 0, result.stderr
    assert _table_rows(result.stdout) == ["Ridge"]
    assert ("[LGBMRanker] row absent: lightgbm is installed but cannot be imported (OSError: "
            "libgomp.so.1: cannot open shared object file)") in result.stderr.splitlines()
