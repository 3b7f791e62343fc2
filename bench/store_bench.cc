// The cost of durability on the hot path ([D:I4], "Measure"): the SQLite store (sedna_store)
// used directly, the way the controller uses it (src/app/cluster: JobRunner::Step, Outbox::Pump):
//   transition            Transact{PutState("il", job, record)}         a state change alone
//   transition + frame    Transact{OutboxAppend(frame); PutState(..)}   a step that reports
//   frame only            Transact{OutboxAppend(frame)}                 a forwarded worker report
//   ack                   OutboxAck(id, bytes)                          after each websocket write
//                                                                       (the sent mark: a store)
//   ack + flush           OutboxAck; OutboxFlushAcks()                  ack and delete at once
//   ack batch 64 (/frame) 64 x OutboxAck, 1 x OutboxFlushAcks           what sedna-lc does: deletes
//                                                                       ride on a later commit
// Each operation is timed on its own (steady_clock around the call); p50/p99/max in microseconds.
// A record is ~600 bytes (an IL job record), a frame ~450 bytes (a forwarded eval report); 100
// jobs are written round robin. Run per directory (--dirs, default /tmp and /dev/shm: ext4 where
// fsync costs, tmpfs where it is free) with synchronous=NORMAL (what sedna-lc uses by default) and
// synchronous=FULL (--db-sync-full) with --full-iters operations.
//
//   store_bench [--iters=5000] [--full-iters=300] [--dirs=/tmp,/dev/shm]
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "adapters/store/store.h"
#include "bench_util.h"

using namespace sedna::bench;
namespace store = sedna::store;
namespace stdfs = std::filesystem;

namespace {

struct Figures {
  std::vector<double> transition, transition_frame, frame, ack, ack_flush, ack_batch;
};

std::string Filler(size_t n, char c) {
  std::string s(n, c);
  for (size_t i = 0; i < n; i += 7) s[i] = static_cast<char>('a' + i % 26);
  return s;
}

void Check(const sedna::Status& s, const char* what) {
  if (!s.ok()) throw std::runtime_error(std::string(what) + ": " + s.message());
}

Figures Run(const std::string& dir, bool full, int iters) {
  std::string t = dir + "/sedna-bench-store-XXXXXX";
  if (!::mkdtemp(t.data())) throw std::runtime_error("mkdtemp in " + dir + " failed");
  Figures f;
  {
    store::StoreOptions o;
    o.synchronous_full = full;
    auto opened = store::Store::Open(t + "/database.db", o);
    if (!opened.ok()) throw std::runtime_error(opened.message());
    store::Store& st = **opened;
    const std::string record = "{\"state\":{" + Filler(580, 'r') + "}}";
    const std::string frame = "{\"header\":{" + Filler(430, 'f') + "}}";
    auto key = [](int i) {
      return "default/incrementallearningjob/job-" + std::to_string(i % 100);
    };
    auto timed = [](std::vector<double>& out, auto&& fn) {
      const auto t0 = Clock::now();
      fn();
      out.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    };
    // Warm-up: the tables and the WAL exist, the page cache is filled.
    for (int i = 0; i < 200; ++i) {
      Check(st.Transact([&](store::Store::Tx& tx) { return tx.PutState("il", key(i), record); }),
            "warm-up");
    }
    std::vector<int64_t> ids;
    for (int i = 0; i < iters; ++i) {
      timed(f.transition, [&] {
        Check(st.Transact([&](store::Store::Tx& tx) { return tx.PutState("il", key(i), record); }),
              "transition");
      });
    }
    for (int i = 0; i < iters; ++i) {
      timed(f.transition_frame, [&] {
        Check(st.Transact([&](store::Store::Tx& tx) -> sedna::Status {
          auto id = tx.OutboxAppend(frame);
          if (!id.ok()) return id.status();
          ids.push_back(*id);
          return tx.PutState("il", key(i), record);
        }),
              "transition + frame");
      });
    }
    for (int i = 0; i < iters; ++i) {
      timed(f.frame, [&] {
        Check(st.Transact([&](store::Store::Tx& tx) -> sedna::Status {
          auto id = tx.OutboxAppend(frame);
          if (!id.ok()) return id.status();
          ids.push_back(*id);
          return sedna::Status::Ok();
        }),
              "frame");
      });
    }
    // Removing sent frames, three ways: the first half OutboxAck alone each (then one flush,
    // untimed); the next quarter OutboxAck + OutboxFlushAcks each (a delete commit per frame); the
    // last quarter acknowledged in batches of 64 with one flush per batch, timed per batch and
    // counted per frame.
    const size_t half = ids.size() / 2, three_q = ids.size() * 3 / 4;
    for (size_t i = 0; i < half; ++i) {
      timed(f.ack, [&] { st.OutboxAck(ids[i], static_cast<int64_t>(frame.size())); });
    }
    Check(st.OutboxFlushAcks(), "flush");
    for (size_t i = half; i < three_q; ++i) {
      timed(f.ack_flush, [&] {
        st.OutboxAck(ids[i], static_cast<int64_t>(frame.size()));
        Check(st.OutboxFlushAcks(), "ack + flush");
      });
    }
    for (size_t i = three_q; i < ids.size(); i += 64) {
      const size_t end = std::min(ids.size(), i + 64);
      std::vector<double> one;
      timed(one, [&] {
        for (size_t k = i; k < end; ++k) st.OutboxAck(ids[k], static_cast<int64_t>(frame.size()));
        Check(st.OutboxFlushAcks(), "ack batch + flush");
      });
      f.ack_batch.push_back(one[0] / static_cast<double>(end - i));
    }
  }
  std::error_code ec;
  stdfs::remove_all(t, ec);
  return f;
}

std::string FsType(const std::string& dir) {
  FILE* p = ::popen(("df -T " + dir + " 2>/dev/null | awk 'NR==2{print $2}'").c_str(), "r");
  if (!p) return "?";
  char buf[64] = {0};
  if (!std::fgets(buf, sizeof buf, p)) buf[0] = 0;
  ::pclose(p);
  std::string s = buf;
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s.empty() ? "?" : s;
}

void Print(const std::string& label, const char* op, const std::vector<double>& us) {
  std::printf("  %-26s %-22s p50 %8.1f us  p99 %8.1f us  max %9.1f us  (n=%zu)\n", label.c_str(),
              op, Percentile(us, 50), Percentile(us, 99), Percentile(us, 100), us.size());
}

void PrintResult(const std::string& label, const char* op, const std::vector<double>& us) {
  std::printf("RESULT store \"%s\" %s p50_us=%.1f p99_us=%.1f max_us=%.1f n=%zu\n", label.c_str(),
              op, Percentile(us, 50), Percentile(us, 99), Percentile(us, 100), us.size());
}

}  // namespace

int main(int argc, char** argv) try {
  Args args(argc, argv);
  const int iters = static_cast<int>(args.GetInt("iters", 5000));
  const int full_iters = static_cast<int>(args.GetInt("full-iters", 300));
  std::vector<std::string> dirs;
  std::stringstream in(args.Get("dirs", "/tmp,/dev/shm"));
  for (std::string d; std::getline(in, d, ',');) {
    if (!d.empty()) dirs.push_back(d);
  }
  std::printf("store_bench: %d ops per figure (synchronous=FULL: %d); %s\n", iters, full_iters,
              LoadAvg().c_str());
  std::fflush(stdout);
  std::vector<std::pair<std::string, Figures>> all;
  for (const auto& dir : dirs) {
    for (bool full : {false, true}) {
      const std::string label =
          dir + " (" + FsType(dir) + "), " + (full ? "synchronous=FULL" : "synchronous=NORMAL");
      Figures f = Run(dir, full, full ? full_iters : iters);
      Print(label, "transition", f.transition);
      Print(label, "transition + frame", f.transition_frame);
      Print(label, "frame only", f.frame);
      Print(label, "ack (sent mark)", f.ack);
      Print(label, "ack + flush", f.ack_flush);
      Print(label, "ack batch 64 (/frame)", f.ack_batch);
      std::fflush(stdout);
      all.emplace_back(label, std::move(f));
    }
  }
  std::printf("done; %s\n", LoadAvg().c_str());
  for (const auto& [label, f] : all) {
    PrintResult(label, "transition", f.transition);
    PrintResult(label, "transition+frame", f.transition_frame);
    PrintResult(label, "frame", f.frame);
    PrintResult(label, "ack", f.ack);
    PrintResult(label, "ack+flush", f.ack_flush);
    PrintResult(label, "ack_batch64_per_frame", f.ack_batch);
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "store_bench: %s\n", e.what());
  return 1;
}
