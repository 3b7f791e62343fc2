// One pass over a dataset index for many cursors (a Dataset's count and each of its jobs): every
// byte the cursors still have to read is read once, however many of them stand at the same
// place. Cursors at the same place ("level", SameReadPosition) form a group read with one
// ReadNewSamples call whose samples go to every member; a group behind another on the same file
// is read up to that one's position only (ReadOptions::stop), then joins it. Only cursors that
// are not level with any other (another file, a rewrite seen by one and not the other, a legacy
// cursor) are read on their own, as they would be alone.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/dataset/index_reader.h"
#include "core/status.h"

namespace sedna::dataset {

// Whether ReadNewSamples from `a` and from `b` reads the same bytes and delivers the same samples
// (everything but the bookkeeping the caller keeps per cursor: path, samples when the prefix
// digest is known, tail_size, header before it is read, and the in-memory scan/check state).
bool SameReadPosition(const IndexCursor& a, const IndexCursor& b);

// One cursor of a pass.
struct PassMember {
  // In: where it stands. Out: where it stands after the pass; unchanged when `status` is an error.
  IndexCursor cursor;
  // Called for each of its new samples, in file order (null: counted only). An error stops this
  // member alone: its cursor stays where it was and `status` is that error; the others read on.
  std::function<Status(std::string_view sample)> on_sample;
  // Out: Ok, or what stopped it (a read error of its group, or its on_sample's).
  Status status;
  // Out: what the reads it took part in found, summed: new_samples, bytes_read (each read's bytes
  // counted for every member of it), skipped lines (offsets up to kMaxSkippedOffsets); the first
  // rewrite seen; missing and checking as the last of its reads said.
  ReadResult result;
};

struct PassTotals {
  int64_t bytes_read = 0;  // read from the file by the pass (each byte counted once per read)
  int reads = 0;           // ReadNewSamples calls made
  bool more = false;       // a read stopped at options.max_bytes or is checking a prefix: again
};

// Reads what each member still has to read, with `options` (max_bytes bounds each read, as a
// ReadNewSamples call; options.stop is set per read). Members keep their order in the result.
PassTotals ReadPass(const std::string& path, IndexFormat format, std::vector<PassMember*>& members,
                    const ReadOptions& options);

}  // namespace sedna::dataset
