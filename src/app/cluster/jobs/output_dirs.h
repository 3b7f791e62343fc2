// A job's output directories (docs/protocol.md §P4.5: the hostPath volumes of its workers must
// exist), made on the pool, never on the loop: a slow or hung spec.outputDir holds a pool thread,
// not every job, report and GM frame. The job runner asks for them when a job arrives or its
// outputDir changes (the result comes back to the loop), and each sample-file or model-copy
// action of the job makes them first while the loop has not heard that they exist, so that they
// exist before the Ready that follows such an action.
//
// Owns: nothing (a value: what to make).
// Calls: fs::Dir, confined: the job's root opened as the host resolves it, never above the
//   rootfs; the subdirectories beneath it with no link followed (a link a worker planted there is
//   an error for this job, never followed).
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace sedna::app {

struct OutputDirs {
  std::string rootfs;
  std::string output_dir;         // spec.outputDir, as the job had it when asked
  std::vector<std::string> subs;  // beneath core::il::OutputRoot(output_dir)

  // Makes what is missing; nothing when `subs` is empty (thread-safe: another Make of the same
  // directories at the same time is no error). Every subdirectory is tried; the first error is
  // returned, naming the path and what failed.
  Status Make() const;
};

}  // namespace sedna::app
