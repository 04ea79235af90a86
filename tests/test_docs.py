"""The README's code and the examples run as written."""

import os
import re
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

from skrank.rankers._gbdt import ROW_NAMES

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))


def _readme_blocks(language):
    text = (ROOT / "README.md").read_text()
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.S)


def _first_code_line(block):
    return next(line for line in block.splitlines() if line and not line.startswith("#"))


def _subprocess_env():
    """The test's environment, with this Python's folder first on PATH (for ``python``)."""
    return {**os.environ,
            "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])}


README_PYTHON = _readme_blocks("python")
#: The README's shell blocks that run skrank's command line; the others
#: install, run this suite or build the docs (test_docs_build_without_warnings).
README_CLI = [b for b in _readme_blocks("bash") if _first_code_line(b).startswith("python -m skrank")]


def test_readme_blocks_are_found():
    # Guards the parametrized tests below, which an empty list would turn into no test.
    assert len(README_PYTHON) >= 8
    assert len(README_CLI) >= 2


@pytest.mark.parametrize("block", README_PYTHON, ids=[f"python{i}" for i in range(len(README_PYTHON))])
def test_readme_python_block_runs_alone(block, installed, tmp_path):
    """Every Python block of the README runs on its own, in a fresh process."""
    if re.search(r"^\s*from distributed\b", block, flags=re.M):
        installed("distributed", "dask")
    if re.search(r"^\s*import onnxruntime\b", block, flags=re.M):
        installed("onnxruntime", "onnx")
    result = subprocess.run(
        [sys.executable, "-c", block], capture_output=True, text=True, cwd=tmp_path,
        env=_subprocess_env(), timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout  # every block prints what it computed
    assert "ERROR" not in result.stderr, result.stderr[-3000:]


def _write_letor(path, X, y, qid):
    from sklearn.datasets import dump_svmlight_file

    dump_svmlight_file(X, y, str(path), query_id=qid, zero_based=False)


@pytest.mark.parametrize("block", README_CLI, ids=[f"cli{i}" for i in range(len(README_CLI))])
def test_readme_cli_block_runs_alone(block, tmp_path, installed):
    """The README's command lines run as written, on LETOR files named as there."""
    from skrank.datasets import load_rank_sample

    if "--format onnx" in block:
        installed("skl2onnx", "onnx")
    for name, subset in (("train.txt", "train"), ("test.txt", "test")):
        _write_letor(tmp_path / name, *load_rank_sample(subset=subset))
    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", block], capture_output=True, text=True,
        cwd=tmp_path, env=_subprocess_env(), timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout, result.stderr[-3000:]


def test_readme_test_command_is_what_ci_runs():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    command = "python -m pytest tests"
    assert f"```bash\n{command}\n```" in readme
    assert command in ci.splitlines()


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
def test_example_runs(path, capsys, monkeypatch, installed):
    monkeypatch.setenv("MPLBACKEND", "Agg")  # no display (read by matplotlib's import)
    if re.search(r"^\s*(import|from) matplotlib\b", path.read_text(), flags=re.M):
        installed("matplotlib", "examples")  # skips without it, fails under CI=true
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


# ----------------------------------------------------------------------------
# The documentation site (doc/): user guide doctests, API coverage, the build
DOC = ROOT / "doc"
USER_GUIDE = sorted(p for p in (DOC / "user_guide").glob("*.rst")
                    if p.name not in {"index.rst", "ohsumed_table.rst"})
#: README's command that builds the site (keep in sync with README.md and .ci/run).
DOCS_COMMAND = "sphinx-build -W --keep-going -b html doc doc/_build/html"
PUBLIC_MODULES = ["skrank.rankers", "skrank.losses", "skrank.metrics", "skrank.model_selection",
                  "skrank.datasets", "skrank.preprocessing", "skrank.inspection",
                  "skrank.stream", "skrank.export", "skrank.utils",
                  "skrank.utils.estimator_checks"]


def test_user_guide_pages_are_found():
    names = {p.stem for p in USER_GUIDE}
    assert names == {"queries", "metrics", "model_selection", "rankers", "parameters", "scaling",
                     "large_data", "serving", "reproducing"}
    toctree = (DOC / "user_guide" / "index.rst").read_text()
    for name in names:
        assert f"\n   {name}\n" in toctree


@pytest.mark.parametrize("page", USER_GUIDE, ids=lambda p: p.name)
def test_user_guide_doctests(page, installed):
    """The code on every user guide page runs and prints what the page shows."""
    import doctest

    if page.stem in {"scaling", "large_data"}:
        installed("distributed", "dask")
    if page.stem == "serving":
        installed("onnxruntime", "onnx")
        installed("skl2onnx", "onnx")
    result = doctest.testfile(str(page), module_relative=False,
                              optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
    if page.stem not in {"reproducing", "parameters"}:  # no code on these pages
        assert result.attempted >= 5  # the page's examples were found


def _api_entries():
    """{module: names} listed by the autosummary directives of doc/api/index.rst."""
    text = (DOC / "api" / "index.rst").read_text()
    entries, module = {}, None
    for block in re.split(r"\n(?=\.\. )", text):
        m = re.match(r"\.\. (?:currentmodule|py:module):: (\S+)", block)
        if m:
            module = m.group(1)
        elif block.startswith(".. autosummary::"):
            names = re.findall(r"^   (\w+)$", block, flags=re.M)
            entries.setdefault(module, set()).update(names)
    return entries


def test_every_public_name_is_in_the_api_reference():
    import importlib

    import skrank

    entries = _api_entries()
    for name in PUBLIC_MODULES:
        module = importlib.import_module(name)
        assert set(module.__all__) == entries.get(name, set()), name
    # the top-level names are re-exports of these (or the subpackages themselves)
    documented = {n for names in entries.values() for n in names}
    for name in skrank.__all__:
        assert name in documented or name in {m.split(".")[1] for m in PUBLIC_MODULES}, name


def test_docs_command_is_in_readme_and_ci():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    assert f"```bash\n{DOCS_COMMAND}\n```" in readme
    assert f"\n{DOCS_COMMAND}\n" in ci


@pytest.mark.slow
def test_docs_build_without_warnings(tmp_path, installed):
    """README's docs command, without running the gallery (its scripts run above).

    Warnings are errors: a broken cross-reference, a docstring numpydoc cannot
    parse or fails to validate, or a bad page fails the build.
    """
    for module in ("sphinx", "numpydoc", "sphinx_gallery", "pydata_sphinx_theme"):
        installed(module, "docs")  # CI installs the docs extra: the build runs there
    import importlib

    out = tmp_path / "html"
    command = DOCS_COMMAND.replace("doc/_build/html", str(out)).split()
    command[0:1] = [sys.executable, "-m", "sphinx"]
    result = subprocess.run(command + ["-E", "-q", "-D", "plot_gallery=0"],
                            capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert result.returncode == 0, result.stderr[-5000:]
    assert "WARNING" not in result.stderr and "ERROR" not in result.stderr, result.stderr
    # every public name has its page, every example and user guide page is built
    for name in PUBLIC_MODULES:
        for obj in importlib.import_module(name).__all__:
            assert (out / "api" / "generated" / f"{name}.{obj}.html").is_file(), (name, obj)
    for path in EXAMPLES:
        assert (out / "auto_examples" / f"{path.stem}.html").is_file(), path.name
    for page in USER_GUIDE:
        assert (out / "user_guide" / f"{page.stem}.html").is_file(), page.name
    reproducing = (out / "user_guide" / "reproducing.html").read_text()
    assert "ohsumed-table" in reproducing  # the generated table is included


# ----------------------------------------------------------------------------
# The OHSUMED table of the reproduction page: written by the benchmark
TABLE = DOC / "user_guide" / "ohsumed_table.rst"


def _letor_benchmark():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import letor_ohsumed
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    return letor_ohsumed


def _table_rows(text):
    """{first cell: [cells]} of a list-table."""
    rows, current = {}, None
    for line in text.splitlines():
        if line.startswith("   * - "):
            current = [line[len("   * - "):]]
            rows[current[0]] = current
        elif line.startswith("     - ") and current is not None:
            current.append(line[len("     - "):])
    return rows


def test_report_is_a_table_of_every_ranker_and_the_published_rows():
    import numpy as np

    from skrank.model_selection import LetorProtocolResult

    bench = _letor_benchmark()
    rng = np.random.default_rng(0)
    names = ("Ridge", "ListNet", "BoltzRank")
    results = LetorProtocolResult(
        data=ROOT, folds=tuple(f"Fold{k}" for k in range(1, 6)), convention="letor",
        test_scores={name: rng.uniform(size=(5, len(bench.COLUMNS))) for name in names},
        fit_times={name: rng.uniform(size=5) for name in names},
        best_params={name: [{}] * 5 for name in names},
    )
    text = bench.rst_report(results, "python benchmarks/letor_ohsumed.py", 120.0)
    rows = _table_rows(text)
    assert rows["ranker"] == ["ranker"] + bench.COLUMNS + ["fit s"]
    assert all(len(cells) == len(bench.COLUMNS) + 2 for cells in rows.values())
    table, times = results.test_scores["ListNet"], results.fit_times["ListNet"]
    mean, std = table.mean(axis=0), table.std(axis=0)
    assert rows["ListNet"][1] == f"{mean[0]:.4f} ± {std[0]:.4f}"
    assert rows["ListNet"][-1] == f"{times.mean():.2f}"
    published = [k for k in rows if k.startswith("*BoltzRank, published")]
    assert len(published) == 1
    assert rows[published[0]][1] == f"{bench.BOLTZRANK_TABLE2['BoltzRank1'][0]:.4f}"
    assert rows[published[0]][6] == "—"  # Table 2 has no NDCG@10
    assert "2.0 min" in text and "python benchmarks/letor_ohsumed.py" in text


def test_grid_option_parses_a_dict_of_lists_and_refuses_anything_else():
    import argparse

    bench = _letor_benchmark()
    name, grid = bench.parse_grid("BoltzRank={'gain_weight': [0.5], 'hidden_layer_sizes': [(5,)]}")
    assert (name, grid) == ("BoltzRank", {"gain_weight": [0.5], "hidden_layer_sizes": [(5,)]})
    for text in ("BoltzRank", "BoltzRank=", "BoltzRank={'gain_weight': 0.5}",
                 "BoltzRank={'gain_weight': []}", "BoltzRank={}", "BoltzRank=[1]",
                 "BoltzRank={'a': [f(1)]}"):
        with pytest.raises(argparse.ArgumentTypeError, match="dict literal"):
            bench.parse_grid(text)
    with pytest.raises(SystemExit) as exc:  # an unknown ranker: a usage error before any fit
        bench.main(["--grid", "NoSuchRanker={'alpha': [1.0]}", "--rankers", "Ridge"])
    assert exc.value.code == 2


def test_paired_difference_is_the_mean_and_standard_error_of_per_fold_differences():
    import numpy as np

    bench = _letor_benchmark()
    rng = np.random.default_rng(0)
    folds_mean = {name: rng.uniform(size=(5, len(bench.COLUMNS))) for name in ("A", "B")}
    top = ["NDCG@1", "NDCG@2"]
    idx = [bench.COLUMNS.index(c) for c in top]
    diff = folds_mean["A"][:, idx].mean(axis=1) - folds_mean["B"][:, idx].mean(axis=1)
    text = bench.paired_difference(folds_mean, "A", "B", top)
    assert text == (f"difference {diff.mean():+.4f}, paired s.e. over the folds "
                    f"{np.std(diff, ddof=1) / np.sqrt(5):.4f}")
    # a constant shift between the two rankers has no error
    folds_mean["C"] = folds_mean["B"] + 0.01
    assert bench.paired_difference(folds_mean, "C", "B", ["MAP"]) == (
        "difference +0.0100, paired s.e. over the folds 0.0000")


def test_ohsumed_table_is_the_benchmarks_output():
    """The committed table is the script's output (header, every ranker, published rows)."""
    bench = _letor_benchmark()
    text = TABLE.read_text()
    assert text.startswith(".. This file is written by benchmarks/letor_ohsumed.py --report")
    rows = _table_rows(text)
    # the optional gradient-boosted baselines (registered only where lightgbm or
    # xgboost is installed) may be absent from it; skrank's rankers may not
    optional = set(ROW_NAMES.values())
    assert set(bench.RANKERS) - optional <= set(rows)
    for name, (source, _) in bench.PUBLISHED.items():
        assert f"*{name}, published: {source}*" in rows
    assert ".. include:: ohsumed_table.rst" in (DOC / "user_guide" / "reproducing.rst").read_text()


@pytest.mark.slow
def test_ohsumed_table_ridge_row_is_reproduced(shared_data):
    """Ridge's row of the committed table, recomputed by the script's protocol."""
    from skrank.model_selection import letor_protocol

    bench = _letor_benchmark()
    results = letor_protocol(["Ridge"], shared_data / "ohsumed",
                             grids={"Ridge": bench.GRIDS["Ridge"]})
    expected = _table_rows(bench.rst_report(results, "", 0.0))["Ridge"]
    assert _table_rows(TABLE.read_text())["Ridge"][:-1] == expected[:-1]  # not the fit time
