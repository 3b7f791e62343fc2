#include "app/cluster/jobs/output_dirs.h"

#include "adapters/fs/confined.h"
#include "core/il_job.h"

namespace sedna::app {

Status OutputDirs::Make() const {
  if (subs.empty()) return Status::Ok();
  auto root = fs::Dir::OpenHost(rootfs, core::il::OutputRoot(output_dir), true);
  if (!root.ok()) return root.status();
  Status first;
  for (const std::string& sub : subs) {
    if (auto d = root->Sub(sub, true); !d.ok() && first.ok()) first = d.status();
  }
  return first;
}

}  // namespace sedna::app
