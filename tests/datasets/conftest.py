"""Fixtures of the readers' tests: OHSUMED's Fold1 test file, the engines of load_letor."""

import pytest

from skrank.datasets import load_letor


@pytest.fixture(scope="module")
def ohsumed_test_path(shared_data):
    """OHSUMED's Fold1/test.txt.gz in the LETOR data beside the repository."""
    return shared_data / "ohsumed" / "Fold1" / "test.txt.gz"


@pytest.fixture(scope="module")
def ohsumed_test(ohsumed_test_path):
    """That file read by load_letor, with its document ids."""
    return load_letor(ohsumed_test_path, return_docids=True)


@pytest.fixture
def engine(request, monkeypatch):
    """The engine of load_letor's fast path, with blocks of 4 KiB to have many."""
    import skrank.datasets._letor as letor

    monkeypatch.setattr(letor, "_BLOCK_SIZE", 4096)
    return request.param
