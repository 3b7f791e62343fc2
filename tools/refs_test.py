#!/usr/bin/env python3
"""Self-test of tools/refs_scan.py, tools/rewrite_refs.py and tools/check_refs.py (ctest
refs_tools_test): what counts as prose, what the rewrite produces, that it is idempotent and
leaves code alone, and what the checker refuses."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_refs  # noqa: E402
import refs_scan  # noqa: E402
import rewrite_refs  # noqa: E402


def rewrite(path, text):
    return rewrite_refs.FileRewriter(path, text, False).run()


IDS = {"P": {"P1.2", "P8.5", "H3.2", "H4.1", "P4.1", "B6", "R1", "U381"},
       "D": {"D4", "I15", "I15.3"}}


class ProseTest(unittest.TestCase):
    def prose(self, path, text):
        return [text[s:e] for s, e in refs_scan.prose_spans(path, text)]

    def test_cpp_comments_not_strings(self):
        t = 'int a = 1\'000; // c1 §1.2\nauto s = "// not §1"; /* c2 */ char q = \'"\';\n'
        self.assertEqual(self.prose("a.cc", t), ["// c1 §1.2", "/* c2 */"])

    def test_cpp_raw_string_is_code(self):
        t = 'auto p = R"PAGE(<a>// js §1 </a>)PAGE"; // real\n'
        self.assertEqual(self.prose("a.cc", t), ["// real"])

    def test_python_comments_and_docstrings(self):
        t = '"""Doc §4.4."""\nx = "§1 string"  # note\n'
        self.assertEqual(self.prose("a.py", t), ['"""Doc §4.4."""', "# note"])

    def test_hash_comments(self):
        t = 'set(x "#notcomment") # yes\necho ${#v}\n'
        self.assertEqual(self.prose("CMakeLists.txt", t), ["# yes"])


class RewriteTest(unittest.TestCase):
    def test_documents_and_bare_sections(self):
        t = "// (sedna-head-protocol.md §3.2, hot update §4.1; sedna-protocol.md §1.2)\n"
        self.assertEqual(rewrite("a.h", t),
                         "// (docs/protocol.md §H3.2, hot update §H4.1; docs/protocol.md §P1.2)\n")

    def test_hint_beats_file_context(self):
        t = "// sedna-head-protocol.md §3.2.\n// the GM's upstream handler stores it (§4.1).\n"
        self.assertIn("(§P4.1)", rewrite("a.h", t))

    def test_ids_issues_design_rfc(self):
        t = ("// fixes B13 and B25 (issue 15 item 3, issues 14, 17, issue 4, item 5); upstream #381;"
             " R1 race;\n"
             "// design.md §4; RFC 6455 §5.1; UTF-8 C4 B0; jbeder/yaml-cpp#1040\n")
        self.assertEqual(rewrite("a.cc", t),
                         "// fixes [P:B13] and [P:B25] ([D:I15.3], [D:I14], [D:I17], [D:I4.5]); "
                         "upstream [P:U381]; [P:R1] race;\n// design-notes §D4; RFC 6455 §5.1; UTF-8 C4 B0; "
                         "jbeder/yaml-cpp#1040\n")

    def test_code_untouched_and_idempotent(self):
        t = 'const char* k = "B6 issue 15 §4.1";  // B6, §8.5\n'
        once = rewrite("a.cc", t)
        self.assertEqual(once, 'const char* k = "B6 issue 15 §4.1";  // [P:B6], §P8.5\n')
        self.assertEqual(rewrite("a.cc", once), once)
        self.assertEqual(rewrite_refs.code_signature("a.cc", once),
                         rewrite_refs.code_signature("a.cc", t))


    def test_banner_keeps_its_width(self):
        t = "// ---- G2 (§1.3, §4.1) " + "-" * 20 + "\n"
        once = rewrite("a_test.cc", "// sedna-head-protocol.md\n" + t).split("\n")[1]
        self.assertEqual(once, "// ---- G2 (§H1.3, §H4.1) " + "-" * 18)


class CheckTest(unittest.TestCase):
    def errors(self, path, text):
        return check_refs.check_file(path, text, IDS)

    def test_resolved(self):
        self.assertEqual(self.errors("a.cc", "// §P8.5 [P:B6] §D4 [D:I15.3] RFC 6455 §5.1\n"), [])

    def test_refused(self):
        errs = self.errors("a.cc", "// sedna-protocol.md §8.5 §P9.9 [P:B99] B6 issue 15 #14\n")
        for what in ("outside the repository", "bare '§8.5'", "'§P9.9' is not a section",
                     "[P:B99] is not an entry", "bare upstream id B6", "bare issue number"):
            self.assertTrue(any(what in e for e in errs), (what, errs))

    def test_strings_checked_for_documents_and_sections_only(self):
        self.assertEqual(self.errors("a.cc", 'auto s = "B6 issue 15 §P8.5";\n'), [])
        errs = self.errors("a.cc", 'auto s = "sedna-protocol.md §8.5";\n')
        self.assertEqual(len(errs), 2, errs)


if __name__ == "__main__":
    unittest.main()
