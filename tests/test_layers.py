"""The import graph of skrank: no cycle, and no import from a lower layer to a higher one.

Every ``.py`` file of the package is parsed with :mod:`ast` (nothing is
imported): its imports of skrank modules, relative ones resolved, at module
level or inside a function, are the edges of the graph.
"""

import ast
import pkgutil
import re
from pathlib import Path

import pytest

import skrank

ROOT = Path(__file__).resolve().parents[1]

#: skrank's layers, bottom to top: a module imports only modules of its own
#: layer and of the layers below. A module's layer is that of the longest entry
#: that names it or a package holding it (names relative to ``skrank``; ``""``
#: is ``skrank/__init__.py`` alone), so a new module of an existing package
#: needs no entry. CONTRIBUTING.md lists the same order.
LAYERS = [
    "utils",                   # scikit-learn compatibility, validation, routing, QueryLayout
    "datasets",                # loaders and synthetic data
    "metrics",                 # ranking metrics and scorers
    "losses",                  # listwise losses: value and gradient of the scores
    "_core",                   # networks, solvers, the fit loop
    "rankers",                 # the estimators, and the registry of the command line
    "preprocessing",
    "model_selection",
    "inspection",              # permutation importance, on model_selection's splits
    "stream",                  # data larger than memory: chunks of whole queries, fit_stream
    "export",                  # fitted models in formats that leave Python
    "utils.estimator_checks",  # the checks each estimator fails by design
    "",                        # skrank/__init__.py: the public names, re-exported
    "_compare",                # the comparison of python -m skrank compare
    "_cli",                    # the command line
    "__main__",
]


def module_files(package_dir):
    """Dotted module name -> file, for every ``.py`` file under ``package_dir``."""
    modules = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = path.relative_to(package_dir.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def _existing(name, modules):
    """The longest prefix of the dotted ``name`` that is one of ``modules``."""
    while name not in modules:
        if "." not in name:
            raise AssertionError(f"{name!r} is not a module of the package")
        name = name.rpartition(".")[0]
    return name


def imports_of(name, path, modules):
    """The modules of ``modules`` that the file of module ``name`` imports, anywhere in it."""
    top = name.partition(".")[0]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module
            if node.level:  # relative: from the package, one level up per extra dot
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1] + ([base] if base else [])
                base = ".".join(parts)
            # ``from pkg import sub`` imports the module pkg.sub, ``from pkg import f`` pkg
            targets = [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        found.update(_existing(t, modules) for t in targets if t.partition(".")[0] == top)
    found.discard(name)
    return found


def import_graph(package_dir):
    """Module -> the set of the package's modules it imports."""
    modules = module_files(package_dir)
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def find_cycle(graph):
    """One import cycle of ``graph`` as a list ``[a, b, ..., a]``, or None."""
    done, on_path = set(), []

    def visit(node):
        if node in on_path:
            return on_path[on_path.index(node):] + [node]
        if node in done:
            return None
        on_path.append(node)
        for target in sorted(graph[node]):
            cycle = visit(target)
            if cycle:
                return cycle
        on_path.pop()
        done.add(node)
        return None

    for node in sorted(graph):
        cycle = visit(node)
        if cycle:
            return cycle
    return None


def layer_of(name, layers):
    """Index in ``layers`` of the longest entry naming module ``name`` or a package holding it.

    None when no entry does (``""`` names the top package alone).
    """
    relative = name.partition(".")[2]
    matches = [key for key in layers if relative == key or relative.startswith(key + ".")]
    if not matches:
        return None
    return layers.index(max(matches, key=len))


def upward_imports(graph, layers):
    """``"a (layer) imports b (layer)"`` for every import of a module from a higher layer."""
    found = []
    for name, targets in sorted(graph.items()):
        for target in sorted(targets):
            low, high = layer_of(name, layers), layer_of(target, layers)
            if high > low:
                found.append(f"{name} ({layers[low]!r}) imports {target} ({layers[high]!r})")
    return found


@pytest.fixture(scope="module")
def graph():
    return import_graph(Path(skrank.__file__).parent)


def test_the_walk_sees_every_module_and_the_known_imports(graph):
    walked = {m.name for m in pkgutil.walk_packages(skrank.__path__, "skrank.")}
    assert set(graph) == walked | {"skrank"}
    assert "skrank.rankers._registry" in graph["skrank._cli"]
    assert "skrank._cli" in graph["skrank.__main__"]
    assert "skrank" in graph["skrank._cli"]  # from . import __version__
    # inside a function
    assert "skrank.preprocessing" in graph["skrank.utils.estimator_checks"]


def test_every_module_has_a_layer_and_every_layer_a_module(graph):
    assert [name for name in graph if layer_of(name, LAYERS) is None] == []
    assert len(set(LAYERS)) == len(LAYERS)
    named = {key for key in LAYERS if any(layer_of(name, [key]) is not None for name in graph)}
    assert [key for key in LAYERS if key not in named] == []


def test_no_import_cycle(graph):
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_no_import_from_a_higher_layer(graph):
    assert upward_imports(graph, LAYERS) == []


def test_contributing_lists_the_layers_in_this_order():
    text = (ROOT / "CONTRIBUTING.md").read_text()
    section = text.partition("## Layer order")[2].partition("\n## ")[0]
    listed = re.findall(r"^\d+\. `skrank\.?([\w.]*)`", section, flags=re.M)
    assert listed == LAYERS


# The checker itself, on a small package written for the purpose.
def _write_package(root, files):
    for relative, source in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
    return root / "pkg"


SMALL_PACKAGE = {
    "pkg/__init__.py": "from .low import f\nfrom . import high\n",
    "pkg/low/__init__.py": "from ._a import f\n",
    "pkg/low/_a.py": "import os\n\ndef f():\n    return os.sep\n",
    "pkg/low/_b.py": "from ._a import f\nfrom .. import low\n",
    "pkg/high.py": "import pkg.low._a as a\nfrom pkg.low import _b, f\n",
}
SMALL_LAYERS = ["low", "high", ""]


def test_the_walk_resolves_relative_and_absolute_imports(tmp_path):
    graph = import_graph(_write_package(tmp_path, SMALL_PACKAGE))
    assert graph == {
        "pkg": {"pkg.low", "pkg.high"},
        "pkg.high": {"pkg.low", "pkg.low._a", "pkg.low._b"},
        "pkg.low": {"pkg.low._a"},
        "pkg.low._a": set(),
        "pkg.low._b": {"pkg.low", "pkg.low._a"},
    }
    assert find_cycle(graph) is None
    assert upward_imports(graph, SMALL_LAYERS) == []


def test_a_cycle_through_an_import_in_a_function_is_found(tmp_path):
    files = dict(SMALL_PACKAGE)
    files["pkg/low/_a.py"] += "\ndef g():\n    from ._b import f\n    return f\n"
    graph = import_graph(_write_package(tmp_path, files))
    cycle = find_cycle(graph)
    assert cycle[0] == cycle[-1] and {"pkg.low._a", "pkg.low._b"} <= set(cycle)
    assert all(b in graph[a] for a, b in zip(cycle, cycle[1:]))


def test_an_import_from_a_higher_layer_is_found(tmp_path):
    files = dict(SMALL_PACKAGE)
    files["pkg/low/_b.py"] += "\ndef g():\n    from ..high import a\n    return a\n"
    graph = import_graph(_write_package(tmp_path, files))
    assert upward_imports(graph, SMALL_LAYERS) == [
        "pkg.low._b ('low') imports pkg.high ('high')"
    ]
    assert layer_of("pkg.low._new", SMALL_LAYERS) == 0  # a new module of a package
    assert layer_of("pkg.lower", SMALL_LAYERS) is None  # "low" names pkg.low.*, not pkg.lower
