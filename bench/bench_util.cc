#include "bench_util.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "adapters/json/envelope.h"

namespace sedna::bench {

namespace stdfs = std::filesystem;

Args::Args(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) != 0) throw std::runtime_error("unexpected argument: " + a);
    auto eq = a.find('=');
    if (eq == std::string::npos) {
      values_[a.substr(2)] = "1";
    } else {
      values_[a.substr(2, eq - 2)] = a.substr(eq + 1);
    }
  }
}

std::string Args::Get(const std::string& name, const std::string& def) const {
  auto it = values_.find(name);
  return it == values_.end() ? def : it->second;
}

int64_t Args::GetInt(const std::string& name, int64_t def) const {
  auto it = values_.find(name);
  // Accepts 1e6 as well as 1000000.
  return it == values_.end() ? def : static_cast<int64_t>(std::llround(std::stod(it->second)));
}

double Args::GetDouble(const std::string& name, double def) const {
  auto it = values_.find(name);
  return it == values_.end() ? def : std::stod(it->second);
}

std::string TmpRoot(const Args& args) {
  if (args.Has("tmp-root")) return args.Get("tmp-root", "/tmp");
  if (const char* e = std::getenv("TMPDIR"); e && *e) return e;
  return "/tmp";
}

std::string LcBinary(const Args& args) {
  if (args.Has("lc")) return args.Get("lc", "");
  if (const char* e = std::getenv("SEDNA_LC"); e && *e) return e;
  return std::string(SEDNA_BINARY_DIR) + "/sedna-lc";
}

// ------------------------------------------------------------------------------------ Cluster

Cluster::Cluster(Options o) : opt_(std::move(o)) {
  std::string t = opt_.tmp_root + "/" + opt_.tmp_prefix + "XXXXXX";
  if (!::mkdtemp(t.data())) throw std::runtime_error("mkdtemp " + t + " failed");
  tmp_ = t;
  rootfs_ = tmp_ + "/rootfs";
  stdfs::create_directories(rootfs_ + "/data");
  stdfs::create_directories(rootfs_ + "/models/base_model");
  gm_ = std::make_unique<testing::GmEmulator>();
  // Before the LC connects: on_frame must be assigned before a client connects.
  gm_->server().on_frame = [this](const std::string& text) { OnFrame(text); };
  drain_ = std::thread([this] {
    while (!stop_drain_.load()) gm_->server().WaitForFrame(std::chrono::milliseconds(100));
  });
  try {
    StartLc();
  } catch (...) {
    lc_.reset();
    stop_drain_ = true;
    drain_.join();
    throw;
  }
}

void Cluster::StartLc() {
  worker_port_ = testing::FreePort();
  status_port_ = testing::FreePort();
  std::map<std::string, std::string> env{{"NODENAME", "edge-node"},
                                         {"BIND_PORT", std::to_string(worker_port_)},
                                         {"ROOTFS_MOUNT_DIR", rootfs_}};
  const bool emulated_gm = opt_.connect_gm && opt_.gm_address.empty();
  if (!opt_.gm_address.empty()) {
    env["GM_ADDRESS"] = opt_.gm_address;
  } else if (opt_.connect_gm) {
    env["GM_ADDRESS"] = gm_->address();
  }
  lc_ = std::make_unique<testing::LcProcess>(
      opt_.lc_binary, env,
      std::vector<std::string>{"--db", tmp_ + "/db/database.db", "--status-port",
                               std::to_string(status_port_), "--log-level", opt_.log_level},
      tmp_ + "/lc.log");
  if (emulated_gm && !gm_->server().WaitForConnection(std::chrono::seconds(20))) {
    throw std::runtime_error("sedna-lc did not connect to the GM emulator; log:\n" + lc_->Log());
  }
  // The status server answers once the controller has started.
  auto r = testing::HttpRequest(status_port_, "GET", "/healthz", "", {}, 20000);
  if (r.status != 200) throw std::runtime_error("sedna-lc /healthz: " + r.raw);
}

Cluster::~Cluster() {
  lc_.reset();  // SIGKILL if still running
  stop_drain_ = true;
  if (drain_.joinable()) drain_.join();
  gm_.reset();
  std::error_code ec;
  if (!std::getenv("SEDNA_BENCH_KEEP")) stdfs::remove_all(tmp_, ec);
}

void Cluster::OnFrame(const std::string& text) {
  const auto at = Clock::now();
  frames_seen_++;
  if (!opt_.decode_frames) return;
  auto parsed = Json::parse(text, nullptr, false);
  if (!parsed.is_object() || !parsed.contains("header")) return;  // bare header (§P1.2)
  auto f = json::DecodeFrame(text);
  if (!f.ok()) return;
  Seen s{at, f->header.resource_kind, f->header.resource_name,
         Json::parse(f->content, nullptr, false)};
  {
    std::lock_guard<std::mutex> lock(mu_);
    seen_.push_back(std::move(s));
  }
  cv_.notify_all();
}

std::optional<Seen> Cluster::WaitFrame(const std::function<bool(const Seen&)>& pred,
                                       std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  std::unique_lock<std::mutex> lock(mu_);
  size_t checked = 0;
  for (;;) {
    for (size_t i = checked; i < seen_.size(); ++i) {
      if (pred(seen_[i])) {
        Seen s = std::move(seen_[i]);
        seen_.erase(seen_.begin() + static_cast<std::ptrdiff_t>(i));
        return s;
      }
    }
    checked = seen_.size();
    if (cv_.wait_until(lock, deadline) == std::cv_status::timeout && seen_.size() == checked) {
      return std::nullopt;
    }
  }
}

void Cluster::ClearFrames() {
  std::lock_guard<std::mutex> lock(mu_);
  seen_.clear();
}

Json Cluster::StatusJobs() {
  auto r = testing::HttpRequest(status_port_, "GET", "/status", "", {});
  if (r.status != 200) throw std::runtime_error("GET /status: " + r.raw);
  return Json::parse(r.body).at("jobs");
}

std::map<std::string, double> Cluster::Metrics() {
  auto r = testing::HttpRequest(status_port_, "GET", "/metrics", "", {});
  if (r.status != 200) throw std::runtime_error("GET /metrics: " + r.raw);
  std::map<std::string, double> m;
  std::istringstream in(r.body);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    auto sp = line.find(' ');
    if (sp == std::string::npos) continue;
    m[line.substr(0, sp)] = std::stod(line.substr(sp + 1));
  }
  return m;
}

bool Cluster::WaitStatus(const std::function<bool(const Json&)>& pred,
                         std::chrono::milliseconds timeout, std::chrono::milliseconds poll) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    if (pred(StatusJobs())) return true;
    if (Clock::now() > deadline) return false;
    // Polling the LC's status endpoint: there is no push notification for "job loaded".
    std::this_thread::sleep_for(poll);
  }
}

// ------------------------------------------------------------------------------------ objects

Json Meta(const std::string& name) {
  return Json{{"name", name},
              {"namespace", "default"},
              {"uid", "7b3c2f0e-1111-4c3a-9c1e-000000000001"},
              {"resourceVersion", "12345"},
              {"generation", 1},
              {"creationTimestamp", "2021-08-20T08:00:00Z"}};
}

Json DatasetObject(const std::string& name, const std::string& url) {
  return Json{{"kind", "Dataset"},
              {"apiVersion", "sedna.io/v1alpha1"},
              {"metadata", Meta(name)},
              {"spec", {{"url", url}, {"format", "txt"}, {"nodeName", "edge-node"}}},
              {"status", {{"numberOfSamples", 0}}}};
}

Json ModelObject(const std::string& name, const std::string& url, const std::string& format) {
  return Json{{"kind", "Model"},
              {"apiVersion", "sedna.io/v1alpha1"},
              {"metadata", Meta(name)},
              {"spec", {{"url", url}, {"format", format}}},
              {"status", Json::object()}};
}

namespace {
Json Template(const std::string& name, const std::string& script) {
  return Json{{"metadata", {{"creationTimestamp", nullptr}}},
              {"spec",
               {{"containers", Json::array({{{"name", name},
                                             {"image", "example:v0.1.0"},
                                             {"args", Json::array({script})},
                                             {"resources", Json::object()}}})},
                {"nodeName", "edge-node"}}}};
}
}  // namespace

Json IlJobObject(const JobParams& p) {
  return Json{
      {"kind", "IncrementalLearningJob"},
      {"apiVersion", "sedna.io/v1alpha1"},
      {"metadata", Meta(p.name)},
      {"spec",
       {{"dataset", {{"name", p.dataset}, {"trainProb", p.train_prob}}},
        {"initialModel", {{"name", "initial-model"}}},
        {"trainSpec",
         {{"template", Template("train-worker", "train.py")},
          {"trigger",
           {{"checkPeriodSeconds", p.check_period_seconds},
            {"condition",
             {{"operator", p.op}, {"threshold", p.threshold}, {"metric", "num_of_samples"}}}}}}},
        {"evalSpec", {{"template", Template("eval-worker", "eval.py")}}},
        {"deploySpec",
         {{"model", {{"name", "deploy-model"}}},
          {"trigger",
           {{"condition",
             {{"operator", ">"}, {"threshold", 0.1}, {"metric", "precision_delta[0]"}}}}},
          {"hardExampleMining", {{"name", "IBT"}}},
          {"template", Template("infer-worker", "inference.py")}}},
        {"outputDir", p.output_dir}}}};
}

Json IlJobAtTrainWaiting(const JobParams& p) {
  testing::GmJob job(core::gm::JobKind::kIncremental, IlJobObject(p));
  if (job.LastCondition() != "Train/Waiting") {
    throw std::runtime_error("GM emulator: new job is at " + job.LastCondition());
  }
  return job.Object();
}

std::string IndexLine(int64_t n) {
  char buf[80];
  std::snprintf(buf, sizeof buf, "train_images/%08lld.jpg %lld,%lld,%lld,%lld,1",
                static_cast<long long>(n), static_cast<long long>(n % 97),
                static_cast<long long>(n % 89), static_cast<long long>(n % 83 + 100),
                static_cast<long long>(n % 79 + 100));
  return buf;
}

// ------------------------------------------------------------------------------------ /proc

namespace {
int64_t ProcFieldKb(const std::string& path, const std::string& field) {
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::atoll(line.c_str() + field.size() + 1);
  }
  return -1;
}
}  // namespace

int64_t ProcStatusKb(pid_t pid, const std::string& field) {
  return ProcFieldKb("/proc/" + std::to_string(pid) + "/status", field);
}

int64_t ProcSmapsKb(pid_t pid, const std::string& field) {
  return ProcFieldKb("/proc/" + std::to_string(pid) + "/smaps_rollup", field);
}

ProcCpu ProcCpuSplit(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  // Fields after "(comm)": state is field 3; utime 14, stime 15.
  auto rp = all.rfind(')');
  if (rp == std::string::npos) throw std::runtime_error("cannot read /proc/<pid>/stat");
  std::istringstream in(all.substr(rp + 2));
  std::vector<std::string> fields;
  std::string tok;
  while (in >> tok) fields.push_back(tok);
  // fields[0] is field 3 (state), so field k is fields[k - 3].
  const double hz = static_cast<double>(::sysconf(_SC_CLK_TCK));
  return {std::stod(fields.at(14 - 3)) / hz, std::stod(fields.at(15 - 3)) / hz};
}

double ProcCpuSeconds(pid_t pid) {
  const ProcCpu c = ProcCpuSplit(pid);
  return c.user + c.system;
}

std::string LoadAvg() {
  std::ifstream f("/proc/loadavg");
  std::string a, b, c;
  f >> a >> b >> c;
  return "load " + a + " " + b + " " + c + " on " +
         std::to_string(::sysconf(_SC_NPROCESSORS_ONLN)) + " CPUs";
}

double ThreadsCpuMs(pid_t pid) {
  namespace sfs = std::filesystem;
  double ns = 0;
  std::error_code ec;
  for (const auto& t : sfs::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    std::ifstream in(t.path() / "schedstat");
    double on_cpu = 0;
    if (in >> on_cpu) ns += on_cpu;
  }
  return ns / 1e6;
}

std::string CreateCost(const std::string& dir) {
  std::string probe = dir + "/create-cost.XXXXXX";
  if (::mkdtemp(probe.data()) == nullptr) return "a create under " + dir + ": not measured";
  auto cpu_ms = [] {
    timespec t{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
  };
  std::vector<double> ms;
  for (int i = 0; i < 20; ++i) {
    const std::string f = probe + "/f" + std::to_string(i);
    const double a = cpu_ms();
    const int fd = ::open(f.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    ms.push_back(cpu_ms() - a);
    if (fd >= 0) ::close(fd);
    ::unlink(f.c_str());
  }
  ::rmdir(probe.c_str());
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f ms of CPU", Percentile(ms, 50));
  return "a create under " + dir + ": " + buf;
}

// ------------------------------------------------------------------------------------ stats

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  size_t rank = static_cast<size_t>(std::ceil(q / 100.0 * static_cast<double>(v.size())));
  rank = std::clamp<size_t>(rank, 1, v.size());
  return v[rank - 1];
}

double Mean(const std::vector<double>& v) {
  if (v.empty()) return NAN;
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

std::string Fmt(const char* format, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, format);
  std::vsnprintf(buf, sizeof buf, format, ap);
  va_end(ap);
  return buf;
}

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
double Millis(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

}  // namespace sedna::bench
