// LL worker reports that are bad input: a report of another kind is forwarded verbatim (§P3.5)
// and does not move the job; a completed train report that is malformed, names a model outside
// the version's output directory or comes from a worker not named as Sedna names train workers is
// refused with 400 naming the field and not forwarded ([D:I15]; Sedna's LC answered 200 and
// forwarded them); a report for an unknown job is answered 200 and dropped. The job's state is
// unchanged: the good report that follows still advances the job.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <memory>
#include <vector>

#include "gm_emulator.h"
#include "lc_process.h"

namespace sedna::testing {
namespace {

Json LlJobObject() {
  auto tmpl = [](const std::string& n) {
    return Json{{"spec", {{"containers", Json::array({{{"name", n}, {"image", "x"}}})}}}};
  };
  return Json{{"kind", "LifelongLearningJob"},
              {"apiVersion", "sedna.io/v1alpha1"},
              {"metadata", {{"name", "ll"}, {"namespace", "default"}}},
              {"spec",
               {{"dataset", {{"name", "ds"}, {"trainProb", 0.8}}},
                {"trainSpec",
                 {{"template", tmpl("train")},
                  {"trigger",
                   {{"condition",
                     {{"operator", ">"}, {"threshold", 100}, {"metric", "num_of_samples"}}}}}}},
                {"evalSpec", {{"template", tmpl("eval")}}},
                {"deploySpec", {{"template", tmpl("infer")}}},
                {"outputDir", "/output"}}}};
}

std::string Report(const std::string& owner, const std::string& kind, const std::string& results,
                   const std::string& worker = "train-worker-ab12c") {
  return R"({"name": ")" + worker + R"(", "namespace": "default", "ownerName": ")" + owner +
         R"(", "ownerKind": "lifelonglearningjob", "kind": ")" + kind +
         R"(", "status": "completed", "results": )" + results + "}";
}

TEST(LlBadInputTest, BadTrainReportsLeaveTheJobUnchanged) {
  const std::string tmp = MakeTempDir("sedna-llbad-");
  const std::string rootfs = tmp + "/rootfs";
  std::filesystem::create_directories(rootfs + "/data");
  WriteFile(rootfs + "/data/d.txt", "");
  GmEmulator gm;
  const uint16_t port = FreePort();
  LcProcess lc(std::string(SEDNA_BINARY_DIR) + "/sedna-lc",
               {{"GM_ADDRESS", gm.address()},
                {"NODENAME", "edge"},
                {"BIND_PORT", std::to_string(port)},
                {"ROOTFS_MOUNT_DIR", rootfs}},
               {"--db", tmp + "/db/database.db", "--status-port", "0"}, tmp + "/lc.log");
  ASSERT_TRUE(gm.server().WaitForConnection(std::chrono::seconds(20))) << lc.Log();
  gm.Send("insert", Json{{"kind", "Dataset"},
                         {"apiVersion", "sedna.io/v1alpha1"},
                         {"metadata", {{"name", "ds"}, {"namespace", "default"}}},
                         {"spec", {{"url", "/data/d.txt"}, {"format", "txt"}}}});
  GmJob job(core::gm::JobKind::kLifelong, LlJobObject());
  gm.Send("insert", job.Object());
  std::string lines;
  for (int i = 1; i <= 200; ++i) lines += "s" + std::to_string(i) + ".jpg 1\n";
  AppendFile(rootfs + "/data/d.txt", lines);
  auto ll1 = gm.Next("LifelongLearningJob");
  ASSERT_TRUE(ll1) << lc.Log();
  EXPECT_NE(ll1->content.find(R"("phase":"train","status":"ready")"), std::string::npos);
  job.Report(ll1->content);
  gm.Send("insert", job.Object());

  // A report of another kind is forwarded verbatim (§P3.5) and does not move the job.
  {
    HttpResult r = HttpRequest(port, "POST", "/sedna/workers/train-worker-ab12c/info",
                               Report("ll", "inference", R"([{"format":"pkl","url":"/m"}])"));
    EXPECT_EQ(r.status, 200) << r.raw;
    auto fwd = gm.Next("LifelongLearningJob");
    ASSERT_TRUE(fwd) << "a report of another kind is forwarded verbatim (§P3.5)";
    EXPECT_NE(lc.Log().find("inference"), std::string::npos);
  }
  // A completed train report that is malformed, or names a model the job may not use, or comes
  // from a worker Sedna would not have named so ([D:I15]): 400 naming the field, not forwarded.
  struct Bad {
    const char* name;
    std::string body;
    const char* field;  // what the 400 and the log line must name
  };
  const std::vector<Bad> bad = {
      {"empty results", Report("ll", "train", "[]"), "results"},
      {"no url", Report("ll", "train", R"([{"format":"pkl"}])"), "results[0].url"},
      {"no format", Report("ll", "train", R"([{"url":"/m"}])"), "results[0].format"},
      {"metrics not an object",
       Report("ll", "train", R"([{"format":"pkl","url":"/m","metrics":"x"}])"),
       "results[0].metrics"},
      {"a host file", Report("ll", "train", R"([{"format":"pkl","url":"/etc/passwd"}])"),
       "results[0].url"},
      {"out of the version's dir",
       Report("ll", "train", R"([{"format":"pkl","url":"/output/train/1/../2/index.pkl"}])"),
       "results[0].url"},
      {"second result outside",
       Report(
           "ll", "train",
           R"([{"format":"pkl","url":"/output/train/1/index.pkl"},{"format":"pkl","url":"/data/d.txt"}])"),
       "results[1].url"},
      {"not a train worker",
       Report("ll", "train", R"([{"format":"pkl","url":"/output/train/1/index.pkl"}])", "w"),
       "name"},
  };
  for (const auto& b : bad) {
    SCOPED_TRACE(b.name);
    const std::string worker = b.field == std::string("name") ? "w" : "train-worker-ab12c";
    HttpResult r = HttpRequest(port, "POST", "/sedna/workers/" + worker + "/info", b.body);
    EXPECT_EQ(r.status, 400) << r.raw;
    EXPECT_NE(r.body.find(b.field), std::string::npos) << r.body;
    EXPECT_FALSE(gm.Next("LifelongLearningJob", std::chrono::milliseconds(200)))
        << "a refused report is not forwarded";
    const std::string log = lc.Log();
    EXPECT_NE(log.find("LifelongLearningJob default/ll"), std::string::npos);
    EXPECT_NE(log.find(b.field), std::string::npos) << "log does not name " << b.field;
  }
  // Unknown job: answered 200, not forwarded.
  EXPECT_EQ(HttpRequest(port, "POST", "/sedna/workers/train-worker-ab12c/info",
                        Report("nosuchjob", "train", R"([{"format":"pkl","url":"/m"}])"))
                .status,
            200);
  EXPECT_NE(lc.Log().find("lifelonglearningjob default/nosuchjob"), std::string::npos);
  // The job did not move: the good report is recorded and forwarded, and LL-3 answers the GM's
  // (Eval, Waiting) that follows it (never the report itself, docs/protocol.md §H3.2).
  EXPECT_EQ(
      HttpRequest(port, "POST", "/sedna/workers/train-worker-ab12c/info",
                  Report("ll", "train", R"([{"format":"pkl","url":"/output/train/1/index.pkl"}])"))
          .status,
      200);
  auto good = gm.Next("LifelongLearningJob");
  ASSERT_TRUE(good);
  EXPECT_NE(good->content.find("/output/train/1/index.pkl"), std::string::npos) << good->content;
  EXPECT_FALSE(gm.Next("LifelongLearningJob", std::chrono::milliseconds(300)))
      << "eval ready before the GM's (Eval, Waiting)";
  job.Report(good->content);
  ASSERT_EQ(job.LastCondition(), "Eval/Waiting");
  gm.Send("insert", job.Object());
  auto ll3 = gm.Next("LifelongLearningJob");
  ASSERT_TRUE(ll3) << lc.Log();
  EXPECT_EQ(
      ll3->content,
      R"({"phase":"eval","status":"ready","input":{"models":[{"format":"pkl","url":"/output/train/1/index.pkl"}],"dataURL":"/output/data/eval/1/data.txt","outputDir":"/output/eval/1"},"output":null})");
  EXPECT_FALSE(gm.Next("LifelongLearningJob", std::chrono::milliseconds(300)));
  EXPECT_EQ(lc.Stop(), 0);
  std::filesystem::remove_all(tmp);
}

// A CSV index is any bytes: a header line that is not UTF-8 goes into the round's data.csv exactly,
// and into the job's record (as U+FFFD, and its bytes in base64), which a restarted LC reads. The
// LC before this test existed exited on it ("sedna-lc: fatal: [json.exception.type_error.316]
// invalid UTF-8 byte") at the first ingest, and again at every restart.
TEST(LlBadInputTest, ACsvHeaderThatIsNotUtf8IsCopiedExactlyAndSurvivesARestart) {
  const std::string tmp = MakeTempDir("sedna-llcsv-");
  const std::string rootfs = tmp + "/rootfs";
  std::filesystem::create_directories(rootfs + "/data");
  const std::string header = "img\xff\xfe,label";
  std::string csv = header + "\n";
  for (int i = 1; i <= 200; ++i) csv += "s" + std::to_string(i) + ".jpg,1\n";
  WriteFile(rootfs + "/data/d.csv", csv);
  GmEmulator gm;
  const uint16_t port = FreePort();
  const uint16_t status_port = FreePort();
  const std::map<std::string, std::string> env = {{"GM_ADDRESS", gm.address()},
                                                  {"NODENAME", "edge"},
                                                  {"BIND_PORT", std::to_string(port)},
                                                  {"ROOTFS_MOUNT_DIR", rootfs}};
  const std::vector<std::string> args = {"--db", tmp + "/db/database.db", "--status-port",
                                         std::to_string(status_port)};
  auto lc = std::make_unique<LcProcess>(std::string(SEDNA_BINARY_DIR) + "/sedna-lc", env, args,
                                        tmp + "/lc.log");
  ASSERT_TRUE(gm.server().WaitForConnection(std::chrono::seconds(20))) << lc->Log();
  gm.Send("insert", Json{{"kind", "Dataset"},
                         {"apiVersion", "sedna.io/v1alpha1"},
                         {"metadata", {{"name", "ds"}, {"namespace", "default"}}},
                         {"spec", {{"url", "/data/d.csv"}, {"format", "csv"}}}});
  GmJob job(core::gm::JobKind::kLifelong, LlJobObject());
  gm.Send("insert", job.Object());
  auto ll1 = gm.Next("LifelongLearningJob");
  ASSERT_TRUE(ll1) << lc->Log();
  EXPECT_NE(ll1->content.find(R"("phase":"train","status":"ready")"), std::string::npos);
  const std::string data = ReadFile(rootfs + "/output/data/train/1/data.csv");
  EXPECT_EQ(data.substr(0, header.size() + 1), header + "\n");

  lc->Kill();
  lc = std::make_unique<LcProcess>(std::string(SEDNA_BINARY_DIR) + "/sedna-lc", env, args,
                                   tmp + "/lc2.log");
  ASSERT_TRUE(gm.server().WaitForConnection(std::chrono::seconds(20))) << lc->Log();
  HttpResult st = HttpRequest(status_port, "GET", "/status", "");
  EXPECT_EQ(st.status, 200) << st.raw;
  EXPECT_NE(st.body.find("\"ll\""), std::string::npos) << st.body;
  EXPECT_EQ(lc->Log().find("fatal"), std::string::npos) << lc->Log();
  EXPECT_EQ(lc->Stop(), 0) << lc->Log();
}

}  // namespace
}  // namespace sedna::testing
