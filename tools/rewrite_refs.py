#!/usr/bin/env python3
"""Rewrites the references in the tree's prose so that each resolves inside the repository.

  tools/rewrite_refs.py [--root DIR] [--dry-run] [--report] [--clang-format PATH|'']

Only prose is touched (comments, docstrings, Markdown; tools/refs_scan.py decides what is prose),
never code or string literals: the C++ files it changed are re-wrapped with clang-format, and a
file whose code (everything but prose, whitespace ignored) would differ is restored and the run
fails. Idempotent: a second run changes nothing. tools/check_refs.py checks the result.

What it rewrites:
* the engineers' documents outside the tree ("sedna-protocol.md §8.5", "sedna-head-protocol §3.2",
  "/work/shared/docs/...", "../shared/docs/...") to docs/protocol.md, whose two parts keep the
  section numbers: §P<n> is the 2021 contract, §H<n> the v0.5-v0.7 delta and the dual-GM design;
* a bare "§4.1" to §P4.1 or §H4.1: right after a named document, that document's part; else the
  words on its line or the line before (HINTS); else the part the file last named; else the part
  that has such a section; OVERRIDES fix the rest. "design.md §4" becomes §D4 (design-notes);
* upstream bug, race and LL ids (B6, L3, W1, R1) to [P:B6] ... (docs/protocol.md entries);
* upstream issue numbers ("upstream #381") to [P:U381]; the project's issue numbers ("issue 15
  item 3", "#14") to [D:I15.3], [D:I14] (docs/design-notes.md, "Where requirements came from");
* a few sentences per file (LITERALS) that no rule reads right.

--report prints each bare § whose number both parts have, with the part chosen and why.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import refs_scan  # noqa: E402

# Sections of each part (the numbering of docs/protocol.md). Kept here too so that a bare § can be
# resolved before the document exists in a checkout; check_refs.py checks against the document.
P_SECTIONS = {"0", "1", "1.1", "1.2", "1.3", "1.4", "1.5", "1.6", "1.7", "2", "2.1", "2.2", "2.3",
              "2.4", "2.5", "2.6", "3", "3.1", "3.2", "3.3", "3.4", "3.5", "4", "4.1", "4.2",
              "4.3", "4.4", "4.5", "4.6", "4.7", "4.8", "5", "5.1", "5.2", "5.3", "5.4", "6",
              "6.1", "6.2", "6.3", "6.4", "7", "7.1", "7.2", "7.3", "7.4", "7.5", "8", "8.1",
              "8.2", "8.3", "8.4", "8.5", "9", "9.1", "9.2", "9.3", "10", "10.1", "10.2", "11",
              "A"}
H_SECTIONS = {"0", "0.1", "1", "1.1", "1.2", "1.3", "1.4", "1.5", "1.6", "1.7", "1.8", "1.9", "2",
              "2.0", "2.1", "2.2", "2.3", "3", "3.1", "3.2", "3.3", "3.4", "4", "4.1", "4.2",
              "4.3", "4.4", "4.5", "5", "6"}
D_SECTIONS = {"2", "3", "4"}

# Upstream ids defined in docs/protocol.md: bugs (B), LL bugs (L), websocket (W), GM races (R).
BUG_IDS = ({"B%d" % i for i in range(1, 29)} - {"B18"}) | {"B11b"} | \
          {"L%d" % i for i in range(1, 9)} | {"W1", "W2"} | {"R1", "R2", "R3"}
UPSTREAM_ISSUES = {"128", "165", "170", "286", "317", "349", "377", "381", "382", "387", "408",
                   "409", "428", "459", "486", "493"}

# Per-file literal rewrites, applied before the rules: where an id means something the rules
# would get wrong. {path: [(old, new)]}; each `old` must no longer match after the rewrite.
LITERALS = {
    "src/core/ll_job.h": [("deploy completed (L6 of\n//                              §1.9)",
                           "deploy completed (NL6 of\n//                              §H1.9)")],
    "src/adapters/json/testdata/README.md": [
        ("N7 and L6 carry none", "N7 and NL6 carry none"),
        ("and L1 … L6: every model", "and NL1 … NL6: every model"),
        ("after L1 and L2 from a v0.6+ GM", "after NL1 and NL2 from a v0.6+ GM"),
        ("copied byte-for-byte from /work/shared/docs/sedna-protocol.md:",
         "copied byte-for-byte from the upstream literals that docs/protocol.md describes:"),
        ("G2 (Sedna v0.5–v0.7) literals, from /work/shared/docs/sedna-head-protocol.md:",
         "G2 (Sedna v0.5–v0.7) literals, as docs/protocol.md part H describes them:"),
    ],
    "docs/benchmarks.md": [
        ("The figures of the design brief's §2 table (`design.md`, in the team's shared folder "
         "outside this\nrepository), measured on the real `sedna-lc` binary,",
         "The figures of the performance targets (§D2 in `docs/design-notes.md`), measured on\n"
         "the real `sedna-lc` binary,"),
        ("Both stay under design.md's targets (6 MB and 10 MB).",
         "Both stay under the targets (6 MB and 10 MB, §D2 in `docs/design-notes.md`)."),
    ],
    "tests/packaging/CMakeLists.txt": [
        ("to upstream's chart when the reference copy is beside the repository "
         "(../shared/reference).",
         "to upstream's chart when a copy of upstream v0.7.0 sits beside the repository (`_chart`)."),
    ],
    "docs/design-notes.md": [
        ("The brief is `../shared/docs/design.md` (outside this repository, in the team's shared "
         "folder);\nthe wire contract is `sedna-protocol.md` beside it. This page",
         "The wire contract is `docs/protocol.md`; the targets and behaviour decisions are §D2 and §D4\n"
         "below. This page"),
    ],
}

# Bare § whose part the rules guess wrongly: {(path, text on the same line, number): part}.
OVERRIDES = {
    ("src/adapters/json/upstream_codec_test.cc", "knowledge base", "4.4"): "H",
    ("src/app/standalone/local_gm_workers.cc", "pod templates", "4.4"): "P",
    ("src/app/standalone/local_gm.h", "env contract", "4.4"): "P",
}

DOC = re.compile(
    r"`?(?:/work/shared/docs/|(?:\.\./)+shared/docs/|shared/docs/)?"
    r"(sedna-head-protocol|sedna-protocol)(?:\.md)?`?")
SECTION = re.compile(r"§\s?([0-9]+(?:\.[0-9]+)*|A\b)")
DESIGN = re.compile(r"(?:`?/?(?:\.\./)*(?:work/)?(?:shared/docs/)?design\.md`?|\bdesign)"
                    r"(\s*§\s?)([0-9]+)")
CHAIN = re.compile(r"^[\s,;/–-]*(?:(?:and|or)\s*)?$")
HEAD_WORD = re.compile(r"\bhead (§)")
RFC = re.compile(r"\b(?:RFC|FIPS) ?[0-9-]+(?:'s)? *§\s?[0-9.]+$")
BUG = re.compile(r"(?<![\w\[:./])(B[0-9]{1,2}b?|L[1-8]|W[1-9]|R[1-9])(?![\w\]])")
HEXBYTE = re.compile(r"[0-9A-F]{2} $")
ISSUE = re.compile(r"\b([Ii])ssues? #?([0-9]{1,2})(?![0-9])((?:,? items? [0-9]+(?:(?:, | and | or |/)[0-9]+)*)?)"
                   r"((?:(?:, | and )[0-9]{1,2}\b(?! item))*)")
UP_ISSUE = re.compile(r"(?<![\w/\[])#([0-9]{3,4})\b")
PROJ_ISSUE = re.compile(r"(?<![\w/&\[])#([0-9]{1,2})\b")


# Words that tell the two parts' sections of one number apart, for a bare § (the line it is on
# and the line before are searched; a hit beats the file's context).
HINTS = {
    "0": (["kind strings", "routing key", "architecture", "unique key"], ["generation"]),
    "1.1": (["endpoint", "handshake", "Node-Name"], ["unchanged"]),
    "1.2": (["bare header", "first frame", "dialling"], ["deploy", "v0.4", "v0.5"]),
    "1.3": (["frame", "base64", "envelope", "MessageHeader", "content"],
            ["transit", "Deploy, Ready", "Deploy, Starting", "restart", "G2", "hot job"]),
    "1.4": (["resourceKind", "ownerKind", "routing keys", "operation"],
            ["node", "sedna.io/", "Model before", "G2 sends", "eval pod", "train pod", "GMILd", "IL, G2"]),
    "1.5": (["frame", "literal", "envelope"], ["classes", "runtime.Model", "v0.6", "G2"]),
    "1.6": (["resync", "re-send", "re-sends", "30-60", "periodic", "reconnect"],
            ["eval dir", "dataIndex", "round counter", "v0.7 numbers"]),
    "1.7": (["reconnect", "send queue", "write failure", "outbox"],
            ["LL", "knowledgeBase", "multi-node", "Multi-node", "train node", "G2", "outputDir"]),
    "2.1": (["Dataset"], ["2021-protocol IL"]),
    "2.2": (["Model CR", "model spec"], ["LL", "milliseconds", "window"]),
    "2.3": (["trigger", "IL job", "helmet", "IncrementalLearningJob", "jobs,"], ["G1 GM", "every update"]),
    "3.1": (["numberOfSamples", "Dataset status", "dataset status"],
            ["signal", "S1", "evidence", "observed"]),
    "3.2": (["UpstreamMessage", "without `output`", "status report"],
            ["deploy", "Deploy", "wait", "branch", "lost-answer", "Fallback", "v1/v2", "answer",
             "Condition-driven", "condition-driven", "committed", "hot update", "decision",
             "G1", "G2", "generation", "spells"]),
    "3.3": (["IL-", "byte for byte", "contents"],
            ["restart", "killed", "confirm", "fresh GM message", "deploy wait", "upgrade",
             "connection", "write"]),
    "3.4": (["LL-", "dataIndexURL", "contents"], ["test", "generations"]),
    "4": (["GM reacts", "GM's env"], ["G2 (Sedna", "v0.5-v0.7) fields", "G2 payloads"]),
    "4.1": (["condition", "data", "IncrementalCondData", "upstream handler", "IL-2", "content",
             "status report", "LC report", "report for a job", "keeps of", "LL-1"],
            ["hot", "Hot", "model_config", "annotation value", "reload"]),
    "4.2": (["transitJobState", "condition machine", "pod", "GM's side", "running has failed", "settles",
             "cold deploy", "Ready, Starting"],
            ["initialEvalModel", "eval format", "baseline", "deploy Model CR"]),
    "4.3": (["sends", "send ", "Sends", "goes with it", "go with it", "never asks",
             "jobs back", "after every change", "G1 §4.3", "downstream", "would send",
             "arrive after"],
            ["device", "selection", "select", "match", "trained model", "format", "models[1]"]),
    "4.4": (["env", "Secret", "pod naming", "URL", "credentia"],
            ["knowledgeBase", "knowledge base", "HAS_COMPLETED", "KB", "runtime.Model keys"]),
    "4.5": (["director", "must exist", "mount", "s3:// URLs", "before Ready", "before any Ready",
             "S3 variables", "S3 environment", "credentials (sedna-protocol", "credentia"],
            ["database", "plaintext", "no manager", "v0.7 LC", "retries forever", "DB",
             "Sedna v0.5+ added", "kinds"]),
}


def _hinted(num, text):
    h = HINTS.get(num)
    if not h:
        return None
    p = any(w in text for w in h[0])
    q = any(w in text for w in h[1])
    if p != q:
        return "P" if p else "H"
    return None


def _part_for(num, ctx):
    inp, inh = num in P_SECTIONS, num in H_SECTIONS
    if ctx == "H" and inh or ctx == "P" and inp:
        return ctx, "context"
    if inp and not inh:
        return "P", "only in P"
    if inh and not inp:
        return "H", "only in H"
    return ctx or "P", "default"


BANNER = re.compile(r"([-=~*#])\1{4,}$")


def keep_banner_width(old, new):
    """A one-line banner comment ("// ---- G2 (§1.3) ------") keeps its width: its trailing run of
    dashes gives back what the rewrite added, so the line is not wrapped."""
    grown = len(new) - len(old)
    m = BANNER.search(new)
    if grown <= 0 or "\n" in old or not m or len(m.group(0)) - grown < 3:
        return new
    return new[:len(new) - grown]


class FileRewriter:
    def __init__(self, path, text, report):
        self.path = path
        self.text = text
        self.report = report
        self.ctx = self._first_ctx()

    def _first_ctx(self):
        m = DOC.search(self.text)
        if not m:
            return None
        return "H" if m.group(1) == "sedna-head-protocol" else "P"

    def line_of(self, text, pos):
        s = text.rfind("\n", 0, pos) + 1
        e = text.find("\n", pos)
        return text[s:e if e >= 0 else len(text)]

    def prev_line(self, text, pos):
        s = text.rfind("\n", 0, pos)
        return self.line_of(text, s - 1) if s > 0 else ""

    def sections(self, seg, whole, base):
        """Rewrites doc names and § numbers of one prose segment, in order."""
        out = []
        i = 0
        events = []
        for m in DOC.finditer(seg):
            events.append((m.start(), m.end(), "doc", m))
        for m in DESIGN.finditer(seg):
            events.append((m.start(), m.end(), "design", m))
        for m in HEAD_WORD.finditer(seg):
            events.append((m.start(), m.end(), "head", m))
        for m in SECTION.finditer(seg):
            events.append((m.start(), m.end(), "sec", m))
        events.sort(key=lambda e: (e[0], -e[1]))
        pending = None  # a part forced for the next § ("head §", "design §")
        chain, chain_end = None, -1  # the part named just before, for "§1.3, §1.4 and §4.1"
        for start, end, kind, m in events:
            if start < i:
                continue
            out.append(seg[i:start])
            if kind == "doc":
                self.ctx = "H" if m.group(1) == "sedna-head-protocol" else "P"
                tick = "`" if m.group(0).startswith("`") else ""
                out.append(tick + "docs/protocol.md" + tick)
                chain, chain_end = self.ctx, end
            elif kind == "design":
                name = "" if self.path == "docs/design-notes.md" else "design-notes "
                out.append(name + "§D" + m.group(2))
            elif kind == "head":
                out.append("")
                pending = "H"
                end = m.start(1)
            else:
                num = m.group(1)
                before = seg[max(0, start - 24):end]
                if RFC.search(before):
                    out.append(m.group(0))
                elif pending:
                    out.append("§" + pending + num)
                    chain, chain_end = pending, end
                    pending = None
                elif chain and CHAIN.match(seg[chain_end:start]):
                    out.append("§" + chain + num)
                    chain_end = end
                else:
                    line = self.line_of(whole, base + start)
                    part, why = None, ""
                    for (p, needle, n), forced in OVERRIDES.items():
                        if p == self.path and n == num and needle in line:
                            part, why = forced, "override"
                    if part is None and num in P_SECTIONS and num in H_SECTIONS:
                        part = _hinted(num, line)
                        if part is None:
                            part = _hinted(num, self.prev_line(whole, base + start))
                        why = "hint" if part else ""
                    if part is None:
                        part, why = _part_for(num, self.ctx)
                    if self.report and why in ("context", "default", "override", "hint") and \
                            num in P_SECTIONS and num in H_SECTIONS:
                        print("%s: §%s -> §%s%s (%s): %s" % (self.path, num, part, num, why,
                                                            line.strip()[:110]))
                    out.append("§" + part + num)
            i = end
        out.append(seg[i:])
        return "".join(out)

    def ids(self, seg):
        def bug(m):
            if m.group(1) not in BUG_IDS or HEXBYTE.search(seg[max(0, m.start() - 3):m.start()]):
                return m.group(0)
            return "[P:%s]" % m.group(1)

        seg = BUG.sub(bug, seg)

        def issue(m):
            first = m.group(2)
            items = re.findall(r"[0-9]+", m.group(3))
            refs = ["[D:I%s.%s]" % (first, it) for it in items] or ["[D:I%s]" % first]
            more = ["[D:I%s]" % n for n in re.findall(r"[0-9]+", m.group(4))]
            return ", ".join(refs + more)

        seg = ISSUE.sub(issue, seg)
        seg = UP_ISSUE.sub(lambda m: "[P:U%s]" % m.group(1) if m.group(1) in UPSTREAM_ISSUES
                           else m.group(0), seg)
        seg = PROJ_ISSUE.sub(lambda m: "[D:I%s]" % m.group(1), seg)
        return seg

    def run(self):
        text = self.text
        for old, new in LITERALS.get(self.path, []):
            text = text.replace(old, new)
        spans = refs_scan.prose_spans(self.path, text)
        if self.path == "docs/protocol.md":
            return text  # the document defines the ids; its own text is checked, not rewritten
        out = []
        last = 0
        for s, e in spans:
            out.append(text[last:s])
            seg = text[s:e]
            new = self.ids(self.sections(seg, text, s))
            out.append(keep_banner_width(seg, new))
            last = e
        out.append(text[last:])
        return "".join(out)


def code_signature(rel, text):
    """The file without its prose and without whitespace: what a rewrite must leave alone."""
    out, last = [], 0
    for s, e in refs_scan.prose_spans(rel, text):
        out.append(text[last:s])
        last = e
    out.append(text[last:])
    return re.sub(r"\s+", "", "".join(out))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument("--dry-run", action="store_true", help="list the files it would change")
    ap.add_argument("--report", action="store_true", help="print each ambiguous bare § resolved")
    ap.add_argument("--clang-format", default=shutil.which("clang-format") or "",
                    help="re-wraps the C++ comments that grew past the column limit ('' = skip)")
    a = ap.parse_args()
    changed = {}
    for rel in refs_scan.files(a.root):
        full = os.path.join(a.root, rel)
        with open(full, encoding="utf-8", errors="surrogateescape") as f:
            text = f.read()
        new = FileRewriter(rel, text, a.report).run()
        if new != text:
            changed[rel] = text
            if a.dry_run:
                print(rel)
            else:
                with open(full, "w", encoding="utf-8", errors="surrogateescape") as f:
                    f.write(new)
    if not a.dry_run and a.clang_format:
        cpp = [os.path.join(a.root, r) for r in changed if refs_scan.kind_of(r) == "cpp"]
        if cpp:
            subprocess.run([a.clang_format, "-i", "--style=file"] + cpp, check=True,
                           cwd=a.root)
    bad = 0
    if not a.dry_run:
        for rel, old in changed.items():
            full = os.path.join(a.root, rel)
            with open(full, encoding="utf-8", errors="surrogateescape") as f:
                new = f.read()
            if code_signature(rel, new) != code_signature(rel, old):
                bad += 1
                print("%s: the rewrite touched code; restored" % rel, file=sys.stderr)
                with open(full, "w", encoding="utf-8", errors="surrogateescape") as f:
                    f.write(old)
    print("%d file(s) %s" % (len(changed) - bad, "would change" if a.dry_run else "changed"),
          file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
