# Sphinx configuration of the documentation site; built by scripts/docs into build/docs.
import os
import sys

docs_dir = os.path.dirname(os.path.abspath(__file__))
repo_root = os.path.dirname(docs_dir)

# autodoc imports the built module: scripts/docs sets DYNET_DOCS_PYTHONPATH to build/python (the tests' path).
sys.path.insert(0, os.environ.get("DYNET_DOCS_PYTHONPATH", os.path.join(repo_root, "build", "python")))
sys.path.insert(0, os.path.join(docs_dir, "_ext"))

project = "dynet"
author = "the dynet authors"
copyright = "the dynet authors"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "dynet_docs",
]

source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "_ext", "Thumbs.db", ".DS_Store"]

myst_enable_extensions = ["dollarmath", "colon_fence", "deflist"]
# Links such as design.md#autobatching resolve to headings down to this level. Nothing is suppressed: a link
# to a missing page or heading fails the build (-W), so the pages cannot point at sections that moved.
myst_heading_anchors = 4

# The module's docstrings are Google style (Args:/Returns:); a plain one-line docstring renders as it is.
napoleon_google_docstring = True
napoleon_numpy_docstring = False
# nanobind's classes show their generic __new__ otherwise.
autodoc_default_options = {"members": True, "undoc-members": True, "member-order": "bysource",
                           "exclude-members": "__new__"}
autodoc_typehints = "signature"

html_theme = "furo" if __import__("importlib.util").util.find_spec("furo") else "alabaster"
html_title = "dynet"
html_static_path = []

# Headers that no C++ reference page shows (docs/_ext/dynet_docs.py fails the build on any other header
# missing from the pages): DyNet's CUDA headers, which declare nothing in a build without CUDA, and headers
# that DyNet kept for old programs and that declare nothing here.
dynet_cpp_headers_not_shown = ["cuda.h", "cuda-matrix-multiply.h", "cudnn-ops.h", "virtual-cudnn.h",
                               "gpu-kernels.h", "dynet-helper.h", "io-macros.h"]
