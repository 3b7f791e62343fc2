// S3 figures of the real sedna-lc ([D:I6], "Measure"), against moto_server (a real S3
// implementation, signature checking on; tests/support/moto_server.h) on 127.0.0.1:
//   (a) index  Bytes and requests per poll of an unchanged S3 index of --lines lines (target: one
//              HEAD, no GET). A fresh LC gets a Dataset whose spec.url is the index object and an
//              IL job on it with checkPeriodSeconds 1 (trigger num_of_samples > 2*lines, so no
//              round fires). Once the GM has numberOfSamples == lines, the bench reads /metrics
//              (sedna_lc_s3_index_{polls,requests,bytes}_total), waits for --polls more syncs
//              and prints the deltas per sync, then the LC's VmRSS / VmHWM.
//   (b) upload Memory while the LC uploads a --model-mib MiB local model to S3 (target: flat, a
//              few MB). A fresh LC runs one IL round with a local dataset and outputDir and the
//              deploy model on S3: the trained model /output/train/1/model.pb (a local file of
//              that size) is copied to the deploy model's S3 URL by the deploy (host -> S3 is
//              Client::PutFile: one hashing pass over the file, then one streamed PUT). VmRSS is
//              sampled every --sample-ms from the eval worker's POST (which triggers the deploy)
//              until Deploy Ready reaches the GM; the bench prints the baseline (just before the
//              POST), the peak and VmHWM, then checks the object's size on S3.
//
//   s3_bench [--lines=1e6] [--polls=10] [--model-mib=1024] [--sample-ms=50] [--sparse]
//            [--skip-index] [--skip-upload] [--smaps] [--log-level=info] [--tmp-root=/tmp]
//            [--lc=<sedna-lc>]
// (--sparse makes the model a sparse file: no disk writes, the LC still reads every byte.
// --smaps prints the LC's largest resident mappings after (a), and what grew during (b).)
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "adapters/s3/s3_client.h"
#include "bench_util.h"
#include "moto_server.h"

using namespace sedna::bench;
namespace testing = sedna::testing;
namespace s3 = sedna::s3;

namespace {

constexpr const char* kBucket = "bench";

struct Moto {
  testing::MotoServer server;
  s3::Credentials creds;

  Moto() {
    bool skip = false;
    const std::string problem = server.Start(&skip);
    if (!problem.empty()) throw std::runtime_error("moto_server: " + problem);
    creds = server.credentials();
    if (auto s = server.CreateBucket(kBucket); !s.ok()) throw std::runtime_error(s.message());
  }
  ~Moto() {
    server.Stop();
    server.RemoveLog();
  }

  // The sedna.io/credential annotation the GM puts on objects with spec.credentialName (§P2.5).
  std::string Annotation() const {
    return Json{{"ACCESS_KEY_ID", creds.access_key},
                {"SECRET_ACCESS_KEY", creds.secret_key},
                {"s3-endpoint", creds.endpoint},
                {"s3-usehttps", "0"}}
        .dump();
  }
  Json WithCredential(Json obj) const {
    obj["metadata"]["annotations"] = {{"sedna.io/credential", Annotation()}};
    obj["spec"]["credentialName"] = "bench-secret";
    return obj;
  }
};

Cluster::Options Opts(const Args& args, const std::string& scenario) {
  Cluster::Options o;
  o.lc_binary = LcBinary(args);
  o.log_level = args.Get("log-level", "info");
  o.tmp_prefix = "sedna-bench-s3-" + scenario + "-";
  o.tmp_root = TmpRoot(args);
  return o;
}

double Mb(int64_t kb) { return static_cast<double>(kb) / 1024.0; }

struct Mem {
  int64_t rss, anon, file;  // kB
};
Mem ReadMem(pid_t pid) {
  return {ProcStatusKb(pid, "VmRSS"), ProcStatusKb(pid, "RssAnon"), ProcStatusKb(pid, "RssFile")};
}

// Resident kB per backing file of the LC's mappings (/proc/<pid>/smaps; "[anon]", "[heap]"...).
std::map<std::string, int64_t> Mappings(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/smaps");
  std::map<std::string, int64_t> kb;
  std::string line, name;
  while (std::getline(in, line)) {
    if (!line.empty() && std::isxdigit(static_cast<unsigned char>(line[0])) &&
        line.find('-') < line.find(' ')) {
      std::istringstream f(line);
      std::string range, perms, off, dev, inode;
      f >> range >> perms >> off >> dev >> inode;
      std::getline(f, name);
      name.erase(0, name.find_first_not_of(' '));
      if (name.empty()) name = "[anon]";
      name = std::filesystem::path(name).filename().string();
    } else if (line.rfind("Rss:", 0) == 0) {
      kb[name] += std::atoll(line.c_str() + 4);
    }
  }
  return kb;
}

// --smaps: the mappings with the most resident memory (or, given `before`, the largest growth
// since then), to tell the code pages of libraries from heap.
void PrintTopMappings(const Args& args, pid_t pid,
                      const std::map<std::string, int64_t>* before = nullptr) {
  if (!args.Has("smaps")) return;
  std::vector<std::pair<int64_t, std::string>> top;
  for (const auto& [n, k] : Mappings(pid)) {
    int64_t v = k;
    if (before) {
      auto it = before->find(n);
      v -= it == before->end() ? 0 : it->second;
    }
    if (v != 0) top.emplace_back(v, n);
  }
  std::sort(top.rbegin(), top.rend());
  std::printf("  %s:", before ? "resident growth by mapping" : "top resident mappings");
  for (size_t i = 0; i < top.size() && i < 12; ++i) {
    std::printf("%s %s %s%.2f MB", i ? "," : "", top[i].second.c_str(), before ? "+" : "",
                Mb(top[i].first));
  }
  std::printf("\n");
}

struct S3Counters {
  double polls = 0, requests = 0, bytes = 0;
};
S3Counters ReadCounters(Cluster& c) {
  auto m = c.Metrics();
  return {m["sedna_lc_s3_index_polls_total"], m["sedna_lc_s3_index_requests_total"],
          m["sedna_lc_s3_index_bytes_total"]};
}

// ------------------------------------------------------------------------- (a) unchanged index

void IndexScenario(const Args& args, Moto& moto) {
  const int64_t n = args.GetInt("lines", 1000000);
  const int64_t polls = args.GetInt("polls", 10);
  Cluster c(Opts(args, "index"));
  const std::string key = "data/index.txt";
  const std::string url = std::string("s3://") + kBucket + "/" + key;

  // The index, built in a local file and uploaded with one PUT.
  const std::string local = c.tmp() + "/index-upload.txt";
  {
    std::string buf;
    buf.reserve(1 << 20);
    FILE* f = std::fopen(local.c_str(), "w");
    if (!f) throw std::runtime_error("cannot write " + local);
    for (int64_t i = 1; i <= n; ++i) {
      (buf += IndexLine(i)) += '\n';
      if (buf.size() >= (1 << 20)) {
        std::fwrite(buf.data(), 1, buf.size(), f);
        buf.clear();
      }
    }
    std::fwrite(buf.data(), 1, buf.size(), f);
    std::fclose(f);
  }
  const int64_t size = static_cast<int64_t>(std::filesystem::file_size(local));
  {
    s3::ClientOptions o;
    o.timeout = std::chrono::seconds(120);
    s3::Client client(moto.creds, o);
    if (auto s = client.PutFile({kBucket, key}, local); !s.ok())
      throw std::runtime_error(s.message());
  }
  std::filesystem::remove(local);
  std::printf("  index s3://%s/%s: %lld lines, %.1f MB\n", kBucket, key.c_str(),
              static_cast<long long>(n), static_cast<double>(size) / 1e6);
  std::fflush(stdout);

  Json ds = moto.WithCredential(DatasetObject("s3-index", url));
  JobParams p;
  p.name = "s3-index-job";
  p.dataset = "s3-index";
  p.threshold = static_cast<double>(2 * n);  // no round: only the polls are measured
  p.check_period_seconds = 1;
  p.output_dir = "/output";
  const auto t0 = Clock::now();
  const double cpu0 = ProcCpuSeconds(c.pid());
  c.Send("insert", ModelObject("initial-model", "/models/base_model", "ckpt"));
  c.Send("insert", IlJobAtTrainWaiting(p));
  c.Send("insert", ds);
  auto counted = c.WaitFrame(
      [&](const Seen& s) {
        return s.kind == "Dataset" && s.name == "s3-index" &&
               s.body.value("numberOfSamples", int64_t{0}) == n;
      },
      std::chrono::seconds(900));
  if (!counted) throw std::runtime_error("numberOfSamples never reached N; log:\n" + c.Log());
  const double ingest_s = Seconds(counted->at - t0);
  const double ingest_cpu = ProcCpuSeconds(c.pid()) - cpu0;
  c.ClearFrames();  // the counts on the way to N (one per 4 MB slice)
  const S3Counters first = ReadCounters(c);
  std::printf(
      "  first sync(s) to numberOfSamples = N: %.2f s (LC CPU %.2f s); so far %g polls, %g "
      "requests, %.0f bytes fetched (object %lld bytes)\n",
      ingest_s, ingest_cpu, first.polls, first.requests, first.bytes, static_cast<long long>(size));
  std::fflush(stdout);

  // Unchanged polls: wait for `polls` more completed syncs.
  const S3Counters a = ReadCounters(c);
  const double cpu_a = ProcCpuSeconds(c.pid());
  const auto ta = Clock::now();
  S3Counters b = a;
  const auto deadline = Clock::now() + std::chrono::seconds(30 + 3 * polls);
  while (b.polls < a.polls + static_cast<double>(polls)) {
    if (Clock::now() > deadline) throw std::runtime_error("the LC stopped polling the index");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    b = ReadCounters(c);
  }
  const double dt = Seconds(Clock::now() - ta);
  const double dcpu = ProcCpuSeconds(c.pid()) - cpu_a;
  const double dp = b.polls - a.polls;
  const double req_per_poll = (b.requests - a.requests) / dp;
  const double bytes_per_poll = (b.bytes - a.bytes) / dp;
  auto recount =
      c.WaitFrame([](const Seen& s) { return s.kind == "Dataset"; }, std::chrono::milliseconds(0));
  const Mem mem = ReadMem(c.pid());
  const int64_t rss = mem.rss, hwm = ProcStatusKb(c.pid(), "VmHWM");
  std::printf(
      "  %g unchanged polls in %.1f s: %.2f requests and %.0f bytes fetched per poll; LC CPU "
      "%.3f s (%.1f ms per poll)%s\n",
      dp, dt, req_per_poll, bytes_per_poll, dcpu, 1000.0 * dcpu / dp,
      recount ? "; UNEXPECTED Dataset frame meanwhile" : "");
  std::printf(
      "  LC memory after the ingest and the polls: VmRSS %.2f MB (RssAnon %.2f, RssFile %.2f), "
      "VmHWM %.2f MB\n",
      Mb(rss), Mb(mem.anon), Mb(mem.file), Mb(hwm));
  std::printf(
      "RESULT s3 \"unchanged index poll, %g lines\" requests_per_poll=%.2f bytes_per_poll=%.0f "
      "polls=%g cpu_ms_per_poll=%.1f ingest_s=%.2f VmRSS_MB=%.2f RssAnon_MB=%.2f VmHWM_MB=%.2f\n",
      static_cast<double>(n), req_per_poll, bytes_per_poll, dp, 1000.0 * dcpu / dp, ingest_s,
      Mb(rss), Mb(mem.anon), Mb(hwm));
  PrintTopMappings(args, c.pid());
  std::fflush(stdout);
  c.Stop();
}

// ------------------------------------------------------------------------- (b) 1 GiB upload

// Writes `bytes` to `path`: a repeating non-zero pattern, or a hole (sparse).
void MakeModel(const std::string& path, int64_t bytes, bool sparse) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error("cannot create " + path);
  if (sparse) {
    if (::ftruncate(fd, bytes) != 0) throw std::runtime_error("ftruncate " + path);
  } else {
    std::string block(1 << 20, '\0');
    for (size_t i = 0; i < block.size(); ++i) block[i] = static_cast<char>('A' + i % 23);
    for (int64_t done = 0; done < bytes;) {
      const size_t want = static_cast<size_t>(std::min<int64_t>(block.size(), bytes - done));
      const ssize_t w = ::write(fd, block.data(), want);
      if (w <= 0) throw std::runtime_error("writing " + path);
      done += w;
    }
  }
  ::close(fd);
}

std::string WorkerPost(const std::string& name, const std::string& kind,
                       const std::string& results) {
  return R"({"name": ")" + name +
         R"(", "namespace": "default", "ownerName": "upload-job", "ownerKind": "incrementallearningjob", "kind": ")" +
         kind + R"(", "status": "completed", "results": )" + results + "}";
}

std::string Lower(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

// The next IL report with this phase and status (case-insensitive: forwarded worker reports keep
// the worker's spelling).
std::optional<Seen> WaitIl(Cluster& c, const std::string& phase, const std::string& status,
                           std::chrono::seconds timeout) {
  return c.WaitFrame(
      [&](const Seen& s) {
        return s.kind == "IncrementalLearningJob" &&
               Lower(s.body.value("phase", "")) == Lower(phase) &&
               Lower(s.body.value("status", "")) == Lower(status);
      },
      timeout);
}

void Post(Cluster& c, const std::string& worker, const std::string& body) {
  auto r =
      testing::HttpRequest(c.worker_port(), "POST", "/sedna/workers/" + worker + "/info", body);
  if (r.status != 200) throw std::runtime_error("worker POST: " + r.raw);
}

void UploadScenario(const Args& args, Moto& moto) {
  const int64_t mib = args.GetInt("model-mib", 1024);
  const int64_t bytes = mib << 20;
  const int sample_ms = static_cast<int>(args.GetInt("sample-ms", 50));
  Cluster c(Opts(args, "upload"));
  const std::string model = "/output/train/1/model.pb";
  const std::string deploy_key = "models/deploy/saved_model.pb";
  std::filesystem::create_directories(c.Host("/output/train/1"));
  const auto tm = Clock::now();
  MakeModel(c.Host(model), bytes, args.Has("sparse"));
  std::printf("  model %s: %lld MiB%s, written in %.1f s\n", model.c_str(),
              static_cast<long long>(mib), args.Has("sparse") ? " (sparse)" : "",
              Seconds(Clock::now() - tm));
  std::fflush(stdout);

  // One IL round: local dataset and outputs, the deploy model on S3.
  testing::WriteFile(c.Host("/data/upload.txt"), "");
  c.Send("insert", ModelObject("initial-model", "/models/base_model", "ckpt"));
  c.Send("insert", moto.WithCredential(ModelObject(
                       "deploy-model", std::string("s3://") + kBucket + "/" + deploy_key, "pb")));
  c.Send("insert", DatasetObject("upload-ds", "/data/upload.txt"));
  JobParams p;
  p.name = "upload-job";
  p.dataset = "upload-ds";
  p.threshold = 50;
  p.check_period_seconds = 1;
  p.output_dir = "/output";
  testing::GmJob job(sedna::core::gm::JobKind::kIncremental, moto.WithCredential(IlJobObject(p)));
  c.Send("insert", job.Object());
  std::string index;
  for (int i = 1; i <= 100; ++i) (index += IndexLine(i)) += '\n';
  testing::AppendFile(c.Host("/data/upload.txt"), index);

  auto il1 = WaitIl(c, "Train", "Ready", std::chrono::seconds(60));
  if (!il1) throw std::runtime_error("no Train Ready; log:\n" + c.Log());
  job.Report(il1->body.dump());
  job.SetPod(sedna::core::Stage::kTrain, sedna::core::gm::PodPhase::kRunning);
  Post(c, "train-worker-up",
       WorkerPost("train-worker-up", "train",
                  R"([{"format": "pb", "url": ")" + model + R"(", "metrics": {"loss": 0.8}}])"));
  auto il2 = WaitIl(c, "Train", "Completed", std::chrono::seconds(60));
  if (!il2) throw std::runtime_error("no Train Completed; log:\n" + c.Log());
  job.Report(il2->body.dump());
  job.SetPod(sedna::core::Stage::kTrain, sedna::core::gm::PodPhase::kSucceeded);
  c.Send("insert", job.Object());
  auto il3 = WaitIl(c, "Eval", "Ready", std::chrono::seconds(60));
  if (!il3) throw std::runtime_error("no Eval Ready; log:\n" + c.Log());
  job.Report(il3->body.dump());
  job.SetPod(sedna::core::Stage::kEval, sedna::core::gm::PodPhase::kRunning);

  // The eval report makes the deploy trigger fire (precision delta 0.15 > 0.1): the upload.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // settle before the baseline
  const Mem base = ReadMem(c.pid());
  const auto base_maps = Mappings(c.pid());
  const int64_t base_hwm = ProcStatusKb(c.pid(), "VmHWM");
  std::vector<Mem> samples;
  std::atomic<bool> stop{false};
  std::thread sampler([&] {
    while (!stop.load()) {
      samples.push_back(ReadMem(c.pid()));
      std::this_thread::sleep_for(std::chrono::milliseconds(sample_ms));
    }
  });
  const double cpu0 = ProcCpuSeconds(c.pid());
  const auto t0 = Clock::now();
  Post(c, "eval-worker-up",
       WorkerPost(
           "eval-worker-up", "eval",
           R"([{"format": "pb", "url": ")" + model +
               R"(", "metrics": {"precision": [0.81, 0.74]}}, {"format": "pb", "url": "s3://)" +
               kBucket + "/" + deploy_key + R"(", "metrics": {"precision": [0.66, 0.71]}}])"));
  auto il5 = WaitIl(c, "Deploy", "Ready", std::chrono::seconds(1800));
  const auto t1 = Clock::now();
  const double cpu = ProcCpuSeconds(c.pid()) - cpu0;
  stop = true;
  sampler.join();
  if (!il5) throw std::runtime_error("no Deploy Ready; log:\n" + c.Log());
  const int64_t hwm = ProcStatusKb(c.pid(), "VmHWM");
  const Mem after = ReadMem(c.pid());
  Mem peak{-1, -1, -1};
  std::vector<double> rss_mb;
  for (const Mem& m : samples) {
    peak.rss = std::max(peak.rss, m.rss);
    peak.anon = std::max(peak.anon, m.anon);
    peak.file = std::max(peak.file, m.file);
    rss_mb.push_back(Mb(m.rss));
  }
  const double secs = Seconds(t1 - t0);

  s3::Client client(moto.creds);
  auto head = client.Head({kBucket, deploy_key});
  const std::string check = !head.ok()            ? "HEAD failed: " + head.message()
                            : head->size == bytes ? "object size ok"
                                                  : "object size " + std::to_string(head->size) +
                                                        " != " + std::to_string(bytes);
  std::printf(
      "  deploy upload of %lld MiB: %.1f s (%.0f MB/s incl. the hashing pass), LC CPU %.1f s; "
      "%zu memory samples every %d ms; %s\n",
      static_cast<long long>(mib), secs, static_cast<double>(bytes) / 1e6 / secs, cpu,
      samples.size(), sample_ms, check.c_str());
  std::printf(
      "  LC memory (MB)      VmRSS  RssAnon  RssFile\n"
      "    baseline        %7.2f  %7.2f  %7.2f   (VmHWM %.2f)\n"
      "    peak (samples)  %7.2f  %7.2f  %7.2f   (+%.2f VmRSS, +%.2f anon over the baseline)\n"
      "    after           %7.2f  %7.2f  %7.2f   (VmHWM %.2f)\n"
      "    VmRSS samples: p10 %.2f, p50 %.2f, p90 %.2f, max %.2f\n",
      Mb(base.rss), Mb(base.anon), Mb(base.file), Mb(base_hwm), Mb(peak.rss), Mb(peak.anon),
      Mb(peak.file), Mb(peak.rss - base.rss), Mb(peak.anon - base.anon), Mb(after.rss),
      Mb(after.anon), Mb(after.file), Mb(hwm), Percentile(rss_mb, 10), Percentile(rss_mb, 50),
      Percentile(rss_mb, 90), Percentile(rss_mb, 100));
  std::printf(
      "RESULT s3 \"deploy upload, %lld MiB\" baseline_VmRSS_MB=%.2f peak_VmRSS_MB=%.2f "
      "delta_MB=%.2f baseline_RssAnon_MB=%.2f peak_RssAnon_MB=%.2f VmHWM_MB=%.2f seconds=%.1f "
      "cpu_s=%.1f %s\n",
      static_cast<long long>(mib), Mb(base.rss), Mb(peak.rss), Mb(peak.rss - base.rss),
      Mb(base.anon), Mb(peak.anon), Mb(hwm), secs, cpu,
      head.ok() && head->size == bytes ? "size_ok" : "SIZE_MISMATCH");
  PrintTopMappings(args, c.pid(), &base_maps);
  std::fflush(stdout);
  c.Stop();
  // Frees moto's memory or temp files; a failure only leaves an object in the throwaway bucket.
  client.Delete({kBucket, deploy_key}).IgnoreError();
}

}  // namespace

int main(int argc, char** argv) try {
  Args args(argc, argv);
  std::printf("s3_bench: sedna-lc %s; %s\n", LcBinary(args).c_str(), LoadAvg().c_str());
  std::fflush(stdout);
  Moto moto;
  std::printf("  moto_server on %s (signature checking on)\n", moto.creds.endpoint.c_str());
  if (!args.Has("skip-index")) {
    std::printf("- (a) unchanged S3 index polls ...\n");
    std::fflush(stdout);
    IndexScenario(args, moto);
    std::printf("  done; %s\n", LoadAvg().c_str());
  }
  if (!args.Has("skip-upload")) {
    std::printf("- (b) deploy upload of a local model to S3 ...\n");
    std::fflush(stdout);
    UploadScenario(args, moto);
    std::printf("  done; %s\n", LoadAvg().c_str());
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "s3_bench: %s\n", e.what());
  return 1;
}
