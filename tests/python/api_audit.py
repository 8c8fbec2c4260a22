"""The public API of a `dynet` module as data: names, kinds, parameter names and defaults, class members.

    python tests/python/api_audit.py --write FILE    # describe the `dynet` module importable here
    python tests/python/api_audit.py --compare FILE  # compare the importable `dynet` with a description

tests/python/data/dynet_2_1_api.json is the description of the original DyNet 2.1 module (the dyNET38
package from PyPI, written by running this script with bench/.venv's Python); test_api_audit.py checks
ours against it. Signatures come from inspect (Cython and Python functions) or from nanobind's
__nb_signature__ (our extension's functions and the generated op functions).
"""
import ast
import inspect
import json
import sys

# Names of the original module that are not part of its API: the modules it imports, and one
# undocumented class (inputTensorTranspose: a raw column-major buffer input).
NOT_API = {"np", "os", "sys", "pickle", "print_function", "dynet_config", "inputTensorTranspose"}
# Members the original declares on the class and ours sets on each instance (the builders' spec).
INSTANCE_ATTRIBUTES = {"spec"}


def _split_params(text):
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch in "[({":
            depth += 1
        elif ch in "])}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur)
    return [p.strip() for p in parts]


def _nb_signatures(f):
    """[(name, default repr or None, kind)] per overload, from nanobind's __nb_signature__."""
    sig = getattr(f, "__nb_signature__", None)
    if sig is None:
        return None
    if isinstance(sig, str):  # our op functions: "def name(a: T = 1) -> Expression: ..." lines
        entries = [(line, None) for line in sig.splitlines() if line.startswith("def ")]
    else:  # nanobind functions: ((text with \\N default placeholders, doc, defaults), ...)
        entries = [(text, defaults) for text, _, defaults in sig]
    result = []
    for text, defaults in entries:
        inside = text[text.index("(") + 1:text.rindex(")")]
        params = []
        for p in _split_params(inside):
            if p in ("/", "*"):
                continue
            kind = "VAR_POSITIONAL" if p.startswith("*") and not p.startswith("**") else (
                "VAR_KEYWORD" if p.startswith("**") else "POSITIONAL_OR_KEYWORD")
            name = p.lstrip("*").split(":")[0].split("=")[0].strip()
            default = None
            if "=" in p:
                default = p.split("=", 1)[1].strip()
                if default.startswith("\\") and defaults is not None:
                    default = repr(defaults[int(default[1:])])
            params.append((name, default, kind))
        result.append(params)
    return result


def signatures(f):
    """The overloads of f as lists of (name, default repr or None, kind), or None if not introspectable."""
    nb = _nb_signatures(f)
    if nb is not None:
        return nb
    try:
        s = inspect.signature(f)
    except (TypeError, ValueError):
        return None
    return [[(p.name, repr(p.default) if p.default is not p.empty else None, p.kind.name)
             for p in s.parameters.values()]]


def describe(module):
    out = {}
    for name in sorted(dir(module)):
        if name.startswith("_") or name in NOT_API:
            continue
        v = getattr(module, name)
        if inspect.ismodule(v):
            continue
        entry = {"kind": "class" if isinstance(v, type) else ("function" if callable(v) else "value")}
        if isinstance(v, type):
            entry["members"] = {}
            for m in dir(v):
                if m.startswith("_") and m not in ("__getitem__", "__len__", "__call__", "__enter__", "__exit__"):
                    continue
                mv = getattr(v, m, None)
                entry["members"][m] = signatures(mv) if callable(mv) else None
        elif callable(v):
            entry["signatures"] = signatures(v)
        out[name] = entry
    return out


REQUIRED = object()  # no default


def _default_value(text):
    if text is None:
        return REQUIRED
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def _named(params, skip_self):
    """(name or None when positional-only, default) of the parameters a caller passes: no self, no
    *args/**kwargs."""
    out = [(None if k == "POSITIONAL_ONLY" else n, _default_value(d))
           for n, d, k in params if k not in ("VAR_POSITIONAL", "VAR_KEYWORD")]
    return out[1:] if skip_self and params and params[0][0] == "self" else out


def _same_default(theirs, ours):
    if theirs is REQUIRED:  # required there: any default here only accepts more calls
        return True
    if ours is REQUIRED:
        return False
    if isinstance(theirs, (int, float)) and isinstance(ours, (int, float)):
        return float(theirs) == float(ours)
    return theirs == ours


def _agree(theirs, ours_overloads, skip_self):
    """Some overload of ours accepts the original's call: same names in order, same defaults."""
    want = _named(theirs, skip_self)
    for ours in ours_overloads:
        have = _named(ours, skip_self)
        if len(have) < len(want):
            continue
        # Extra trailing parameters of ours must have defaults; names and defaults of the shared part agree.
        if any(d is REQUIRED for _, d in have[len(want):]):
            continue
        if any(nw is not None and nw != nh for (nw, _), (nh, _) in zip(want, have)):
            continue
        if all(_same_default(dw, dh) for (_, dw), (_, dh) in zip(want, have)):
            return True
    return False


def compare(original, ours):
    """Problems, as readable lines: what the original has that ours lacks or declares differently."""
    problems = []
    for name, entry in sorted(original.items()):
        mine = ours.get(name)
        if mine is None:
            problems.append("missing: dynet.%s (%s)" % (name, entry["kind"]))
            continue
        if entry["kind"] == "class":
            if mine["kind"] != "class":
                problems.append("dynet.%s is a class in DyNet, a %s here" % (name, mine["kind"]))
                continue
            for member, theirs in sorted(entry["members"].items()):
                if member in INSTANCE_ATTRIBUTES:
                    continue
                if member not in mine["members"]:
                    problems.append("missing: dynet.%s.%s" % (name, member))
                elif theirs and mine["members"][member] and not _agree(theirs[0], mine["members"][member], True):
                    problems.append("dynet.%s.%s%s differs from DyNet's %s" % (
                        name, member, mine["members"][member], theirs[0]))
        elif entry["kind"] == "function":
            theirs = entry.get("signatures")
            if mine["kind"] == "value":
                problems.append("dynet.%s is a function in DyNet, not here" % name)
            elif theirs and mine.get("signatures") and not _agree(theirs[0], mine["signatures"], False):
                problems.append("dynet.%s%s differs from DyNet's %s" % (name, mine["signatures"], theirs[0]))
    return problems


def main(argv):
    sys.argv = sys.argv[:1]  # dynet reads --dynet-* flags at import
    import dynet
    if len(argv) == 2 and argv[0] == "--write":
        with open(argv[1], "w") as f:
            json.dump(describe(dynet), f, indent=1, sort_keys=True)
            f.write("\n")
        return 0
    if len(argv) == 2 and argv[0] == "--compare":
        with open(argv[1]) as f:
            problems = compare(json.load(f), describe(dynet))
        print("\n".join(problems) or "no differences")
        return 1 if problems else 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
