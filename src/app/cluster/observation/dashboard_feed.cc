// The dashboard's feed and the per-job gauges (dashboard_feed.h).
#include "app/cluster/observation/dashboard_feed.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "app/cluster/observation/shell_quote.h"

namespace sedna::app {

using Json = nlohmann::json;

namespace {

const char* ShortKind(const std::string& kind) {
  return kind == "IncrementalLearningJob" ? "IL" : "LL";
}

std::string LabelValue(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

// The shortest text that reads back as `v`.
std::string Number(double v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

}  // namespace

const JobHistory* FindHistory(const std::map<std::string, JobHistory>& history,
                              const std::string& kind, const std::string& ns,
                              const std::string& name) {
  const JobHistory* found = nullptr;
  int matches = 0;
  for (const auto& [key, h] : history) {
    if (!kind.empty() && h.kind != kind) continue;
    if (h.name != name || (!ns.empty() && h.ns != ns)) continue;
    found = &h;
    ++matches;
  }
  return matches == 1 ? found : nullptr;
}

std::string ReadLogTail(const std::string& path, size_t max_bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return "";
  struct stat st {};
  std::string out;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    const off_t size = st.st_size;
    const off_t from = size > static_cast<off_t>(max_bytes) ? size - max_bytes : 0;
    out.resize(static_cast<size_t>(size - from));
    ssize_t n = ::pread(fd, out.data(), out.size(), from);
    out.resize(n > 0 ? static_cast<size_t>(n) : 0);
    if (from > 0) {
      auto nl = out.find('\n');
      out.erase(0, nl == std::string::npos ? 0 : nl + 1);
    }
  }
  ::close(fd);
  return out;
}

std::string EncodeDashboardJson(const DashboardInput& in) {
  Json jobs = Json::array();
  for (const JobView& v : *in.jobs) {
    Json j{{"kind", v.kind},
           {"short", ShortKind(v.kind)},
           {"namespace", v.ns},
           {"name", v.name},
           {"stage", v.stage},
           {"round", v.round},
           {"samplesWaiting", v.samples_waiting},
           {"samplesSeen", v.samples_seen},
           {"work", v.work},
           {"lastDecision", v.last_decision},
           {"decisions", v.decisions},
           {"lastError", v.last_error},
           {"deployedUrl", v.deployed_url},
           {"deployedAt", v.deployed_at},
           {"outputDirs", v.output_dirs}};
    const JobHistory* h = in.history ? FindHistory(*in.history, v.kind, v.ns, v.name) : nullptr;
    j["history"] = h ? JobHistoryJson(*h) : Json{{"rounds", Json::array()}};
    Json versions = Json::array();
    if (h && in.files && !h->deploy_target.empty()) {
      auto it = in.files->versions.find(h->deploy_target);
      if (it != in.files->versions.end()) {
        for (const auto& mv : it->second) {
          versions.push_back(Json{{"number", mv.number},
                                  {"size", mv.size},
                                  {"mtime", mv.mtime},
                                  {"command", RollbackCommand(h->deploy_target, mv.number)}});
        }
      }
      auto e = in.files->version_errors.find(h->deploy_target);
      if (e != in.files->version_errors.end()) j["versionsError"] = e->second;
    }
    j["versions"] = versions;
    jobs.push_back(std::move(j));
  }
  Json workers = Json::array();
  for (const WorkerView& w : in.workers) {
    std::string tail;
    if (in.files) {
      auto it = in.files->log_tails.find(w.log_path);
      if (it != in.files->log_tails.end()) tail = it->second;
    }
    workers.push_back(Json{{"namespace", w.ns},
                           {"job", w.job},
                           {"stage", w.stage},
                           {"name", w.name},
                           {"state", w.state},
                           {"detail", w.detail},
                           {"logPath", w.log_path},
                           {"startedMs", w.started_ms},
                           {"exitedMs", w.exited_ms},
                           {"logTail", tail}});
  }
  return Json{{"now", in.now_ms},
              {"gmConnected", in.gm_connected},
              {"standalone", in.standalone},
              {"jobs", jobs},
              {"workers", workers}}
      .dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string RenderJobGauges(const std::vector<JobView>& jobs,
                            const std::map<std::string, JobHistory>& history) {
  std::string round, waiting, deploys, metric;
  for (const JobView& v : jobs) {
    const std::string labels =
        "job=\"" + LabelValue(v.ns + "/" + v.name) + "\",kind=\"" + ShortKind(v.kind) + "\"";
    round += "sedna_lc_job_round{" + labels + "} " + std::to_string(v.round) + "\n";
    waiting +=
        "sedna_lc_job_samples_waiting{" + labels + "} " + std::to_string(v.samples_waiting) + "\n";
    const JobHistory* h = FindHistory(history, v.kind, v.ns, v.name);
    deploys +=
        "sedna_lc_job_deploys_total{" + labels + "} " + std::to_string(h ? h->deploys : 0) + "\n";
    if (!h) continue;
    for (auto it = h->rounds.rbegin(); it != h->rounds.rend(); ++it) {
      if (it->new_metrics.empty() && it->deployed_metrics.empty()) continue;
      auto add = [&](const std::map<std::string, double>& m, const char* model) {
        for (const auto& [k, x] : m) {
          if (!std::isfinite(x)) continue;
          metric += "sedna_lc_job_eval_metric{" + labels + ",metric=\"" + LabelValue(k) +
                    "\",model=\"" + model + "\"} " + Number(x) + "\n";
        }
      };
      add(it->new_metrics, "new");
      add(it->deployed_metrics, "deployed");
      break;
    }
  }
  auto family = [](const char* name, const char* type, const char* help, const std::string& rows) {
    return std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n" +
           rows;
  };
  return family("sedna_lc_job_round", "gauge", "The job's train round (IL) or version (LL).",
                round) +
         family("sedna_lc_job_samples_waiting", "gauge",
                "Train samples waiting for the job's train trigger.", waiting) +
         family("sedna_lc_job_eval_metric", "gauge",
                "Eval metrics of the job's last evaluated round, of the new and the deployed "
                "model.",
                metric) +
         family("sedna_lc_job_deploys_total", "counter", "Models the job deployed.", deploys);
}

}  // namespace sedna::app
