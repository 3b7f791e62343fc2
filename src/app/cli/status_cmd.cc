#include "app/cli/status_cmd.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <optional>
#include <thread>

#include "adapters/json/resource_codec.h"
#include "adapters/store/store.h"
#include "app/cli/loopback_http.h"
#include "app/cli/status_format.h"
#include "app/cluster/intake/gm_evidence.h"
#include "app/cluster/jobs/il_record.h"
#include "app/cluster/observation/round_history.h"
#include "app/cluster/observation/status_view.h"

namespace sedna::app {
namespace {

Result<std::vector<JobView>> FromDatabase(const Config& cfg) {
  store::StoreOptions o;
  o.read_only = true;
  auto st = store::Store::Open(cfg.db_path, o);
  if (!st.ok()) return st.status();
  auto recs = (*st)->LoadStates("il");
  if (!recs.ok()) return recs.status();
  std::vector<JobView> out;
  for (const auto& [key, value] : *recs) {
    auto r = DecodeIlRecord(value);
    if (!r.ok()) continue;
    JobView v;
    v.kind = "IncrementalLearningJob";
    auto first = key.find('/'), last = key.rfind('/');
    v.ns = key.substr(0, first);
    v.name = key.substr(last + 1);
    int64_t last_condition = -1;
    if (auto s = (*st)->GetState("status", key); s.ok() && s->has_value()) {
      auto job = json::DecodeIlJob(json::AssembleObject(
          R"({"kind":"IncrementalLearningJob","apiVersion":"sedna.io/v1alpha1"})",
          R"({"name":")" + v.name + R"(","namespace":")" + v.ns + R"("})", "{}", **s,
          std::nullopt));
      if (job.ok() && !job->object.conditions.empty()) {
        const auto& c = job->object.conditions.back();
        v.stage = std::string(core::StageName(c.stage)) + "/" + core::ConditionTypeName(c.type);
        last_condition = static_cast<int64_t>(job->object.conditions.size()) - 1;
      }
    }
    FillIlView(r->state, last_condition, v);
    out.push_back(std::move(v));
  }
  auto ll = (*st)->LoadStates("ll");
  if (!ll.ok()) return ll.status();
  for (const auto& [key, value] : *ll) {
    auto r = DecodeLlRecord(value);
    if (!r.ok()) continue;
    JobView v;
    v.kind = "LifelongLearningJob";
    v.ns = key.substr(0, key.find('/'));
    v.name = key.substr(key.rfind('/') + 1);
    if (auto s = (*st)->GetState("status", key); s.ok() && s->has_value()) {
      auto job = json::DecodeLlJob(
          json::AssembleObject(R"({"kind":"LifelongLearningJob","apiVersion":"sedna.io/v1alpha1"})",
                               R"({"name":")" + v.name + R"(","namespace":")" + v.ns + R"("})",
                               "{}", **s, std::nullopt));
      if (job.ok() && !job->object.conditions.empty()) {
        const auto& c = job->object.conditions.back();
        v.stage = std::string(core::StageName(c.stage)) + "/" + core::ConditionTypeName(c.type);
      }
    }
    FillLlView(r->state, v);
    out.push_back(std::move(v));
  }
  return out;
}

// The round histories of the job `args.history` ("ns/name" or "name"): from the live daemon's
// /api/history or, when none answers, read-only from its database.
Result<std::vector<JobHistory>> HistoriesFromDatabase(const Config& cfg, const std::string& job) {
  store::StoreOptions o;
  o.read_only = true;
  auto st = store::Store::Open(cfg.db_path, o);
  if (!st.ok()) return st.status();
  auto recs = (*st)->LoadStates(kScopeHistory);
  if (!recs.ok()) return recs.status();
  std::vector<JobHistory> out;
  for (const auto& [key, value] : *recs) {
    auto h = DecodeJobHistory(value);
    if (h.ok() && HistoryMatches(*h, job)) out.push_back(std::move(*h));
  }
  return out;
}

int ShowHistory(const Config& cfg, const StatusArgs& args, std::ostream& out, std::ostream& err) {
  std::vector<JobHistory> found;
  std::string source;
  if (cfg.status_port != 0) {
    if (auto b =
            LoopbackGet(cfg.status_address, cfg.status_port, "/api/history?job=" + args.history)) {
      auto v = DecodeHistories(*b);
      if (!v.ok()) {
        err << "sedna-lc status: " << v.message() << "\n";
        return 1;
      }
      found = std::move(*v);
      source = "live daemon on " + cfg.status_address + ":" + std::to_string(cfg.status_port);
    }
  }
  if (source.empty()) {
    auto v = HistoriesFromDatabase(cfg, args.history);
    if (!v.ok()) {
      err << "sedna-lc status: no daemon answers on " << cfg.status_address << ":"
          << cfg.status_port << " and the database cannot be read: " << v.message() << "\n";
      return 1;
    }
    found = std::move(*v);
    source = "database " + cfg.db_path + " (read-only; no daemon answered)";
  }
  if (found.empty()) {
    err << "sedna-lc status: --history: no job \"" << args.history << "\" has a round history ("
        << source << ")\n";
    return 1;
  }
  if (found.size() > 1) {
    err << "sedna-lc status: --history: \"" << args.history << "\" names " << found.size()
        << " jobs; give <namespace>/<name>\n";
    return 1;
  }
  if (args.output == "json") {
    out << EncodeJobHistory(found[0]) << "\n";
    return 0;
  }
  out << RenderHistoryTable(found[0]) << "(" << found[0].rounds.size() << " round(s), from "
      << source << ")\n";
  return 0;
}

// One look: the jobs as `args.output` asks, and where they came from. 1 when nothing could be read.
int ShowOnce(const Config& cfg, const StatusArgs& args, std::ostream& out, std::ostream& err) {
  if (!args.history.empty()) return ShowHistory(cfg, args, out, err);
  std::vector<JobView> jobs;
  std::string source, body, gm_line;
  if (cfg.status_port != 0) {
    if (auto b = LoopbackGet(cfg.status_address, cfg.status_port, "/status")) {
      auto v = DecodeStatusJson(*b);
      if (!v.ok()) {
        err << "sedna-lc status: " << v.message() << "\n";
        return 1;
      }
      jobs = std::move(*v);
      // What the daemon observed about the GM on this connection (an older daemon says nothing).
      if (auto gm = DecodeGmEvidenceFromStatusJson(*b); gm.ok() && gm->has_value()) {
        gm_line = RenderGmLine(**gm) + "\n";
      }
      body = std::move(*b);
      source = "live daemon on " + cfg.status_address + ":" + std::to_string(cfg.status_port);
    }
  }
  if (source.empty()) {
    auto v = FromDatabase(cfg);
    if (!v.ok()) {
      err << "sedna-lc status: no daemon answers on " << cfg.status_address << ":"
          << cfg.status_port << " and the database cannot be read: " << v.message() << "\n";
      return 1;
    }
    jobs = std::move(*v);
    body = EncodeStatusJson(jobs);
    source = "database " + cfg.db_path + " (read-only; no daemon answered)";
  }
  if (args.output == "json") {
    out << body;  // as /status serves it; the source is not part of the document
    if (!body.empty() && body.back() != '\n') out << "\n";
    return 0;
  }
  out << (args.output == "wide" ? RenderWideTable(jobs) : RenderStatusTable(HumanViews(jobs)))
      << gm_line << "(" << jobs.size() << " job(s), from " << source << ")\n";
  return 0;
}

std::string Now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::localtime_r(&t, &tm);
  char b[32];
  std::strftime(b, sizeof b, "%Y-%m-%d %H:%M:%S", &tm);
  return b;
}

Result<double> Seconds(const std::string& flag, const std::string& v) {
  char* end = nullptr;
  const double s = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || !(s >= 0.1) || s > 86400) {
    return Result<double>::Error(flag + ": \"" + v +
                                 "\" is not a number of seconds (0.1 to 86400)");
  }
  return s;
}

}  // namespace

Result<StatusArgs> TakeStatusArgs(std::vector<std::string>& args) {
  StatusArgs s;
  std::vector<std::string> rest;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value =
        [&](std::initializer_list<const char*> names) -> Result<std::optional<std::string>> {
      for (const char* n : names) {
        const std::string name = n;
        if (a == name) {
          if (i + 1 == args.size()) {
            return Result<std::optional<std::string>>::Error(name + ": a value is required");
          }
          return std::optional<std::string>(args[++i]);
        }
        if (a.rfind(name + "=", 0) == 0)
          return std::optional<std::string>(a.substr(name.size() + 1));
      }
      return std::optional<std::string>();
    };
    auto o = value({"-o", "--output"});
    if (!o.ok()) return o.status();
    if (*o) {
      if (**o != "table" && **o != "wide" && **o != "json") {
        return Result<StatusArgs>::Error("-o: \"" + **o + "\" (expected table, wide or json)");
      }
      s.output = **o;
      continue;
    }
    if (a == "-w" || a == "--watch") {
      s.watch = true;
      continue;
    }
    auto iv = value({"--interval"});
    if (!iv.ok()) return iv.status();
    if (*iv) {
      auto sec = Seconds("--interval", **iv);
      if (!sec.ok()) return sec.status();
      s.interval = std::chrono::milliseconds(std::llround(*sec * 1000));
      continue;
    }
    auto hv = value({"--history"});
    if (!hv.ok()) return hv.status();
    if (*hv) {
      bool name_ok = !(*hv)->empty() && (*hv)->size() <= 300;
      for (char ch : **hv) {
        name_ok &= std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '.' ||
                   ch == '_' || ch == '/';
      }
      if (!name_ok) {
        return Result<StatusArgs>::Error("--history: \"" + **hv +
                                         "\" is not a job name ([namespace/]name)");
      }
      s.history = **hv;
      continue;
    }
    auto c = value({"--count"});
    if (!c.ok()) return c.status();
    if (*c) {
      int64_t n = 0;
      auto [p, ec] = std::from_chars((*c)->data(), (*c)->data() + (*c)->size(), n);
      if ((*c)->empty() || ec != std::errc() || p != (*c)->data() + (*c)->size() || n < 1) {
        return Result<StatusArgs>::Error("--count: \"" + **c + "\" is not a count (1, 2, ...)");
      }
      s.count = n;
      continue;
    }
    rest.push_back(a);
  }
  if (s.count > 0 && !s.watch) {
    return Result<StatusArgs>::Error("--count: only with --watch");
  }
  args = std::move(rest);
  return s;
}

int RunStatusCommand(const Config& cfg, const StatusArgs& args, std::ostream& out,
                     std::ostream& err) {
  if (!args.watch) return ShowOnce(cfg, args, out, err);
  // Like watch(1): a clear screen (on a terminal) and a header line before each draw.
  const bool tty = args.clear_screen;
  int rc = 0;
  for (int64_t n = 1;; ++n) {
    if (tty) out << "\033[H\033[2J";
    out << "Every " << static_cast<double>(args.interval.count()) / 1000.0
        << " s: sedna-lc status    " << Now() << "\n\n";
    rc = ShowOnce(cfg, args, out, err);
    out.flush();
    if (args.count > 0 && n >= args.count) break;
    std::this_thread::sleep_for(args.interval);
  }
  return rc;
}

}  // namespace sedna::app
