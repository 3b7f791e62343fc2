#!/usr/bin/env python3
"""Fails when a reference in the tree's prose does not resolve inside the repository.

  tools/check_refs.py [ROOT]        (ctest: check_refs)

Checks the comments, docstrings and Markdown of src/, tests/, bench/, tools/, docs/, examples/ and
the other source folders (tools/refs_scan.py decides what is prose):
* no mention of the engineers' documents outside the tree (sedna-protocol.md,
  sedna-head-protocol.md, design.md, ../shared, /work/shared);
* in code (string literals, printed lines) too: no outside document and no bare §;
* every §P<n> / §H<n> is a section docs/protocol.md defines, every §D<n> one docs/design-notes.md
  defines; a bare § is allowed only after an RFC or FIPS number;
* every [P:<id>] is an entry of docs/protocol.md, every [D:<id>] one of docs/design-notes.md;
* no bare upstream id (B6, L3, W1, R1: write [P:B6]) and no bare issue number ("issue 15",
  "#14": write [D:I15], or [P:U381] for an upstream one) outside the two documents that define
  them.
tools/rewrite_refs.py rewrites the old forms; the documents' anchors must be unique.
"""

import os
import re
import sys
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import refs_scan  # noqa: E402

OUTSIDE = re.compile(r"sedna-(?:head-)?protocol|/work/shared|\.\./shared|shared/docs|"
                     r"(?<![\w-])design\.md")
CODE_OUTSIDE = re.compile(r"sedna-(?:head-)?protocol\.md|(?<![\w-])design\.md")
SECTION = re.compile(r"§\s?([PHD]?)([0-9]+(?:\.[0-9]+)*|A\b)")
RFC = re.compile(r"\b(?:RFC|FIPS) ?[0-9-]+(?:'s)? *$")
ENTRY = re.compile(r"\[([PD]):([A-Za-z0-9.\-]+)\]")
BUG = re.compile(r"(?<![\w\[:./])(B[0-9]{1,2}b?|L[1-8]|W[1-9]|R[1-9])(?![\w\]])")
HEXBYTE = re.compile(r"[0-9A-F]{2} $")
ISSUE = re.compile(r"\b[Ii]ssues? #?[0-9]|(?<![\w/&\[])#[0-9]{1,4}\b")
DEFINING = {"docs/protocol.md", "docs/design-notes.md"}


def refs_scan_line(text, pos):
    return text[text.rfind("\n", 0, pos) + 1:text.find("\n", pos) % (len(text) + 1)]


def line_no(text, pos):
    return text.count("\n", 0, pos) + 1


def check_file(rel, text, ids):
    errs = []

    def err(pos, msg):
        errs.append("%s:%d: %s" % (rel, line_no(text, pos), msg))

    spans = refs_scan.prose_spans(rel, text)
    # Code is not rewritten, but a message or a printed line that cites a document must cite one
    # in the repository too (an outside path a build may use, like ../shared, is left to code).
    last = 0
    for s, e in spans + [(len(text), len(text))]:
        code = text[last:s]
        for m in CODE_OUTSIDE.finditer(code):
            err(last + m.start(), "code text names a document outside the repository: %r" %
                m.group(0))
        for m in SECTION.finditer(code):
            if not m.group(1) and not RFC.search(code[max(0, m.start() - 16):m.start()]):
                err(last + m.start(), "code text has a bare %r: cite §P/§H/§D" % m.group(0))
        last = e
    for s, e in spans:
        seg = text[s:e]
        for m in OUTSIDE.finditer(seg):
            err(s + m.start(), "names a document outside the repository: %r (cite docs/protocol.md "
                "or docs/design-notes.md)" % m.group(0))
        for m in SECTION.finditer(seg):
            part, num = m.group(1), m.group(2)
            if not part:
                if RFC.search(seg[max(0, m.start() - 16):m.start()]):
                    continue
                err(s + m.start(), "bare %r: write §P%s or §H%s (docs/protocol.md) or §D%s "
                    "(docs/design-notes.md)" % (m.group(0), num, num, num))
                continue
            doc = "D" if part == "D" else "P"
            if part + num not in ids[doc]:
                err(s + m.start(), "%r is not a section of %s" % (
                    m.group(0), "docs/design-notes.md" if doc == "D" else "docs/protocol.md"))
        for m in ENTRY.finditer(seg):
            if m.group(2) not in ids[m.group(1)]:
                err(s + m.start(), "%s is not an entry of %s" % (
                    m.group(0), "docs/protocol.md" if m.group(1) == "P" else "docs/design-notes.md"))
        if rel == "docs/protocol.md":
            continue
        for m in BUG.finditer(seg):
            if rel in DEFINING and '<a id="' in refs_scan_line(seg, m.start()):
                continue
            if HEXBYTE.search(seg[max(0, m.start() - 3):m.start()]):
                continue
            err(s + m.start(), "bare upstream id %s: write [P:%s] (docs/protocol.md)" % (
                m.group(1), m.group(1)))
        for m in ISSUE.finditer(seg):
            if rel in DEFINING and '<a id="' in refs_scan_line(seg, m.start()):
                continue
            err(s + m.start(), "bare issue number %r: write [D:I<n>] (docs/design-notes.md) or "
                "[P:U<n>] (an upstream issue, docs/protocol.md)" % m.group(0))
    return errs


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else \
        os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    errs = []
    for key, rel in (("P", "docs/protocol.md"), ("D", "docs/design-notes.md")):
        with open(os.path.join(root, rel), encoding="utf-8") as f:
            dup = [k for k, n in Counter(refs_scan.ANCHOR.findall(f.read())).items() if n > 1]
        errs += ["%s: anchor %r defined twice" % (rel, k) for k in dup]
    ids = refs_scan.anchors(root)
    if not ids["P"] or not ids["D"]:
        errs.append("docs/protocol.md or docs/design-notes.md defines no anchors")
    files = refs_scan.files(root)
    for rel in files:
        with open(os.path.join(root, rel), encoding="utf-8", errors="surrogateescape") as f:
            errs += check_file(rel, f.read(), ids)
    for e in errs:
        print(e)
    print("check_refs: %d file(s), %d unresolved reference(s)" % (len(files), len(errs)),
          file=sys.stderr)
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main())
