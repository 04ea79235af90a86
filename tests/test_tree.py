"""The tests mirror the package: every module of skrank has its test file.

The tests of ``skrank/<package>/_<module>.py`` are in
``tests/<package>/test_<module>.py``: every part of the path loses its leading
underscore (``skrank/_core/_objective.py`` -> ``tests/core/test_objective.py``,
``skrank/losses/_softrank/_binomial.py`` -> ``tests/losses/softrank/test_binomial.py``,
``skrank/_cli.py`` -> ``tests/test_cli.py``). ``__init__.py`` and
``__main__.py`` need no file of their own (a package's public names may be
tested in ``tests/<package>/test_init.py``). The other files at the top of
``tests/`` are the suites that span the package (tests/README.md).
"""

from pathlib import Path

import pytest

import skrank

PACKAGE = Path(skrank.__file__).resolve().parent
TESTS = Path(__file__).resolve().parent
#: The suites that span the package (tests/README.md says why each one).
SPANNING = {"test_common.py", "test_docs.py", "test_layers.py", "test_pipelines.py",
            "test_tree.py"}
MODULES = sorted(path for path in PACKAGE.rglob("*.py")
                 if path.name not in ("__init__.py", "__main__.py"))


def expected_test_file(module):
    """The test file of the module at ``module``, a path under skrank/."""
    parts = module.relative_to(PACKAGE).with_suffix("").parts
    *packages, name = (part.lstrip("_") for part in parts)
    return TESTS.joinpath(*packages, f"test_{name}.py")


def test_the_walk_finds_the_modules():
    # guards the parametrized test below, which an empty list would turn into no test
    names = {str(path.relative_to(PACKAGE)) for path in MODULES}
    assert {"_cli.py", "_core/_objective.py", "losses/_softrank/_binomial.py"} <= names
    assert expected_test_file(PACKAGE / "_core" / "_objective.py") == (
        TESTS / "core" / "test_objective.py")


@pytest.mark.parametrize("module", MODULES, ids=lambda path: str(path.relative_to(PACKAGE)))
def test_every_module_has_its_test_file(module):
    path = expected_test_file(module)
    assert path.is_file(), (
        f"skrank/{module.relative_to(PACKAGE)} has no tests/{path.relative_to(TESTS)}")


def test_every_test_file_is_that_of_a_module_or_a_suite_spanning_the_package():
    expected = {expected_test_file(module) for module in MODULES}
    packages = {path.parent for path in PACKAGE.rglob("__init__.py")}
    inits = {TESTS.joinpath(*(part.lstrip("_") for part in package.relative_to(PACKAGE).parts),
                            "test_init.py") for package in packages}
    spanning = {TESTS / name for name in SPANNING}
    strays = sorted(str(path.relative_to(TESTS)) for path in TESTS.rglob("test_*.py")
                    if path not in expected | inits | spanning)
    assert strays == []
