// Standalone mode honours a worker's securityContext ([D:I15.7]) as far as a local process
// can: the pod template's spec.securityContext and its first container's securityContext (which
// wins where both set a field, as in Kubernetes) become the process's credentials.
//
// Honoured: runAsUser, runAsGroup and supplementalGroups (applied in the child when the LC is
// root; runAsGroup unset means group 0, as Kubernetes documents), runAsNonRoot (a worker that would
// run as uid 0 is not started), allowPrivilegeEscalation: false (PR_SET_NO_NEW_PRIVS). Every other
// field (capabilities, privileged, readOnlyRootFilesystem, seccompProfile, seLinuxOptions, fsGroup,
// sysctls, ...) is reported as not honoured, by its path.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace sedna::app {

// What the template asks for; each field with the path it was read from, for messages.
struct SecurityRequest {
  struct Field {
    std::string path;  // e.g. spec.trainSpec.template.spec.containers[0].securityContext.runAsUser
    int64_t value = 0;
  };
  std::optional<Field> run_as_user, run_as_group;
  std::optional<std::string> run_as_non_root;  // path of a runAsNonRoot: true
  std::vector<gid_t> supplemental_groups;
  std::string supplemental_groups_path;
  bool no_new_privs = false;
  std::vector<std::string> unhonoured;  // paths of fields set but not applied
};

// Reads `template_obj` (a PodTemplateSpec; `path` is where it sits, e.g.
// "spec.trainSpec.template"). A field of the wrong type or out of range is an error naming its
// path.
Result<SecurityRequest> ReadSecurityRequest(const nlohmann::json& template_obj,
                                            const std::string& path);

// The credentials the worker process gets.
struct WorkerCredentials {
  std::optional<uid_t> uid;  // unset: the LC's
  std::optional<gid_t> gid;
  std::vector<gid_t> groups;  // supplementary, when uid or gid is set
  bool no_new_privs = false;
  // Fields that cannot be applied by this LC (e.g. runAsUser when it is not root), as messages
  // starting with the field's path.
  std::vector<std::string> not_applied;
};

// Decides the credentials for an LC running as lc_uid/lc_gid. An error (runAsNonRoot with a
// worker that would run as uid 0) starts with the field's path.
Result<WorkerCredentials> ResolveCredentials(const SecurityRequest& request, uid_t lc_uid,
                                             gid_t lc_gid);

}  // namespace sedna::app
