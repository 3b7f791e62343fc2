#include "app/standalone/worker_security.h"

#include <array>
#include <string_view>

namespace sedna::app {
namespace {

using NJ = nlohmann::json;

// Ids as Kubernetes accepts them (int64 >= 0), within what uid_t/gid_t hold (-1 is "no change").
constexpr int64_t kMaxId = 4294967294;

Status ReadId(const NJ& v, const std::string& path, int64_t* out) {
  if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > kMaxId) {
    return Status::Error(path + ": expected an integer from 0 to " + std::to_string(kMaxId) +
                         ", got " + v.dump().substr(0, 64));
  }
  *out = v.get<int64_t>();
  return Status::Ok();
}

Status ReadBool(const NJ& v, const std::string& path, bool* out) {
  if (!v.is_boolean())
    return Status::Error(path + ": expected true or false, got " + v.dump().substr(0, 64));
  *out = v.get<bool>();
  return Status::Ok();
}

// Reads one securityContext object (pod or container level) into `r`; a later call overrides
// what an earlier one set. `pod_level` selects the fields that level has.
Status ReadContext(const NJ& ctx, const std::string& path, bool pod_level, SecurityRequest& r) {
  if (ctx.is_null()) return Status::Ok();
  if (!ctx.is_object()) return Status::Error(path + ": expected an object");
  for (const auto& [key, v] : ctx.items()) {
    const std::string field = path + "." + key;
    if (v.is_null()) continue;
    if (key == "runAsUser" || key == "runAsGroup") {
      SecurityRequest::Field f{field, 0};
      if (Status s = ReadId(v, field, &f.value); !s.ok()) return s;
      (key == "runAsUser" ? r.run_as_user : r.run_as_group) = f;
    } else if (key == "runAsNonRoot") {
      bool b = false;
      if (Status s = ReadBool(v, field, &b); !s.ok()) return s;
      if (b) {
        r.run_as_non_root = field;
      } else {
        r.run_as_non_root.reset();
      }
    } else if (pod_level && key == "supplementalGroups") {
      if (!v.is_array()) return Status::Error(field + ": expected a list of group ids");
      r.supplemental_groups.clear();
      r.supplemental_groups_path = field;
      if (v.size() > 64) return Status::Error(field + ": more than 64 groups");
      for (size_t i = 0; i < v.size(); ++i) {
        int64_t g = 0;
        if (Status s = ReadId(v[i], field + "[" + std::to_string(i) + "]", &g); !s.ok()) return s;
        r.supplemental_groups.push_back(static_cast<gid_t>(g));
      }
    } else if (!pod_level && key == "allowPrivilegeEscalation") {
      bool b = true;
      if (Status s = ReadBool(v, field, &b); !s.ok()) return s;
      r.no_new_privs = !b;
    } else {
      r.unhonoured.push_back(field);
    }
  }
  return Status::Ok();
}

}  // namespace

Result<SecurityRequest> ReadSecurityRequest(const NJ& template_obj, const std::string& path) {
  SecurityRequest r;
  if (!template_obj.is_object()) return r;
  auto spec = template_obj.find("spec");
  if (spec == template_obj.end() || !spec->is_object()) return r;
  const std::string spec_path = path + ".spec";
  if (auto pod = spec->find("securityContext"); pod != spec->end()) {
    if (Status s = ReadContext(*pod, spec_path + ".securityContext", true, r); !s.ok()) return s;
  }
  auto containers = spec->find("containers");
  if (containers != spec->end() && containers->is_array() && !containers->empty() &&
      (*containers)[0].is_object()) {
    const NJ& c = (*containers)[0];
    if (auto ctx = c.find("securityContext"); ctx != c.end()) {
      if (Status s = ReadContext(*ctx, spec_path + ".containers[0].securityContext", false, r);
          !s.ok()) {
        return s;
      }
    }
  }
  return r;
}

Result<WorkerCredentials> ResolveCredentials(const SecurityRequest& r, uid_t lc_uid, gid_t lc_gid) {
  WorkerCredentials c;
  c.no_new_privs = r.no_new_privs;
  if (lc_uid != 0) {
    // Not root: the worker runs as the LC's user whatever the template asks.
    if (r.run_as_user && static_cast<uid_t>(r.run_as_user->value) != lc_uid) {
      c.not_applied.push_back(r.run_as_user->path + ": " + std::to_string(r.run_as_user->value) +
                              " not applied: the LC is not root; the worker runs as uid " +
                              std::to_string(lc_uid));
    }
    if (r.run_as_group && static_cast<gid_t>(r.run_as_group->value) != lc_gid) {
      c.not_applied.push_back(r.run_as_group->path + ": " + std::to_string(r.run_as_group->value) +
                              " not applied: the LC is not root; the worker runs as gid " +
                              std::to_string(lc_gid));
    }
    if (!r.supplemental_groups.empty()) {
      c.not_applied.push_back(r.supplemental_groups_path +
                              " not applied: the LC is not root; the worker has the LC's groups");
    }
    return c;  // runAsNonRoot holds: the worker's uid is the LC's, not 0
  }
  const int64_t uid = r.run_as_user ? r.run_as_user->value : 0;
  if (r.run_as_non_root && uid == 0) {
    return Result<WorkerCredentials>::Error(
        *r.run_as_non_root + ": true, but the worker would run as uid 0 (" +
        (r.run_as_user ? r.run_as_user->path + " is 0"
                       : std::string("no runAsUser is set and the LC runs as root")) +
        ")");
  }
  if (r.run_as_user || r.run_as_group || !r.supplemental_groups.empty()) {
    c.uid = static_cast<uid_t>(uid);
    c.gid = static_cast<gid_t>(r.run_as_group ? r.run_as_group->value : 0);
    c.groups = r.supplemental_groups;
  }
  return c;
}

}  // namespace sedna::app
