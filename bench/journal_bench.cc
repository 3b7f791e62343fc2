// The intake journal's Append, what acknowledging a worker report costs before its HTTP 200
// (src/adapters/store/intake_journal.h), timed in-process without sedna-lc: `--appends` entries of
// the size worker_post_bench's eval report makes (a 17-byte worker name and a 462-byte body),
// Reset after every `--batch` of them as the report intake does after each batch commit. Prints
// the process CPU time (user + sys, getrusage) and the wall time per Append, in a journal file
// under --tmp-root (the filesystem decides what a page-cache write costs), three rounds.
//
//   journal_bench [--appends=200000] [--batch=20] [--tmp-root=/tmp]
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "adapters/store/intake_journal.h"
#include "bench_util.h"

using namespace sedna::bench;

namespace {

double CpuSeconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

}  // namespace

int main(int argc, char** argv) {
  Args args(argc, argv);
  const int64_t appends = args.GetInt("appends", 200000);
  const int64_t batch = args.GetInt("batch", 20);
  if (appends <= 0 || batch <= 0) {
    std::fprintf(stderr, "journal_bench: --appends and --batch must be positive\n");
    return 2;
  }
  const std::string path = TmpRoot(args) + "/journal_bench." + std::to_string(::getpid());
  const std::string worker = "eval-worker-2bq7d";
  const std::string body(462, 'x');
  std::printf("journal_bench: %lld appends of %zu bytes, Reset every %lld, %s\n",
              static_cast<long long>(appends), worker.size() + body.size(),
              static_cast<long long>(batch), path.c_str());
  for (int round = 1; round <= 3; ++round) {
    ::unlink(path.c_str());
    auto j = sedna::store::IntakeJournal::Open(path, 42);
    if (!j.ok()) {
      std::fprintf(stderr, "journal_bench: %s\n", j.message().c_str());
      return 1;
    }
    (*j)->Recover(0);
    const double cpu0 = CpuSeconds();
    const auto wall0 = Clock::now();
    for (int64_t i = 0; i < appends; ++i) {
      if (auto seq = (*j)->Append(worker, body); !seq.ok()) {
        std::fprintf(stderr, "journal_bench: %s\n", seq.message().c_str());
        return 1;
      }
      if (i % batch == batch - 1) (*j)->Reset();
    }
    const double cpu = CpuSeconds() - cpu0;
    const double wall = std::chrono::duration<double>(Clock::now() - wall0).count();
    std::printf("RESULT journal_append round=%d cpu_us=%.2f wall_us=%.2f\n", round,
                cpu / static_cast<double>(appends) * 1e6,
                wall / static_cast<double>(appends) * 1e6);
    std::fflush(stdout);
  }
  ::unlink(path.c_str());
  return 0;
}
