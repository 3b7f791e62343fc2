// frame_bench: what decoding one GM frame costs, as the LC's loop does it (json::DecodeFrame, then
// json::DecodeDataset / DecodeIlJob of the content), for frames of N MB made of many small values
// ([D:I15.3]: "a 60 MB GM frame of small values peaks at 4.4 GB").
//
// Each case runs in a forked child: the frame is built in the parent, the child resets its peak
// RSS (/proc/self/clear_refs "5"), decodes, and reports the peak over its RSS before the decode
// (VmHWM - VmRSS), the wall time of each step and the outcome. In-process: no sedna-lc involved.
//
//   build/release/bench/frame_bench [--sizes-mb=1,4,16,60] [--shapes=numbers,strings,empties,
//       objects,annotations,big-string,frame-numbers] [--kind=dataset|iljob]
//
// --e2e: the same frames sent by the GM emulator to a real sedna-lc (--lc=<path>), ascending;
// after each, the LC's VmHWM (reset before the frame through /proc/<pid>/clear_refs), its VmRSS,
// and the longest GET /metrics answer while the frame was handled (the loop serves /metrics, so
// that is a lower bound of the loop's longest stall; polled every 2 ms).
//
// Shapes (the object's bulk, inside an unknown spec member unless said):
//   numbers      [0,0,0,...]              2 bytes a value
//   strings      ["","",...]              3 bytes a value
//   empties      [[],[],...]              3 bytes a value
//   objects      [{},{},...]              3 bytes a value
//   annotations  metadata.annotations {"a1":"","a2":"",...}, a known field
//   big-string   one string of N MB (the control: few values)
//   frame-numbers  a small Dataset, and [0,0,...] in an unknown member of the frame itself
#include <malloc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "adapters/json/base64.h"
#include "adapters/json/envelope.h"
#include "adapters/json/resource_codec.h"
#include "bench_util.h"

namespace {

using sedna::bench::Args;
using Clock = std::chrono::steady_clock;

long StatusKb(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const size_t n = std::strlen(field);
  while (std::getline(in, line)) {
    if (line.compare(0, n, field) == 0 && line.size() > n && line[n] == ':') {
      return std::stol(line.substr(n + 1));
    }
  }
  return -1;
}

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

// The object JSON of about `bytes` bytes with the bulk of `shape`.
std::string BuildObject(const std::string& kind, const std::string& shape, size_t bytes,
                        size_t* values) {
  const bool il = kind == "iljob";
  std::string head = il ? R"({"kind":"IncrementalLearningJob","apiVersion":"sedna.io/v1alpha1",)"
                        : R"({"kind":"Dataset","apiVersion":"sedna.io/v1alpha1",)";
  std::string spec =
      il ? R"("spec":{"dataset":{"name":"ds","trainProb":0.8},"initialModel":{"name":"m"},)"
           R"("trainSpec":{"template":{"spec":{"containers":[{"image":"t"}]}},"trigger":{}},)"
           R"("evalSpec":{"template":{"spec":{"containers":[{"image":"e"}]}}},)"
           R"("deploySpec":{"model":{"name":"m"},"template":{"spec":{"containers":[{"image":"d"}]}}})"
         : R"("spec":{"url":"/data/index.txt","format":"txt","nodeName":"edge-1")";
  std::string out;
  out.reserve(bytes + 512);
  *values = 0;
  out += head;
  if (shape == "annotations") {
    out += R"("metadata":{"name":"big","namespace":"default","annotations":{)";
    for (size_t i = 0; out.size() < bytes; ++i) {
      if (i > 0) out += ',';
      out += "\"a" + std::to_string(i) + "\":\"\"";
      ++*values;
    }
    out += "}},";
    out += spec + "}}";
    return out;
  }
  out += R"("metadata":{"name":"big","namespace":"default"},)";
  out += spec;
  if (shape == "big-string") {
    out += R"(,"x":")";
    out.append(bytes > out.size() ? bytes - out.size() : 0, 'a');
    out += "\"}}";
    *values = 1;
    return out;
  }
  const char* item = shape == "numbers"   ? "0"
                     : shape == "strings" ? "\"\""
                     : shape == "empties" ? "[]"
                                          : "{}";
  out += R"(,"x":[)";
  for (size_t i = 0; out.size() < bytes; ++i) {
    if (i > 0) out += ',';
    out += item;
    ++*values;
  }
  out += "]}}";
  return out;
}

std::string BuildFrame(const std::string& kind, const std::string& shape, size_t object_bytes,
                       size_t* values) {
  sedna::json::MessageHeader h{"default", kind == "iljob" ? "incrementallearningjob" : "dataset",
                               "big", "insert"};
  if (shape != "frame-numbers") {
    return sedna::json::EncodeFrame(h, BuildObject(kind, shape, object_bytes, values));
  }
  std::string frame = sedna::json::EncodeFrame(h, BuildObject(kind, "big-string", 100, values));
  std::string bulk = R"("x":[0)";
  while (bulk.size() < object_bytes * 4 / 3) bulk += ",0";
  bulk += "],";
  *values = (bulk.size() - 6) / 2;
  frame.insert(1, bulk);
  return frame;
}

struct Outcome {
  double frame_ms = 0, object_ms = 0;
  long rss_before_kb = 0, peak_kb = 0;
  char result[200] = {};
};

// In a child: decode as GmFrames::OnFrame does and report through `fd`.
void DecodeInChild(const std::string& kind, const std::string& frame, int fd) {
  Outcome o;
  {
    std::ofstream("/proc/self/clear_refs") << "5";  // VmHWM := VmRSS
  }
  o.rss_before_kb = StatusKb("VmRSS");
  const auto t0 = Clock::now();
  auto f = sedna::json::DecodeFrame(frame);
  const auto t1 = Clock::now();
  std::string result;
  if (!f.ok()) {
    result = "frame refused: " + f.message();
  } else {
    auto st = kind == "iljob" ? sedna::json::DecodeIlJob(f->content).status()
                              : sedna::json::DecodeDataset(f->content).status();
    result = st.ok() ? "decoded" : "object refused: " + st.message();
  }
  const auto t2 = Clock::now();
  o.peak_kb = StatusKb("VmHWM");
  o.frame_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
  o.object_ms = std::chrono::duration<double, std::milli>(t2 - t1).count();
  std::snprintf(o.result, sizeof o.result, "%s", result.c_str());
  (void)!::write(fd, &o, sizeof o);
}

}  // namespace

double MetricOr(const std::map<std::string, double>& m, const std::string& name) {
  auto it = m.find(name);
  return it == m.end() ? 0 : it->second;
}

// --e2e: every frame to one sedna-lc, with its memory and the loop's responsiveness.
int RunEndToEnd(const Args& args, const std::vector<std::string>& sizes,
                const std::vector<std::string>& shapes, const std::string& kind) {
  using sedna::bench::Cluster;
  Cluster::Options o;
  o.lc_binary = sedna::bench::LcBinary(args);
  o.log_level = "warn";
  o.tmp_root = sedna::bench::TmpRoot(args);
  Cluster c(o);
  const pid_t pid = c.pid();
  auto kb = [&](const char* field) { return sedna::bench::ProcStatusKb(pid, field); };
  std::printf("idle: VmRSS %.2f MB, VmHWM %.2f MB\n", kb("VmRSS") / 1024.0, kb("VmHWM") / 1024.0);
  std::printf("%-13s %8s %10s %10s %10s %11s  %s\n", "shape", "frame_MB", "handled_ms", "VmHWM_MB",
              "VmRSS_MB", "max_poll_ms", "outcome");
  for (const auto& shape : shapes) {
    for (const auto& mb : sizes) {
      size_t values = 0;
      const std::string frame =
          BuildFrame(kind, shape, static_cast<size_t>(std::stod(mb) * 1e6 * 3 / 4), &values);
      const auto before = c.Metrics();
      const double received = MetricOr(before, "sedna_lc_gm_frames_received_total");
      const double rejected = MetricOr(before, "sedna_lc_gm_frames_rejected_total") +
                              MetricOr(before, "sedna_lc_objects_rejected_total");
      const int conns = c.gm().server().connection_count();
      std::ofstream("/proc/" + std::to_string(pid) + "/clear_refs") << "5";
      const auto t0 = Clock::now();
      if (!c.gm().server().Send(frame)) {
        std::printf("%-13s %8.1f  send failed\n", shape.c_str(), frame.size() / 1e6);
        continue;
      }
      double max_poll_ms = 0;
      std::string outcome = "timeout";
      while (Clock::now() - t0 < std::chrono::seconds(120)) {
        const auto p0 = Clock::now();
        const auto m = c.Metrics();
        max_poll_ms = std::max(
            max_poll_ms, std::chrono::duration<double, std::milli>(Clock::now() - p0).count());
        if (MetricOr(m, "sedna_lc_gm_frames_received_total") > received) {
          const double rej = MetricOr(m, "sedna_lc_gm_frames_rejected_total") +
                             MetricOr(m, "sedna_lc_objects_rejected_total");
          outcome = rej > rejected ? "rejected" : "accepted";
          break;
        }
        if (c.gm().server().connection_count() > conns) {
          outcome = "connection failed, redialled";
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
      const double handled_ms =
          std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      std::printf("%-13s %8.1f %10.1f %10.2f %10.2f %11.1f  %s\n", shape.c_str(),
                  frame.size() / 1e6, handled_ms, kb("VmHWM") / 1024.0, kb("VmRSS") / 1024.0,
                  max_poll_ms, outcome.c_str());
      std::fflush(stdout);
      if (outcome != "accepted" && outcome != "rejected") {
        c.gm().server().WaitForConnection(std::chrono::seconds(30));
        std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the first frame
      }
    }
  }
  return 0;
}

int main(int argc, char** argv) {
  Args args(argc, argv);
  const auto sizes = Split(args.Get("sizes-mb", "1,4,16,60"));
  const auto shapes =
      Split(args.Get("shapes", "numbers,strings,empties,objects,annotations,big-string"));
  const std::string kind = args.Get("kind", "dataset");
  if (args.Has("e2e")) return RunEndToEnd(args, sizes, shapes, kind);
  std::printf("%-12s %8s %10s %9s %9s %11s %7s  %s\n", "shape", "frame_MB", "values", "frame_ms",
              "object_ms", "peak_MB", "x_frame", "result");
  for (const auto& shape : shapes) {
    for (const auto& mb : sizes) {
      const double frame_mb = std::stod(mb);
      // base64 takes 4 bytes per 3: an object of 3/4 of the frame size.
      const auto object_bytes = static_cast<size_t>(frame_mb * 1e6 * 3 / 4);
      size_t values = 0;
      std::string frame = BuildFrame(kind, shape, object_bytes, &values);
      ::malloc_trim(0);  // the child's heap starts with no free memory resident
      int fds[2];
      if (::pipe(fds) != 0) return 1;
      const pid_t pid = ::fork();
      if (pid == 0) {
        ::close(fds[0]);
        DecodeInChild(kind, frame, fds[1]);
        ::_exit(0);
      }
      ::close(fds[1]);
      Outcome o;
      const bool got = ::read(fds[0], &o, sizeof o) == static_cast<ssize_t>(sizeof o);
      ::close(fds[0]);
      int status = 0;
      ::waitpid(pid, &status, 0);
      if (!got) {
        std::printf("%-12s %8.1f %10zu  child died (status %d)\n", shape.c_str(),
                    frame.size() / 1e6, values, status);
        continue;
      }
      std::string result(o.result);
      if (result.size() > 90) result = result.substr(0, 87) + "...";
      const double peak_mb = (o.peak_kb - o.rss_before_kb) / 1024.0;
      std::printf("%-12s %8.1f %10zu %9.1f %9.1f %11.1f %7.1f  %s\n", shape.c_str(),
                  frame.size() / 1e6, values, o.frame_ms, o.object_ms, peak_mb,
                  peak_mb * 1.048576e6 / 1e6 / (frame.size() / 1e6), result.c_str());
      std::fflush(stdout);
    }
  }
  return 0;
}
