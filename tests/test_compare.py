"""The main job, ``python -m skrank compare``."""

import re

import numpy as np
import pytest
from sklearn.linear_model import Ridge

from skrank import ListNetRanker, load_letor_fold, load_rank_sample, map_score, ndcg_score
from skrank._cli import main
from skrank._compare import CUTOFFS
from skrank.model_selection import cross_validate_ranker
from skrank.model_selection._comparison import COLUMNS
from skrank.rankers._registry import RANKERS


def test_changed_params_compares_arrays_and_nan_safely():
    from sklearn.base import BaseEstimator

    from skrank._compare import changed_params

    class Est(BaseEstimator):
        def __init__(self, *, w=None, pair=(1, 2), tol=float("nan"), base=None):
            self.w, self.pair, self.tol, self.base = w, pair, tol, base

    assert changed_params(Est()) == {}
    assert changed_params(Est(tol=float("nan"), pair=(1.0, 2.0))) == {}
    changed = changed_params(Est(w=np.arange(3), pair=(np.arange(2),), tol=0.1, base=Ridge()))
    assert list(changed) == ["base", "pair", "tol", "w"]


NDCG10, MAP = COLUMNS.index("NDCG@10"), COLUMNS.index("MAP")


def _table(out):
    """Rows of the printed table: name -> list of (mean, std) and fit seconds."""
    rows = {}
    for line in out.strip().splitlines()[2:]:
        name, *cells = line.split()
        numbers = [float(c) for c in cells if c != "±"]
        rows[name] = (list(zip(numbers[0:-1:2], numbers[1:-1:2])), numbers[-1])
    return rows


def test_compare_cv_on_bundled_sample(capsys):
    # Every registered ranker with its defaults on the whole sample. 2 folds (the
    # least --cv allows) fit each ranker twice on half the queries, 3 folds three
    # times on two thirds: the same checks at about half the cost.
    assert main(["compare", "--cv", "2"]) == 0
    captured = capsys.readouterr()
    rows = _table(captured.out)
    assert list(rows) == list(RANKERS)
    assert "[ListNet] 2-fold grouped cross-validation" in captured.err
    X, y, qid = load_rank_sample(subset="all")
    expected = cross_validate_ranker(
        ListNetRanker(random_state=0), X, y, qid=qid, cv=2, scoring=["ndcg@10", "map"]
    )
    (ndcg10, map_) = rows["ListNet"][0][NDCG10], rows["ListNet"][0][MAP]
    assert ndcg10[0] == pytest.approx(expected["test_ndcg@10"].mean(), abs=5e-5)
    assert ndcg10[1] == pytest.approx(expected["test_ndcg@10"].std(), abs=5e-5)
    assert map_[0] == pytest.approx(expected["test_map"].mean(), abs=5e-5)


def test_compare_letor_protocol_on_one_fold(shared_data, capsys):
    fold = shared_data / "ohsumed" / "Fold1"
    assert main(["compare", "--data", str(fold), "--rankers", "Ridge"]) == 0
    rows = _table(capsys.readouterr().out)
    # the vali-chosen Ridge, recomputed by hand
    data = load_letor_fold(fold.parent, "Fold1")
    (X, y, _), (Xv, yv, qv), (Xt, yt, qt) = data.train, data.vali, data.test
    models = [Ridge(alpha=a).fit(X, y) for a in RANKERS["Ridge"].grid["alpha"]]
    best = max(models, key=lambda m: ndcg_score(yv, m.predict(Xv), qid=qv, k=10, convention="letor"))
    scores = best.predict(Xt)
    assert rows["Ridge"][0][NDCG10][0] == pytest.approx(
        ndcg_score(yt, scores, qid=qt, k=10, convention="letor"), abs=5e-5
    )
    assert rows["Ridge"][0][MAP][0] == pytest.approx(map_score(yt, scores, qid=qt, convention="letor"), abs=5e-5)
    assert rows["Ridge"][0][NDCG10][1] == 0.0  # one fold: no spread


def test_compare_rejects_bad_arguments(tmp_path, capsys):
    assert main(["compare", "--data", str(tmp_path)]) == 1
    assert "expected a LETOR file, a LETOR fold folder" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["compare", "--cv", "1"])
    assert "--cv must be at least 2; got 1" in capsys.readouterr().err
    with pytest.raises(SystemExit) as excinfo:
        main(["compare", "--rankers", "NoSuchRanker"])
    assert excinfo.value.code == 2  # argparse's usage error
    # the message names the option and the value, and offers the registered rankers
    err = capsys.readouterr().err
    found = re.search(r"compare: error: argument --rankers: invalid choice: 'NoSuchRanker' "
                      r"\(choose from (.*)\)$", err, flags=re.MULTILINE)
    assert found, err
    assert [name.strip(" '") for name in found[1].split(",")] == list(RANKERS), err


def test_letor_protocol_early_stops_on_vali(shared_data, capsys):
    """ListNet under --data monitors the fold's vali split with LETOR's NDCG@10."""
    from sklearn.model_selection import ParameterGrid

    from skrank import make_ranking_scorer

    fold = shared_data / "ohsumed" / "Fold1"
    assert main(["compare", "--data", str(fold), "--rankers", "ListNet"]) == 0
    rows = _table(capsys.readouterr().out)
    data = load_letor_fold(fold.parent, "Fold1")
    (X, y, qid), (Xv, yv, qv), (Xt, yt, qt) = data.train, data.vali, data.test
    models = []
    for params in ParameterGrid(RANKERS["ListNet"].grid):
        ranker = ListNetRanker(random_state=0, **params,
                               scoring=make_ranking_scorer("ndcg", k=10, convention="letor"))
        models.append(ranker.fit(X, y, qid=qid, X_val=Xv, y_val=yv, qid_val=qv))
    best = max(models, key=lambda m: m.best_validation_score_)
    assert rows["ListNet"][0][NDCG10][0] == pytest.approx(
        ndcg_score(yt, best.predict(Xt), qid=qt, k=10, convention="letor"), abs=5e-5
    )


# ----------------------------------------------------------------------
# Progress as each step ends
@pytest.fixture
def small_ranking():
    from skrank import make_ranking

    return make_ranking(n_queries=15, n_docs=(3, 8), n_features=4, noise=1.0, random_state=0)


@pytest.mark.parametrize("n_jobs", [None, 2])
def test_run_cv_table_is_cross_validate_rankers(n_jobs, small_ranking):
    """Fold by fold, the numbers are those of one cross_validate_ranker call."""
    from skrank._compare import cv_scoring, run_cv

    X, y, qid = small_ranking
    lines = []
    results = run_cv(["Ridge", "ListNet"], X, y, qid, cv=3, n_jobs=n_jobs, log=lines.append)
    for name in ("Ridge", "ListNet"):
        expected = cross_validate_ranker(RANKERS[name].make(), X, y, qid=qid, cv=3,
                                         scoring=[f"ndcg@{k}" for k in CUTOFFS] + ["map"])
        table = np.column_stack([expected[f"test_ndcg@{k}"] for k in CUTOFFS]
                                + [expected["test_map"]])
        np.testing.assert_array_equal(results[name][0], table)
        assert results[name][1].shape == (3,)
    assert list(cv_scoring("skrank")) == [f"ndcg@{k}" for k in CUTOFFS] + ["map"]
    assert [line.split(":")[0] for line in lines] == [
        "[Ridge] 3-fold grouped cross-validation ...", "[Ridge] fold 1/3",
        "[Ridge] fold 2/3", "[Ridge] fold 3/3", "[Ridge] done",
        "[ListNet] 3-fold grouped cross-validation ...", "[ListNet] fold 1/3",
        "[ListNet] fold 2/3", "[ListNet] fold 3/3", "[ListNet] done",
    ]
