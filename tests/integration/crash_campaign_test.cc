// The randomised crash campaign (docs/durability.md, [D:I4]): the real sedna-lc binary runs one
// IL job and one LL job against the GM emulator, whose loop in the test thread plays the GM (the
// condition machine of core::gm, the job re-sent after every change and on every reconnect), the
// workers (model files of a size that varies per round, some of 8-32 MB, then a POST like
// lib/sedna) and the data source (batches of 5k-100k index lines, each appended with one write).
// Meanwhile the LC is killed with SIGKILL at seeded random moments, some aimed: right after an
// append (mid-ingest), right after a Train Ready (the state was just written), right after the
// job goes to (Eval, Waiting) (the eval file is being written), right after an eval report (the
// deploy copy runs), 0-150 ms after a restart (the re-issued work runs) and after pure random
// delays. It is restarted on the same database and rootfs each time; sometimes samples are
// appended while it is down.
//
// Invariants, checked as the campaign goes and again at the end:
//  1. the train files of the rounds, in order, are exactly the train samples by core::IsTrainSample
//     of all appended samples, each once, none missing except those the LC still holds as pending;
//     each eval file is exactly the eval windows of the last 5 train rounds (design-notes §D4),
//     each sample once, no train sample;
//  2. no round/version is dispatched twice: every job frame follows the round's sequence; a repeat
//     of the last frame after a reconnect is at-least-once delivery and only counted;
//  3. round and version numbers only grow (by one);
//  4. after every kill, before the restart, each deploy target is byte for byte the deployed model
//     or the one being deployed, never partial;
//  5. every job completes rounds after the restarts: the campaign reaches its target, including a
//     full round of each job after the last kill, within a deadline.
//
// Fast by default (CI, ~12 kills). Environment: SEDNA_CRASH_KILLS=60 for the long run,
// SEDNA_CRASH_SEED=<n> to replay a seed (printed at the start and in the summary; it fixes the
// kill plan, batch and model sizes and delays, while the exact moment a kill meets depends on
// timing too),
// SEDNA_CRASH_KEEP=1 to keep the work directory (database, rootfs, LC log) after a pass.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "core/split.h"
#include "gm_emulator.h"
#include "lc_process.h"
#include "objects.h"
#include "samples.h"

namespace sedna::testing {
namespace {

using core::Stage;
using core::gm::PodPhase;
namespace stdfs = std::filesystem;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr const char* kOldModel = "OLD-DEPLOYED-MODEL-BYTES-OF-THE-IL-JOB-BEFORE-THE-CAMPAIGN";
constexpr const char* kIlDeployUrl = "/models/deploy_model/saved_model.pb";

// ---------------------------------------------------------------- settings

struct Settings {
  uint64_t seed = 0;
  int kills = 12;
  int il_rounds = 4;
  int ll_versions = 3;
  std::chrono::seconds deadline{240};
};

Settings FromEnv() {
  Settings s;
  if (const char* k = std::getenv("SEDNA_CRASH_KILLS"); k && *k) s.kills = std::atoi(k);
  if (const char* v = std::getenv("SEDNA_CRASH_SEED"); v && *v) {
    s.seed = std::strtoull(v, nullptr, 10);
  } else {
    s.seed =
        std::random_device{}() ^ static_cast<uint64_t>(Clock::now().time_since_epoch().count());
    s.seed %= 1000000000ULL;
  }
  if (s.kills > 12) s.deadline = std::chrono::seconds(560);
  return s;
}

// ---------------------------------------------------------------- objects

// A stable uid per object name.
std::string Uid(const std::string& name) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "7b3c2f0e-2222-4c3a-9c1e-%012llx",
                static_cast<unsigned long long>(std::hash<std::string>{}(name)&0xffffffffffffULL));
  return buf;
}

// ---------------------------------------------------------------- samples and models

std::string IlLine(int64_t n) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "il_images/%09lld.jpg %lld,%lld,%lld,%lld,1",
                static_cast<long long>(n), static_cast<long long>(n % 97),
                static_cast<long long>(n % 89), static_cast<long long>(n % 83 + 100),
                static_cast<long long>(n % 79 + 100));
  return buf;
}

int64_t IlOrdinal(const std::string& line) {
  long long n = -1;
  if (std::sscanf(line.c_str(), "il_images/%lld.jpg", &n) != 1) return -1;
  return n;
}

int64_t LlOrdinal(const std::string& line) {
  char* end = nullptr;
  long long n = std::strtoll(line.c_str(), &end, 10);
  if (end == line.c_str() || *end != ',') return -1;
  return n;
}

// The model a worker writes for (tag, round): a header naming it, then a block unique to it
// repeated up to `size` bytes. A torn or mixed copy never equals any of these.
std::string ModelBytes(const std::string& tag, int64_t round, size_t size) {
  std::string head =
      tag + "-MODEL round=" + std::to_string(round) + " size=" + std::to_string(size) + "\n";
  std::string block;
  block.reserve(4096);
  std::mt19937_64 g(std::hash<std::string>{}(tag)*1000003u + static_cast<uint64_t>(round));
  while (block.size() < 4096) {
    uint64_t v = g();
    block.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  std::string s = head;
  s.reserve(size);
  while (s.size() < size) s.append(block, 0, std::min(block.size(), size - s.size()));
  s.resize(size);
  return s;
}

std::vector<std::string> SplitLines(const std::string& text, bool* terminated) {
  std::vector<std::string> lines;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) {
      lines.push_back(text.substr(pos));
      *terminated = false;
      return lines;
    }
    lines.push_back(text.substr(pos, nl - pos));
    pos = nl + 1;
  }
  *terminated = true;
  return lines;
}

// The first sample after `after` that the split sends to train (or to eval).
int64_t NextOrdinal(double p, int64_t after, bool train) {
  int64_t n = after + 1;
  while (core::IsTrainSample(p, n) != train) ++n;
  return n;
}

int64_t EvalCountUpTo(double p, int64_t n) { return n - core::TrainCountUpTo(p, n); }

// The number after `prefix` at the start of `url` ("/out/data/train/7/data.txt" -> 7), or -1.
int64_t RoundIn(const std::string& url, const std::string& prefix) {
  if (url.compare(0, prefix.size(), prefix) != 0) return -1;
  char* end = nullptr;
  long long n = std::strtoll(url.c_str() + prefix.size(), &end, 10);
  if (end == url.c_str() + prefix.size() || *end != '/') return -1;
  return n;
}

int64_t FileSize(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return -1;
  return st.st_size;
}

std::string SanitizeKey(const std::string& key) {
  std::string s;
  for (char c : key) {
    s += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.') ? c : '_';
  }
  return s;
}

// ---------------------------------------------------------------- SQLite (read-only)

using Rows = std::vector<std::vector<std::string>>;

Rows Query(const std::string& db, const std::string& sql) {
  sqlite3* h = nullptr;
  if (sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    std::string e = h ? sqlite3_errmsg(h) : "out of memory";
    sqlite3_close(h);
    throw std::runtime_error("open " + db + ": " + e);
  }
  sqlite3_busy_timeout(h, 5000);
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(h, sql.c_str(), -1, &st, nullptr) != SQLITE_OK) {
    std::string e = sqlite3_errmsg(h);
    sqlite3_close(h);
    throw std::runtime_error(sql + ": " + e);
  }
  Rows rows;
  while (sqlite3_step(st) == SQLITE_ROW) {
    std::vector<std::string> row;
    for (int i = 0; i < sqlite3_column_count(st); ++i) {
      const unsigned char* t = sqlite3_column_text(st, i);
      row.push_back(t ? reinterpret_cast<const char*>(t) : "");
    }
    rows.push_back(std::move(row));
  }
  sqlite3_finalize(st);
  sqlite3_close(h);
  return rows;
}

// ---------------------------------------------------------------- the campaign

enum class JobKind { kIl, kLl };
// One round of a job, in the order its frames reach the GM.
enum class Step { kTrainReady, kTrainCompleted, kEvalReady, kEvalCompleted, kDeploy };
const char* StepName(Step s) {
  switch (s) {
    case Step::kTrainReady:
      return "train-ready";
    case Step::kTrainCompleted:
      return "train-completed";
    case Step::kEvalReady:
      return "eval-ready";
    case Step::kEvalCompleted:
      return "eval-completed";
    case Step::kDeploy:
      return "deploy";
  }
  return "?";
}

enum class KillKind {
  kAfterAppend,
  kAfterTrainReady,
  kAfterEvalWaiting,
  kAfterEvalPost,
  kAfterRestart,
  kRandom
};
const char* KillKindName(KillKind k) {
  switch (k) {
    case KillKind::kAfterAppend:
      return "after-append";
    case KillKind::kAfterTrainReady:
      return "after-train-ready";
    case KillKind::kAfterEvalWaiting:
      return "after-eval-waiting";
    case KillKind::kAfterEvalPost:
      return "after-eval-post";
    case KillKind::kAfterRestart:
      return "after-restart";
    case KillKind::kRandom:
      return "random";
  }
  return "?";
}

struct JobTrack {
  JobKind kind = JobKind::kIl;
  std::string tag;          // "IL" / "LL"
  std::string name;         // job name
  std::string object_kind;  // upstream resourceKind
  std::string key;          // <ns>/<kind lower>/<name>
  std::string dataset;      // Dataset name
  std::string index_url;    // dataset index, host path
  std::string out;          // spec.outputDir
  double p = 0.8;
  int64_t threshold = 0;
  std::unique_ptr<GmJob> gm;

  // Samples.
  int64_t appended = 0;                      // index lines appended (samples 1..appended)
  int64_t lc_count = 0;                      // highest numberOfSamples the LC reported
  int64_t dispatched = 0;                    // train samples in the train files so far
  int64_t last_train = 0;                    // ordinal of the last of them
  std::map<int64_t, int64_t> train_last;     // round -> last train ordinal of its file
  std::map<int64_t, int64_t> eval_end;       // round -> last ordinal of its eval windows (E_k)
  std::map<int64_t, std::string> eval_file;  // round -> its Eval Ready's dataURL

  // The round sequence.
  Step expect = Step::kTrainReady;
  int64_t round = 1;
  int64_t completed = 0;          // rounds finished (deploy decision received)
  int64_t completed_at_kill = 0;  // `completed` at the last kill
  std::string last_content;       // the last job frame applied
  int last_epoch = -1;            // the connection it came on
  int duplicates = 0;
  int64_t deploys = 0, kept = 0;

  // Models. The deployable model of each round (IL: the trained model.pb; LL: the eval result).
  std::map<int64_t, size_t> model_size;
  int64_t deployed = 0;   // round whose model is at the deploy target; 0: the initial state
  int64_t deploying = 0;  // round being deployed (eval reported with a deploy decision); 0: none
  bool pending_worker = false;

  bool il() const { return kind == JobKind::kIl; }
  std::string Ext() const { return il() ? "txt" : "csv"; }
  std::string TrainFile(int64_t r) const {
    return out + "/data/train/" + std::to_string(r) + "/data." + Ext();
  }
  // IL: the eval file of train round r is numbered r + 1 in the 2021 layout (a G1 GM, evident
  // under auto once the LL job is seen) and r in the v0.7 one; LL: always r.
  std::string EvalFile(int64_t r, bool layout2021) const {
    return out + "/data/eval/" + std::to_string(il() && layout2021 ? r + 1 : r) + "/data." + Ext();
  }
  std::string ModelUrl(int64_t r) const {
    return il() ? out + "/train/" + std::to_string(r) + "/model.pb"
                : out + "/eval/" + std::to_string(r) + "/index.pkl";
  }
  std::string DeployUrl() const { return il() ? kIlDeployUrl : out + "/deploy/index.pkl"; }
  std::string Line(int64_t n) const { return il() ? IlLine(n) : CsvRow(n); }
  int64_t Ordinal(const std::string& l) const { return il() ? IlOrdinal(l) : LlOrdinal(l); }
  int64_t Pending() const { return core::TrainCountUpTo(p, appended) - dispatched; }
};

struct KillRecord {
  int n = 0;
  KillKind kind = KillKind::kRandom;
  double at_s = 0;
  std::string landed;
  int64_t il_round = 0, ll_round = 0;
};

struct WorkerTask {
  JobTrack* job = nullptr;
  Stage stage = Stage::kTrain;
  int64_t round = 0;
};

class CrashCampaign : public ::testing::Test {
 protected:
  void SetUp() override {
    cfg = FromEnv();
    rng.seed(cfg.seed);
    std::cout << "[campaign] seed " << cfg.seed << " (replay: SEDNA_CRASH_SEED=" << cfg.seed
              << "), kills " << cfg.kills << "\n";
    tmp = MakeTempDir("sedna-crash-");
    rootfs = tmp + "/rootfs";
    db = tmp + "/db/database.db";
    log_path = tmp + "/lc.log";
    stdfs::create_directories(rootfs + "/data/ll");
    stdfs::create_directories(rootfs + "/models/base_model");
    stdfs::create_directories(rootfs + "/models/deploy_model");
    WriteFile(rootfs + kIlDeployUrl, kOldModel);
    WriteFile(rootfs + "/data/barrier.txt", "barrier_images/1.jpg 1,1,2,2,1\n");

    il.kind = JobKind::kIl;
    il.tag = "IL";
    il.name = "crash-il";
    il.object_kind = "IncrementalLearningJob";
    il.key = "default/incrementallearningjob/crash-il";
    il.dataset = "crash-il-dataset";
    il.index_url = "/data/il_index.txt";
    il.out = "/output-il";
    il.p = 0.8;
    il.threshold = 30000;
    il.gm = std::make_unique<GmJob>(core::gm::JobKind::kIncremental, IlJobObject());
    WriteFile(rootfs + il.index_url, "");

    ll.kind = JobKind::kLl;
    ll.tag = "LL";
    ll.name = "crash-ll";
    ll.object_kind = "LifelongLearningJob";
    ll.key = "default/lifelonglearningjob/crash-ll";
    ll.dataset = "crash-ll-dataset";
    ll.index_url = "/data/ll/trainData.csv";
    ll.out = "/output-ll";
    ll.p = 0.7;
    ll.threshold = 25000;
    ll.gm = std::make_unique<GmJob>(core::gm::JobKind::kLifelong, LlJobObject());
    WriteFile(rootfs + ll.index_url, std::string(kCsvHeader) + "\n");

    // A kill plan: the aimed kinds and random delays in equal shares, in a seeded order.
    const KillKind kinds[] = {KillKind::kAfterAppend,      KillKind::kAfterTrainReady,
                              KillKind::kAfterEvalWaiting, KillKind::kAfterEvalPost,
                              KillKind::kAfterRestart,     KillKind::kRandom};
    for (int i = 0; i < cfg.kills; ++i) plan.push_back(kinds[i % 6]);
    std::shuffle(plan.begin(), plan.end(), rng);

    gm = std::make_unique<GmEmulator>();
    port = FreePort();
    status_port = FreePort();
    start = Clock::now();
    StartLc();
  }

  void TearDown() override {
    if (HasFailure() && lc) {
      std::cerr << "---- sedna-lc log (last 250 lines; full log in " << log_path << ", kept) ----\n"
                << Tail(ReadFile(log_path), 250);
    }
    lc.reset();
    gm.reset();
    if (!HasFailure() && !std::getenv("SEDNA_CRASH_KEEP")) stdfs::remove_all(tmp);
  }

  static std::string Tail(const std::string& s, int lines) {
    size_t pos = s.size();
    for (int i = 0; i < lines && pos > 0; ++i) {
      pos = s.rfind('\n', pos - 1);
      if (pos == std::string::npos) return s;
    }
    return s.substr(pos + 1);
  }

  Json IlJobObject() const {
    return sedna::testing::IlJobObject({.name = il.name,
                                        .uid = "7b3c2f0e-1111-4c3a-9c1e-0000000000c1",
                                        .dataset = il.dataset,
                                        .train_prob = il.p,
                                        .threshold = il.threshold,
                                        .output_dir = il.out});
  }

  Json LlJobObject() const {
    return sedna::testing::LlJobObject({.name = ll.name,
                                        .uid = "7b3c2f0e-1111-4c3a-9c1e-0000000000c2",
                                        .dataset = ll.dataset,
                                        .train_prob = ll.p,
                                        .threshold = ll.threshold,
                                        .output_dir = ll.out,
                                        .image = kExampleImage,
                                        .pull_policy = ""});
  }

  double Elapsed() const { return std::chrono::duration<double>(Clock::now() - start).count(); }

  int64_t Uniform(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  }
  bool Chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; }

  // ------------------------------------------------------------ the LC process

  void StartLc() {
    lc = std::make_unique<LcProcess>(
        std::string(SEDNA_BINARY_DIR) + "/sedna-lc",
        std::map<std::string, std::string>{{"GM_ADDRESS", gm->address()},
                                           {"NODENAME", "edge-node"},
                                           {"BIND_PORT", std::to_string(port)},
                                           {"ROOTFS_MOUNT_DIR", rootfs}},
        std::vector<std::string>{"--db", db, "--status-port", std::to_string(status_port),
                                 "--log-level", "debug", "--deploy-wait", "0.2"},
        log_path);
    if (!gm->server().WaitForConnection(std::chrono::seconds(20))) {
      throw std::runtime_error("the LC did not connect to the GM after its start");
    }
  }

  // The GM's resync after a (re)connection: every object for this node again (§P1.6).
  void Resync() {
    Send(DatasetObject(il.dataset, il.index_url, "txt", Uid(il.dataset)));
    Send(DatasetObject(ll.dataset, ll.index_url, "CSV", Uid(ll.dataset)));
    Sync(il);
    Sync(ll);
  }

  // Sends one object; a frame to an LC that is down is lost, and the resync after its restart
  // sends the objects again, as the GM's resync would.
  void Send(const Json& obj) {
    try {
      gm->Send("insert", obj);
    } catch (const std::exception&) {
      ++lost_sends;
    }
  }

  // Sends the job (and the Model §P4.3 says goes with it) when the GM would.
  void Sync(JobTrack& j) {
    auto d = j.gm->Downstream();
    if (!d.send_job) return;
    Send(j.gm->Object());
    if (d.model == core::gm::Downstream::ModelToSend::kInitial) {
      Send(ModelObject("initial-model", "/models/base_model", "ckpt", Uid("initial-model")));
    } else if (d.model == core::gm::Downstream::ModelToSend::kDeploy) {
      Send(ModelObject("deploy-model", kIlDeployUrl, "pb", Uid("deploy-model")));
    }
  }

  void KillAndRestart(KillKind kind) {
    const double at = Elapsed();
    lc->Kill();
    ++kills;
    armed.reset();
    KillRecord rec;
    rec.n = kills;
    rec.kind = kind;
    rec.at_s = at;
    rec.il_round = il.round;
    rec.ll_round = ll.round;
    AppendFile(log_path, "---- SIGKILL #" + std::to_string(kills) + " (" + KillKindName(kind) +
                             ") at " + std::to_string(at) + " s; restarting ----\n");
    // Invariant 4, before anything can repair it.
    CheckDeployTarget(il, "after kill #" + std::to_string(kills));
    CheckDeployTarget(ll, "after kill #" + std::to_string(kills));
    rec.landed = Landed();
    for (const auto& tag : Split(rec.landed)) ++landed_counts[tag];
    // Sometimes samples arrive while the LC is down: they are counted once after the restart.
    for (JobTrack* j : {&il, &ll}) {
      if (WantsData(*j) && Chance(0.2)) {
        Append(*j, Uniform(5000, 30000));
        ++appends_while_down;
        rec.landed += " +appended-while-down:" + j->tag;
      }
    }
    kill_log.push_back(rec);
    il.completed_at_kill = il.completed;
    ll.completed_at_kill = ll.completed;
    progress_since_restart = false;
    StartLc();
    restarted_at = Clock::now();
    Resync();
  }

  static std::vector<std::string> Split(const std::string& s) {
    std::vector<std::string> v;
    std::istringstream in(s);
    for (std::string w; in >> w;) v.push_back(w);
    return v;
  }

  // Where the kill landed, from the files and the database the dead LC left behind.
  std::string Landed() {
    std::set<std::string> tags;
    try {
      for (const auto& row : Query(db,
                                   "SELECT scope, key, value FROM lc_state WHERE scope IN "
                                   "('il', 'll')")) {
        JobTrack& j = row[0] == "il" ? il : ll;
        if (row[1] != j.key) continue;
        Json rec = Json::parse(row[2]);
        const Json& st = rec.at("state");
        const int work = st.value("work", 0);
        static const char* const kWork[] = {"", "write-train", "write-eval", "deploy"};
        if (work > 0 && work < 4) tags.insert(j.tag + ":state-written:" + kWork[work]);
        const std::string spool = tmp + "/db/spool/" + SanitizeKey(j.key);
        const int64_t train_end = st.at("train_pending")[1].get<int64_t>();
        const int64_t eval_end = st.at("eval_open")[1].get<int64_t>();
        if (FileSize(spool + ".train") > train_end || FileSize(spool + ".eval") > eval_end) {
          tags.insert(j.tag + ":mid-ingest(uncommitted-spool-bytes)");
        } else if (rec.at("cursor").value("offset", int64_t{0}) < FileSize(rootfs + j.index_url)) {
          tags.insert(j.tag + ":ingest-backlog");
        }
      }
      auto ob = Query(db, "SELECT count(*) FROM lc_outbox");
      if (!ob.empty() && ob[0][0] != "0") tags.insert("outbox-not-empty");
    } catch (const std::exception& e) {
      tags.insert("db-unreadable");
      ADD_FAILURE() << "reading the database after kill #" << kills << ": " << e.what();
    }
    // Temp files of an atomic write that the kill interrupted.
    for (const char* dir : {"/models", "/output-il", "/output-ll"}) {
      std::error_code ec;
      for (auto it = stdfs::recursive_directory_iterator(rootfs + dir, ec);
           !ec && it != stdfs::recursive_directory_iterator(); it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (name.empty() || name[0] != '.' || name.find(".tmp-") == std::string::npos) continue;
        if (!temp_files.insert(it->path().string()).second) continue;
        if (name.find("saved_model.pb") != std::string::npos ||
            name.find("index.pkl") != std::string::npos) {
          tags.insert("mid-deploy-copy");
        } else {
          tags.insert("mid-sample-file-write");
        }
      }
    }
    std::string s;
    for (const auto& t : tags) s += (s.empty() ? "" : " ") + t;
    return s.empty() ? "idle" : s;
  }

  // Invariant 4: the deploy target is byte for byte the deployed model or the one being deployed.
  void CheckDeployTarget(const JobTrack& j, const std::string& when) {
    const std::string path = rootfs + j.DeployUrl();
    const bool exists = stdfs::exists(path);
    const std::string got = exists ? ReadFile(path) : "";
    auto is = [&](int64_t r) {
      if (r == 0) return j.il() ? exists && got == kOldModel : !exists;
      auto it = j.model_size.find(r);
      return exists && it != j.model_size.end() && got.size() == it->second &&
             got == ModelBytes(j.tag, r, it->second);
    };
    if (is(j.deployed) || (j.deploying != 0 && is(j.deploying))) return;
    ADD_FAILURE() << j.tag << " deploy target " << j.DeployUrl() << " " << when << ": "
                  << (exists ? std::to_string(got.size()) + " bytes starting \"" +
                                   got.substr(0, std::min<size_t>(40, got.find('\n'))) + "\""
                             : std::string("missing"))
                  << "; expected the model of round " << j.deployed
                  << (j.deploying ? " or of round " + std::to_string(j.deploying) : "")
                  << " (a torn, mixed or wrong copy)";
  }

  // ------------------------------------------------------------ upstream frames

  std::optional<UpstreamFrame> NextAny(milliseconds timeout) {
    auto deadline = Clock::now() + timeout;
    for (;;) {
      auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
      if (left.count() < 0) left = milliseconds(0);
      auto text = gm->server().WaitForFrame(left);
      if (!text) return std::nullopt;
      auto parsed = Json::parse(*text, nullptr, false);
      if (parsed.is_object() && !parsed.contains("header")) {
        // §P1.2: the first frame of a connection. Frames after it come from the new connection.
        ++epoch;
        continue;
      }
      auto f = wire::DecodeFrame(*text);
      if (!f.ok()) {
        ADD_FAILURE() << "bad upstream frame: " << f.message();
        continue;
      }
      return UpstreamFrame{f->header, f->content, Json::parse(f->content), *text};
    }
  }

  void Handle(const UpstreamFrame& f) {
    const std::string& kind = f.header.resource_kind;
    if (kind == "Dataset") return OnDatasetCount(f);
    if (kind == il.object_kind && f.header.resource_name == il.name) return OnJobFrame(il, f);
    if (kind == ll.object_kind && f.header.resource_name == ll.name) return OnJobFrame(ll, f);
    ADD_FAILURE() << "unexpected upstream frame " << kind << " " << f.header.resource_name << ": "
                  << f.content;
  }

  void OnDatasetCount(const UpstreamFrame& f) {
    const std::string& name = f.header.resource_name;
    const int64_t n = f.body.value("numberOfSamples", int64_t{-1});
    if (name.rfind("barrier-", 0) == 0) {
      barriers_answered.insert(name);
      return;
    }
    JobTrack* j = name == il.dataset ? &il : name == ll.dataset ? &ll : nullptr;
    if (!j) {
      ADD_FAILURE() << "count for unknown Dataset " << name;
      return;
    }
    EXPECT_LE(n, j->appended) << "Dataset " << name << ": samples counted more than once";
    if (n < j->lc_count) {
      ADD_FAILURE() << "Dataset " << name << ": numberOfSamples went down from " << j->lc_count
                    << " to " << n;
    } else if (n == j->lc_count && n != 0) {
      ++count_repeats;  // a repeat after a reconnect (at-least-once)
    }
    j->lc_count = std::max(j->lc_count, n);
  }

  // Invariants 2 and 3: each job frame is the next one of its round's sequence, or a repeat of the
  // last applied frame arriving on a later connection (at-least-once delivery across a kill).
  void OnJobFrame(JobTrack& j, const UpstreamFrame& f) {
    const std::string& content = f.content;
    if (content == j.last_content) {
      if (j.last_epoch < epoch) {
        ++j.duplicates;
        std::cout << "[campaign] " << j.tag
                  << ": repeat of the last frame after a reconnect: " << content << "\n";
        return;
      }
      ADD_FAILURE() << j.tag << ": the same frame twice on one connection: " << content;
      return;
    }
    const Json& b = f.body;
    auto lower = [](std::string s) {
      for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      return s;
    };
    const std::string phase = lower(b.value("phase", "")), status = lower(b.value("status", ""));
    auto url_of = [&](const char* part, size_t i) -> std::string {
      if (!b.contains(part) || !b[part].is_object()) return "";
      const Json& m = b[part].value("models", Json());
      if (!m.is_array() || m.size() <= i) return "";
      return m[i].value("url", "");
    };
    auto data_url = [&]() -> std::string {
      if (!b.contains("input") || !b["input"].is_object()) return "";
      return b["input"].value("dataURL", "");
    };
    Step step;
    int64_t r = -1;
    if (phase == "train" && status == "ready") {
      step = Step::kTrainReady;
      r = RoundIn(data_url(), j.out + "/data/train/");
    } else if (phase == "train" && status == "completed") {
      step = Step::kTrainCompleted;
      r = RoundIn(url_of("output", 0), j.out + "/train/");
    } else if (phase == "eval" && status == "ready") {
      step = Step::kEvalReady;
      // IL: the round of the trained model it evaluates (the eval file's number depends on the
      // layout, EvalFile).
      r = j.il() ? RoundIn(url_of("input", 0), j.out + "/train/")
                 : RoundIn(data_url(), j.out + "/data/eval/");
    } else if (phase == "eval" && status == "completed") {
      step = Step::kEvalCompleted;
      r = RoundIn(url_of("output", 0), j.out + (j.il() ? "/train/" : "/eval/"));
    } else if (phase == "deploy" && status == "ready") {
      step = Step::kDeploy;
      r = RoundIn(url_of("input", 0), j.out + (j.il() ? "/train/" : "/eval/"));
    } else if (j.il() && phase == "deploy" && status == "completed") {
      step = Step::kDeploy;
      r = j.round;
    } else {
      ADD_FAILURE() << j.tag << ": unexpected job frame: " << content;
      return;
    }
    const int64_t got = r * 5 + static_cast<int>(step);
    const int64_t want = j.round * 5 + static_cast<int>(j.expect);
    if (got != want) {
      ADD_FAILURE() << j.tag << ": " << StepName(step) << " of round " << r << " while expecting "
                    << StepName(j.expect) << " of round " << j.round
                    << (got < want ? " (dispatched twice: not an immediate repeat after a "
                                     "reconnect)"
                                   : " (out of order or a round skipped)")
                    << ": " << content;
      return;
    }
    j.last_content = content;
    j.last_epoch = epoch;
    progress_since_restart = true;
    if (step == Step::kTrainReady && armed && *armed == KillKind::kAfterTrainReady) {
      KillAndRestart(*armed);  // the state that produced it was just committed
    }
    switch (step) {
      case Step::kTrainReady:
        OnTrainReady(j, b, content);
        break;
      case Step::kTrainCompleted:
        OnTrainCompleted(j, content);
        break;
      case Step::kEvalReady:
        OnEvalReady(j, b, content);
        break;
      case Step::kEvalCompleted:
        OnEvalCompleted(j, content);
        break;
      case Step::kDeploy:
        OnDeploy(j, content, status == "ready");
        break;
    }
  }

  void Report(JobTrack& j, const std::string& content) {
    try {
      j.gm->Report(content);
    } catch (const std::exception& e) {
      ADD_FAILURE() << j.tag << ": " << e.what() << ": " << content;
    }
  }

  // The GM's part for each frame (§P4.2), re-sending the job after every change (§P4.3).
  void OnTrainReady(JobTrack& j, const Json& b, const std::string& content) {
    const int64_t r = j.round;
    CheckTrainFile(j, r);
    if (j.il()) {
      const std::string base = InputModelUrl(b, 0);
      EXPECT_EQ(base, r == 1 ? std::string("/models/base_model")
                             : j.out + "/train/" + std::to_string(r - 1))
          << "IL round " << r << " base model";
    }
    Report(j, content);
    if (!j.il()) Sync(j);
    j.gm->SetPod(Stage::kTrain, PodPhase::kRunning);
    Sync(j);
    tasks.push_back({&j, Stage::kTrain, r});
    j.expect = Step::kTrainCompleted;
  }

  static std::string InputModelUrl(const Json& b, size_t i) {
    if (!b.contains("input") || !b["input"].is_object()) return "";
    const Json& m = b["input"].value("models", Json());
    if (!m.is_array() || m.size() <= i) return "";
    return m[i].value("url", "");
  }

  void OnTrainCompleted(JobTrack& j, const std::string& content) {
    Report(j, content);
    if (!j.il()) Sync(j);
    j.gm->SetPod(Stage::kTrain, PodPhase::kSucceeded);
    EXPECT_EQ(j.gm->LastCondition(), "Eval/Waiting") << j.tag;
    Sync(j);
    j.expect = Step::kEvalReady;
    if (armed && *armed == KillKind::kAfterEvalWaiting) {
      std::this_thread::sleep_for(milliseconds(Uniform(0, 5)));  // randomized kill delay
      KillAndRestart(*armed);
    }
  }

  void OnEvalReady(JobTrack& j, const Json& b, const std::string& content) {
    const int64_t r = j.round;
    const std::string data =
        b.contains("input") && b["input"].is_object() ? b["input"].value("dataURL", "") : "";
    EXPECT_TRUE(data == j.EvalFile(r, false) || (j.il() && data == j.EvalFile(r, true)))
        << j.tag << " eval of round " << r << ": dataURL " << data;
    CheckEvalFile(j, r, data);
    j.eval_file[r] = data;
    if (j.il()) {
      EXPECT_EQ(InputModelUrl(b, 0), j.ModelUrl(r)) << "IL eval of round " << r;
      EXPECT_EQ(InputModelUrl(b, 1), kIlDeployUrl) << "IL eval of round " << r;
    } else {
      EXPECT_EQ(InputModelUrl(b, 0), j.out + "/train/" + std::to_string(r) + "/index.pkl");
    }
    Report(j, content);
    if (!j.il()) Sync(j);
    j.gm->SetPod(Stage::kEval, PodPhase::kRunning);
    Sync(j);
    tasks.push_back({&j, Stage::kEval, r});
    j.expect = Step::kEvalCompleted;
  }

  void OnEvalCompleted(JobTrack& j, const std::string& content) {
    Report(j, content);
    if (!j.il()) Sync(j);
    j.gm->SetPod(Stage::kEval, PodPhase::kSucceeded);
    Sync(j);
    j.expect = Step::kDeploy;
  }

  void OnDeploy(JobTrack& j, const std::string& content, bool ready) {
    const int64_t r = j.round;
    if (ready) {
      EXPECT_EQ(j.deploying, r) << j.tag << ": Deploy Ready for round " << r
                                << " that the eval did not decide to deploy";
      j.deployed = r;
      j.deploying = 0;
      ++j.deploys;
      CheckDeployTarget(j, "at Deploy Ready of round " + std::to_string(r));
    } else {
      EXPECT_EQ(j.deploying, 0) << j.tag << ": round " << r << " kept the model but should deploy";
      j.deploying = 0;
      ++j.kept;
    }
    Report(j, content);
    if (!j.il()) Sync(j);
    if (ready) j.gm->SetPod(Stage::kDeploy, PodPhase::kRunning);
    EXPECT_EQ(j.gm->LastCondition(), "Train/Waiting") << j.tag;
    Sync(j);
    ++j.completed;
    ++j.round;
    j.expect = Step::kTrainReady;
  }

  // Invariant 1 (train side): the file of round r holds exactly the next train samples, in order.
  void CheckTrainFile(JobTrack& j, int64_t r) {
    bool terminated = false;
    auto lines = SplitLines(ReadFile(rootfs + j.TrainFile(r)), &terminated);
    EXPECT_TRUE(terminated) << j.TrainFile(r) << ": last line unterminated (torn file?)";
    if (!j.il()) {
      if (lines.empty() || lines[0] != kCsvHeader) {
        ADD_FAILURE() << j.TrainFile(r) << ": no csv header";
      } else {
        lines.erase(lines.begin());
      }
    }
    EXPECT_GT(static_cast<int64_t>(lines.size()), j.threshold)
        << j.TrainFile(r) << ": fewer samples than the trigger threshold";
    int64_t prev = j.last_train;
    for (const auto& line : lines) {
      const int64_t n = j.Ordinal(line);
      const int64_t want = NextOrdinal(j.p, prev, true);
      if (n != want || line != j.Line(n)) {
        ADD_FAILURE() << j.TrainFile(r) << ": \"" << line << "\" where train sample " << want
                      << " belongs (after " << prev << "; a sample lost, repeated or misplaced)";
        break;
      }
      prev = n;
    }
    EXPECT_LE(prev, j.appended) << j.TrainFile(r);
    j.train_last[r] = prev;
    j.dispatched += static_cast<int64_t>(lines.size());
    j.last_train = prev;
  }

  // Invariant 1 (eval side): the eval file of round r is the eval samples of the windows of rounds
  // r-4..r, each once: one contiguous run of eval samples from the end of round r-5's window.
  void CheckEvalFile(JobTrack& j, int64_t r, const std::string& file) {
    bool terminated = false;
    auto lines = SplitLines(ReadFile(rootfs + file), &terminated);
    EXPECT_TRUE(terminated || lines.empty()) << file << ": last line unterminated";
    if (!j.il()) {
      if (lines.empty() || lines[0] != kCsvHeader) {
        ADD_FAILURE() << file << ": no csv header";
      } else {
        lines.erase(lines.begin());
      }
    }
    int64_t from = 0;
    if (r - 5 >= 1) {
      auto it = j.eval_end.find(r - 5);
      if (it == j.eval_end.end()) {
        ADD_FAILURE() << j.tag << ": round " << r - 5 << " has no eval";
      } else {
        from = it->second;
      }
    }
    int64_t prev = from;
    for (const auto& line : lines) {
      const int64_t n = j.Ordinal(line);
      const int64_t want = NextOrdinal(j.p, prev, false);
      if (n != want || line != j.Line(n)) {
        ADD_FAILURE() << file << ": \"" << line << "\" where eval sample " << want
                      << " belongs (after " << prev
                      << "; windows of the last 5 rounds, each eval sample once)";
        break;
      }
      prev = n;
    }
    const int64_t before = r > 1 && j.eval_end.count(r - 1) ? j.eval_end[r - 1] : 0;
    EXPECT_GE(prev, before) << file << ": ends before the previous round's eval";
    EXPECT_LE(prev, j.appended) << file;
    // Every eval sample before the last train sample of round r was split off before its trigger.
    EXPECT_GT(NextOrdinal(j.p, prev, false), j.train_last[r])
        << file << ": misses eval samples that arrived before round " << r
        << "'s train samples (ends at " << prev << ")";
    j.eval_end[r] = std::max(prev, before);
  }

  // ------------------------------------------------------------ workers and data

  void Append(JobTrack& j, int64_t lines) {
    std::string s;
    s.reserve(static_cast<size_t>(lines) * 48);
    for (int64_t n = j.appended + 1; n <= j.appended + lines; ++n) s += j.Line(n) + "\n";
    AppendFile(rootfs + j.index_url, s);
    j.appended += lines;
    ++appends;
    if (armed && *armed == KillKind::kAfterAppend) {
      std::this_thread::sleep_for(milliseconds(Uniform(0, 60)));  // randomized kill delay
      KillAndRestart(*armed);
    }
  }

  bool WantsData(const JobTrack& j) const {
    return kills < cfg.kills || j.completed < Target(j) || j.completed <= j.completed_at_kill;
  }
  int64_t Target(const JobTrack& j) const { return j.il() ? cfg.il_rounds : cfg.ll_versions; }

  // Appends what the next trigger needs once the LC has counted everything appended so far.
  void MaybeAppend(JobTrack& j) {
    if (!WantsData(j) || j.expect != Step::kTrainReady || j.lc_count < j.appended) return;
    if (j.Pending() > j.threshold) return;  // the trigger must fire: wait for the Ready
    Append(j, Uniform(20000, 100000));  // up to ~4.6 MB: sometimes more than one 4 MB read slice
  }

  std::string WorkerBody(const JobTrack& j, const std::string& worker, const std::string& kind,
                         const std::string& results) {
    return R"({"name": ")" + worker + R"(", "namespace": "default", "ownerName": ")" + j.name +
           R"(", "ownerKind": ")" + (j.il() ? "incrementallearningjob" : "lifelonglearningjob") +
           R"(", "kind": ")" + kind + R"(", "status": "completed", "results": )" + results + "}";
  }

  void Post(const std::string& worker, const std::string& body) {
    for (int attempt = 1;; ++attempt) {
      HttpResult res;
      try {
        res = HttpRequest(port, "POST", "/sedna/workers/" + worker + "/info", body);
      } catch (const std::exception& e) {
        res.raw = e.what();
      }
      if (res.status == 200) {
        EXPECT_EQ(res.body, kOk);
        return;
      }
      if (attempt == 3) {
        ADD_FAILURE() << "worker " << worker << ": POST failed 3 times: " << res.raw;
        return;
      }
    }
  }

  // Large when the kill after an eval report is armed or next, so that it lands mid-copy.
  size_t ModelSize() {
    const bool aimed = (armed && *armed == KillKind::kAfterEvalPost) ||
                       (!armed && next_plan < static_cast<int>(plan.size()) &&
                        plan[next_plan] == KillKind::kAfterEvalPost);
    const bool big = aimed || Chance(0.25);
    return big ? static_cast<size_t>(Uniform(8 << 20, 32 << 20))
               : static_cast<size_t>(Uniform(512, 256 << 10));
  }

  void RunWorker(const WorkerTask& t) {
    JobTrack& j = *t.job;
    const std::string r = std::to_string(t.round);
    if (Chance(0.35) && WantsData(j)) Append(j, Uniform(5000, 40000));  // samples mid-round
    if (t.stage == Stage::kTrain) {
      const std::string dir = rootfs + j.out + "/train/" + r;
      stdfs::create_directories(dir);
      std::string results;
      if (j.il()) {
        const size_t size = ModelSize();
        j.model_size[t.round] = size;
        WriteFile(dir + "/model.pb", ModelBytes(j.tag, t.round, size));
        results = R"([{"format": "pb", "url": ")" + j.ModelUrl(t.round) +
                  R"(", "metrics": {"loss": 0.)" + r + R"(}}, {"format": "ckpt", "url": ")" +
                  j.out + "/train/" + r + R"(", "metrics": {"loss": 0.)" + r + "}}]";
      } else {
        WriteFile(dir + "/index.pkl", "LL-TRAIN-INDEX-V" + r);
        results = R"([{"format": "pkl", "url": ")" + j.out + "/train/" + r +
                  R"(/index.pkl", "metrics": {"summer_2": {"mlogloss": 0.)" + r + "}}}]";
      }
      Post("train-worker-" + j.tag + r,
           WorkerBody(j, "train-worker-" + j.tag + r, "train", results));
      return;
    }
    std::string results;
    const bool aimed = armed && *armed == KillKind::kAfterEvalPost;
    if (j.il()) {
      const bool deploy = aimed || Chance(0.75);
      if (deploy) j.deploying = t.round;
      results = R"([{"format": "pb", "url": ")" + j.ModelUrl(t.round) +
                R"(", "metrics": {"precision": [)" + (deploy ? "0.9" : "0.5") +
                R"(, 0.7]}}, {"format": "pb", "url": ")" + kIlDeployUrl +
                R"(", "metrics": {"precision": [)" + (deploy ? "0.5" : "0.9") + ", 0.7]}}]";
    } else {
      const std::string dir = rootfs + j.out + "/eval/" + r;
      stdfs::create_directories(dir);
      const size_t size = ModelSize();
      j.model_size[t.round] = size;
      WriteFile(dir + "/index.pkl", ModelBytes(j.tag, t.round, size));
      j.deploying = t.round;
      results = R"([{"format": "pkl", "url": ")" + j.ModelUrl(t.round) +
                R"(", "metrics": {"precision_score": 0.)" + r + "}}]";
    }
    Post("eval-worker-" + j.tag + r, WorkerBody(j, "eval-worker-" + j.tag + r, "eval", results));
    if (aimed) {
      std::this_thread::sleep_for(milliseconds(Uniform(0, 25)));  // randomized kill delay
      KillAndRestart(KillKind::kAfterEvalPost);
    }
  }

  // ------------------------------------------------------------ the killer

  static bool Timed(KillKind k) { return k == KillKind::kRandom || k == KillKind::kAfterRestart; }

  // The next planned kill is armed once the LC made progress since its last restart (a new job
  // frame), so that every life of the LC moves the campaign on; an after-restart kill is armed at
  // once and lands 0-150 ms after the restart, while the restarted LC resumes its work.
  void MaybeArm() {
    const int n = static_cast<int>(plan.size());
    if (armed || kills >= cfg.kills || next_plan >= n) return;
    if (plan[next_plan] == KillKind::kAfterRestart) {
      if (kills > 0 && !progress_since_restart) {
        armed = plan[next_plan++];
        armed_at = Clock::now();
        kill_at = restarted_at + milliseconds(Uniform(0, 150));
        return;
      }
      if (next_plan + 1 < n) {
        std::swap(plan[next_plan], plan[next_plan + 1]);  // keep it for the next restart
      } else {
        plan[next_plan] = KillKind::kRandom;
      }
    }
    if (!progress_since_restart) return;
    armed = plan[next_plan++];
    armed_at = Clock::now();
    if (*armed == KillKind::kRandom) kill_at = Clock::now() + milliseconds(Uniform(20, 1500));
  }

  void MaybeKill() {
    if (!armed) return;
    if (!Timed(*armed) && Clock::now() - armed_at > std::chrono::seconds(20)) {
      ++aimed_fallbacks;  // its moment did not come: fall back to a random delay
      armed = KillKind::kRandom;
      kill_at = Clock::now() + milliseconds(Uniform(20, 1500));
    }
    if (Timed(*armed) && Clock::now() >= kill_at) KillAndRestart(*armed);
  }

  // ------------------------------------------------------------ the loop

  bool Idle(const JobTrack& j) const {
    return j.expect == Step::kTrainReady && j.Pending() <= j.threshold &&
           j.gm->LastCondition() == "Train/Waiting";
  }

  bool Done() const {
    if (kills < cfg.kills) return false;
    for (const JobTrack* j : {&il, &ll}) {
      if (j->completed < Target(*j) || j->completed <= j->completed_at_kill) return false;
      if (!Idle(*j) || j->lc_count < j->appended) return false;
      for (const auto& t : tasks) {
        if (t.job == j) return false;
      }
    }
    return true;
  }

  std::string Progress() const {
    std::ostringstream o;
    for (const JobTrack* j : {&il, &ll}) {
      o << j->tag << " round " << j->round << " expecting " << StepName(j->expect) << " (GM "
        << j->gm->LastCondition() << ", appended " << j->appended << ", counted " << j->lc_count
        << ", pending " << j->Pending() << "); ";
    }
    o << "kills " << kills << "/" << cfg.kills;
    return o.str();
  }

  void RunCampaign() {
    Resync();
    auto last_frame = Clock::now();
    while (!Done()) {
      if (Clock::now() - start > cfg.deadline) {
        FAIL() << "deadline of " << cfg.deadline.count() << " s passed: " << Progress();
      }
      if (Clock::now() - last_frame > std::chrono::seconds(60)) {
        FAIL() << "no upstream frame for 60 s (a job stalled): " << Progress();
      }
      MaybeArm();
      MaybeKill();
      if (!tasks.empty()) {
        WorkerTask t = tasks.front();
        tasks.pop_front();
        RunWorker(t);
        continue;
      }
      MaybeAppend(il);
      MaybeAppend(ll);
      milliseconds wait(500);
      if (armed && Timed(*armed)) {
        wait = std::max(
            milliseconds(0),
            std::min(wait, std::chrono::duration_cast<milliseconds>(kill_at - Clock::now())));
      }
      if (auto f = NextAny(wait)) {
        last_frame = Clock::now();
        Handle(*f);
      }
    }
  }

  // A round trip through the websocket: when the barrier Dataset's count arrives, every frame sent
  // before it was handled by the LC.
  void Barrier() {
    const std::string name = "barrier-" + std::to_string(++barriers);
    Send(DatasetObject(name, "/data/barrier.txt", "txt", Uid(name)));
    const auto deadline = Clock::now() + std::chrono::seconds(30);
    while (!barriers_answered.count(name)) {
      ASSERT_LT(Clock::now(), deadline) << "no answer to " << name;
      if (auto f = NextAny(milliseconds(1000))) Handle(*f);
    }
  }

  // The LC's view of the jobs from /status, by job name.
  std::map<std::string, Json> StatusJobs() {
    HttpResult r = HttpRequest(status_port, "GET", "/status", "", {});
    std::map<std::string, Json> m;
    auto j = Json::parse(r.body, nullptr, false);
    if (!j.is_object() || !j.contains("jobs")) return m;
    for (const auto& e : j["jobs"]) m[e.value("name", "")] = e;
    return m;
  }

  // After the campaign: the LC has read everything appended, then stops cleanly; the whole record
  // is checked again from the files and the database.
  void FinalChecks() {
    for (int i = 0;; ++i) {
      Barrier();
      auto st = StatusJobs();
      if (st[il.name].value("samplesSeen", int64_t{-1}) == il.appended &&
          st[ll.name].value("samplesSeen", int64_t{-1}) == ll.appended) {
        break;
      }
      ASSERT_LT(i, 50) << "the LC never read all appended samples: " << st[il.name].dump() << " "
                       << st[ll.name].dump() << "; appended " << il.appended << " / "
                       << ll.appended;
    }
    auto extra = NextAny(milliseconds(0));
    EXPECT_FALSE(extra) << "a frame after the campaign: " << extra->content;
    EXPECT_EQ(lc->Stop(), 0);

    std::map<std::string, Json> state;
    for (const auto& row :
         Query(db, "SELECT key, value FROM lc_state WHERE scope IN ('il','ll')")) {
      state[row[0]] = Json::parse(row[1]).at("state");
    }
    for (JobTrack* j : {&il, &ll}) {
      SCOPED_TRACE(j->tag);
      const Json& s = state[j->key];
      const int64_t rounds = j->round - 1;
      EXPECT_EQ(s.value(j->il() ? "round" : "version", int64_t{-1}), j->il() ? rounds + 1 : rounds);
      EXPECT_EQ(s.value("samples_seen", int64_t{-1}), j->appended);
      EXPECT_EQ(s.at("train_pending")[2].get<int64_t>(), j->Pending())
          << "train samples neither in a train file nor pending";
      const int64_t e_last = rounds >= 1 ? j->eval_end[rounds] : 0;
      EXPECT_EQ(s.at("eval_open")[2].get<int64_t>(),
                EvalCountUpTo(j->p, j->appended) - EvalCountUpTo(j->p, e_last))
          << "eval samples after the last eval window";
      // The whole record again: the train files, in order, are the train samples 1..last_train.
      int64_t prev = 0, total = 0;
      for (int64_t r = 1; r <= rounds; ++r) {
        bool terminated = false;
        auto lines = SplitLines(ReadFile(rootfs + j->TrainFile(r)), &terminated);
        if (!j->il() && !lines.empty()) lines.erase(lines.begin());
        for (const auto& line : lines) {
          const int64_t n = j->Ordinal(line);
          if (n != NextOrdinal(j->p, prev, true)) {
            ADD_FAILURE() << j->TrainFile(r) << " changed after its Ready: \"" << line << "\"";
            break;
          }
          prev = n;
        }
        total += static_cast<int64_t>(lines.size());
      }
      EXPECT_EQ(total, j->dispatched);
      EXPECT_EQ(total + j->Pending(), core::TrainCountUpTo(j->p, j->appended));
      // Every eval sample up to the last window is in an eval file (the files are contiguous runs
      // that start where the window five rounds back ended).
      for (int64_t r = 1; r <= rounds; ++r) {
        const int64_t from = r > 5 ? j->eval_end[r - 5] : 0;
        const int64_t before = r > 1 ? j->eval_end[r - 1] : 0;
        EXPECT_LE(from, before);
        // The file its Eval Ready named; under auto a reconnect can switch the IL layout between
        // rounds (the G1 evidence is per connection), so a later round may reuse the name.
        const std::string file = j->eval_file.count(r) ? j->eval_file[r] : j->EvalFile(r, false);
        bool reused = false;
        for (const auto& [later, f] : j->eval_file) reused |= later > r && f == file;
        if (reused) continue;
        bool terminated = false;
        auto lines = SplitLines(ReadFile(rootfs + file), &terminated);
        if (!j->il() && !lines.empty()) lines.erase(lines.begin());
        const int64_t want = EvalCountUpTo(j->p, j->eval_end[r]) - EvalCountUpTo(j->p, from);
        EXPECT_EQ(static_cast<int64_t>(lines.size()), want) << file << " changed";
      }
      CheckDeployTarget(*j, "at the end");
      EXPECT_EQ(j->deploying, 0);
    }
  }

  void PrintSummary() {
    std::ostringstream o;
    o << "\n==== crash campaign summary ====\n"
      << "seed " << cfg.seed << " (replay: SEDNA_CRASH_SEED=" << cfg.seed << "), elapsed "
      << Elapsed() << " s\n"
      << "kills " << kills << " (planned " << cfg.kills << ", aimed kills that fell back to a "
      << "random delay: " << aimed_fallbacks << ")\n";
    std::map<std::string, int> by_kind;
    for (const auto& k : kill_log) by_kind[KillKindName(k.kind)]++;
    o << "kill kinds:";
    for (const auto& [k, n] : by_kind) o << " " << k << "=" << n;
    o << "\nwhere they landed (a kill can count in several):";
    for (const auto& [k, n] : landed_counts) o << "\n  " << k << ": " << n;
    o << "\nkills:\n";
    for (const auto& k : kill_log) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%7.2f s", k.at_s);
      o << "  #" << k.n << " " << buf << " " << KillKindName(k.kind) << " (IL round " << k.il_round
        << ", LL version " << k.ll_round << "): " << k.landed << "\n";
    }
    for (const JobTrack* j : {&il, &ll}) {
      o << j->tag << ": " << j->completed << " rounds completed (" << j->deploys << " deployed, "
        << j->kept << " kept), " << j->appended << " samples appended, " << j->dispatched
        << " train samples dispatched, " << j->duplicates
        << " duplicate frame(s) after reconnects\n";
    }
    int64_t leftover = 0;
    int still_there = 0;
    for (const auto& t : temp_files) {
      const int64_t s = FileSize(t);
      if (s >= 0) {
        leftover += s;
        ++still_there;
      }
    }
    // A restarted LC's next atomic write beside a target removes a dead writer's temp files.
    EXPECT_EQ(still_there, 0) << "temp files of interrupted atomic writes were never removed";
    o << "Dataset count repeats after reconnects: " << count_repeats << "; appends " << appends
      << " (" << appends_while_down << " while the LC was down); GM sends refused: " << lost_sends
      << "\n"
      << "temp files left by interrupted atomic writes: " << temp_files.size() << " (" << leftover
      << " bytes)\n";
    std::cout << o.str() << std::flush;
    RecordProperty("seed", std::to_string(cfg.seed));
    RecordProperty("kills", kills);
  }

  Settings cfg;
  std::mt19937_64 rng;
  std::string tmp, rootfs, db, log_path;
  uint16_t port = 0, status_port = 0;
  std::unique_ptr<GmEmulator> gm;
  std::unique_ptr<LcProcess> lc;
  JobTrack il, ll;
  std::deque<WorkerTask> tasks;
  Clock::time_point start;

  int epoch = 0;  // connections seen (bare headers processed)
  int kills = 0;
  std::vector<KillKind> plan;
  int next_plan = 0;
  std::optional<KillKind> armed;
  Clock::time_point armed_at, kill_at, restarted_at;
  bool progress_since_restart = false;
  int aimed_fallbacks = 0;
  std::vector<KillRecord> kill_log;
  std::map<std::string, int> landed_counts;
  std::set<std::string> temp_files;
  int barriers = 0;
  std::set<std::string> barriers_answered;
  int count_repeats = 0, appends = 0, appends_while_down = 0, lost_sends = 0;
};

TEST_F(CrashCampaign, IlAndLlSurviveRandomKills) {
  RunCampaign();
  PrintSummary();
  if (HasFatalFailure()) return;
  FinalChecks();
  EXPECT_GE(kills, cfg.kills);
  EXPECT_GE(il.completed, cfg.il_rounds);
  EXPECT_GE(ll.completed, cfg.ll_versions);
  // One frame at most is in flight when the LC dies (the outbox sends one at a time), so repeats
  // beyond one per reconnect are not at-least-once delivery but frames sent twice.
  EXPECT_LE(il.duplicates + ll.duplicates + count_repeats, epoch - 1)
      << "more repeated frames than reconnects";
  std::cout << "[campaign] done in " << Elapsed() << " s (seed " << cfg.seed << ")\n";
}

}  // namespace
}  // namespace sedna::testing
