"""Sphinx configuration for skrank's documentation.

Build with ``sphinx-build -W --keep-going -b html doc doc/_build/html`` (the
``docs`` extra): warnings are errors, so a broken cross-reference, a
docstring numpydoc cannot parse or an example that raises fails the build.
``-D plot_gallery=0`` skips running the gallery (its scripts also run as
tests, see ``tests/test_docs.py``).
"""

import os
import re

import skrank

project = "skrank"
copyright = "skrank developers"
author = "skrank developers"
version = release = skrank.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]

templates_path = ["_templates"]
exclude_patterns = ["_build", "user_guide/ohsumed_table.rst"]  # the table is included
root_doc = "index"

# Every cross-reference must resolve. Names of other projects cannot (no
# intersphinx: the build runs offline), so those are exempt, by prefix.
nitpicky = True
nitpick_ignore_regex = [
    (r"py:.*", r"(sklearn|numpy|np|scipy|joblib|dask|distributed|ray|matplotlib)(\..*)?"),
    (r"py:.*", r"(callable|object|array-like|optional|default|dict|list|tuple|str|int|float"
               r"|bool|None|True|False|ndarray|sparse matrix)"),
]

autosummary_generate = True
autodoc_default_options = {"members": False}
autodoc_typehints = "none"  # signatures as written; types live in the docstrings
add_module_names = False

# numpydoc: the docstring sections render as tables, the class pages list no
# members of their own (the autosummary template does), and these checks of
# numpydoc's validator run on every documented public object (a failure is a
# warning, hence an error): GL08 no docstring, SS01 no summary, SS03 summary
# without a period, PR01 a parameter not documented, PR02 a documented
# parameter that does not exist, PR06 type spelt "string"/"integer"/"boolean",
# GL03 a double blank line. (GL02, the closing quotes of a one-line docstring
# on their own line, contradicts PEP 257 and is not checked.) Exempt: the
# module-level data and class attributes (numpydoc would validate the
# docstring of their value's type, e.g. str's), and the methods scikit-learn
# writes or documents (metadata routing's set_*_request, get_params, ...).
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_validation_checks = {"GL08", "SS01", "SS03", "PR01", "PR02", "PR06", "GL03"}
numpydoc_validation_exclude = {
    r"\.__init__$",  # documented by the class docstring
    r"^skrank\.__version__$",
    r"^skrank\.losses\.LOSSES$",
    r"^skrank\.metrics\.CONVENTIONS$",
    r"^skrank\.losses\.\w+Loss\.(name|sampling)$",
    r"\.(set_\w+_request|get_metadata_routing|get_params|set_params|set_output"
    r"|fit_transform|get_feature_names_out)$",
}

html_theme = "pydata_sphinx_theme"
html_title = f"skrank {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
}
html_static_path = []

sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "within_subsection_order": "FileNameSortKey",
    "download_all_examples": False,
    "remove_config_comments": True,
    "matplotlib_animations": False,
    "doc_module": ("skrank",),
    "backreferences_dir": "api/generated/backreferences",
    "only_warn_on_example_error": False,
    "show_memory": False,
}

# Examples draw with the non-interactive backend.
os.environ.setdefault("MPLBACKEND", "Agg")


# Docstrings that skrank inherits from scikit-learn (get_params,
# set_fit_request, set_output, ...) refer to scikit-learn's glossary and user
# guide, which an offline build cannot resolve: those roles become literal
# text there. skrank's own docstrings are left alone, so their references must
# resolve.
_SKLEARN_ROLE = re.compile(r":(term|ref):`([^`<]*?)(?:\s*<[^`>]*>)?`")


def _plain_sklearn_roles(app, what, name, obj, options, lines):
    module = getattr(getattr(obj, "fget", obj), "__module__", None) or ""
    if module.startswith("sklearn") or re.search(r"\.set_\w+_request$", name):
        lines[:] = [_SKLEARN_ROLE.sub(lambda m: f"``{m.group(2).strip()}``", line)
                    for line in lines]


def setup(app):
    app.connect("autodoc-process-docstring", _plain_sklearn_roles)
