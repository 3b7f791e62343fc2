#include "adapters/dataset/shared_read.h"

#include <algorithm>
#include <tuple>

namespace sedna::dataset {
namespace {

// As ReadNewSamples tells a first read from a rewrite.
bool Fresh(const IndexCursor& c) {
  return c.dev == 0 && c.ino == 0 && c.offset == 0 && c.samples == 0;
}

void Accumulate(ReadResult& acc, const ReadResult& r) {
  acc.new_samples += r.new_samples;
  acc.bytes_read += r.bytes_read;
  acc.prefix_bytes_checked += r.prefix_bytes_checked;
  if (r.rewritten && !acc.rewritten) {
    acc.rewritten = true;
    acc.rewrite = r.rewrite;
    acc.consumed_bytes = r.consumed_bytes;
    acc.consumed_samples = r.consumed_samples;
    acc.file_bytes = r.file_bytes;
  }
  acc.checking = r.checking;
  acc.missing = r.missing;
  acc.skipped_lines += r.skipped_lines;
  for (int64_t at : r.skipped_offsets) {
    if (acc.skipped_offsets.size() < ReadResult::kMaxSkippedOffsets)
      acc.skipped_offsets.push_back(at);
  }
}

// Where `mine` stands once its group read from `before` to `after`: there, with its own
// bookkeeping carried on.
IndexCursor Follow(const IndexCursor& mine, const IndexCursor& before, const IndexCursor& after) {
  IndexCursor c = after;
  c.path = mine.path;
  c.samples = mine.samples + (after.samples - before.samples);
  if (!after.header_done) c.header = mine.header;  // kept until the file's header is read
  return c;
}

struct Group {
  IndexCursor cursor;           // the one read (its first member's)
  std::vector<size_t> members;  // indices of the members still reading with it
};

auto OrderKey(const IndexCursor& c) {
  return std::make_tuple(Fresh(c) ? 0 : 1, c.dev, c.ino, c.offset);
}

}  // namespace

bool SameReadPosition(const IndexCursor& a, const IndexCursor& b) {
  return Fresh(a) == Fresh(b) && a.dev == b.dev && a.ino == b.ino && a.offset == b.offset &&
         a.skip == b.skip && a.skipping == b.skipping && a.header_done == b.header_done &&
         (!a.header_done || a.header == b.header) && a.prefix_digest == b.prefix_digest &&
         a.prefix_samples == b.prefix_samples && a.prefix_digest_known == b.prefix_digest_known &&
         (a.prefix_digest_known || a.samples == b.samples);
}

PassTotals ReadPass(const std::string& path, IndexFormat format, std::vector<PassMember*>& members,
                    const ReadOptions& options) {
  PassTotals totals;
  const size_t n = members.size();
  std::vector<IndexCursor> cur(n);
  std::vector<bool> alive(n, true);
  std::vector<Group> groups;
  for (size_t i = 0; i < n; ++i) {
    PassMember& m = *members[i];
    m.status = Status::Ok();
    m.result = ReadResult{};
    cur[i] = m.cursor;
    auto g = std::find_if(groups.begin(), groups.end(),
                          [&](const Group& x) { return SameReadPosition(x.cursor, m.cursor); });
    if (g == groups.end()) {
      groups.push_back({m.cursor, {i}});
    } else {
      g->members.push_back(i);
    }
  }
  // Fresh cursors first, then by file and offset: a group is read before those ahead of it on
  // its file, up to the nearest one, which it may then join.
  std::stable_sort(groups.begin(), groups.end(), [](const Group& a, const Group& b) {
    return OrderKey(a.cursor) < OrderKey(b.cursor);
  });
  // A fresh cursor reads whatever file is at the path: most likely the one the first member
  // (the Dataset's own cursor) last read.
  const IndexCursor anchor = n > 0 ? members[0]->cursor : IndexCursor{};

  for (size_t gi = 0; gi < groups.size(); ++gi) {
    Group& g = groups[gi];
    if (g.members.empty()) continue;
    const IndexCursor before = g.cursor;
    size_t target = groups.size();
    for (size_t hi = gi + 1; hi < groups.size() && target == groups.size(); ++hi) {
      const IndexCursor& h = groups[hi].cursor;
      if (groups[hi].members.empty() || Fresh(h)) continue;
      const bool same_file = Fresh(before)
                                 ? Fresh(anchor) || (h.dev == anchor.dev && h.ino == anchor.ino)
                                 : h.dev == before.dev && h.ino == before.ino;
      // A fresh cursor also joins one at the start of the file (it read the file while it was
      // empty): its read up to offset 0 reads nothing and leaves it level there.
      if (same_file && (h.offset > before.offset || (Fresh(before) && h.offset == 0))) target = hi;
    }
    ReadOptions o = options;
    o.stop = target < groups.size() ? StopAt(groups[target].cursor) : IndexStop{};

    IndexCursor c = before;
    auto r = ReadNewSamples(path, format, c, o, [&](std::string_view sample) -> Status {
      bool any = false;
      for (size_t i : g.members) {
        if (!alive[i]) continue;
        PassMember& m = *members[i];
        if (m.on_sample) {
          if (Status s = m.on_sample(sample); !s.ok()) {
            m.status = std::move(s);
            alive[i] = false;
            continue;
          }
        }
        any = true;
      }
      // Every member failed: nobody is left to read for.
      return any ? Status::Ok() : Status::Error("reading " + path + ": no reader left");
    });
    ++totals.reads;
    if (!r.ok()) {
      for (size_t i : g.members) {
        if (!alive[i]) continue;
        members[i]->status = r.status();
        alive[i] = false;
      }
      g.members.clear();
      continue;
    }
    totals.bytes_read += r->bytes_read;
    if ((options.max_bytes > 0 && r->bytes_read >= options.max_bytes) || r->checking) {
      totals.more = true;
    }
    std::vector<size_t> still;
    for (size_t i : g.members) {
      if (!alive[i]) continue;
      Accumulate(members[i]->result, *r);
      cur[i] = Follow(cur[i], before, c);
      still.push_back(i);
    }
    g.members = std::move(still);
    g.cursor = c;
    if (target == groups.size()) continue;
    Group& t = groups[target];
    if (SameReadPosition(c, t.cursor)) {
      t.members.insert(t.members.end(), g.members.begin(), g.members.end());
      g.members.clear();
    } else if (c.dev == o.stop.dev && c.ino == o.stop.ino && c.offset == o.stop.offset) {
      totals.more = true;  // at the stop and still not level: read on past it next time
    }
  }
  for (size_t i = 0; i < n; ++i) {
    if (alive[i]) members[i]->cursor = std::move(cur[i]);
  }
  return totals;
}

}  // namespace sedna::dataset
