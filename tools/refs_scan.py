"""The prose of the repository's files, for tools/rewrite_refs.py and tools/check_refs.py.

prose_spans(path, text) returns the (start, end) character ranges of a file that are prose: the
comments of C++, Python (and docstrings), CMake and shell files, and the whole of a Markdown or
plain-text file. String literals, code and data files are never prose, so a rewrite confined to
these ranges cannot change what a program does.

anchors(root) returns the ids the reference documents define: every <a id="..."></a> of
docs/protocol.md (prefix P) and docs/design-notes.md (prefix D).
"""

import io
import os
import re
import tokenize

# What is scanned: the tree's prose, not generated files, data or the fuzz corpora.
ROOTS = ["src", "tests", "bench", "tools", "docs", "examples", "fuzz", "deploy", "packaging",
         "cmake", "README.md", "CMakeLists.txt"]
SKIP_DIRS = {"corpus", "testdata_bin", "__pycache__", ".git"}
# The tools quote the outside names in their patterns and test data; checked by hand.
SKIP_FILES = {"tools/rewrite_refs.py", "tools/check_refs.py", "tools/refs_scan.py",
              "tools/refs_test.py"}

CPP_EXT = (".cc", ".h", ".cpp", ".hpp", ".c", ".inc")
HASH_EXT = (".sh", ".cmake", ".yaml", ".yml", ".toml", ".service", ".conf")
TEXT_EXT = (".md", ".txt")


def kind_of(path):
    base = os.path.basename(path)
    if base == "CMakeLists.txt":
        return "hash"
    if base == "Dockerfile" or base.endswith(".Dockerfile") or base.endswith(".containerfile"):
        return "hash"
    if path.endswith(CPP_EXT):
        return "cpp"
    if path.endswith(".py"):
        return "py"
    if path.endswith(HASH_EXT):
        return "hash"
    if path.endswith(TEXT_EXT):
        return "text"
    return None


def files(root):
    """Repository-relative paths of the files whose prose is scanned, sorted."""
    out = []
    for r in ROOTS:
        top = os.path.join(root, r)
        if os.path.isfile(top):
            out.append(r)
            continue
        for d, dirs, names in os.walk(top):
            dirs[:] = sorted(x for x in dirs if x not in SKIP_DIRS)
            for n in sorted(names):
                rel = os.path.relpath(os.path.join(d, n), root)
                if rel in SKIP_FILES or kind_of(rel) is None:
                    continue
                out.append(rel)
    return sorted(set(out))


def _cpp_spans(t):
    spans = []
    i, n = 0, len(t)
    while i < n:
        c = t[i]
        if c == "/" and t.startswith("//", i):
            j = t.find("\n", i)
            j = n if j < 0 else j
            spans.append((i, j))
            i = j
        elif c == "/" and t.startswith("/*", i):
            j = t.find("*/", i + 2)
            j = n if j < 0 else j + 2
            spans.append((i, j))
            i = j
        elif c == '"':
            # A raw string: R"delim( ... )delim", with an optional u8/u/U/L prefix before R.
            k = i
            while k > 0 and (t[k - 1].isalnum() or t[k - 1] == "_"):
                k -= 1
            if t[k:i] in ("R", "u8R", "uR", "UR", "LR"):
                k = t.find("(", i)
                delim = t[i + 1:k]
                end = t.find(")" + delim + '"', k)
                i = n if end < 0 else end + len(delim) + 2
                continue
            j = i + 1
            while j < n and t[j] != '"':
                if t[j] == "\\":
                    j += 1
                elif t[j] == "\n":
                    break
                j += 1
            i = j + 1
        elif c == "'":
            # A digit separator (1'000) is not a character literal.
            if i > 0 and (t[i - 1].isalnum() or t[i - 1] == "_") and not _char_prefix(t, i):
                i += 1
                continue
            j = i + 1
            while j < n and t[j] != "'":
                if t[j] == "\\":
                    j += 1
                elif t[j] == "\n":
                    break
                j += 1
            i = j + 1
        else:
            i += 1
    return spans


def _char_prefix(t, i):
    # u8'x', u'x', U'x', L'x' are character literals, not digit separators.
    k = i - 1
    while k >= 0 and (t[k].isalnum() or t[k] == "_"):
        k -= 1
    word = t[k + 1:i]
    return word in ("u8", "u", "U", "L")


def _hash_spans(t):
    spans = []
    pos = 0
    for line in t.splitlines(keepends=True):
        quote = None
        for k, c in enumerate(line):
            if quote:
                if c == "\\" and quote == '"':
                    continue
                if c == quote:
                    quote = None
            elif c in "'\"":
                quote = c
            elif c == "#" and (k == 0 or line[k - 1] in " \t(;"):
                # ${#var} and $# are shell syntax, not comments.
                spans.append((pos + k, pos + len(line.rstrip("\n"))))
                break
        pos += len(line)
    return spans


def _py_spans(t):
    spans = []
    offs = [0]
    for line in t.splitlines(keepends=True):
        offs.append(offs[-1] + len(line))

    def at(rc):
        return offs[rc[0] - 1] + rc[1]

    prev = tokenize.NEWLINE
    try:
        for tok in tokenize.generate_tokens(io.StringIO(t).readline):
            if tok.type == tokenize.COMMENT:
                spans.append((at(tok.start), at(tok.end)))
            elif tok.type == tokenize.STRING and prev in (tokenize.NEWLINE, tokenize.INDENT,
                                                          tokenize.DEDENT, tokenize.NL,
                                                          tokenize.ENCODING):
                # A string that is a whole statement: a docstring.
                spans.append((at(tok.start), at(tok.end)))
            if tok.type not in (tokenize.COMMENT, tokenize.NL):
                prev = tok.type
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return spans


def prose_spans(path, text):
    k = kind_of(path)
    if k == "cpp":
        return _cpp_spans(text)
    if k == "py":
        return _py_spans(text)
    if k == "hash":
        return _hash_spans(text)
    if k == "text":
        return [(0, len(text))]
    return []


ANCHOR = re.compile(r'<a id="([^"]+)"></a>')


def anchors(root):
    """{'P': set of ids of docs/protocol.md, 'D': set of ids of docs/design-notes.md}."""
    out = {}
    for key, rel in (("P", "docs/protocol.md"), ("D", "docs/design-notes.md")):
        try:
            with open(os.path.join(root, rel), encoding="utf-8") as f:
                out[key] = set(ANCHOR.findall(f.read()))
        except OSError:
            out[key] = set()
    return out
