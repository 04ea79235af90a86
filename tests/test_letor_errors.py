"""Bad inputs to skrank.datasets: each fails with an error naming what is wrong.

One test per cause (issue 27): bools taken for integers, corrupt compressed
files, lines scikit-learn's parser rejects, non-finite values.
"""

import numpy as np
import pytest

from skrank.datasets import load_letor, load_letor_fold, make_ranking, make_web_ranking

GOOD = (
    "2 qid:1 1:0.5 2:0.1 #docid = d1\n"
    "0 qid:1 1:0.2 2:0.3 #docid = d2\n"
    "1 qid:2 1:0.9 2:0.7 #docid = d3\n"
)


def _write_bytes(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


@pytest.fixture
def fold_root(tmp_path):
    """A data set folder whose Fold1 .. Fold5 each hold three small files."""
    for k in range(1, 6):
        for split in ("train", "vali", "test"):
            _write_bytes(tmp_path / f"Fold{k}" / f"{split}.txt", GOOD.encode())
    return tmp_path


# --------------------------------------------------------------------------
# Cause 4: a bool is not an integer
# --------------------------------------------------------------------------


@pytest.mark.parametrize("value", [True, False])
def test_load_letor_fold_bool_fold_raises(fold_root, value):
    # fold=True used to load Fold1 (True == 1).
    with pytest.raises(TypeError, match=rf"fold.*{value!r}"):
        load_letor_fold(fold_root, value)


@pytest.mark.parametrize("value", [True, False])
def test_load_letor_fold_bool_n_features_raises(fold_root, value):
    with pytest.raises(TypeError, match=rf"n_features.*{value!r}"):
        load_letor_fold(fold_root, 1, n_features=value)


@pytest.mark.parametrize("value", [True, False])
def test_load_letor_bool_n_features_raises(tmp_path, value):
    path = _write_bytes(tmp_path / "a.txt", b"1 qid:1 1:0.5\n")
    # n_features=True used to load one column.
    with pytest.raises(TypeError, match=rf"n_features.*{value!r}"):
        load_letor(path, n_features=value)


@pytest.mark.parametrize("name", ["n_queries", "n_docs", "n_features", "n_levels"])
def test_make_ranking_bool_integer_parameter_raises(name):
    # n_levels=True (1) was already below its bound of 2; the others loaded.
    with pytest.raises(TypeError, match=rf"{name}.*True"):
        make_ranking(**{name: True}, random_state=0)


@pytest.mark.parametrize("name", ["n_queries", "n_docs", "n_features"])
def test_make_web_ranking_bool_integer_parameter_raises(name):
    with pytest.raises(TypeError, match=rf"{name} must be an int.*got {name}=True"):
        make_web_ranking(**{name: True}, random_state=0)


def test_integer_parameters_still_take_numpy_integers(fold_root):
    data = load_letor_fold(fold_root, np.int64(2), n_features=np.int32(3))
    assert data.train[0].shape == (3, 3)
    X, _, _ = make_ranking(n_queries=np.int64(2), n_docs=np.int8(3), random_state=0)
    assert X.shape == (6, 10)
