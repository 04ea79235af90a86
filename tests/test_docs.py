"""The README's code and the examples run as written."""

import os
import re
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))


def _readme_python_blocks():
    text = (ROOT / "README.md").read_text()
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def test_readme_python_blocks_run():
    blocks = _readme_python_blocks()
    assert len(blocks) >= 3
    # The cluster block needs a running scheduler; the others run in order.
    code = "\n".join(b for b in blocks if "Client(" not in b)
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr


def test_readme_test_command_is_what_ci_runs():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    command = "python -m pytest tests"
    assert f"```bash\n{command}\n```" in readme
    assert ci.rstrip().splitlines()[-1] == command


def test_suite_collects_without_the_letor_data(tmp_path):
    # A clone without ../shared/data must collect every test; the data tests
    # then skip (fail with CI=true, which is cleared here). .ci/run checks it too.
    env = {**os.environ, "SKRANK_SHARED_DATA": str(tmp_path / "no-data"), "CI": ""}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "tests", "--collect-only", "-qq",
         "-p", "no:cacheprovider"],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=300,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]


def test_examples_are_found():
    # Guards test_example_runs, which an empty glob would turn into no test.
    names = {path.name for path in EXAMPLES}
    assert {"plot_grouped_cv.py", "plot_listnet.py"} <= names


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_runs(path, capsys, monkeypatch):
    monkeypatch.setenv("MPLBACKEND", "Agg")  # no display
    runpy.run_path(str(path), run_name="__main__")
    assert capsys.readouterr().out


def _public_modules():
    import pkgutil

    import skrank

    return sorted(
        m.name for m in pkgutil.walk_packages(skrank.__path__, "skrank.") if "__main__" not in m.name
    )


@pytest.mark.parametrize("module", _public_modules())
def test_docstring_examples(module):
    """The Examples sections of the docstrings run and print what they show."""
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
