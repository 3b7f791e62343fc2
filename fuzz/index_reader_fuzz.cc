// The dataset index reader (dataset::ReadNewSamples) on arbitrary file contents, both formats.
// The input's first two bytes choose a slice size (max_bytes) and where the file is cut in two:
// the first part is written and read to its end in slices, then the second part is appended
// (partial lines complete across the cut) and read, and finally the unterminated tail is taken.
// A flag bit takes the first part's tail before the append instead (it is then a line of its
// own). Invariants: the cursor's offset and sample count only move forward, by what each call
// reports; no call reports a rewrite; every sample is non-empty and has no '\n'; the samples are
// exactly the non-empty lines (trailing '\r' stripped; for csv minus the first, the header) of
// an independent split of the file; the cursor ends at the end of the file.
#include <fcntl.h>
#include <unistd.h>

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

// The lines of `text` as the reader must deliver them; the last piece only when `with_tail`.
void SplitLines(std::string_view text, bool with_tail, std::vector<std::string>& lines) {
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos && !with_tail) break;
    std::string_view line = text.substr(start, nl == std::string_view::npos ? nl : nl - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!line.empty()) lines.emplace_back(line);
    if (nl == std::string_view::npos) break;
    start = nl + 1;
  }
}

struct Reader {
  IndexFormat format;
  int64_t max_bytes;
  IndexCursor cursor;
  std::vector<std::string> samples;

  // One call; checks what it reports against what the cursor did.
  void Call(bool take_unterminated) {
    const IndexCursor before = cursor;
    auto r = sedna::dataset::ReadNewSamples(IndexPath(), format, cursor, take_unterminated,
                                            max_bytes, [&](std::string_view s) {
                                              FUZZ_CHECK(!s.empty(), "an empty sample");
                                              FUZZ_CHECK(s.find('\n') == s.npos, s);
                                              samples.emplace_back(s);
                                              return sedna::Status::Ok();
                                            });
    FUZZ_CHECK(r.ok(), r.message());
    FUZZ_CHECK(!r->rewritten && !r->missing, "an append read as a rewrite");
    FUZZ_CHECK(cursor.offset >= before.offset, "the cursor moved back");
    FUZZ_CHECK(cursor.samples == before.samples + r->new_samples, "sample count");
    FUZZ_CHECK(cursor.samples == static_cast<int64_t>(samples.size()), "on_sample calls");
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

void Run(IndexFormat format, int64_t max_bytes, bool tail_early, std::string_view first,
         std::string_view second) {
  WriteAll(first, /*append=*/false);
  Reader reader{format, max_bytes, {}, {}};
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

  std::vector<std::string> expected;
  if (tail_early) {
    SplitLines(first, true, expected);
    SplitLines(second, true, expected);
  } else {
    SplitLines(std::string(first) + std::string(second), true, expected);
  }
  if (format == IndexFormat::kCsv && !expected.empty()) {
    FUZZ_CHECK(reader.cursor.header_done && reader.cursor.header == expected.front(), "header");
    expected.erase(expected.begin());
  }
  FUZZ_CHECK(reader.samples == expected, "samples differ from the file's lines");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const uint8_t slice = data[0];
  const bool tail_early = (data[1] & 0x80) != 0;
  std::string_view content(reinterpret_cast<const char*>(data + 2), size - 2);
  const size_t cut = content.size() * (data[1] & 0x7f) / 127;
  const int64_t max_bytes = slice % 4 == 0 ? 0 : slice;
  for (IndexFormat format : {IndexFormat::kTxt, IndexFormat::kCsv}) {
    Run(format, max_bytes, tail_early, content.substr(0, cut), content.substr(cut));
  }
  ::unlink(IndexPath().c_str());
  return 0;
}
