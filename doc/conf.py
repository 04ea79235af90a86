"""Sphinx configuration for skrank's documentation."""

import skrank

project = "skrank"
version = release = skrank.__version__
extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]
sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
}
numpydoc_show_class_members = False
