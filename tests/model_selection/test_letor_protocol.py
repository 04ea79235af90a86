"""The LETOR protocol's Python entry, ``skrank.model_selection.letor_protocol``."""

import functools
import re
import warnings

import numpy as np
import pytest
from sklearn.datasets import dump_svmlight_file
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import Ridge

from skrank import ListNetRanker, load_letor_fold, make_ranking, map_score, ndcg_score
from skrank._cli import main
from skrank.model_selection import LetorProtocolResult, letor_protocol, registered_rankers
from skrank.model_selection._comparison import COLUMNS, CUTOFFS
from skrank.rankers._gbdt import ROW_NAMES
from skrank.rankers._registry import RANKERS

#: The lines of the log without their times: grid point, vali NDCG@10, choice, test NDCG@10.
TIMES = r"(, fit [0-9.]+ s|; .* left \(estimate\)| in [0-9.]+ s)"


def _fold_folder(root, name, seed):
    folder = root / name
    folder.mkdir(parents=True)
    for k, split in enumerate(("train", "vali", "test")):
        X, y, qid = make_ranking(n_queries=8, n_docs=(10, 14), n_features=4, noise=1.0,
                                 random_state=10 * seed + k)
        dump_svmlight_file(X, y, str(folder / f"{split}.txt"), query_id=qid, zero_based=False)
    return folder


@pytest.fixture
def letor_data(tmp_path):
    """A LETOR data set folder holding Fold1 and Fold2 (8 queries per split)."""
    root = tmp_path / "data"
    _fold_folder(root, "Fold1", 0)
    _fold_folder(root, "Fold2", 1)
    return root


def test_result_is_the_table_compare_prints(letor_data, capsys):
    """``compare --data`` prints the result's table (the fit seconds apart)."""
    result = letor_protocol(["Ridge"], letor_data)
    assert main(["compare", "--data", str(letor_data), "--rankers", "Ridge"]) == 0
    printed = capsys.readouterr().out.splitlines()
    table = result.format_table().splitlines()
    assert printed[0] == table[0] == (
        f"LETOR protocol on 2 fold(s) of {letor_data}, 'letor' convention (also choosing on "
        "vali): test mean ± std over folds")
    assert [line.rsplit(None, 1)[0] for line in printed[1:]] == [
        line.rsplit(None, 1)[0] for line in table[1:]]
    assert len(printed) == 3  # title, header, Ridge


@pytest.mark.parametrize("convention", ["letor", "skrank"])
def test_each_fold_chooses_on_vali_and_scores_test(convention, letor_data):
    """Ridge's results, recomputed fold by fold from the protocol's definition."""
    alphas = RANKERS["Ridge"].grid["alpha"]
    result = letor_protocol(["Ridge"], letor_data, convention=convention)
    assert result.folds == ("Fold1", "Fold2")
    assert result.columns == LetorProtocolResult.columns == tuple(COLUMNS)
    expected, chosen = [], []
    for fold in result.folds:
        data = load_letor_fold(letor_data, fold)
        (X, y, _), (Xv, yv, qv), (Xt, yt, qt) = data.train, data.vali, data.test
        models = [Ridge(alpha=alpha).fit(X, y) for alpha in alphas]
        vali = [ndcg_score(yv, m.predict(Xv), qid=qv, k=10, convention=convention)
                for m in models]
        best = int(np.argmax(vali))  # the first of equal points
        scores = models[best].predict(Xt)
        expected.append([ndcg_score(yt, scores, qid=qt, k=k, convention=convention)
                         for k in CUTOFFS] + [map_score(yt, scores, qid=qt, convention=convention)])
        chosen.append({"alpha": alphas[best]})
    np.testing.assert_allclose(result.test_scores["Ridge"], expected, rtol=1e-12, atol=0)
    assert result.best_params["Ridge"] == chosen
    assert result.fit_times["Ridge"].shape == (2,)
    assert result.convention == convention


def test_an_estimator_with_a_grid_is_a_registered_ranker(letor_data):
    """``(name, estimator)`` with the registered grid gives the registered ranker's results."""
    grid = {"alpha": [0.1, 100.0]}
    by_name = letor_protocol(["Ridge"], letor_data, grids={"Ridge": grid})
    estimator = Ridge()
    given = letor_protocol([("MyRidge", estimator)], letor_data, grids={"MyRidge": grid})
    np.testing.assert_array_equal(given.test_scores["MyRidge"], by_name.test_scores["Ridge"])
    assert given.best_params["MyRidge"] == by_name.best_params["Ridge"]
    assert estimator.get_params()["alpha"] == 1.0 and not hasattr(estimator, "coef_")
    # without a grid, the estimator as given is the only point
    alone = letor_protocol([("MyRidge", Ridge(alpha=100.0))], letor_data)
    assert alone.best_params["MyRidge"] == [{}, {}]
    assert list(by_name.test_scores) == ["Ridge"]


def test_another_estimators_own_parameters_and_fit_are_left_alone(letor_data):
    """A scikit-learn estimator whose ``scoring`` and ``X_val`` mean something else: its
    ``scoring`` is not the protocol's, and its ``fit`` gets no ``qid_val``."""
    from sklearn.ensemble import HistGradientBoostingRegressor
    from sklearn.linear_model import RidgeCV

    result = letor_protocol([("cv", RidgeCV(alphas=[0.1, 10.0])),
                             ("hgb", HistGradientBoostingRegressor(max_iter=5, random_state=0))],
                            letor_data)
    assert result.test_scores["cv"].shape == result.test_scores["hgb"].shape == (2, 7)
    assert np.isfinite(result.test_scores["hgb"]).all()
    # a skrank ranker's scoring is the protocol's criterion, whatever was given
    seen = []
    original = ListNetRanker.fit

    @functools.wraps(original)  # the signature the protocol reads
    def fit(self, X, y, **kwargs):
        seen.append((self.scoring, sorted(kwargs)))
        return original(self, X, y, **kwargs)

    with pytest.MonkeyPatch.context() as patch, warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        patch.setattr(ListNetRanker, "fit", fit)
        letor_protocol([("mine", ListNetRanker(scoring="map", max_iter=3))], letor_data)
    assert seen and all(kwargs == ["X_val", "qid", "qid_val", "y_val"] for _, kwargs in seen)
    assert all(scoring != "map" for scoring, _ in seen)


def test_compare_runs_a_name_given_twice_once(letor_data, capsys):
    """The command line runs each named ranker once (as its cross-validation does)."""
    assert main(["compare", "--data", str(letor_data), "--rankers", "Ridge", "Ridge"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 3  # title, header, one Ridge row


def test_results_compare_by_identity(letor_data):
    result = letor_protocol(["Ridge"], letor_data)
    assert result == result and result != letor_protocol(["Ridge"], letor_data)


@pytest.mark.filterwarnings("ignore:Early stopping would monitor:UserWarning")
def test_random_state_is_every_rankers_seed(letor_data):
    grids = {"ListNet": {"alpha": [1e-4, 1e-2], "max_iter": [5]}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        seeded = letor_protocol(["ListNet"], letor_data, grids=grids, random_state=3)
        given = letor_protocol([("ListNet", ListNetRanker(random_state=3))], letor_data,
                               grids=grids)
        registered = letor_protocol(["ListNet"], letor_data, grids=grids)
    np.testing.assert_array_equal(seeded.test_scores["ListNet"], given.test_scores["ListNet"])
    assert not np.array_equal(seeded.test_scores["ListNet"], registered.test_scores["ListNet"])


@pytest.mark.filterwarnings("ignore:Early stopping would monitor:UserWarning")
def test_workers_give_the_same_results_and_lines(letor_data):
    """With n_jobs the grid points run in workers; the parent logs them in grid order."""
    grids = {"ListNet": {"alpha": [1e-4, 1e-2], "max_iter": [5]}}
    runs = {}
    for n_jobs in (None, 2):
        lines = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            result = letor_protocol(["Ridge", "ListNet"], letor_data, log=lines.append,
                                    grids=grids, n_jobs=n_jobs)
        runs[n_jobs] = (result, [re.sub(TIMES, "", line) for line in lines])
    (sequential, lines), (parallel, parallel_lines) = runs[None], runs[2]
    for name in ("Ridge", "ListNet"):
        np.testing.assert_array_equal(parallel.test_scores[name], sequential.test_scores[name])
    assert parallel.best_params == sequential.best_params
    assert parallel_lines == lines
    vali = [line.split("vali NDCG@10 ")[1] for line in lines if line.startswith("[Fold1] Ridge(")]
    assert len(set(vali)) > 1  # the grid points differ on vali: the choice is not a tie
    assert sum(line.startswith("[Fold1] Ridge(alpha=") for line in lines) == 5
    assert any(line.startswith("[Fold1] ListNet(alpha=0.01, max_iter=5) 2/2: vali NDCG@10 ")
               for line in lines)
    assert lines[0] == "[Fold1] read 8 train queries, 8 vali queries, 8 test queries"


def test_one_fold_folder_is_a_data_set_of_one_fold(letor_data):
    result = letor_protocol(["Ridge"], letor_data / "Fold2")
    both = letor_protocol(["Ridge"], letor_data)
    assert result.folds == ("Fold2",)
    np.testing.assert_array_equal(result.test_scores["Ridge"], both.test_scores["Ridge"][1:])


# what is given instead of the rankers, and the message
BAD_RANKERS = {
    "unknown name": (["Ridge", "NoSuchRanker"], "rankers[1]: unknown ranker 'NoSuchRanker'; "
                     f"the registered rankers are {', '.join(RANKERS)} (or give a "
                     "(name, estimator) pair)"),
    "name twice": (["Ridge", "Ridge"],
                   "rankers[1]: the name 'Ridge' is given twice; each ranker needs its own"),
    "a class": ([("Ridge2", Ridge)], "rankers[0]: expected a registered ranker's name or a "
                "(name, estimator) pair; got ('Ridge2', <class "),
    "no name": ([Ridge()], "rankers[0]: expected a registered ranker's name or a "
                "(name, estimator) pair; got Ridge()"),
    "empty": ([], "rankers: expected at least one ranker; got an empty list"),
}


@pytest.mark.parametrize("case", BAD_RANKERS)
def test_bad_rankers_are_refused_before_any_fold_is_read(case, tmp_path):
    rankers, message = BAD_RANKERS[case]
    with pytest.raises(ValueError, match=re.escape(message)):
        letor_protocol(rankers, tmp_path / "not read")


def test_a_grid_of_no_ranker_is_refused(letor_data):
    with pytest.raises(ValueError, match=re.escape(
            "grids: no ranker of rankers is named 'ListNet'; the rankers are Ridge")):
        letor_protocol(["Ridge"], letor_data, grids={"ListNet": {"alpha": [1.0]}})


@pytest.mark.parametrize("where, message", [
    ("empty", "holds no LETOR fold; expected a LETOR fold folder (train, vali and test "
              "files) or a folder holding Fold1 .. Fold5"),
    ("missing", "is not a folder; expected a LETOR fold folder"),
])
def test_data_without_folds_is_refused(where, message, tmp_path):
    data = tmp_path / where
    if where == "empty":
        data.mkdir()
    with pytest.raises(ValueError, match=re.escape(f"data={str(data)!r} {message}")):
        letor_protocol(["Ridge"], str(data))


def test_an_incomplete_fold_is_refused_before_any_fold_is_run(letor_data):
    (letor_data / "Fold2" / "vali.txt").unlink()
    lines = []
    with pytest.raises(ValueError, match=re.escape(
            f"{letor_data / 'Fold2'}: incomplete LETOR fold, no vali.txt or vali.txt.gz")):
        letor_protocol(["Ridge"], letor_data, log=lines.append)
    assert lines == []


@pytest.mark.parametrize("params, message", [
    ({"convention": "ltr"}, "The 'convention' parameter of letor_protocol must be a str among"),
    ({"random_state": -1}, "The 'random_state' parameter of letor_protocol must be"),
    ({"n_jobs": 0}, "n_jobs must be None or a nonzero int"),
])
def test_bad_parameters_are_refused(params, message, letor_data):
    with pytest.raises(ValueError, match=re.escape(message)):
        letor_protocol(["Ridge"], letor_data, **params)


def test_registered_rankers_are_those_of_compare():
    rankers = registered_rankers()
    assert list(rankers) == list(RANKERS)
    assert list(registered_rankers(optional=False)) == [
        name for name in RANKERS if name not in ROW_NAMES.values()]
    estimator, grid = rankers["ListNet"]
    assert isinstance(estimator, ListNetRanker) and estimator.random_state == 0
    assert grid == RANKERS["ListNet"].grid
    grid["alpha"].append(1.0)  # a copy: the registry keeps its grid
    assert grid != RANKERS["ListNet"].grid
    assert registered_rankers()["ListNet"][0] is not estimator  # a new estimator each call
