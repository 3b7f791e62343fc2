#include "app/cli/doctor.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "adapters/json/envelope.h"
#include "app/cli/gm_diagnosis.h"
#include "app/cli/loopback_http.h"

namespace sedna::app {
namespace {

bool IsDir(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string Dirname(const std::string& p) {
  const auto slash = p.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : p.substr(0, slash);
}

Check CheckRootfs(const LocalCheckOptions& o) {
  if (o.rootfs.empty()) {
    return {"rootfs", Verdict::kOk, "ROOTFS_MOUNT_DIR is empty: host paths are used as they are",
            ""};
  }
  const std::string fix = "mount the host's / at " + o.rootfs +
                          " (a hostPath volume, as Sedna's LC DaemonSet does), or set "
                          "ROOTFS_MOUNT_DIR (--rootfs) to where it is mounted";
  if (!IsDir(o.rootfs)) {
    return {"rootfs", Verdict::kFail, o.rootfs + " does not exist or is not a directory", fix};
  }
  if (!IsDir(o.rootfs + "/etc") && !IsDir(o.rootfs + "/proc")) {
    return {"rootfs", Verdict::kFail,
            o.rootfs + " exists but has neither etc/ nor proc/: the host root is not mounted there",
            fix};
  }
  return {"rootfs", Verdict::kOk, o.rootfs + " looks like a host root", ""};
}

Check CheckDatabase(const LocalCheckOptions& o) {
  const std::string dir = Dirname(o.db_path);
  if (!IsDir(dir)) {
    std::string up = dir;
    struct stat st;
    while (::stat(up.c_str(), &st) != 0 && up != "/" && up != ".") up = Dirname(up);
    if (!IsDir(up)) {
      return {"database", Verdict::kFail, up + " is not a directory, so " + dir + " cannot exist",
              "set SEDNA_DB_PATH (--db) to a path in a directory"};
    }
    if (::access(up.c_str(), W_OK) == 0) {
      return {"database", Verdict::kOk,
              dir + " does not exist yet; sedna-lc will create it (" + up + " is writable)", ""};
    }
    return {
        "database", Verdict::kFail,
        dir + " does not exist and " + up + " is not writable: " + std::strerror(errno),
        "create " + dir + " writable by the user sedna-lc runs as, or set SEDNA_DB_PATH (--db)"};
  }
  std::string tmp = dir + "/.sedna-lc-doctor.XXXXXX";
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) {
    return {"database", Verdict::kFail,
            "cannot create a file in " + dir + ": " + std::strerror(errno),
            "make " + dir + " writable by the user sedna-lc runs as (uid " +
                std::to_string(::getuid()) + "), or set SEDNA_DB_PATH (--db)"};
  }
  ::close(fd);
  ::unlink(tmp.c_str());
  struct stat st;
  std::string detail = dir + " is writable; " +
                       (::stat(o.db_path.c_str(), &st) == 0
                            ? o.db_path + " exists (" + std::to_string(st.st_size) + " bytes)"
                            : o.db_path + " does not exist yet (a new database)");
  const std::string lock = o.db_path + ".lock";
  const int lfd = ::open(lock.c_str(), O_RDWR | O_CLOEXEC);
  if (lfd >= 0) {
    const bool held = ::flock(lfd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    ::close(lfd);  // releases the lock if we took it
    if (held) {
      return {"database", Verdict::kWarn, detail + "; a running sedna-lc holds " + lock,
              "a second daemon on this database would not start: stop the running one first, or "
              "give this one another SEDNA_DB_PATH (--db)"};
    }
  }
  return {"database", Verdict::kOk, detail + "; no sedna-lc holds it", ""};
}

Check CheckWorkerPort(const LocalCheckOptions& o) {
  const std::string where = o.bind_address + ":" + std::to_string(o.bind_port);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(o.bind_port);
  if (::inet_pton(AF_INET, o.bind_address.c_str(), &sa.sin_addr) != 1) {
    return {"worker port", Verdict::kFail, "\"" + o.bind_address + "\" is not an IPv4 address",
            "set --bind-address to an IPv4 address of this node (default 0.0.0.0)"};
  }
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  const int rc = ::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
  const int err = errno;
  ::close(fd);
  if (rc == 0) return {"worker port", Verdict::kOk, where + " is free", ""};
  if (err == EADDRINUSE) {
    if (o.status_port != 0 && LoopbackGet(o.status_address, o.status_port, "/healthz")) {
      return {"worker port", Verdict::kWarn,
              where + " is in use, by a running sedna-lc (its status port " +
                  std::to_string(o.status_port) + " answers /healthz)",
              "stop it before starting another, or give this one another BIND_PORT"};
    }
    return {
        "worker port", Verdict::kFail, where + " is in use by another program",
        "find it with `ss -ltnp 'sport = :" + std::to_string(o.bind_port) +
            "'`, or set BIND_PORT (--bind-port) to a free port (workers' LC_SERVER must match)"};
  }
  return {"worker port", Verdict::kFail, "cannot bind " + where + ": " + std::strerror(err),
          err == EACCES ? "ports below 1024 need root or CAP_NET_BIND_SERVICE: choose another "
                          "BIND_PORT"
                        : "set BIND_PORT (--bind-port) / --bind-address to what this node offers"};
}

Check CheckClock(const LocalCheckOptions& o) {
  if (Status s = ValidateTimezone(o.timezone, o.zoneinfo_dir); !s.ok()) {
    return {"clock", Verdict::kFail, s.message(),
            "set TZ to a zone name such as Europe/Berlin (install tzdata) or unset it for UTC"};
  }
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::localtime_r(&now, &tm);
  char local[64];
  std::strftime(local, sizeof local, "%Y-%m-%d %H:%M:%S %Z (UTC%z)", &tm);
  const std::string detail = std::string("local time ") + local + ", TZ " +
                             (o.timezone.empty() ? "unset (UTC)" : "\"" + o.timezone + "\"");
  if (tm.tm_year + 1900 < 2024) {
    return {"clock", Verdict::kWarn, detail + ": the clock looks unset",
            "sync the clock (NTP: systemd-timesyncd or chrony); triggers run on wall-clock time"};
  }
  return {"clock", Verdict::kOk, detail, ""};
}

// A sedna-lc holds the database's lock, or answers on the status port.
bool DaemonRunning(const Config& cfg) {
  const int fd = ::open((cfg.db_path + ".lock").c_str(), O_RDWR | O_CLOEXEC);
  if (fd >= 0) {
    const bool held = ::flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    ::close(fd);
    if (held) return true;
  }
  return cfg.status_port != 0 && LoopbackGet(cfg.status_address, cfg.status_port, "/healthz");
}

}  // namespace

std::vector<Check> DiagnoseLocal(const LocalCheckOptions& o) {
  return {CheckRootfs(o), CheckDatabase(o), CheckWorkerPort(o), CheckClock(o)};
}

Result<DoctorArgs> TakeDoctorArgs(const std::map<std::string, std::string>& env,
                                  std::vector<std::string>& args) {
  DoctorArgs d;
  if (auto it = env.find("GM_ADDRESS"); it != env.end()) d.gm_address = it->second;
  if (auto it = env.find("TZ"); it != env.end()) d.timezone = it->second;
  std::vector<std::string> rest;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    std::optional<std::string> v;
    std::string name;
    for (const char* n : {"--gm-address", "--timezone", "--timeout"}) {
      if (a == n) {
        if (i + 1 == args.size())
          return Result<DoctorArgs>::Error(std::string(n) + ": a value is required");
        v = args[++i];
      } else if (a.rfind(std::string(n) + "=", 0) == 0) {
        v = a.substr(std::strlen(n) + 1);
      }
      if (v) {
        name = n;
        break;
      }
    }
    if (!v) {
      rest.push_back(a);
    } else if (name == "--gm-address") {
      d.gm_address = *v;
    } else if (name == "--timezone") {
      d.timezone = *v;
    } else {
      char* end = nullptr;
      const double s = std::strtod(v->c_str(), &end);
      if (v->empty() || *end != '\0' || !(s > 0) || s > 600) {
        return Result<DoctorArgs>::Error("--timeout: \"" + *v +
                                         "\" is not a number of seconds (0 < s <= 600)");
      }
      d.timeout = std::chrono::milliseconds(std::llround(s * 1000));
      if (d.timeout.count() == 0) d.timeout = std::chrono::milliseconds(1);
    }
  }
  args = std::move(rest);
  return d;
}

int RunDoctorCommand(const Config& cfg, const DoctorArgs& args, const std::string& zoneinfo_dir,
                     std::ostream& out) {
  // localtime_r in the clock check follows TZ, as the daemon's trigger timers do.
  if (!args.timezone.empty()) ::setenv("TZ", args.timezone.c_str(), 1);
  ::tzset();
  GmProbeOptions g;
  g.address = args.gm_address;
  g.node_name = cfg.node_name;
  g.first_frame = json::EncodeBareHeader({});
  g.timeout = args.timeout;
  out << "sedna-lc doctor: node " << cfg.node_name << ", GM_ADDRESS "
      << (args.gm_address.empty() ? "(not set)" : args.gm_address) << "\n";
  // The GM keys its connections by Node-Name: a probe under the running daemon's name would take
  // over (and, closing, drop) that daemon's link.
  if (DaemonRunning(cfg)) {
    g.node_name = cfg.node_name + "-doctor";
    out << "a sedna-lc runs here: the GM is probed as Node-Name " << g.node_name
        << ", not to disturb its link\n";
  }
  out.flush();
  auto checks = DiagnoseGmConnect(g);
  LocalCheckOptions l;
  l.rootfs = cfg.rootfs;
  l.db_path = cfg.db_path;
  l.bind_address = cfg.bind_address;
  l.bind_port = cfg.bind_port;
  l.status_address = cfg.status_address;
  l.status_port = cfg.status_port;
  l.timezone = args.timezone;
  l.zoneinfo_dir = zoneinfo_dir;
  for (auto& c : DiagnoseLocal(l)) checks.push_back(std::move(c));
  out << RenderChecks(checks);
  const bool failed = AnyFailed(checks);
  out << (failed ? "some checks failed: see the fix: lines above\n" : "all checks passed\n");
  return failed ? 1 : 0;
}

}  // namespace sedna::app
