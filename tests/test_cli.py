"""The command line: ``python -m skrank fit / predict / evaluate / compare FILE``.

Expected failures (labels the metrics reject, a damaged
or incomplete file or fold, a file that is not a model, an output that
cannot be written) are one line on stderr and exit status 1; a bad option is
argparse's usage error, exit status 2. Only bugs show a traceback.
"""

import gzip
import io
import os
import pickle
import re
import shutil
import stat
import subprocess
import sys
import warnings
from itertools import islice
from pathlib import Path

import joblib
import numpy as np
import pytest
from sklearn.datasets import dump_svmlight_file
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import Ridge

from skrank import (
    BoltzRankRanker,
    ListNetRanker,
    __version__,
    load_letor,
    make_ranking,
    map_score,
    ndcg_score,
)
from skrank._cli import MODEL_FORMAT, PROG, _n_jobs, _param, main
from skrank.datasets import iter_letor_chunks
from skrank.model_selection import cross_validate_ranker
from skrank.model_selection._comparison import COLUMNS

from tests._inputs import array_memory_error

N_FEATURES = 5


def _write_letor(path, X, y, qid):
    dump_svmlight_file(X, y, str(path), query_id=qid, zero_based=False)
    return path


@pytest.fixture
def train_file(tmp_path):
    """24 queries of 3..8 documents, 5 features, one-based LETOR text."""
    X, y, qid = make_ranking(n_queries=24, n_docs=(3, 8), n_features=N_FEATURES, random_state=0)
    return _write_letor(tmp_path / "train.txt", X, y, qid)


@pytest.fixture
def held_out_file(tmp_path):
    """10 other queries, rows shuffled across queries, last feature all zero.

    The zero column never appears in the file, so read on its own the file
    would have 4 features: ``predict`` must use the model's 5.
    """
    X, y, qid = make_ranking(n_queries=10, n_docs=(3, 8), n_features=N_FEATURES, random_state=1)
    X[:, -1] = 0.0
    perm = np.random.default_rng(0).permutation(X.shape[0])
    return _write_letor(tmp_path / "test.txt", X[perm], y[perm], qid[perm])


def _metrics(out):
    """``NAME<TAB>VALUE`` lines of evaluate's stdout, as a dict."""
    pairs = [line.split("\t") for line in out.strip().splitlines()]
    assert all(len(pair) == 2 for pair in pairs), out
    return {name: float(value) for name, value in pairs}


# name, --param values, the same model built in Python, whether predict gets qid
ROUND_TRIPS = {
    "Ridge": (["alpha=10.0"], lambda: Ridge(alpha=10.0), False),
    "ListNet": (
        ["alpha=0.01", "max_iter=30", "hidden_layer_sizes=(3,)", "solver=lbfgs"],
        lambda: ListNetRanker(random_state=0, alpha=0.01, max_iter=30,
                              hidden_layer_sizes=(3,), solver="lbfgs"),
        False,
    ),
    # a pairwise potential scores a query's documents jointly: predict needs qid
    "BoltzRank2": (
        ["max_iter=3"],
        lambda: BoltzRankRanker(hidden_layer_sizes=(3,), pairwise_hidden_layer_sizes=(5,),
                                random_state=0, max_iter=3),
        True,
    ),
}


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("name", list(ROUND_TRIPS))
def test_fit_predict_evaluate_round_trip(name, train_file, held_out_file, tmp_path, capsys):
    params, make, joint = ROUND_TRIPS[name]
    model, scores_file = tmp_path / "model.joblib", tmp_path / "scores.txt"
    argv = ["fit", str(train_file), "--ranker", name, "--out", str(model)]
    assert main(argv + [a for p in params for a in ("--param", p)]) == 0
    assert f"fitted {name} in" in capsys.readouterr().err
    assert main(["predict", str(model), str(held_out_file), "--out", str(scores_file)]) == 0
    assert "loaded " in capsys.readouterr().err

    X, y, qid = load_letor(train_file)
    Xt, yt, qt = load_letor(held_out_file, n_features=N_FEATURES)
    assert load_letor(held_out_file)[0].shape[1] == N_FEATURES - 1  # guards the fixture
    est = make().fit(X, y) if name == "Ridge" else make().fit(X, y, qid=qid)
    expected = est.predict(Xt, qid=qt) if joint else est.predict(Xt)
    scores = np.loadtxt(scores_file)
    np.testing.assert_allclose(scores, expected, rtol=1e-12, atol=0)
    if joint:  # the scores do depend on the query ids given to predict
        with pytest.warns(UserWarning):
            assert not np.allclose(est.predict(Xt), scores)

    payload = joblib.load(model)
    assert payload["n_features"] == N_FEATURES and payload["ranker"] == name

    assert main(["evaluate", str(held_out_file), str(scores_file)]) == 0
    captured = capsys.readouterr()
    metrics = _metrics(captured.out)
    assert list(metrics) == ["NDCG@1", "NDCG@3", "NDCG@5", "NDCG@10", "MAP"]
    for k in (1, 3, 5, 10):
        expected_ndcg = ndcg_score(yt, expected, qid=qt, k=k)
        assert metrics[f"NDCG@{k}"] == pytest.approx(expected_ndcg, abs=5e-7)
    assert metrics["MAP"] == pytest.approx(map_score(yt, expected, qid=qt), abs=5e-7)
    assert "convention 'skrank'" in captured.err


@pytest.mark.parametrize("convention", ["skrank", "letor", "sklearn"])
def test_evaluate_follows_the_convention(convention, held_out_file, tmp_path, capsys):
    _, y, qid = load_letor(held_out_file)
    # rounded scores: ties, which the conventions resolve differently
    scores = np.round(np.random.default_rng(0).normal(size=y.shape[0]), 1)
    (tmp_path / "scores.txt").write_text("".join(f"{s}\n" for s in scores))
    argv = ["evaluate", str(held_out_file), str(tmp_path / "scores.txt"), "--k", "2", "7",
            "--convention", convention]
    assert main(argv) == 0
    metrics = _metrics(capsys.readouterr().out)
    assert list(metrics) == ["NDCG@2", "NDCG@7", "MAP"]
    for k in (2, 7):
        assert metrics[f"NDCG@{k}"] == pytest.approx(
            ndcg_score(y, scores, qid=qid, k=k, convention=convention), abs=5e-7)
    assert metrics["MAP"] == pytest.approx(map_score(y, scores, qid=qid, convention=convention),
                                           abs=5e-7)


def test_predict_writes_stdout_by_default(train_file, held_out_file, tmp_path, capsys):
    model = tmp_path / "model.joblib"
    assert main(["fit", str(train_file), "--ranker", "Ridge", "--out", str(model)]) == 0
    capsys.readouterr()
    assert main(["predict", str(model), str(held_out_file)]) == 0
    captured = capsys.readouterr()
    Xt, _, _ = load_letor(held_out_file, n_features=N_FEATURES)
    X, y, _ = load_letor(train_file)
    np.testing.assert_allclose(np.array(captured.out.split(), dtype=float),
                               Ridge().fit(X, y).predict(Xt), rtol=1e-12, atol=0)
    assert "scored" in captured.err and "scored" not in captured.out


def test_fit_n_features_widens_the_model(train_file, tmp_path, capsys):
    model = tmp_path / "model.joblib"
    argv = ["fit", str(train_file), "--ranker", "Ridge", "--out", str(model), "--n-features", "8"]
    assert main(argv) == 0
    payload = joblib.load(model)
    assert payload["n_features"] == 8 and payload["estimator"].n_features_in_ == 8


@pytest.mark.parametrize(
    "text, expected",
    [
        ("alpha=1e-3", ("alpha", 1e-3)),
        ("hidden_layer_sizes=(5,)", ("hidden_layer_sizes", (5,))),
        ("max_iter=50", ("max_iter", 50)),
        ("early_stopping=True", ("early_stopping", True)),
        ("random_state=None", ("random_state", None)),
        ("solver=adam", ("solver", "adam")),
        ("activation='relu'", ("activation", "relu")),
        ("scoring=ndcg@10", ("scoring", "ndcg@10")),
    ],
)
def test_param_values_are_literals_or_strings(text, expected):
    assert _param(text) == expected


@pytest.mark.parametrize("param, message", [
    ("nosuch=1", "ListNet has no parameter 'nosuch'"),
    ("alpha", "expected name=value; got 'alpha'"),
    ("=1", "expected name=value; got '=1'"),
])
def test_fit_rejects_bad_param(param, message, train_file, tmp_path, capsys):
    model = tmp_path / "model.joblib"
    with pytest.raises(SystemExit) as exc:
        main(["fit", str(train_file), "--ranker", "ListNet", "--out", str(model),
              "--param", param])
    assert exc.value.code == 2
    assert message in capsys.readouterr().err
    assert not model.exists()


def test_fit_reports_an_invalid_param_value(train_file, tmp_path, capsys):
    argv = ["fit", str(train_file), "--ranker", "ListNet", "--out", str(tmp_path / "m"),
            "--param", "alpha=-1"]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "fitting ListNet failed" in err and "'alpha'" in err and "Traceback" not in err


@pytest.mark.parametrize("n_scores", [0, 3, "rows - 1", "rows + 1"])
def test_evaluate_rejects_scores_of_the_wrong_length(n_scores, held_out_file, tmp_path, capsys):
    n_rows = load_letor(held_out_file)[0].shape[0]
    n = {"rows - 1": n_rows - 1, "rows + 1": n_rows + 1}.get(n_scores, n_scores)
    scores = tmp_path / "scores.txt"
    scores.write_text("0.5\n" * n)
    assert main(["evaluate", str(held_out_file), str(scores)]) == 1
    captured = capsys.readouterr()
    assert f"has {n} scores but {held_out_file} has {n_rows} rows" in captured.err
    assert captured.out == ""


@pytest.mark.parametrize("text, message", [
    ("0.5\nhigh\n", "line 2 of {} is not a number: 'high'"),
    ("0.5\nnan\n", "line 2 of {} is not a finite score: 'nan'"),
])
def test_evaluate_rejects_bad_scores(text, message, held_out_file, tmp_path, capsys):
    scores = tmp_path / "scores.txt"
    scores.write_text(text)
    assert main(["evaluate", str(held_out_file), str(scores)]) == 1
    assert message.format(scores) in capsys.readouterr().err


@pytest.mark.parametrize("command", ["fit", "predict-model", "predict-file", "evaluate-file",
                                     "evaluate-scores"])
def test_missing_files_are_one_line_errors(command, train_file, tmp_path, capsys):
    missing = str(tmp_path / "missing.txt")
    model = tmp_path / "model.joblib"
    assert main(["fit", str(train_file), "--ranker", "Ridge", "--out", str(model)]) == 0
    capsys.readouterr()
    argv = {
        "fit": ["fit", missing, "--ranker", "Ridge", "--out", str(tmp_path / "m")],
        "predict-model": ["predict", missing, str(train_file)],
        "predict-file": ["predict", str(model), missing],
        "evaluate-file": ["evaluate", missing, str(train_file)],
        "evaluate-scores": ["evaluate", str(train_file), missing],
    }[command]
    assert main(argv) == 1
    captured = capsys.readouterr()
    assert f"error: {missing}: no such file" in captured.err
    assert "Traceback" not in captured.err and captured.out == ""


@pytest.mark.parametrize("how", ["positional", "--data"])
def test_compare_on_a_single_file(how, train_file, capsys):
    data = [str(train_file)] if how == "positional" else ["--data", str(train_file)]
    assert main(["compare", *data, "--cv", "2", "--rankers", "Ridge", "ListNet"]) == 0
    captured = capsys.readouterr()
    title, header, *rows = captured.out.strip().splitlines()
    assert title.startswith(f"2-fold grouped CV on {train_file}")
    assert [row.split()[0] for row in rows] == ["Ridge", "ListNet"]
    assert ", 24 queries," in captured.err
    # the Ridge row is grouped cross-validation of the file's queries
    X, y, qid = load_letor(train_file)
    expected = cross_validate_ranker(Ridge(), X, y, qid=qid, cv=2, scoring=["ndcg@10", "map"])
    cells = [float(c) for c in rows[0].split()[1:] if c != "±"]
    column = header.split()[1:].index("NDCG@10")
    assert cells[2 * column] == pytest.approx(expected["test_ndcg@10"].mean(), abs=5e-5)
    assert cells[-3] == pytest.approx(expected["test_map"].mean(), abs=5e-5)


def test_compare_on_a_file_needs_a_query_per_fold(train_file, capsys):
    assert main(["compare", str(train_file), "--cv", "30", "--rankers", "Ridge"]) == 1
    assert "--cv 30 needs at least 30 queries" in capsys.readouterr().err


def test_compare_takes_data_once(train_file, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["compare", str(train_file), "--data", str(train_file)])
    assert exc.value.code == 2
    assert "give DATA or --data, not both" in capsys.readouterr().err


def test_help_lists_the_commands():
    result = subprocess.run(
        [sys.executable, "-m", "skrank", "--help"], capture_output=True, text=True, check=True,
    )
    for command in ("fit", "predict", "evaluate", "compare", "export"):
        assert f"\n    {command} " in result.stdout


# ----------------------------------------------------------------------
# Expected failures: one line on stderr, exit status 1 (usage errors: 2)
# progress lines that may come before the error: a file read, a model read, a
# fit begun, a ranker's cross-validation begun ("[Ridge] 2-fold ..."), a fit
# ended, rows scored, evaluate's metric convention
PROGRESS = ("loaded ", "model: ", "fitting ", "fitted ", "scored ", "[", "convention ")


def _error_line(err, command):
    """The message of the one error line on ``err``, checked.

    Lines before it may only be progress lines (``loaded ...``, ``model:
    ...``, ``fitting ...``, ``fitted ...``, ``scored ...``, ``[Ridge] ...``,
    ``convention ...``) and one-line warnings; a traceback has others.
    """
    assert "Traceback" not in err, err
    *progress, last = err.splitlines()
    warning = f"python -m skrank {command}: warning: "
    assert all(line.startswith((*PROGRESS, warning)) for line in progress), err
    prefix = f"python -m skrank {command}: error: "
    assert last.startswith(prefix), err
    return last[len(prefix):]


def _fails(argv, capsys):
    """Run ``main(argv)``; assert exit status 1, no stdout, one error line; its message."""
    assert main([str(a) for a in argv]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    return _error_line(captured.err, argv[0])


def _relabel(path, label, out):
    """``path``'s LETOR text with the first row's label replaced by ``label``, at ``out``."""
    lines = path.read_text().splitlines(keepends=True)
    lines[0] = f"{label} " + lines[0].split(" ", 1)[1]
    out.write_text("".join(lines))
    return out


def _write_fold(folder, *, seed=0, n_docs=(3, 6)):
    """A LETOR fold folder (train, vali and test of 6 queries each); returns it."""
    folder.mkdir(parents=True)
    for k, split in enumerate(("train", "vali", "test")):
        X, y, qid = make_ranking(n_queries=6, n_docs=n_docs, n_features=N_FEATURES,
                                 random_state=10 * seed + k)
        _write_letor(folder / f"{split}.txt", X, y, qid)
    return folder


# label, convention, what the metric says
BAD_LABELS = {
    "negative": ("-1", "skrank", "y_true has negative labels (min -1)"),
    "negative-linear-gain": ("-1", "sklearn", "NDCG is not defined for negative gains"),
    "nan": ("nan", "skrank", "y_true contains NaN or infinity (1 of"),
    "inf": ("inf", "letor", "y_true contains NaN or infinity (1 of"),
    "over-1000": ("2000", "skrank", "y_true has labels up to 2000"),
}


@pytest.mark.parametrize("case", list(BAD_LABELS))
def test_evaluate_rejects_labels_the_metrics_cannot_score(case, held_out_file, tmp_path, capsys):
    label, convention, reason = BAD_LABELS[case]
    data = _relabel(held_out_file, label, tmp_path / "bad.txt")
    scores = tmp_path / "scores.txt"
    scores.write_text("0.5\n" * load_letor(held_out_file)[0].shape[0])
    message = _fails(["evaluate", data, scores, "--convention", convention], capsys)
    assert message.startswith(f"{data}: its labels cannot be scored (convention {convention!r}): ")
    assert reason in message


@pytest.mark.parametrize("case", ["negative", "nan", "over-1000"])
def test_compare_rejects_labels_the_metrics_cannot_score(case, train_file, tmp_path, capsys):
    label, _, reason = BAD_LABELS[case]
    data = _relabel(train_file, label, tmp_path / "bad.txt")
    message = _fails(["compare", data, "--cv", "2", "--rankers", "Ridge"], capsys)
    assert message.startswith(f"{data}: its labels cannot be scored (convention 'skrank'): ")
    assert reason in message


@pytest.mark.parametrize("split, label, reason", [
    ("train", "nan", "1 of {n} labels are NaN or infinite; labels must be finite"),
    ("vali", "2000", "its labels cannot be scored (convention 'letor'): y_true has labels up to 2000"),
    ("test", "-1", "its labels cannot be scored (convention 'letor'): y_true has negative labels"),
])
def test_compare_letor_rejects_labels_the_metrics_cannot_score(split, label, reason, tmp_path,
                                                               capsys):
    fold = _write_fold(tmp_path / "data" / "Fold1")
    bad = fold / f"{split}.txt"
    _relabel(bad, label, bad)
    n = load_letor(bad)[0].shape[0] if split == "train" else 0
    message = _fails(["compare", tmp_path / "data", "--rankers", "Ridge"], capsys)
    assert message.startswith(f"{bad}: ") and reason.format(n=n) in message


def test_compare_rejects_n_jobs_0_as_a_usage_error(train_file, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["compare", str(train_file), "--rankers", "Ridge", "--n-jobs", "0"])
    assert exc.value.code == 2  # argparse's usage error, like --cv 1 or --k 0
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.startswith("usage: ")
    assert err.splitlines()[-1] == (
        "python -m skrank compare: error: argument --n-jobs: expected a nonzero integer "
        "(N workers, or -1 for all CPUs); got '0'"
    )
    assert "loaded" not in err  # rejected before the data are read


@pytest.mark.parametrize("text, expected", [("1", 1), ("4", 4), ("-1", -1), ("-2", -2)])
def test_n_jobs_takes_joblib_counts(text, expected):
    assert _n_jobs(text) == expected


@pytest.mark.parametrize("missing", ["train", "vali", "test"])
def test_compare_rejects_an_incomplete_fold_before_running_any(missing, tmp_path, capsys):
    root = tmp_path / "data"
    _write_fold(root / "Fold1")
    (_write_fold(root / "Fold2", seed=1) / f"{missing}.txt").unlink()
    message = _fails(["compare", root, "--rankers", "Ridge"], capsys)
    assert message == (
        f"{root / 'Fold2'}: incomplete LETOR fold, no {missing}.txt or {missing}.txt.gz"
    )


def test_compare_rejects_an_incomplete_fold_folder(tmp_path, capsys):
    fold = _write_fold(tmp_path / "Fold3")
    (fold / "vali.txt").unlink()
    (fold / "test.txt").unlink()
    message = _fails(["compare", fold, "--rankers", "Ridge"], capsys)
    assert message == (
        f"{fold.resolve()}: incomplete LETOR fold, no vali.txt or vali.txt.gz; "
        "no test.txt or test.txt.gz"
    )


@pytest.mark.parametrize("layout", ["fold folder", "data set"])
def test_compare_rejects_a_fold_not_named_fold1_to_fold5(layout, tmp_path, capsys):
    if layout == "fold folder":
        fold = _write_fold(tmp_path / "mydata").resolve()
        data = fold
    else:
        fold = _write_fold(tmp_path / "data" / "Fold6")
        data = tmp_path / "data"
    message = _fails(["compare", data, "--rankers", "Ridge"], capsys)
    assert message == (
        f"{fold}: a LETOR fold folder is named one of Fold1 .. Fold5; got {fold.name!r}"
    )


def test_compare_runs_on_the_current_fold_folder(tmp_path, monkeypatch, capsys):
    """``compare .`` inside Fold1: the fold is named by its resolved path."""
    monkeypatch.chdir(_write_fold(tmp_path / "Fold1"))
    assert main(["compare", ".", "--rankers", "Ridge"]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("LETOR protocol on 1 fold(s) of .")
    assert "[Fold1] Ridge: chose" in captured.err


def _gzip_damaged(text, how):
    """``text`` gzipped, then damaged ``how``."""
    data = bytearray(gzip.compress(text.encode()))
    if how == "truncated":
        return bytes(data[: len(data) // 2])
    if how == "corrupt":  # first deflate block of the reserved type 3
        data[10] = 0x07
        return bytes(data)
    return b"plain text, not gzip\n" * 4  # "not gzip"


# how the gzip is damaged, what the message says after the file's name
DAMAGED_GZIP = {
    "truncated": "is truncated: its gzip data end before the end-of-stream marker.",
    "corrupt": "is a corrupt gzip file (error: Error -3 while decompressing data: "
               "invalid block type).",
    "not gzip": "is not a valid gzip file",
}


@pytest.mark.parametrize("how", list(DAMAGED_GZIP))
@pytest.mark.parametrize("command", ["fit", "predict", "evaluate", "compare"])
def test_damaged_gzip_is_a_one_line_error(command, how, train_file, tmp_path, capsys):
    damaged = tmp_path / "data.txt.gz"
    damaged.write_bytes(_gzip_damaged(train_file.read_text(), how))
    model, scores = tmp_path / "model.joblib", tmp_path / "scores.txt"
    assert main(["fit", str(train_file), "--ranker", "Ridge", "--out", str(model)]) == 0
    scores.write_text("0.5\n")
    capsys.readouterr()
    argv = {
        "fit": ["fit", damaged, "--ranker", "Ridge", "--out", tmp_path / "m2.joblib"],
        "predict": ["predict", model, damaged],
        "evaluate": ["evaluate", damaged, scores],
        "compare": ["compare", damaged, "--cv", "2", "--rankers", "Ridge"],
    }[command]
    message = _fails(argv, capsys)
    assert message.startswith(f"The file '{damaged}' {DAMAGED_GZIP[how]}")


@pytest.mark.parametrize("split", ["train", "test"])
def test_compare_names_the_damaged_file_of_a_fold(split, tmp_path, capsys):
    fold = _write_fold(tmp_path / "data" / "Fold1")
    plain = fold / f"{split}.txt"
    damaged = fold / f"{split}.txt.gz"
    damaged.write_bytes(_gzip_damaged(plain.read_text(), "truncated"))
    plain.unlink()
    message = _fails(["compare", tmp_path / "data", "--rankers", "Ridge"], capsys)
    assert message == (
        f"cannot read the LETOR fold {fold}: The file '{damaged}' is truncated: its "
        "gzip data end before the end-of-stream marker."
    )


def test_compare_reports_a_fold_error_raised_in_a_worker(tmp_path, capsys):
    """With --n-jobs 2 the folds load in joblib workers; the error still reaches the CLI."""
    root = tmp_path / "data"
    _write_fold(root / "Fold1")
    bad = _write_fold(root / "Fold2", seed=1) / "vali.txt"
    _relabel(bad, "nan", bad)
    message = _fails(["compare", root, "--rankers", "Ridge", "--n-jobs", "2"], capsys)
    assert message.startswith(f"{bad}: its labels cannot be scored (convention 'letor'): ")


@pytest.fixture
def model_file(train_file, tmp_path, capsys):
    """A Ridge model saved by ``fit``."""
    model = tmp_path / "model.joblib"
    assert main(["fit", str(train_file), "--ranker", "Ridge", "--out", str(model)]) == 0
    capsys.readouterr()
    return model


# what the file holds, the end of the message
NOT_MODELS = {
    "LETOR text": (None, "joblib cannot load it (IndexError: pop from empty list)"),
    "empty file": (b"", "the file is empty"),
    "joblib list": ("joblib", "it holds a list"),
    "pickled list": ("pickle", "it holds a list"),
    "other dict": ({"something": "else"}, "it holds a dict without a skrank 'format'"),
    "truncated model": ("truncated", "joblib cannot load it ("),  # the error varies
    "model without estimator": ("no estimator", "it has no 'estimator'"),
    "estimator edited to a string": (("estimator", "Ridge"),
                                     "its 'estimator' is a str without predict"),
    "n_features edited": (("n_features", -1),
                          "its 'n_features' is -1, not a positive integer"),
}


@pytest.mark.parametrize("case", list(NOT_MODELS))
def test_predict_rejects_a_file_that_is_not_a_model(case, model_file, train_file, tmp_path,
                                                    capsys):
    content, reason = NOT_MODELS[case]
    path = tmp_path / "other.joblib"
    if content is None:
        path = train_file
    elif isinstance(content, bytes):
        path.write_bytes(content)
    elif content == "joblib":
        joblib.dump([1, 2, 3], path)
    elif content == "pickle":
        path.write_bytes(pickle.dumps([1, 2, 3]))
    elif content == "truncated":
        path.write_bytes(model_file.read_bytes()[:200])
    elif content == "no estimator":
        payload = joblib.load(model_file)
        del payload["estimator"]
        joblib.dump(payload, path)
    elif isinstance(content, tuple):  # a model file with one entry edited
        payload = joblib.load(model_file)
        payload[content[0]] = content[1]
        joblib.dump(payload, path)
    else:
        joblib.dump(content, path)
    message = _fails(["predict", path, train_file], capsys)
    assert message.startswith(
        f"{path} is not a skrank model saved by 'python -m skrank fit' "
        f"(a joblib file of format {MODEL_FORMAT!r}): {reason}"
    )


@pytest.mark.parametrize("version", ["skrank-model/0", "skrank-model/2"])
def test_predict_rejects_a_model_of_another_format(version, model_file, train_file, capsys):
    payload = joblib.load(model_file)
    payload["format"] = version
    joblib.dump(payload, model_file)
    message = _fails(["predict", model_file, train_file], capsys)
    assert message == (
        f"{model_file} is a skrank model of format {version!r}; skrank {__version__} "
        f"reads {MODEL_FORMAT!r}: fit the model again with this version"
    )


@pytest.mark.parametrize("command", ["fit", "predict-model", "predict-file", "evaluate-file",
                                     "evaluate-scores"])
def test_a_folder_given_as_a_file(command, model_file, train_file, tmp_path, capsys):
    folder = tmp_path / "folder"
    folder.mkdir()
    argv = {
        "fit": ["fit", folder, "--ranker", "Ridge", "--out", tmp_path / "m"],
        "predict-model": ["predict", folder, train_file],
        "predict-file": ["predict", model_file, folder],
        "evaluate-file": ["evaluate", folder, train_file],
        "evaluate-scores": ["evaluate", train_file, folder],
    }[command]
    assert _fails(argv, capsys) == f"{folder} is a folder; expected a file"


@pytest.mark.parametrize("command", ["fit", "predict"])
@pytest.mark.parametrize("out", ["folder", "missing folder"])
def test_an_output_that_cannot_be_written_is_found_first(command, out, model_file, train_file,
                                                         tmp_path, capsys):
    target = tmp_path if out == "folder" else tmp_path / "missing" / "out.txt"
    argv = {
        "fit": ["fit", train_file, "--ranker", "Ridge", "--out", target],
        "predict": ["predict", model_file, train_file, "--out", target],
    }[command]
    message = _fails(argv, capsys)
    assert message == {
        "folder": f"cannot write {target}: it is a folder; expected a file name",
        "missing folder": f"cannot write {target}: no such folder {target.parent}",
    }[out]


def test_a_warning_is_one_line(train_file, tmp_path, capsys):
    """The loader's warning of non-finite values, without Python's source line."""
    lines = train_file.read_text().splitlines(keepends=True)
    first = lines[0].split(" ")
    first[2] = first[2].split(":")[0] + ":inf"  # the first feature of row 1
    lines[0] = " ".join(first)
    data = tmp_path / "inf.txt"
    data.write_text("".join(lines))
    scores = tmp_path / "scores.txt"
    scores.write_text("0.5\n" * len(lines))
    assert main(["evaluate", str(data), str(scores)]) == 0
    err = capsys.readouterr().err.splitlines()
    warned = [line for line in err if line.startswith(f"{PROG} evaluate: warning:")]
    assert warned == [
        f"{PROG} evaluate: warning: The file '{data}' has 1 non-finite feature value "
        "(the first on line 1): NaN or infinity, loaded as they are."
    ]
    assert not any("UserWarning" in line or "Traceback" in line for line in err), err


# ----------------------------------------------------------------------
# A ranker that fails on the data, or runs out of memory
def _with_feature(path, value, out):
    """``path``'s LETOR text with the first feature of row 1 set to ``value``, at ``out``."""
    lines = path.read_text().splitlines(keepends=True)
    first = lines[0].split(" ")
    first[2] = first[2].split(":")[0] + f":{value}"
    lines[0] = " ".join(first)
    out.write_text("".join(lines))
    return out


# the feature value, the start of the library's message
BAD_FEATURES = {
    "nan": ("nan", "Input X contains NaN. Ridge does not accept missing values"),
    "inf": ("inf", "Input X contains infinity or a value too large for dtype('float64')."),
}


@pytest.mark.parametrize("n_jobs", [[], ["--n-jobs", "2"]], ids=["sequential", "workers"])
@pytest.mark.parametrize("case", list(BAD_FEATURES))
def test_compare_names_a_ranker_that_fails_on_a_file(case, n_jobs, train_file, tmp_path,
                                                     capsys):
    """Was the library's traceback; the CV folds may run in workers."""
    value, reason = BAD_FEATURES[case]
    data = _with_feature(train_file, value, tmp_path / "bad.txt")
    message = _fails(["compare", data, "--cv", "2", "--rankers", "Ridge", *n_jobs], capsys)
    assert message.startswith(f"Ridge on {data} failed: {reason}")


def test_compare_names_a_ranker_that_cannot_fit_the_labels(train_file, tmp_path, capsys):
    """LogRank's own ValueError, all labels 0, was a traceback."""
    lines = train_file.read_text().splitlines(keepends=True)
    data = tmp_path / "zeros.txt"
    data.write_text("".join("0 " + line.split(" ", 1)[1] for line in lines))
    message = _fails(["compare", data, "--cv", "2", "--rankers", "LogRank"], capsys)
    assert message.startswith(
        f"LogRank on {data} failed: relevance_threshold=1 is above every label"
    )


@pytest.mark.parametrize("n_jobs", [[], ["--n-jobs", "2"]], ids=["sequential", "workers"])
@pytest.mark.parametrize("case", list(BAD_FEATURES))
def test_compare_letor_names_a_ranker_that_fails_on_a_fold(case, n_jobs, tmp_path, capsys):
    """With --n-jobs 2 the folds run in joblib workers."""
    value, reason = BAD_FEATURES[case]
    root = tmp_path / "data"
    _write_fold(root / "Fold1")
    fold = _write_fold(root / "Fold2", seed=1)
    _with_feature(fold / "train.txt", value, fold / "train.txt")
    message = _fails(["compare", root, "--rankers", "Ridge", *n_jobs], capsys)
    assert message.startswith(f"Ridge(alpha=0.1) on {fold} failed: {reason}")


def _raise(exc):
    """A ``fit`` or ``predict`` that raises ``exc``."""
    def method(*args, **kwargs):
        raise exc
    return method


@pytest.mark.parametrize("error", ["numpy", "bare"])
def test_fit_out_of_memory_is_one_line(error, train_file, tmp_path, monkeypatch, capsys):
    """hidden_layer_sizes=(1000000000,) gave numpy's traceback."""
    exc = array_memory_error() if error == "numpy" else MemoryError()
    monkeypatch.setattr(ListNetRanker, "fit", _raise(exc))
    model = tmp_path / "model.joblib"
    message = _fails(["fit", train_file, "--ranker", "ListNet", "--out", model,
                      "--param", "hidden_layer_sizes=(1000000000,)"], capsys)
    reason = ": Unable to allocate 1.00 EiB for an array with shape" if error == "numpy" else ";"
    # the parameters that differ from ListNetRanker's defaults
    assert message.startswith(
        f"not enough memory to fit ListNet(hidden_layer_sizes=(1000000000,), "
        f"random_state=0){reason}"
    )
    assert message.endswith("; lower the sizes in --param or use a smaller file")
    assert not model.exists()


def test_predict_out_of_memory_is_one_line(model_file, train_file, monkeypatch, capsys):
    """Was numpy's traceback."""
    monkeypatch.setattr("skrank._cli.predict_scores", _raise(MemoryError("Unable to allocate")))
    message = _fails(["predict", model_file, train_file], capsys)
    assert message == (f"not enough memory to score {train_file} with the Ridge of "
                       f"{model_file}: Unable to allocate; score a smaller file")


@pytest.mark.parametrize("layout", ["file", "fold"])
def test_compare_out_of_memory_is_one_line(layout, train_file, tmp_path, monkeypatch, capsys):
    """Was numpy's traceback."""
    monkeypatch.setattr(Ridge, "fit", _raise(MemoryError("Unable to allocate 1 TiB")))
    if layout == "file":
        data, argv, what = train_file, ["--cv", "2"], "Ridge"
    else:
        data, argv, what = _write_fold(tmp_path / "data" / "Fold1"), [], "Ridge(alpha=0.1)"
    message = _fails(["compare", data, "--rankers", "Ridge", *argv], capsys)
    where = data.resolve() if layout == "fold" else data  # a fold folder is resolved
    assert message == (f"not enough memory to run {what} on {where}: Unable to allocate 1 TiB; "
                       "use a smaller file or fewer --n-jobs")


#: A file whose line 2 has feature 3000: a dense X of 2 x 3000 x 8 = 48,000 bytes.
_WIDE = "0 qid:1 1:0.5\n1 qid:1 2:0.1 3000:0.5\n"
_WIDE_REFUSED = ("Line 2 of {path!r} has the feature index 3000, the largest, which makes a "
                 "dense X of 2 rows x 3000 columns of float64, 46.9 KiB, more than the 39.1 KiB "
                 "of memory available now; ")


@pytest.mark.parametrize("command", ["fit", "fit --stream", "evaluate", "compare"])
def test_a_file_too_wide_for_the_memory_is_one_line(command, tmp_path, memory_available,
                                                   capsys, monkeypatch):
    """A dense X beyond the memory was the OOM killer's, then the loader's traceback."""
    path = tmp_path / "wide.txt"
    path.write_text(_WIDE)
    memory_available(40_000)
    argv = {
        "fit": ["fit", path, "--ranker", "ListNet", "--out", tmp_path / "m.joblib"],
        "fit --stream": ["fit", path, "--ranker", "ListNet", "--stream", "--out",
                         tmp_path / "m.joblib"],
        "evaluate": ["evaluate", path, "-"],
        "compare": ["compare", _write_fold(tmp_path / "data" / "Fold1"), "--rankers", "Ridge"],
    }[command]
    if command == "evaluate":
        monkeypatch.setattr("sys.stdin", io.StringIO("1\n2\n"))
    if command == "compare":
        path = tmp_path / "data" / "Fold1" / "train.txt"
        path.write_text(_WIDE)
    message = _fails(argv, capsys)
    refused = _WIDE_REFUSED.format(path=str(path))
    if command == "fit --stream":
        assert message == (
            "not enough memory to fit ListNet(random_state=0): " + refused + "pass "
            "--n-features N (the data set's width), beyond which a feature is an error naming "
            "its line, or a smaller --chunk-rows.")
        return
    what = (f"read the LETOR fold {path.parent.resolve()}" if command == "compare"
            else f"read {path}")
    assert message == (
        f"not enough memory to {what}: " + refused + "the command line reads X dense, as wide "
        "as the largest feature index: fix that line if its index is a mistake.")


@pytest.mark.parametrize("argv", [["compare", "--cv", "2"], ["compare-fold"], ["fit"]])
def test_a_bug_in_a_fit_still_shows_its_traceback(argv, train_file, tmp_path, monkeypatch):
    """Only the library's input errors and MemoryError are one line; not an AttributeError."""
    monkeypatch.setattr(Ridge, "fit", _raise(AttributeError("a bug")))
    data = _write_fold(tmp_path / "data" / "Fold1") if argv[0] == "compare-fold" else train_file
    argv = {
        "compare": ["compare", data, "--rankers", "Ridge", *argv[1:]],
        "compare-fold": ["compare", data, "--rankers", "Ridge"],
        "fit": ["fit", data, "--ranker", "Ridge", "--out", tmp_path / "m.joblib"],
    }[argv[0]]
    with pytest.raises(AttributeError, match="a bug"):
        main([str(a) for a in argv])


# ----------------------------------------------------------------------
# Progress, flags and the fit log
class _LoudRidge(Ridge):
    """A Ridge whose fit writes ``<fit>`` on stderr: the order of fits and progress lines."""

    def fit(self, X, y, sample_weight=None):
        print("<fit>", file=sys.stderr, flush=True)
        return super().fit(X, y, sample_weight=sample_weight)


@pytest.fixture
def loud_ridge(monkeypatch):
    """The registry's Ridge replaced by :class:`_LoudRidge`, with a grid of two points."""
    from skrank.rankers._registry import RANKERS, RankerEntry

    entry = RankerEntry(lambda **p: _LoudRidge(**p), {"alpha": [0.1, 10.0]})
    monkeypatch.setitem(RANKERS, "Ridge", entry)


def _progress_lines(err, prefix):
    """Indices of the lines of ``err`` that start with ``prefix``, and of the ``<fit>`` lines."""
    lines = err.splitlines()
    return ([i for i, line in enumerate(lines) if line.startswith(prefix)],
            [i for i, line in enumerate(lines) if line == "<fit>"])


def test_compare_cv_reports_each_fold_as_it_ends(loud_ridge, train_file, capsys):
    """The issue: nothing for 119 s, then all lines at once; now a line per fold."""
    assert main(["compare", str(train_file), "--cv", "3", "--rankers", "Ridge"]) == 0
    captured = capsys.readouterr()
    folds, fits = _progress_lines(captured.err, "[Ridge] fold ")
    assert len(folds) == 3 and len(fits) == 3
    assert folds[0] < fits[-1]  # fold 1's line came before the last fold was fitted
    assert folds == [fit + 1 for fit in fits]  # each line right after its fold
    lines = captured.err.splitlines()
    for k, i in enumerate(folds, start=1):
        estimate = r"; (under 1 s|about \d+ s) left \(estimate\)" if k < 3 else ""
        assert re.fullmatch(rf"\[Ridge\] fold {k}/3: NDCG@10 \d\.\d{{4}}, fit \d+\.\d\d s"
                            + estimate, lines[i]), lines[i]
    assert captured.out.startswith("3-fold grouped CV on")  # the table alone on stdout


def test_compare_letor_reports_each_grid_point_as_it_ends(loud_ridge, tmp_path, capsys):
    root = tmp_path / "data"
    _write_fold(root / "Fold1")
    _write_fold(root / "Fold2", seed=1)
    assert main(["compare", str(root), "--rankers", "Ridge"]) == 0
    captured = capsys.readouterr()
    points, fits = _progress_lines(captured.err, "[Fold")
    lines = captured.err.splitlines()
    assert len(fits) == 4  # 2 folds x 2 grid points
    assert [re.split(r":| in \d", lines[i])[0] for i in points] == [
        "[Fold1] read 6 train queries, 6 vali queries, 6 test queries",
        "[Fold1] Ridge(alpha=0.1) 1/2", "[Fold1] Ridge(alpha=10.0) 2/2", "[Fold1] Ridge",
        "[Fold2] read 6 train queries, 6 vali queries, 6 test queries",
        "[Fold2] Ridge(alpha=0.1) 1/2", "[Fold2] Ridge(alpha=10.0) 2/2", "[Fold2] Ridge",
    ]
    # each grid point's line right after its fit; fold 1's choice before fold 2's fits
    assert [points[1], points[2], points[5], points[6]] == [fit + 1 for fit in fits]
    assert points[3] < fits[2]
    assert re.fullmatch(r"\[Fold1\] Ridge\(alpha=0\.1\) 1/2: vali NDCG@10 \d\.\d{4}, "
                        r"fit \d+\.\d\d s; (under 1 s|about \d+ s) left \(estimate\)",
                        lines[points[1]]), lines[points[1]]
    assert re.fullmatch(r"\[Fold1\] Ridge: chose \{'alpha': (0\.1|10\.0)\} on vali; "
                        r"test NDCG@10 \d\.\d{4}", lines[points[3]]), lines[points[3]]
    assert lines[points[6]].endswith(" s")  # the last step: no time left to estimate
    assert captured.out.startswith("LETOR protocol on 2 fold(s) of ")


def test_fit_into_a_missing_folder_fails_before_reading_or_fitting(train_file, tmp_path,
                                                                   monkeypatch, capsys):
    """The issue: ``fit --out /nonexistent/x.joblib`` fitted first, then failed."""
    calls = []
    monkeypatch.setattr(Ridge, "fit", lambda self, *a, **k: calls.append("fit"))
    monkeypatch.setattr("skrank._cli.load_letor", lambda *a, **k: calls.append("load"))
    target = tmp_path / "nonexistent" / "x.joblib"
    assert main(["fit", str(train_file), "--ranker", "Ridge", "--out", str(target)]) == 1
    err = capsys.readouterr().err
    assert err == (f"{PROG} fit: error: cannot write {target}: no such folder "
                   f"{target.parent}\n")  # no 'loaded' nor 'fitting' line before it
    assert calls == []


@pytest.mark.parametrize("name, params, shown", [
    ("Ridge", [], "Ridge()"),
    ("Ridge", ["alpha=1.0"], "Ridge()"),  # the default, given: not a change
    ("ListNet", ["max_iter=3", "alpha=0.01"], "ListNet(alpha=0.01, max_iter=3, random_state=0)"),
    ("BoltzRank2", ["max_iter=1"],
     "BoltzRank2(hidden_layer_sizes=(3,), max_iter=1, pairwise_hidden_layer_sizes=(5,), "
     "random_state=0)"),
])
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_fit_names_the_parameters_that_differ_from_the_defaults(name, params, shown, train_file,
                                                                tmp_path, capsys):
    """The issue: 'fitting BoltzRank2() ...' hid its layer sizes and random_state=0."""
    argv = ["fit", str(train_file), "--ranker", name, "--out", str(tmp_path / "m.joblib")]
    assert main(argv + [a for p in params for a in ("--param", p)]) == 0
    assert f"\nfitting {shown} ...\n" in capsys.readouterr().err


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_verbose_epoch_lines_go_to_stderr(train_file, held_out_file, tmp_path, capsys):
    """The issue: verbose=1 mixed epoch lines with predict's scores on stdout."""
    model = tmp_path / "model.joblib"
    assert main(["fit", str(train_file), "--ranker", "ListNet", "--out", str(model),
                 "--param", "verbose=1", "--param", "max_iter=3"]) == 0
    captured = capsys.readouterr()
    assert captured.out == ""
    epochs = [line for line in captured.err.splitlines() if ", iteration " in line]
    assert len(epochs) == 3 and "iteration 1, loss = " in epochs[0]
    assert main(["predict", str(model), str(held_out_file)]) == 0
    captured = capsys.readouterr()
    scores = [float(line) for line in captured.out.splitlines()]  # nothing else
    assert len(scores) == load_letor(held_out_file, n_features=N_FEATURES)[0].shape[0]


def test_verbose_lines_of_joblib_workers_go_to_stderr(train_file, tmp_path):
    """Worker processes write to file descriptor 1, past Python's sys.stdout."""
    model = tmp_path / "model.joblib"
    result = subprocess.run(
        [sys.executable, "-m", "skrank", "fit", str(train_file), "--ranker", "ListNet",
         "--out", str(model), "--param", "verbose=1", "--param", "max_iter=2",
         "--param", "n_init=2", "--param", "n_jobs=2"],
        capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    runs = {line.split(",")[0] for line in result.stderr.splitlines() if ", iteration " in line}
    assert runs == {"Run 0", "Run 1"}, result.stderr


def test_version():
    result = subprocess.run([sys.executable, "-m", "skrank", "--version"],
                            capture_output=True, text=True)
    assert result.returncode == 0
    assert result.stdout == f"skrank {__version__}\n"


@pytest.fixture
def zero_based_file(tmp_path):
    """make_ranking's data written zero-based: feature 0 is there as ``0:``."""
    X, y, qid = make_ranking(n_queries=12, n_docs=(3, 6), n_features=N_FEATURES, random_state=2)
    path = tmp_path / "zero.txt"
    dump_svmlight_file(X, y, str(path), query_id=qid, zero_based=True)
    assert " 0:" in path.read_text()
    return path


def test_zero_based_files(zero_based_file, tmp_path, capsys):
    model, data = tmp_path / "model.joblib", str(zero_based_file)
    fit = ["fit", data, "--ranker", "Ridge", "--out", str(model)]
    message = _fails(fit, capsys)
    assert message.startswith(f"Line 1 of '{data}' has the feature index 0, but ")
    assert message.endswith("pass --zero-based.")
    assert not model.exists()
    assert main(fit + ["--zero-based"]) == 0
    assert joblib.load(model)["n_features"] == N_FEATURES
    assert joblib.load(model)["zero_based"] is True
    capsys.readouterr()
    X, y, _ = load_letor(zero_based_file, zero_based=True)
    expected = Ridge().fit(X, y).predict(X)
    for flag in ([], ["--zero-based"]):  # the model says how its files are read
        assert main(["predict", str(model), data, *flag]) == 0
        captured = capsys.readouterr()
        np.testing.assert_allclose([float(s) for s in captured.out.split()], expected,
                                   rtol=1e-12)
        assert ("with zero-based feature indices, as the model's training file"
                in captured.err) is not flag
    scores = tmp_path / "scores.txt"
    scores.write_text("".join(f"{s}\n" for s in expected))
    evaluate = ["evaluate", data, str(scores)]
    assert _fails(evaluate, capsys).endswith("pass --zero-based.")
    assert main(evaluate + ["--zero-based"]) == 0
    assert capsys.readouterr().out.startswith("NDCG@1\t")
    compare = ["compare", data, "--cv", "2", "--rankers", "Ridge"]
    assert _fails(compare, capsys).endswith("pass --zero-based.")
    assert main(compare + ["--zero-based"]) == 0
    assert capsys.readouterr().out.startswith(f"2-fold grouped CV on {data}")


def test_predict_reads_files_as_the_model_was_fitted(tmp_path, capsys):
    """A zero-based file whose feature 0 is never stored (always 0) loads one-based too,
    shifted by a column, without an error: predict must read it as fit did."""
    X, y, qid = make_ranking(n_queries=12, n_docs=(3, 6), n_features=N_FEATURES, random_state=2)
    X[:, 0] = 0.0  # dump_svmlight_file leaves zeros out: no "0:" in the file
    data = tmp_path / "zero.txt"
    dump_svmlight_file(X, y, str(data), query_id=qid, zero_based=True)
    assert " 0:" not in data.read_text()
    model = tmp_path / "model.joblib"
    assert main(["fit", str(data), "--ranker", "Ridge", "--zero-based",
                 "--out", str(model)]) == 0
    capsys.readouterr()
    assert main(["predict", str(model), str(data)]) == 0
    scores = [float(s) for s in capsys.readouterr().out.split()]
    np.testing.assert_allclose(scores, Ridge().fit(X, y).predict(X), rtol=1e-10)


def test_zero_based_fold(tmp_path, capsys):
    fold = tmp_path / "data" / "Fold1"
    fold.mkdir(parents=True)
    for k, split in enumerate(("train", "vali", "test")):
        X, y, qid = make_ranking(n_queries=6, n_docs=(3, 6), n_features=N_FEATURES,
                                 random_state=k)
        dump_svmlight_file(X, y, str(fold / f"{split}.txt"), query_id=qid, zero_based=True)
    message = _fails(["compare", fold.parent, "--rankers", "Ridge"], capsys)
    assert message.startswith(f"cannot read the LETOR fold {fold}: ")
    assert message.endswith("pass --zero-based.")
    assert main(["compare", str(fold.parent), "--rankers", "Ridge", "--zero-based"]) == 0
    assert "Ridge" in capsys.readouterr().out


def test_zero_based_is_for_data(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["compare", "--zero-based"])
    assert exc.value.code == 2
    assert "--zero-based reads DATA; the bundled sample is given without it" in (
        capsys.readouterr().err)


def _cells(out):
    """The printed table's title and its rows: name -> [(mean, std), ...]."""
    title, header, *rows = out.strip().splitlines()
    table = {}
    for row in rows:
        name, *cells = row.split()
        numbers = [float(c) for c in cells if c != "±"]
        table[name] = list(zip(numbers[0:-1:2], numbers[1:-1:2]))
    return title, table


def test_compare_cv_follows_the_convention(tmp_path, capsys):
    from skrank.metrics import make_ranking_scorer

    # noisy labels: Ridge's NDCG is far from 1, where the conventions differ
    X, y, qid = make_ranking(n_queries=24, n_docs=(3, 8), n_features=N_FEATURES, noise=2.0,
                             random_state=0)
    train_file = _write_letor(tmp_path / "noisy.txt", X, y, qid)
    argv = ["compare", str(train_file), "--cv", "2", "--rankers", "Ridge"]
    assert main(argv + ["--convention", "trec_eval"]) == 0
    title, table = _cells(capsys.readouterr().out)
    assert title == f"2-fold grouped CV on {train_file}, 'trec_eval' convention: mean ± std over folds"
    X, y, qid = load_letor(train_file)
    scoring = {"ndcg@10": make_ranking_scorer("ndcg", k=10, convention="trec_eval"),
               "map": make_ranking_scorer("map", convention="trec_eval")}
    expected = cross_validate_ranker(Ridge(), X, y, qid=qid, cv=2, scoring=scoring)
    ndcg10 = COLUMNS.index("NDCG@10")
    assert table["Ridge"][ndcg10][0] == pytest.approx(expected["test_ndcg@10"].mean(), abs=5e-5)
    assert table["Ridge"][-1][0] == pytest.approx(expected["test_map"].mean(), abs=5e-5)
    assert main(argv) == 0  # default: skrank's convention, which differs here
    title, default = _cells(capsys.readouterr().out)
    assert "'skrank' convention" in title
    assert default["Ridge"][ndcg10][0] != pytest.approx(table["Ridge"][ndcg10][0], abs=0.01)


def test_compare_letor_follows_the_convention(tmp_path, capsys):
    """One convention chooses the grid point on vali and scores test."""
    root = tmp_path / "data"
    # queries of 10 documents or more: LETOR's NDCG@10 of a shorter one is 0
    folds = [_write_fold(root / "Fold1", n_docs=(10, 16)),
             _write_fold(root / "Fold2", seed=1, n_docs=(10, 16))]
    alphas = [0.1, 1.0, 10.0, 100.0, 1000.0]
    found = {}
    for convention in ("letor", "trec_eval"):
        argv = ["compare", str(root), "--rankers", "Ridge"]
        assert main(argv + ["--convention", convention]) == 0
        captured = capsys.readouterr()
        title, table = _cells(captured.out)
        logged = [float(re.search(r"vali NDCG@10 ([0-9.]+)", line)[1])
                  for line in captured.err.splitlines() if "vali NDCG@10" in line]
        assert f", {convention!r} convention (also choosing on vali): " in title
        expected, expected_vali = [], []
        for fold in folds:
            (X, y, _), (Xv, yv, qv), (Xt, yt, qt) = (
                load_letor(fold / f"{s}.txt") for s in ("train", "vali", "test"))
            models = [Ridge(alpha=a).fit(X, y) for a in alphas]
            vali = [ndcg_score(yv, m.predict(Xv), qid=qv, k=10, convention=convention)
                    for m in models]
            expected_vali += vali
            best = models[int(np.argmax(vali))]
            expected.append(ndcg_score(yt, best.predict(Xt), qid=qt, k=10,
                                       convention=convention))
        # each grid point is scored on vali in the convention, which picks the best
        np.testing.assert_allclose(logged, expected_vali, atol=5e-5)
        found[convention] = table["Ridge"][COLUMNS.index("NDCG@10")][0]
        assert found[convention] == pytest.approx(np.mean(expected), abs=5e-5)
    assert found["letor"] != found["trec_eval"]  # the flag changes the numbers
    assert main(["compare", str(root), "--rankers", "Ridge"]) == 0  # default: letor
    assert "'letor' convention" in capsys.readouterr().out


# ----------------------------------------------------------------------------
# Files larger than memory: fit --stream, predict --chunk-rows
def test_fit_stream_is_fit_stream_of_the_file(train_file, tmp_path, capsys):
    from skrank.stream import fit_stream

    model, vali = tmp_path / "model.joblib", tmp_path / "vali.txt"
    _write_letor(vali, *make_ranking(n_queries=6, n_docs=(3, 8), n_features=N_FEATURES,
                                     random_state=2))
    argv = ["fit", train_file, "--ranker", "ListNet", "--out", model, "--stream",
            "--chunk-rows", "20", "--epochs", "4", "--vali", vali, "--param", "verbose=1"]
    assert main([str(a) for a in argv]) == 0
    captured = capsys.readouterr()
    assert captured.out == ""  # the epoch lines go to stderr
    assert "read in chunks of about 20 rows at every epoch (at most 4)" in captured.err
    assert re.search(r"^Epoch 1: \d+ rows, 24 queries, loss = .*, validation ndcg@10 = ",
                     captured.err, flags=re.M)
    fitted = joblib.load(model)["estimator"]
    expected = ListNetRanker(random_state=0, max_iter=4)
    X_val, y_val, qid_val = load_letor(vali)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        fit_stream(expected, str(train_file), chunk_rows=20, X_val=X_val, y_val=y_val,
                   qid_val=qid_val)
    np.testing.assert_array_equal(fitted.coef_, expected.coef_)
    assert fitted.n_iter_ == expected.n_iter_


def test_predict_chunk_rows_writes_the_scores_of_predict(train_file, tmp_path, capsys):
    model, whole, chunked = (tmp_path / n for n in ("model.joblib", "whole.txt", "chunked.txt"))
    assert main(["fit", str(train_file), "--ranker", "ListNet", "--out", str(model)]) == 0
    assert main(["predict", str(model), str(train_file), "--out", str(whole)]) == 0
    chunked.write_text("an older file\n")
    assert main(["predict", str(model), str(train_file), "--out", str(chunked),
                 "--chunk-rows", "15"]) == 0
    assert "in chunks of about 15 rows" in capsys.readouterr().err
    np.testing.assert_allclose(np.loadtxt(chunked), np.loadtxt(whole), rtol=1e-12, atol=0)
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_predict_chunk_rows_keeps_the_old_scores_on_error(train_file, held_out_file, tmp_path,
                                                          capsys):
    """A file whose queries are interleaved cannot be streamed: --out is left as it was."""
    model, out = tmp_path / "model.joblib", tmp_path / "scores.txt"
    assert main(["fit", str(train_file), "--ranker", "ListNet", "--out", str(model)]) == 0
    out.write_text("an older file\n")
    capsys.readouterr()
    message = _fails(["predict", model, held_out_file, "--out", out, "--chunk-rows", "15"], capsys)
    assert re.search(r"predicting .*test\.txt failed: Line \d+ of '.*test\.txt' has qid \d+, "
                     r"whose earlier lines end on line \d+", message)
    assert out.read_text() == "an older file\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


@pytest.mark.parametrize("chunk_rows", [None, "15"], ids=["whole", "chunks"])
def test_predict_names_the_model_width_a_file_exceeds(chunk_rows, model_file, tmp_path,
                                                      capsys):
    # the width is the model's: predict has no --n-features to pass
    wide = _write_letor(tmp_path / "wide.txt",
                        *make_ranking(n_queries=4, n_docs=3, n_features=N_FEATURES + 2,
                                      random_state=4))
    argv = ["predict", model_file, wide] + ([] if chunk_rows is None else
                                           ["--chunk-rows", chunk_rows])
    message = _fails(argv, capsys)
    assert re.search(rf"(line 1 of )?.*wide\.txt has a feature in column {N_FEATURES + 2}, but "
                     rf"the model .*model\.joblib was fitted on {N_FEATURES} features", message)
    assert "n_features" not in message


def test_fit_stream_vali_wider_than_the_stream_names_both(train_file, tmp_path, capsys):
    vali = _write_letor(tmp_path / "vali.txt",
                        *make_ranking(n_queries=4, n_docs=3, n_features=N_FEATURES + 2,
                                      random_state=4))
    message = _fails(["fit", train_file, "--ranker", "ListNet", "--out", tmp_path / "m.joblib",
                      "--stream", "--vali", vali], capsys)
    assert re.search(rf"vali\.txt has {N_FEATURES + 2} features, but the stream of .*train\.txt "
                     rf"has {N_FEATURES}, the width of its first chunk .* pass --n-features",
                     message)


@pytest.mark.parametrize("argv, message", [
    (["--ranker", "LogRank", "--stream"], r"--stream trains with partial_fit, which LogRank "
                                          r"has not \(not a stochastic ranker\)"),
    (["--ranker", "ListNet", "--stream", "--param", "solver=lbfgs"],
     r"which ListNet has not \(solver=lbfgs\)"),
    (["--ranker", "ListNet", "--chunk-rows", "10"],
     r"--chunk-rows is an option of the streamed fit: add --stream"),
])
def test_fit_stream_usage_errors(argv, message, train_file, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["fit", str(train_file), "--out", str(tmp_path / "m.joblib"), *argv])
    assert exit_.value.code == 2
    assert re.search(message, capsys.readouterr().err)


@pytest.mark.parametrize("command", ["fit", "predict-model", "predict-file", "stream-vali"])
def test_out_is_never_an_input(command, model_file, train_file, tmp_path, capsys):
    before = {p: p.read_bytes() for p in (model_file, train_file)}
    argv = {
        "fit": ["fit", train_file, "--ranker", "Ridge", "--out", train_file],
        "predict-model": ["predict", model_file, train_file, "--out", model_file],
        "predict-file": ["predict", model_file, train_file, "--chunk-rows", "10", "--out",
                         train_file],
        "stream-vali": ["fit", train_file, "--ranker", "ListNet", "--stream", "--vali",
                        train_file, "--out", train_file],
    }[command]
    message = _fails(argv, capsys)
    assert re.fullmatch(r"--out .* is the input .*: the command would write over what it "
                        r"reads; choose another file", message)
    assert {p: p.read_bytes() for p in before} == before


@pytest.mark.parametrize("link", ["symlink", "hard link"])
def test_out_is_never_an_input_under_another_name(link, model_file, train_file, tmp_path,
                                                  capsys):
    other = tmp_path / "other-name.joblib"
    (os.symlink if link == "symlink" else os.link)(model_file, other)
    before = model_file.read_bytes()
    message = _fails(["predict", model_file, train_file, "--out", other], capsys)
    assert message == (f"--out {other} is the input {model_file}: the command would write "
                       "over what it reads; choose another file")
    assert model_file.read_bytes() == before


def test_epochs_belongs_to_the_streamed_fit(train_file, tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["fit", str(train_file), "--ranker", "LogRank", "--epochs", "3", "--out",
              str(tmp_path / "m.joblib")])
    assert "--epochs is an option of the streamed fit: add --stream" in capsys.readouterr().err


def test_stream_vali_takes_the_training_width(train_file, tmp_path, capsys):
    """A validation file whose last feature is never stored is read as wide as the stream."""
    X, y, qid = make_ranking(n_queries=6, n_docs=(3, 8), n_features=N_FEATURES, random_state=3)
    X[:, -1] = 0.0  # never written: read alone, the file would have 4 features
    vali = _write_letor(tmp_path / "vali.txt", X, y, qid)
    model = tmp_path / "model.joblib"
    assert main(["fit", str(train_file), "--ranker", "ListNet", "--stream", "--epochs", "2",
                 "--vali", str(vali), "--out", str(model)]) == 0
    assert joblib.load(model)["estimator"].n_features_in_ == N_FEATURES


# ----------------------------------------------------------------------
# export: ONNX and the Elasticsearch / OpenSearch linear model
def _fit_model(train_file, tmp_path, ranker, *params):
    model = tmp_path / f"{ranker}.joblib"
    argv = ["fit", str(train_file), "--ranker", ranker, "--out", str(model)]
    for param in params:
        argv += ["--param", param]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        assert main(argv) == 0
    return model


@pytest.mark.parametrize("ranker,params", [
    ("ListNet", ["hidden_layer_sizes=(3,)", "max_iter=3"]),
    ("BoltzRank2", ["max_iter=2", "n_init=1"]),
])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_export_onnx_scores_as_predict(ranker, params, dtype, train_file, held_out_file, tmp_path,
                                       capsys, installed):
    onnxruntime = installed("onnxruntime", "onnx")
    model = _fit_model(train_file, tmp_path, ranker, *params)
    out = tmp_path / "model.onnx"
    assert main(["export", str(model), "--format", "onnx", "--dtype", dtype,
                 "--out", str(out)]) == 0
    assert f"wrote the {ranker} of {model} to {out} (ONNX, {dtype}" in capsys.readouterr().err
    assert main(["predict", str(model), str(held_out_file)]) == 0
    expected = np.array(capsys.readouterr().out.split(), dtype=float)
    X, _, qid = load_letor(held_out_file, n_features=N_FEATURES)
    session = onnxruntime.InferenceSession(out.read_bytes(), providers=["CPUExecutionProvider"])
    tolerance = 1e-5 if dtype == "float32" else 1e-10
    for q in np.unique(qid):  # the graph scores one query per call
        got = session.run(None, {"X": X[qid == q].astype(dtype)})[0].ravel()
        assert np.abs(got - expected[qid == q]).max() <= tolerance * np.abs(expected).max()


def test_export_replaces_out_only_when_complete(train_file, tmp_path, installed):
    # a write that fails part-way (a full disk: here a file-size limit of 1 KiB,
    # far below the graph's 18 KB) leaves the previous file as it was
    installed("skl2onnx", "onnx")
    model = _fit_model(train_file, tmp_path, "ListNet", "hidden_layer_sizes=(64, 64)",
                       "max_iter=2")
    out = tmp_path / "model.onnx"
    out.write_bytes(b"the previous, good model")
    command = (f"ulimit -f 1; {sys.executable} -m skrank export {model} --format onnx "
               f"--out {out}")
    result = subprocess.run(["bash", "-c", command], capture_output=True, text=True)
    assert result.returncode == 1, result.stderr
    assert _error_line(result.stderr, "export").startswith(f"cannot write {out}: ")
    assert out.read_bytes() == b"the previous, good model"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["model.onnx", "ListNet.joblib", "train.txt"])  # no temporary file left


def _cli_with_file_size_limit(argv, limit_bytes):
    """``python -m skrank *argv`` in a child whose files may not grow past ``limit_bytes``.

    A real limit of the kernel, as a full disk gives: the write fails part-way.
    """
    code = ("import resource, runpy, sys\n"
            f"resource.setrlimit(resource.RLIMIT_FSIZE, ({limit_bytes}, {limit_bytes}))\n"
            f"sys.argv = ['skrank'] + {[str(a) for a in argv]!r}\n"
            "runpy.run_module('skrank', run_name='__main__')\n")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)


@pytest.mark.parametrize("command", ["fit", "predict", "predict --chunk-rows 7"])
def test_a_failed_write_leaves_the_previous_out(command, train_file, model_file, tmp_path):
    out = tmp_path / "previous.out"
    out.write_bytes(b"the previous, good file")
    name, *options = command.split()
    if name == "fit":
        argv = ["fit", train_file, "--ranker", "Ridge", "--out", out]
    else:
        argv = ["predict", model_file, train_file, "--out", out, *options]
    before = sorted(p.name for p in tmp_path.iterdir())
    result = _cli_with_file_size_limit(argv, 100)  # the model and the scores are larger
    assert result.returncode == 1, result.stderr
    assert _error_line(result.stderr, name).startswith("cannot ")
    assert "File too large" in result.stderr
    assert out.read_bytes() == b"the previous, good file"
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no temporary file left
    if name == "fit":  # without the limit, the same command replaces the file
        result = _cli_with_file_size_limit(argv, 10**7)
        assert result.returncode == 0, result.stderr
        assert out.read_bytes() != b"the previous, good file"


def test_export_refuses_to_write_over_the_model(model_file, capsys):
    message = _fails(["export", model_file, "--format", "onnx", "--out", model_file], capsys)
    assert message == (f"--out {model_file} is the input {model_file}: the command would write "
                       "over what it reads; choose another file")


def test_export_names_a_model_onnx_cannot_take(train_file, tmp_path, monkeypatch, capsys,
                                               installed):
    installed("skl2onnx", "onnx")
    model = _fit_model(train_file, tmp_path, "ListNet", "max_iter=2")
    capsys.readouterr()

    def refuse(*args, **kwargs):
        raise ValueError("ListNetRanker cannot be exported to ONNX: Thing has no converter.")

    monkeypatch.setattr("skrank._cli.to_onnx", refuse)
    message = _fails(["export", model, "--format", "onnx", "--out", tmp_path / "m.onnx"], capsys)
    assert message == (f"cannot export the ListNet of {model} to ONNX: ListNetRanker cannot be "
                       "exported to ONNX: Thing has no converter.")
    assert not (tmp_path / "m.onnx").exists()


def test_export_es_linear_scores_as_predict(train_file, held_out_file, tmp_path, capsys):
    import json

    model = _fit_model(train_file, tmp_path, "ListNet", "max_iter=3")  # linear by default
    out = tmp_path / "model.json"
    assert main(["export", str(model), "--format", "es-linear", "--name", "my_ranker",
                 "--out", str(out)]) == 0
    assert main(["predict", str(model), str(held_out_file)]) == 0
    expected = np.array(capsys.readouterr().out.split(), dtype=float)
    body = json.loads(out.read_text())
    assert body["model"]["name"] == "my_ranker"
    assert body["model"]["model"]["type"] == "model/linear"
    weights = json.loads(body["model"]["model"]["definition"])
    # the features are named by their numbers in the LETOR file, one-based
    assert list(weights) == [str(i) for i in range(1, N_FEATURES + 1)]
    X, _, _ = load_letor(held_out_file, n_features=N_FEATURES)
    scores = X @ np.array([weights[str(i)] for i in range(1, N_FEATURES + 1)])
    np.testing.assert_allclose(scores, expected, rtol=1e-12, atol=1e-12)


def test_export_es_linear_takes_feature_names(train_file, tmp_path, capsys):
    import json

    model = _fit_model(train_file, tmp_path, "ListNet", "max_iter=3")
    out = tmp_path / "model.json"
    names = "bm25, tf, idf, pagerank, length"
    assert main(["export", str(model), "--format", "es-linear", "--feature-names", names,
                 "--out", str(out)]) == 0
    weights = json.loads(json.loads(out.read_text())["model"]["model"]["definition"])
    assert list(weights) == ["bm25", "tf", "idf", "pagerank", "length"]
    capsys.readouterr()
    message = _fails(["export", model, "--format", "es-linear", "--feature-names", "a,b",
                      "--out", out], capsys)
    assert message == (f"cannot export the ListNet of {model} as es-linear: feature_names has "
                       "2 names, but the model has 5 features.")


def test_export_es_linear_refuses_a_network(train_file, tmp_path, capsys):
    model = _fit_model(train_file, tmp_path, "ListNet", "hidden_layer_sizes=(3,)", "max_iter=2")
    capsys.readouterr()
    out = tmp_path / "model.json"
    message = _fails(["export", model, "--format", "es-linear", "--out", out], capsys)
    assert message.startswith(f"cannot export the ListNet of {model} as es-linear: ")
    assert "is not linear: it scores with a network of hidden layers (3,)" in message
    assert not out.exists()


@pytest.mark.parametrize("options, message", [
    (["--format", "onnx", "--out", "-"],
     "--out must name a file; export does not write to stdout ('-')"),
    (["--format", "onnx", "--feature-names", "a,b", "--out", "m.onnx"],
     "--feature-names is not an option of --format onnx"),
    (["--format", "onnx", "--name", "x", "--out", "m.onnx"],
     "--name is not an option of --format onnx"),
    (["--format", "es-linear", "--dtype", "float64", "--out", "m.json"],
     "--dtype is not an option of --format es-linear"),
    (["--format", "es-linear", "--name", " ", "--out", "m.json"], "--name must not be empty"),
    (["--format", "es-linear", "--feature-names", "a,,b", "--out", "m.json"],
     "--feature-names has an empty name: 'a,,b'"),
])
def test_export_option_errors_are_usage_errors(options, message, tmp_path, monkeypatch,
                                               capsys):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exc:
        main(["export", "no-such-model.joblib", *options])  # refused before any file is read
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: ") and "Traceback" not in err
    assert err.splitlines()[-1] == f"python -m skrank export: error: {message}"
    assert list(tmp_path.iterdir()) == []


# ----------------------------------------------------------------------
# Named pipes and devices: refused before they are opened
def _skrank(argv, *, close=(), stdout=subprocess.PIPE, timeout=120):
    """``python -m skrank argv`` in a process of its own, with the descriptors ``close`` closed.

    bash closes them (``exec 1>&-``) and runs Python in its place, which then
    starts with ``sys.stdout`` (``sys.stderr``, ``sys.stdin``) None.
    """
    command = [sys.executable, "-m", "skrank", *map(str, argv)]
    if close:
        closing = " ".join(f"{fd}>&-" for fd in close)
        command = ["bash", "-c", f'exec {closing}; exec "$@"', "bash", *command]
    return subprocess.run(command, stdout=stdout, stderr=subprocess.PIPE, text=True,
                          timeout=timeout)


needs_mkfifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes (os.mkfifo)")

# where a command reads a file, given a named pipe (its argv, with {pipe})
PIPE_ARGUMENTS = {
    "fit": ["fit", "{pipe}", "--ranker", "Ridge", "--out", "{out}"],
    "fit --stream": ["fit", "{pipe}", "--ranker", "ListNet", "--stream", "--out", "{out}"],
    "fit --vali": ["fit", "{data}", "--ranker", "ListNet", "--stream", "--vali", "{pipe}",
                   "--out", "{out}"],
    "predict model": ["predict", "{pipe}", "{data}"],
    "predict file": ["predict", "{model}", "{pipe}"],
    "predict --chunk-rows": ["predict", "{model}", "{pipe}", "--chunk-rows", "10"],
    "evaluate file": ["evaluate", "{pipe}", "{data}"],
    "evaluate scores": ["evaluate", "{data}", "{pipe}"],
    "compare file": ["compare", "{pipe}", "--rankers", "Ridge"],
    "compare fold": ["compare", "{fold}", "--rankers", "Ridge"],
}


@needs_mkfifo
@pytest.mark.parametrize("case", list(PIPE_ARGUMENTS))
def test_a_named_pipe_is_refused_at_once(case, model_file, train_file, tmp_path):
    fold = tmp_path / "Fold1"
    fold.mkdir()
    for split in ("train", "test"):
        (fold / f"{split}.txt").write_text(train_file.read_text())
    pipe = fold / "vali.txt" if case == "compare fold" else tmp_path / "pipe.txt"
    os.mkfifo(pipe)
    files = {"pipe": pipe, "data": train_file, "model": model_file, "fold": fold,
             "out": tmp_path / "out.joblib"}
    argv = [arg.format(**files) for arg in PIPE_ARGUMENTS[case]]
    # in a process of its own: a command that opened the pipe would wait for a
    # writer forever, and the timeout makes that a failure, not a hung suite
    result = _skrank(argv, timeout=60)
    assert result.returncode == 1, result.stderr
    expected = {
        "evaluate scores": (f"{pipe} is a named pipe, not a regular file; python -m skrank "
                            "reads regular files only: give '-' to read the scores from stdin"),
        "compare fold": f"{pipe} is a named pipe, not a regular file; expected a LETOR file",
    }.get(case, f"{pipe} is a named pipe, not a regular file; python -m skrank reads regular "
                "files only")
    assert _error_line(result.stderr, argv[0]) == expected
    assert not files["out"].exists()


@pytest.mark.skipif(not Path("/dev/null").is_char_device(), reason="no /dev/null")
@pytest.mark.parametrize("case", ["predict file", "evaluate scores"])
def test_a_device_is_refused(case, model_file, train_file, capsys):
    argv = {"predict file": ["predict", model_file, "/dev/null"],
            "evaluate scores": ["evaluate", train_file, "/dev/null"]}[case]
    advice = {"predict file": "", "evaluate scores": ": give '-' to read the scores from stdin"}
    assert _fails(argv, capsys) == ("/dev/null is a character device, not a regular file; "
                                    f"python -m skrank reads regular files only{advice[case]}")


@needs_mkfifo
@pytest.mark.parametrize("command", ["fit", "predict"])
def test_out_is_never_a_named_pipe(command, model_file, train_file, tmp_path, capsys):
    # the file written beside it would replace the pipe, not write to it
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    argv = {"fit": ["fit", train_file, "--ranker", "Ridge", "--out", pipe],
            "predict": ["predict", model_file, train_file, "--out", pipe]}[command]
    assert _fails(argv, capsys) == (f"cannot write {pipe}: it is a named pipe, not a regular "
                                    "file; --out names a file, replaced once it is completely "
                                    "written")
    assert stat.S_ISFIFO(os.stat(pipe).st_mode)


# ----------------------------------------------------------------------
# stdout and stderr: closed, full, a pipe whose reader has gone
needs_bash = pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")


# the commands that write results to stdout, and what the results are called
STDOUT_COMMANDS = {
    "predict": (["predict", "{model}", "{data}"], "scores"),
    "predict --chunk-rows": (["predict", "{model}", "{data}", "--chunk-rows", "10"], "scores"),
    "evaluate": (["evaluate", "{data}", "{scores}"], "metrics"),
    "compare": (["compare", "{data}", "--cv", "2", "--rankers", "Ridge"], "table"),
}


def _stdout_command(command, model_file, train_file, tmp_path):
    """The argv of ``STDOUT_COMMANDS[command]`` on the files of a test, and its results' name."""
    scores = tmp_path / "scores.txt"
    assert main(["predict", str(model_file), str(train_file), "--out", str(scores)]) == 0
    argv, what = STDOUT_COMMANDS[command]
    files = {"model": model_file, "data": train_file, "scores": scores}
    return [arg.format(**files) for arg in argv], what


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")
@pytest.mark.parametrize("command", list(STDOUT_COMMANDS))
def test_results_on_a_full_disk_are_a_one_line_error(command, model_file, train_file, tmp_path):
    argv, what = _stdout_command(command, model_file, train_file, tmp_path)
    with open("/dev/full", "w") as full:
        result = _skrank(argv, stdout=full)
    assert result.returncode == 1, result.stderr
    assert _error_line(result.stderr, argv[0]) == (
        f"cannot write the {what} to stdout: [Errno 28] No space left on device")


@needs_bash
@pytest.mark.parametrize("command", list(STDOUT_COMMANDS))
def test_results_to_a_closed_stdout_are_refused_first(command, model_file, train_file, tmp_path):
    argv, what = _stdout_command(command, model_file, train_file, tmp_path)
    result = _skrank(argv, close=[1])
    assert result.returncode == 1, result.stderr
    advice = "; give --out SCORES" if what == "scores" else ""
    # before any file is read or any ranker fitted: the error is the only line
    assert result.stderr == (f"python -m skrank {argv[0]}: error: cannot write the {what} to "
                             f"stdout: it is closed{advice}\n")


@needs_bash
def test_a_closed_stdout_does_not_stop_the_commands_that_write_files(train_file, tmp_path):
    model, scores, expected = (tmp_path / n for n in ("model.joblib", "s.txt", "expected.txt"))
    result = _skrank(["fit", train_file, "--ranker", "Ridge", "--out", model], close=[1])
    assert result.returncode == 0, result.stderr
    # the file read chunk by chunk is opened while descriptor 1 is free: it
    # must not become descriptor 1, which the ranker's output is sent past
    result = _skrank(["predict", model, train_file, "--chunk-rows", "10", "--out", scores],
                     close=[1])
    assert result.returncode == 0, result.stderr
    assert main(["predict", str(model), str(train_file), "--out", str(expected)]) == 0
    assert scores.read_text() == expected.read_text()


@needs_bash
def test_a_closed_stderr_loses_the_messages_not_the_status(train_file, tmp_path, capsys):
    model, expected = tmp_path / "model.joblib", tmp_path / "expected.txt"
    # joblib's worker processes (n_init runs with n_jobs) start without a stderr too
    result = _skrank(["fit", train_file, "--ranker", "ListNet", "--param", "max_iter=2",
                      "--param", "n_init=2", "--param", "n_jobs=2", "--out", model], close=[2])
    assert result.returncode == 0
    assert result.stdout == "" and model.exists()
    result = _skrank(["predict", model, train_file], close=[2])
    assert result.returncode == 0
    assert main(["predict", str(model), str(train_file), "--out", str(expected)]) == 0
    assert result.stdout == expected.read_text()  # the scores, and no message among them
    result = _skrank(["predict", model, tmp_path / "missing.txt"], close=[2])
    assert result.returncode == 1
    assert result.stdout == ""


@needs_bash
def test_scores_from_a_closed_stdin_are_a_one_line_error(train_file):
    result = _skrank(["evaluate", train_file, "-"], close=[0])
    assert result.returncode == 1, result.stderr
    assert _error_line(result.stderr, "evaluate") == (
        "cannot read the scores from stdin: it is closed")


@pytest.mark.skipif(os.name != "posix", reason="SIGPIPE and EPIPE are POSIX's")
@pytest.mark.parametrize("chunked", [[], ["--chunk-rows", "10"]], ids=["whole", "chunked"])
def test_a_pipe_whose_reader_has_gone_ends_predict_quietly(chunked, model_file, train_file):
    read, write = os.pipe()
    os.close(read)  # as `| head -1` once it has its line, before any score is written
    try:
        result = _skrank(["predict", model_file, train_file, *chunked], stdout=write)
    finally:
        os.close(write)
    assert result.returncode == 1
    # the progress lines, and neither a traceback nor an error line
    assert all(line.startswith(PROGRESS) for line in result.stderr.splitlines()), result.stderr


# ----------------------------------------------------------------------
# Scores that are not finite are never written
@pytest.fixture
def nan_model(model_file, tmp_path):
    """The Ridge of ``model_file`` with a NaN coefficient, saved as ``fit`` saves a model."""
    payload = joblib.load(model_file)
    payload["estimator"].coef_[1] = np.nan
    path = tmp_path / "nan.joblib"
    joblib.dump(payload, path)
    return path


@pytest.mark.parametrize("out", ["stdout", "--out"])
@pytest.mark.parametrize("chunked", [[], ["--chunk-rows", "10"]], ids=["whole", "chunked"])
def test_predict_refuses_scores_that_are_not_finite(chunked, out, nan_model, train_file,
                                                    tmp_path, capsys):
    data = tmp_path / "data.txt"  # a comment first: row i is on line i + 2
    data.write_text("# the queries of the test\n" + train_file.read_text())
    argv = ["predict", nan_model, data, *chunked]
    scores = tmp_path / "scores.txt"
    if out == "--out":
        scores.write_text("the previous scores\n")
        argv += ["--out", scores]
    n = len(next(iter_letor_chunks(data, chunk_rows=10))[1]) if chunked else (
        load_letor(data)[0].shape[0])
    of = f"the {n} scores of rows 1 to {n}" if chunked else f"the {n} scores"
    dest = scores if out == "--out" else "stdout"
    assert _fails(argv, capsys) == (
        f"{n} of {of} of {data} by the Ridge of {nan_model} are not finite (NaN or "
        f"infinity): lines 2, 3, 4, 5, 6, ... of {data}; no scores written to {dest}"
    )
    if out == "--out":
        assert scores.read_text() == "the previous scores\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_predict_chunk_rows_stops_at_the_first_score_not_finite(model_file, train_file,
                                                                tmp_path, monkeypatch, capsys):
    # a model whose arithmetic overflows on one row: 2 * 1e308 is infinite
    payload = joblib.load(model_file)
    payload["estimator"].coef_[:] = [2.0, 0.0, 0.0, 0.0, 0.0]
    model = tmp_path / "overflow.joblib"
    joblib.dump(payload, model)
    first, second = (len(c[1]) for c in islice(iter_letor_chunks(train_file, chunk_rows=10), 2))
    lines = train_file.read_text().splitlines(keepends=True)
    row = first + 1  # the second row of the second chunk, 0-based
    lines[row] = re.sub(r" 1:\S+", " 1:1e308", lines[row])
    data = tmp_path / "data.txt"
    data.write_text("".join(lines))
    # blocks of a few lines: the row's line is found across blocks
    monkeypatch.setattr("skrank.datasets._letor._BLOCK_SIZE", 100)
    assert main(["predict", str(model), str(data), "--chunk-rows", "10"]) == 1
    captured = capsys.readouterr()
    assert len(captured.out.splitlines()) == first  # the first chunk's scores
    assert _error_line(captured.err, "predict") == (
        f"1 of the {second} scores of rows {first + 1} to {first + second} of {data} by the "
        f"Ridge of {model} is not finite (NaN or infinity): line {row + 1} of {data}; "
        f"stopped there, after writing the first {first} scores to stdout"
    )


@pytest.mark.parametrize("argv", [
    ["fit", "TRAIN", "--ranker", "ListNet", "--out", "", "--stream"],
    ["fit", "TRAIN", "--ranker", "ListNet", "--out", "OUT", "--stream", "--vali", ""],
    ["predict", "MODEL", "", "--chunk-rows", "5"],
    ["export", "", "--format", "onnx", "--out", "OUT"],
], ids=["fit-out", "fit-vali", "predict-file", "export-model"])
def test_an_empty_file_name_is_a_usage_error(argv, model_file, train_file, tmp_path, capsys):
    # Path("") is ".", the current folder: the message would name a folder never given
    given = {"TRAIN": str(train_file), "MODEL": str(model_file), "OUT": str(tmp_path / "o")}
    with pytest.raises(SystemExit) as exit_:
        main([given.get(a, a) for a in argv])
    assert exit_.value.code == 2
    assert re.search(r"expected a file name; got an empty string ''", capsys.readouterr().err)


def test_module_entry_point_runs():
    result = subprocess.run(
        [sys.executable, "-m", "skrank", "compare", "--help"],
        capture_output=True, text=True, check=True,
    )
    assert "--rankers" in result.stdout and "LETOR protocol" in result.stdout
