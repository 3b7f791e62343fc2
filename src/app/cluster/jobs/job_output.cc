// The job runner's part for a job's output root (job_runner.h): its directories (output_dirs.h)
// and its spare files (fs::SpareFiles), both made on the pool.
#include <utility>  // before Asio (Boost 1.74 + g++ 12)

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include "adapters/log/log.h"

#include <memory>
#include <string>
#include <vector>

#include "adapters/fs/files.h"
#include "adapters/storage/storage.h"
#include "app/cluster/jobs/job_entry.h"
#include "app/cluster/jobs/job_runner.h"

namespace sedna::app {

namespace asio = boost::asio;

storage::Context StorageContextOf(const Context& ctx, const JobEntry& e) {
  storage::Context c;
  c.rootfs = ctx.cfg.rootfs;
  c.staging_dir = ctx.cfg.spool_dir + "/staging";
  c.hot_update_dir = ctx.cfg.hot_update_dir;
  c.job_root = core::il::OutputRoot(e.output_dir());
  c.spares = ctx.spares.get();
  c.credentials = e.creds;
  c.s3_options = ctx.S3Options();
  c.clock = &ctx.clock;
  return c;
}

// Output directories exist before a Ready that follows a file the job writes (§P4.5,
// output_dirs.h), also after the GM changes spec.outputDir; S3 has no directories. Made on the
// pool, then the root's spare files (only once the directories were made); the result comes back as
// an event (OnOutputDirs). A failure is logged then and tried again at the job's next update.
void JobRunner::RequestOutputDirs(JobEntry& e, const std::string& who) {
  if (e.dirs_made_for == e.output_dir() || e.dirs_asked_for == e.output_dir()) return;
  ReleaseOutputRoot(e);
  if (fs::IsS3Url(e.output_dir())) {
    e.dirs_made_for = e.output_dir();
    return;
  }
  e.dirs_asked_for = e.output_dir();
  storage::Context sc = StorageContextOf(ctx_, e);
  ctx_.spares->Want(sc.job_root);
  asio::post(ctx_.pool, [this, dirs = DirsToMake(e), sc = std::move(sc), key = e.key,
                         inc = e.incarnation, who] {
    Status made = dirs.Make();
    if (made.ok()) storage::FillSpareFiles(sc);
    inbound_.Post({"", key + " output directories",
                   [this, key, inc, who, out = dirs.output_dir, made = std::move(made)] {
                     OnOutputDirs(key, inc, who, out, made);
                   }});
  });
}

void JobRunner::OnOutputDirs(const std::string& key, uint64_t incarnation, const std::string& who,
                             const std::string& output_dir, const Status& made) {
  if (ctx_.stopped) return;
  JobEntry* e = Find(key, incarnation);
  if (e == nullptr || e->dirs_asked_for != output_dir) return;  // gone, or moved on since
  e->dirs_asked_for.clear();
  if (!made.ok()) {
    spdlog::error("{}: spec.outputDir: {}", who, made.message());
    e->dirs_error = made.message();
    DropSpares(output_dir);  // wanted when asked; none were made
    return;
  }
  e->dirs_error.clear();
  e->dirs_made_for = output_dir;
}

void JobRunner::ReleaseOutputRoot(JobEntry& e) {
  for (std::string* dir : {&e.dirs_made_for, &e.dirs_asked_for}) {
    if (!dir->empty()) DropSpares(*dir);
    dir->clear();
  }
}

OutputDirs JobRunner::DirsToMake(const JobEntry& e) const {
  if (e.dirs_made_for == e.output_dir() || fs::IsS3Url(e.output_dir())) return {};
  return {ctx_.cfg.rootfs, e.output_dir(), e.runner->output_subdirs()};
}

void JobRunner::DropSpares(const std::string& output_dir) {
  std::vector<fs::SpareFiles::SpareDir> dirs = ctx_.spares->Drop(core::il::OutputRoot(output_dir));
  if (dirs.empty()) return;
  boost::asio::post(ctx_.pool, [dirs = std::move(dirs)] {
    for (const fs::SpareFiles::SpareDir& d : dirs) fs::SpareFiles::Remove(d);
  });
}

void JobRunner::FillSparesLater(const JobEntry& e) {
  spares_due_.insert(e.key);
  if (!spare_timer_) spare_timer_ = std::make_unique<boost::asio::steady_timer>(ctx_.io);
  if (spares_due_.size() > 1) return;  // armed by the first
  spare_timer_->expires_after(kSpareRefillDelay);
  spare_timer_->async_wait([this](const boost::system::error_code& ec) {
    if (ec || ctx_.stopped) return;
    std::vector<storage::Context> due;
    for (const std::string& key : spares_due_) {
      auto it = jobs_.find(key);
      if (it == jobs_.end() || it->second->dirs_made_for.empty()) continue;  // gone, or no dirs
      storage::Context sc = StorageContextOf(ctx_, *it->second);
      if (sc.job_root.empty() || fs::IsS3Url(sc.job_root)) continue;
      // Wanted again: another job on the same root may have dropped it on its delete.
      ctx_.spares->Want(sc.job_root);
      due.push_back(std::move(sc));
    }
    spares_due_.clear();
    if (due.empty()) return;
    boost::asio::post(ctx_.pool, [due = std::move(due)] {
      for (const storage::Context& sc : due) storage::FillSpareFiles(sc);
    });
  });
}

}  // namespace sedna::app
