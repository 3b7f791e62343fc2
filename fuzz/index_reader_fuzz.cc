// The dataset index reader (dataset::ReadNewSamples) on arbitrary file contents, both formats.
// The input's first three bytes choose a slice size (max_bytes), where the file is cut in two and
// the line limit (max_line_bytes): the first part is written and read to its end in slices, then
// the second part is appended (partial lines complete across the cut) and read, and finally the
// unterminated tail is taken. A flag bit takes the first part's tail before the append instead (it
// is then a line of its own). Invariants: the cursor's offset and sample count only move forward,
// by what each call reports; no call reports a rewrite; every sample is non-empty, has no '\n'
// and is within the limit; the samples are exactly the non-empty lines within the limit (one
// trailing '\r' stripped; for csv minus the first, the header) of an independent split of the
// file, and the lines over the limit are reported once each, at their start offsets; the cursor
// ends at the end of the file.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/dataset/index_reader.h"
#include "fuzz_check.h"

namespace {

using sedna::dataset::IndexCursor;
using sedna::dataset::IndexFormat;

// The file each input is written to (and removed after).
const std::string& IndexPath() {
  static const std::string path = [] {
    // tmpfs when there is one: on a disk file system creating the file dominates the run.
    const char* dir = std::getenv("TMPDIR");
    std::string d = dir != nullptr && *dir != '\0'           ? dir
                    : ::access("/dev/shm", W_OK | X_OK) == 0 ? "/dev/shm"
                                                             : "/tmp";
    return d + "/sedna_index_fuzz." + std::to_string(::getpid());
  }();
  return path;
}

void WriteAll(std::string_view bytes, bool append) {
  int fd = ::open(IndexPath().c_str(),
                  O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC), 0600);
  FUZZ_CHECK(fd >= 0, IndexPath());
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    FUZZ_CHECK(n > 0, "write");
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  ::close(fd);
}

struct Line {
  std::string text;  // without '\n' and one trailing '\r'
  int64_t offset;    // where it starts in the file
};

// The lines of `text` (at file offset `base`) as the reader must see them; the last piece only
// when `with_tail`. Empty lines are left out.
void SplitLines(std::string_view text, int64_t base, bool with_tail, std::vector<Line>& lines) {
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos && !with_tail) break;
    std::string_view line = text.substr(start, nl == std::string_view::npos ? nl : nl - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!line.empty()) lines.push_back({std::string(line), base + static_cast<int64_t>(start)});
    if (nl == std::string_view::npos) break;
    start = nl + 1;
  }
}

struct Reader {
  IndexFormat format;
  sedna::dataset::ReadOptions options;
  IndexCursor cursor;
  std::vector<std::string> samples;
  std::vector<int64_t> skipped;  // start offsets of the lines reported over the limit

  // One call; checks what it reports against what the cursor did.
  void Call(bool take_unterminated) {
    const IndexCursor before = cursor;
    options.take_unterminated = take_unterminated;
    auto r = sedna::dataset::ReadNewSamples(
        IndexPath(), format, cursor, options, [&](std::string_view s) {
          FUZZ_CHECK(!s.empty(), "an empty sample");
          FUZZ_CHECK(s.find('\n') == s.npos, s);
          FUZZ_CHECK(static_cast<int64_t>(s.size()) <= options.max_line_bytes, s);
          samples.emplace_back(s);
          return sedna::Status::Ok();
        });
    FUZZ_CHECK(r.ok(), r.message());
    FUZZ_CHECK(!r->rewritten && !r->missing, "an append read as a rewrite");
    FUZZ_CHECK(cursor.offset >= before.offset, "the cursor moved back");
    FUZZ_CHECK(cursor.samples == before.samples + r->new_samples, "sample count");
    FUZZ_CHECK(cursor.samples == static_cast<int64_t>(samples.size()), "on_sample calls");
    FUZZ_CHECK(
        r->skipped_offsets.size() == std::min<size_t>(r->skipped_lines, r->kMaxSkippedOffsets),
        "skipped offsets");
    FUZZ_CHECK(sedna::dataset::SkippedLinesMessage(*r, options.max_line_bytes).empty() ==
                   (r->skipped_lines == 0),
               "skipped lines message");
    skipped.insert(skipped.end(), r->skipped_offsets.begin(), r->skipped_offsets.end());
    for (int64_t i = r->skipped_offsets.size(); i < r->skipped_lines; ++i) skipped.push_back(-1);
  }

  // Calls until one makes no progress (a sliced read always consumes at least one line).
  void ReadToEnd() {
    for (;;) {
      const int64_t offset = cursor.offset;
      Call(false);
      if (cursor.offset == offset) return;
    }
  }
};

void Run(IndexFormat format, sedna::dataset::ReadOptions options, bool tail_early,
         std::string_view first, std::string_view second) {
  WriteAll(first, /*append=*/false);
  Reader reader{format, options, {}, {}, {}};
  reader.ReadToEnd();
  if (tail_early) {
    reader.Call(true);  // records the tail's size
    reader.Call(true);  // unchanged since: takes it
    FUZZ_CHECK(reader.cursor.offset == static_cast<int64_t>(first.size()), "tail not taken");
  }
  WriteAll(second, /*append=*/true);
  reader.ReadToEnd();
  reader.Call(true);
  reader.Call(true);
  FUZZ_CHECK(reader.cursor.offset == static_cast<int64_t>(first.size() + second.size()),
             "not at the end of the file");

  std::vector<Line> lines;
  if (tail_early) {
    SplitLines(first, 0, true, lines);
    SplitLines(second, static_cast<int64_t>(first.size()), true, lines);
  } else {
    SplitLines(std::string(first) + std::string(second), 0, true, lines);
  }
  std::vector<std::string> expected;
  std::vector<int64_t> expected_skipped;
  bool header = format == IndexFormat::kCsv;
  for (const Line& l : lines) {
    if (static_cast<int64_t>(l.text.size()) > options.max_line_bytes) {
      expected_skipped.push_back(l.offset);
    } else if (header) {
      FUZZ_CHECK(reader.cursor.header_done && reader.cursor.header == l.text, "header");
      header = false;
    } else {
      expected.push_back(l.text);
    }
  }
  FUZZ_CHECK(reader.samples == expected, "samples differ from the file's lines");
  FUZZ_CHECK(reader.skipped.size() == expected_skipped.size(), "skipped line count");
  for (size_t i = 0; i < expected_skipped.size(); ++i) {
    FUZZ_CHECK(reader.skipped[i] == -1 || reader.skipped[i] == expected_skipped[i],
               "skipped line offset");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  sedna::dataset::ReadOptions options;
  options.max_bytes = data[0] % 4 == 0 ? 0 : data[0];
  const bool tail_early = (data[1] & 0x80) != 0;
  if (data[2] != 0) options.max_line_bytes = data[2];  // else the default (1 MiB)
  std::string_view content(reinterpret_cast<const char*>(data + 3), size - 3);
  const size_t cut = content.size() * (data[1] & 0x7f) / 127;
  for (IndexFormat format : {IndexFormat::kTxt, IndexFormat::kCsv}) {
    Run(format, options, tail_early, content.substr(0, cut), content.substr(cut));
  }
  ::unlink(IndexPath().c_str());
  return 0;
}
