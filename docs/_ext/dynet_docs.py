"""Sphinx extension of this site: the `cpp-header` directive, and a check that every public header has a page.

    ```{cpp-header} training.h
    ```

shows include/dynet/training.h's leading comment and its public declarations (cpp_decls.py), read at build
time, so the C++ reference cannot fall behind the headers. Every header of include/dynet must be shown by some
page or be listed in conf.py's `dynet_cpp_headers_not_shown` (with the reason there): a new header otherwise
fails the build (a warning, and scripts/docs builds with -W).
"""
import importlib
import io
import os
import re

from docutils import nodes
from docutils.statemachine import StringList
import docutils.core
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

from cpp_decls import declarations

logger = logging.getLogger(__name__)


def _include_dir(app):
    return os.path.join(os.path.dirname(app.srcdir), "include", "dynet")


class CppHeader(SphinxDirective):
    required_arguments = 1
    has_content = False

    def run(self):
        name = self.arguments[0]
        path = os.path.join(_include_dir(self.env.app), name)
        if not os.path.isfile(path):
            raise self.error(f"cpp-header: no header include/dynet/{name}")
        self.env.note_dependency(path)
        self.env.dynet_cpp_headers = getattr(self.env, "dynet_cpp_headers", {})
        self.env.dynet_cpp_headers.setdefault(self.env.docname, set()).add(name)
        with open(path, encoding="utf-8") as f:
            summary, code = declarations(f.read())
        section_id = nodes.make_id("header-" + name)
        section = nodes.section(ids=[section_id])
        section += nodes.title("", "", nodes.literal(text=f"#include \"dynet/{name}\""))
        if summary:
            section += nodes.paragraph(text=summary)
        block = nodes.literal_block(code, code)
        block["language"] = "cpp"
        section += block
        return [section]


# The Python reference's groups, by name; whatever no group claims lands in "other", so a new public name
# of the module is documented somewhere without anyone listing it.
_MODEL = ["ParameterCollection", "Model", "Parameters", "LookupParameters", "Expression", "ComputationGraph",
          "Tensor", "StaleExpressionError", "renew_cg", "cg", "cg_version", "cg_checkpoint", "cg_revert",
          "forward", "values", "npvalues", "parameter", "const_parameter", "save", "load", "load_generator",
          "save_safetensors", "load_safetensors", "from_dlpack"]
_CONFIG = ["DynetParams", "init", "init_from_params", "reset_random_seed", "available_devices",
           "get_device_info", "DeviceInfo", "HAVE_CUDA", "print_graphviz", "print_text_graphviz", "dump_cg",
           "profiler", "mpi"]


def _group(name, obj):
    if type(obj).__name__ == "op":
        return "ops"
    if name.endswith("Trainer"):
        return "trainers"
    if name.endswith("Builder") or name in ("RNNState", "StackedRNNState"):
        return "builders"
    if name.endswith("Initializer"):
        return "initializers"
    if name in _MODEL:
        return "model"
    if name in _CONFIG:
        return "config"
    return "other"


def _public_names(module):
    return [n for n in dir(module) if not n.startswith("_")]


class PythonApi(SphinxDirective):
    """Autodoc entries for one group of the live `dynet` module's public names (see _group). Use it in .rst
    pages: the entries are reStructuredText, which a MyST page would read as Markdown."""
    required_arguments = 1

    def run(self):
        group = self.arguments[0]
        dy = importlib.import_module("dynet")
        self.env.dynet_python_groups = getattr(self.env, "dynet_python_groups", {})
        self.env.dynet_python_groups.setdefault(self.env.docname, set()).add(group)
        order = _MODEL + _CONFIG
        names = [n for n in _public_names(dy) if _group(n, getattr(dy, n)) == group]
        names.sort(key=lambda n: (order.index(n) if n in order else len(order), n.lower()))
        lines = []
        for name in names:
            obj = getattr(dy, name)
            if isinstance(obj, type):
                lines.append(f".. autoclass:: dynet.{name}")
                if obj.__module__ == "dynet" or name == obj.__name__:
                    lines.append("   :members:")
                    lines.append("   :undoc-members:")
                    if issubclass(obj, BaseException):
                        lines.append("   :exclude-members: add_note, with_traceback, args")
            elif callable(obj):
                lines.append(f".. autofunction:: dynet.{name}")
            elif type(obj).__name__ == "module":
                lines.append(f".. py:module:: dynet.{name}")
                lines.append("   :no-index:")
                lines.append("")
                lines.append(f"   The submodule ``dynet.{name}``: {(obj.__doc__ or '').strip().splitlines()[0] if obj.__doc__ else ''}")
            else:
                lines.append(f".. py:data:: dynet.{name}")
                lines.append(f"   :value: {obj!r}")
            lines.append("")
        container = nodes.container()
        self.state.nested_parse(StringList(lines, source="dynet-python-api"), self.content_offset, container)
        return container.children


# Docstrings are written for `help()` as much as for this site: plain text may hold characters that
# reStructuredText reads as markup (`*` in y = x*w, |x|, a trailing _). Such a docstring would fail the -W
# build though nothing is wrong with it, so one that does not parse cleanly on its own is shown with those
# characters escaped (an info line names it); well-formed ones, Google style included, are left as they are.
_SPHINX_ONLY = re.compile(r"Unknown interpreted text role|No role entry|Unknown directive type|"
                          r"No directive entry|Trying .* as canonical")
_MARKUP = re.compile(r"(?<!\\)([*`|]|(?<=\w)_(?=\W|$))")
_ROLE = re.compile(r":[\w:.+-]+:`[^`]*`")


def _markup_problems(text):
    # Sphinx's roles (:class:`X`) need a Sphinx environment to parse; they are Sphinx's to check.
    text = _ROLE.sub("role", text)
    stream = io.StringIO()
    docutils.core.publish_doctree(text, settings_overrides={
        "report_level": 2, "halt_level": 5, "warning_stream": stream, "input_encoding": "unicode"})
    return [line for line in stream.getvalue().splitlines()
            if re.search(r"\((WARNING|ERROR|SEVERE)/", line) and not _SPHINX_ONLY.search(line)]


def _escape_plain_docstring(app, what, name, obj, options, lines):
    if not lines:
        return
    problems = _markup_problems("\n".join(lines))
    if problems:
        logger.info(f"docstring of {name}: shown with its markup characters escaped ({problems[0]})")
        lines[:] = [_MARKUP.sub(lambda m: "\\" + m.group(0), line) for line in lines]


def _purge(app, env, docname):
    getattr(env, "dynet_cpp_headers", {}).pop(docname, None)
    getattr(env, "dynet_python_groups", {}).pop(docname, None)


def _merge(app, env, docnames, other):
    for attr in ("dynet_cpp_headers", "dynet_python_groups"):
        mine = getattr(env, attr, {})
        setattr(env, attr, mine)
        for docname in docnames:
            if docname in getattr(other, attr, {}):
                mine[docname] = getattr(other, attr)[docname]


def _check_headers(app, env):
    shown = set().union(*getattr(env, "dynet_cpp_headers", {}).values())
    not_shown = set(app.config.dynet_cpp_headers_not_shown)
    for name in sorted(os.listdir(_include_dir(app))):
        if name.endswith(".h") and name not in shown and name not in not_shown:
            logger.warning(f"include/dynet/{name} is on no C++ reference page: add it to one (a cpp-header "
                           f"directive) or to dynet_cpp_headers_not_shown in docs/conf.py")
    for name in sorted(shown & not_shown):
        logger.warning(f"include/dynet/{name} is shown but also listed in dynet_cpp_headers_not_shown")
    groups = set().union(*getattr(env, "dynet_python_groups", {}).values())
    for group in ("ops", "trainers", "builders", "initializers", "model", "config", "other"):
        if group not in groups:
            logger.warning(f"the Python reference shows no page with dynet-python-api {group}")


def setup(app):
    app.add_directive("cpp-header", CppHeader)
    app.add_directive("dynet-python-api", PythonApi)
    # After napoleon (priority 500), which turns Google-style sections into field lists (escaping *args).
    app.connect("autodoc-process-docstring", _escape_plain_docstring, priority=600)
    app.add_config_value("dynet_cpp_headers_not_shown", [], "env")
    app.connect("env-purge-doc", _purge)
    app.connect("env-merge-info", _merge)
    app.connect("env-check-consistency", _check_headers)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
