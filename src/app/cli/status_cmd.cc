#include "app/cli/status_cmd.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "adapters/json/resource_codec.h"
#include "adapters/store/store.h"
#include "app/cluster/il_record.h"
#include "app/cluster/status_view.h"

namespace sedna::app {
namespace {

// Minimal blocking HTTP/1.0 GET on loopback; nullopt when nothing answers.
std::optional<std::string> HttpGet(const std::string& address, uint16_t port,
                                   const std::string& path) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return std::nullopt;
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  if (::inet_pton(AF_INET, address == "0.0.0.0" ? "127.0.0.1" : address.c_str(), &sa.sin_addr) !=
          1 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    ::close(fd);
    return std::nullopt;
  }
  std::string req = "GET " + path + " HTTP/1.0\r\nHost: localhost\r\n\r\n";
  if (::write(fd, req.data(), req.size()) != static_cast<ssize_t>(req.size())) {
    ::close(fd);
    return std::nullopt;
  }
  std::string resp;
  char buf[8192];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) resp.append(buf, n);
  ::close(fd);
  auto pos = resp.find("\r\n\r\n");
  if (pos == std::string::npos ||
      (resp.compare(0, 12, "HTTP/1.1 200") != 0 && resp.compare(0, 12, "HTTP/1.0 200") != 0)) {
    return std::nullopt;
  }
  return resp.substr(pos + 4);
}

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
    FillLlView(r->state, v);
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace

int RunStatusCommand(const Config& cfg, std::ostream& out, std::ostream& err) {
  std::vector<JobView> jobs;
  std::string source;
  if (cfg.status_port != 0) {
    if (auto body = HttpGet(cfg.status_address, cfg.status_port, "/status")) {
      auto v = DecodeStatusJson(*body);
      if (!v.ok()) {
        err << "sedna-lc status: " << v.message() << "\n";
        return 1;
      }
      jobs = std::move(*v);
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
    source = "database " + cfg.db_path + " (read-only; no daemon answered)";
  }
  out << RenderStatusTable(jobs) << "(" << jobs.size() << " job(s), from " << source << ")\n";
  return 0;
}

}  // namespace sedna::app
