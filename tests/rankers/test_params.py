"""The rankers' shared parameters (skrank/rankers/_params.py) and the user guide's table of them.

``doc/user_guide/parameters.rst`` holds, between two marker comments, the
table :func:`parameter_table` builds from the four rankers' ``__init__``
signatures (name, default) and docstrings (meaning: the first sentence of
the parameter's description). The test fails when a parameter is added,
renamed, re-defaulted or re-described without the table following; run it
with ``SKRANK_UPDATE_PARAMETER_TABLE=1`` to rewrite the table.
"""

import inspect
import os
import re
from pathlib import Path

from skrank import BoltzRankRanker, ListNetRanker, LogRankRanker, SoftRankRanker

RANKERS = [ListNetRanker, SoftRankRanker, BoltzRankRanker, LogRankRanker]
PAGE = Path(__file__).resolve().parents[2] / "doc" / "user_guide" / "parameters.rst"
BEGIN = ".. BEGIN GENERATED TABLE (tests/rankers/test_params.py)\n"
END = ".. END GENERATED TABLE\n"


def _short(cls):
    return cls.__name__.removesuffix("Ranker")


def documented_parameters(cls):
    """``{name: description}`` of the Parameters section of ``cls``'s docstring."""
    doc = inspect.getdoc(cls)
    section = doc.split("Parameters\n----------\n", 1)[1].split("\n\nAttributes\n", 1)[0]
    params, name = {}, None
    for line in section.splitlines():
        match = re.match(r"^(\w+) : ", line)
        if match:
            name = match.group(1)
            params[name] = []
        elif name is not None and line.startswith("    "):
            params[name].append(line.strip())
    return {name: " ".join(lines) for name, lines in params.items()}


def first_sentence(text):
    """Up to the first full stop outside parentheses that ends a sentence.

    A stop inside parentheses ("(eq. 15)") or after an abbreviation
    ("e.g.") does not end it.
    """
    depth = 0
    for i, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if (char == "." and depth == 0 and (i + 1 == len(text) or text[i + 1] == " ")
                and not re.search(r"\b(e\.g|i\.e|eq|cf|vs)$", text[:i])):
            return text[:i + 1]
    return text


def parameter_table():
    """The RST list-table of every public parameter of the four rankers."""
    rows = {}
    for cls in RANKERS:
        described = documented_parameters(cls)
        for name, param in inspect.signature(cls.__init__).parameters.items():
            if name == "self":
                continue
            row = rows.setdefault(name, {"meaning": first_sentence(described[name]),
                                         "defaults": {}})
            row["defaults"][_short(cls)] = param.default
    lines = [".. list-table::", "   :header-rows: 1", "   :widths: 18 52 18 12", "",
             "   * - Parameter", "     - Meaning (first sentence of the docstring)",
             "     - Default", "     - Rankers"]
    for name, row in rows.items():
        defaults = row["defaults"]
        values = list(dict.fromkeys(map(repr, defaults.values())))
        if len(values) == 1:
            default = f"``{values[0]}``"
        else:
            default = "; ".join(
                f"{', '.join(r for r, v in defaults.items() if repr(v) == value)}: ``{value}``"
                for value in values)
        rankers = "all" if len(defaults) == len(RANKERS) else ", ".join(defaults)
        lines += [f"   * - ``{name}``", f"     - {row['meaning']}", f"     - {default}",
                  f"     - {rankers}"]
    return "\n".join(lines) + "\n"


def test_every_parameter_is_documented():
    for cls in RANKERS:
        signature = [n for n in inspect.signature(cls.__init__).parameters if n != "self"]
        assert list(documented_parameters(cls)) == signature, cls.__name__


def test_the_user_guide_table_is_the_generated_one():
    page = PAGE.read_text()
    head, rest = page.split(BEGIN, 1)
    table, tail = rest.split(END, 1)
    expected = "\n" + parameter_table() + "\n"
    if os.environ.get("SKRANK_UPDATE_PARAMETER_TABLE"):
        PAGE.write_text(head + BEGIN + expected + END + tail)
        table = expected
    assert table == expected, (
        f"{PAGE} is stale: rerun this test with SKRANK_UPDATE_PARAMETER_TABLE=1 to regenerate "
        "the table from the rankers' signatures and docstrings."
    )


def test_the_table_follows_a_renamed_parameter(monkeypatch):
    # the generated table changes with the signature: a stale page cannot pass
    before = parameter_table()
    monkeypatch.setattr(ListNetRanker.__init__, "__signature__",
                        inspect.signature(ListNetRanker.__init__).replace(
                            parameters=[p.replace(default=0.5) if p.name == "alpha" else p
                                        for p in inspect.signature(
                                            ListNetRanker.__init__).parameters.values()]),
                        raising=False)
    assert parameter_table() != before
