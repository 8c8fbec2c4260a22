"""The public declarations of a C++ header, for the C++ reference pages.

Reads a header of include/dynet and keeps what a user of it sees: declarations and their comments at
namespace and class level. Dropped: preprocessor lines, function bodies (a body becomes `;`, a
constructor's initializer list goes with it), and private/protected sections. It is a brace-and-paren
scanner, not a C++ parser; it only has to be right for this project's headers, whose pages show the result.
Run directly (python3 cpp_decls.py HEADER) to print what a page will show.
"""
import re
import sys

_HEAD_KEEP = re.compile(r"\b(namespace|enum|extern\s+\"C\")\b")
_HEAD_CLASS = re.compile(r"\b(class|struct|union)\b")


class _Context:
    def __init__(self, kind, public=True):
        self.kind = kind  # "namespace", "class", "keep" (enum, brace initializer), "body"
        self.public = public


def _top_level_paren_close(stmt):
    depth = 0
    seen = False
    for ch in stmt:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                seen = True
    return seen


def _ctor_init_colon(stmt):
    """Index of the ':' that starts a constructor's initializer list in stmt, or -1."""
    depth = 0
    after_paren = False
    i = 0
    while i < len(stmt):
        ch = stmt[i]
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                after_paren = True
        elif ch == ":" and depth == 0:
            if stmt[i:i + 2] == "::" or (i > 0 and stmt[i - 1] == ":"):
                i += 2
                continue
            if after_paren:
                return i
        i += 1
    return -1


def declarations(text):
    """Returns (summary, code): the header's leading comment as prose, and its public declarations."""
    lines = text.splitlines()
    summary = []
    while lines and lines[0].startswith("//"):
        summary.append(lines.pop(0)[2:].strip())
    # Preprocessor lines (and their continuations) say nothing a user calls.
    kept = []
    continued = False
    for line in lines:
        if continued or line.lstrip().startswith("#"):
            continued = line.rstrip().endswith("\\")
            # A comment right above a macro describes the macro.
            while kept and kept[-1].lstrip().startswith("//"):
                kept.pop()
            continue
        kept.append(line)
    src = "\n".join(kept) + "\n"

    out = []          # emitted characters
    stmt = []         # the current statement's text at this level (since the last ; { } or label)
    stack = [_Context("namespace")]
    paren = 0
    i = 0
    n = len(src)

    def visible():
        return all(c.kind != "body" and c.public for c in stack)

    def emit(s):
        if visible():
            out.append(s)

    while i < n:
        ch = src[i]
        two = src[i:i + 2]
        # Comments and literals pass through whole (or are skipped whole inside hidden parts).
        if two == "//":
            j = src.find("\n", i)
            emit(src[i:j])
            i = j
            continue
        if two == "/*":
            j = src.find("*/", i) + 2
            emit(src[i:j])
            i = j
            continue
        if ch in "\"'":
            j = i + 1
            while j < n and src[j] != ch:
                j += 2 if src[j] == "\\" else 1
            emit(src[i:j + 1])
            stmt.append(src[i:j + 1])
            i = j + 1
            continue
        top = stack[-1]
        if top.kind == "body":
            if ch == "{":
                stack.append(_Context("body"))
            elif ch == "}":
                stack.pop()
                if stack[-1].kind != "body":
                    stmt = []
            i += 1
            continue
        if ch == "(":
            paren += 1
        elif ch == ")":
            paren -= 1
        if ch == "{" and paren == 0:
            head = "".join(stmt)
            if top.kind == "keep":
                kind = "keep"
            elif _HEAD_KEEP.search(head):
                kind = "namespace" if "enum" not in head else "keep"
            elif _HEAD_CLASS.search(head) and not _top_level_paren_close(head):
                kind = "class"
            elif _top_level_paren_close(head):
                kind = "body"
            else:
                kind = "keep"  # a brace initializer
            if kind == "body":
                colon = _ctor_init_colon(head)
                if colon >= 0 and visible():
                    # Drop the initializer list already emitted: cut back to the colon.
                    cut = len(head) - colon
                    text_out = "".join(out)
                    out[:] = [text_out[:len(text_out) - cut].rstrip()]
                elif visible():
                    text_out = "".join(out).rstrip()
                    out[:] = [text_out]
                emit(";")
                stack.append(_Context("body"))
                i += 1
                continue
            emit(ch)
            # A class starts private; a namespace of implementation details stays hidden.
            public = not (kind == "class" and re.search(r"\bclass\b", head))
            if kind == "namespace" and re.search(r"\bnamespace\s+(detail|internal|impl)\b", head):
                public = False
            stack.append(_Context(kind, public))
            stmt = []
            i += 1
            continue
        if ch == "}" and paren == 0:
            ctx = stack.pop()
            if visible():
                out.append(ch)
            stmt = [] if ctx.kind != "keep" else stmt + [ch]
            i += 1
            continue
        if ch == ";" and paren == 0:
            emit(ch)
            stmt = []
            i += 1
            continue
        if top.kind == "class" and paren == 0:
            m = re.match(r"(public|protected|private)\s*:(?!:)", src[i:])
            if m and not "".join(stmt).strip():
                was_public = visible()
                top.public = m.group(1) == "public"
                if was_public:
                    text_out = "".join(out)
                    out[:] = [text_out[:len(text_out) - (len(text_out) - len(text_out.rstrip(" ")))]]
                if top.public and not was_public:
                    emit("\n public:")
                # Drop the label and the rest of its line (a label that changes nothing shows nothing).
                j = src.find("\n", i)
                i = j
                stmt = []
                continue
        emit(ch)
        stmt.append(ch)
        i += 1

    code = "".join(out)
    # Trailing spaces, lines left empty by hidden parts, and runs of blank lines go.
    result = []
    for line in code.splitlines():
        line = line.rstrip()
        if re.match(r"\s*namespace\s+(detail|internal|impl)\s*\{\s*\}", line):
            continue
        if not line and (not result or not result[-1]):
            continue
        if line.lstrip().startswith("}") and result and not result[-1]:
            result.pop()
        result.append(line)
    while result and not result[-1]:
        result.pop()
    return " ".join(s for s in summary if s), "\n".join(result) + "\n"


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as f:
        summary, code = declarations(f.read())
    print(summary)
    print(code)
