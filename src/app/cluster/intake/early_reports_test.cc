// The early reports' store (early_reports.h) over rows in memory and a clock the test sets: the
// bounds, arrival order, expiry, a release applied once, and a restart (a new store over the same
// rows).
#include "app/cluster/intake/early_reports.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <map>

namespace sedna::app {
namespace {

// Rows in memory; Put and Erase fail while `fail` is set. An erase inside a "transaction" (the
// test passes a null Tx through Apply's erase: the rows cannot tell) is applied at once.
class MemoryRows : public EarlyReportRows {
 public:
  Result<std::vector<EarlyReport>> Load(std::vector<std::string>*) override {
    std::vector<EarlyReport> v;
    for (const auto& [s, r] : rows) v.push_back(r);
    return v;
  }
  Status Put(const EarlyReport& r) override {
    if (fail) return Status::Error("disk I/O error");
    rows[r.seq] = r;
    return Status::Ok();
  }
  Status Erase(const std::vector<uint64_t>& seqs, store::Store::Tx*) override {
    if (fail) return Status::Error("disk I/O error");
    for (uint64_t s : seqs) rows.erase(s);
    return Status::Ok();
  }
  std::map<uint64_t, EarlyReport> rows;
  bool fail = false;
};

constexpr const char* kJobA = "default/incrementallearningjob/a";
constexpr const char* kJobB = "default/lifelonglearningjob/b";

class EarlyReportsTest : public ::testing::Test {
 protected:
  // A store (a "process") over `rows`, whose Apply records what it is given and answers `answer`.
  std::unique_ptr<EarlyReports> Start(EarlyLimits limits) {
    auto e = std::make_unique<EarlyReports>(limits, [this] { return now; });
    auto owned = std::make_unique<ForwardRows>(rows);
    EXPECT_TRUE(e->Open(std::move(owned)).ok());
    e->set_apply([this](const std::vector<EarlyReport>& kept, const EarlyReports::Erase& erase) {
      if (answer == EarlyReports::Applied::kApplied) {
        EXPECT_TRUE(erase(nullptr).ok());
        applied.push_back(kept);
      }
      return answer;
    });
    return e;
  }
  // Forwards to the test's rows so that they outlive a store (a restart).
  struct ForwardRows : EarlyReportRows {
    explicit ForwardRows(MemoryRows& r) : to(r) {}
    Result<std::vector<EarlyReport>> Load(std::vector<std::string>* s) override {
      return to.Load(s);
    }
    Status Put(const EarlyReport& r) override { return to.Put(r); }
    Status Erase(const std::vector<uint64_t>& s, store::Store::Tx* tx) override {
      return to.Erase(s, tx);
    }
    MemoryRows& to;
  };
  static std::vector<std::string> Bodies(const std::vector<EarlyReport>& v) {
    std::vector<std::string> b;
    for (const auto& r : v) b.push_back(r.body);
    return b;
  }

  MemoryRows rows;
  int64_t now = 1'700'000'000'000;
  EarlyReports::Applied answer = EarlyReports::Applied::kApplied;
  std::vector<std::vector<EarlyReport>> applied;
};

TEST_F(EarlyReportsTest, KeptInArrivalOrderAndReleasedOncePerOwner) {
  auto e = Start({});
  EXPECT_EQ(e->Hold(kJobA, "train-worker-1", "train completed", "a1").held,
            EarlyReports::Held::kKept);
  EXPECT_EQ(e->Hold(kJobB, "train-worker-2", "train completed", "b1").held,
            EarlyReports::Held::kKept);
  EXPECT_EQ(e->Hold(kJobA, "eval-worker-1", "eval completed", "a2").held,
            EarlyReports::Held::kKept);
  EXPECT_TRUE(e->holds(kJobA));
  EXPECT_EQ(e->size(), 3u);
  EXPECT_EQ(rows.rows.size(), 3u) << "each kept report has its row before Hold returns";
  e->Release(kJobA);
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(Bodies(applied[0]), (std::vector<std::string>{"a1", "a2"}));
  EXPECT_EQ(applied[0][1].worker, "eval-worker-1");
  EXPECT_EQ(applied[0][1].what, "eval completed");
  EXPECT_EQ(applied[0][1].received_ms, now);
  EXPECT_FALSE(e->holds(kJobA));
  EXPECT_EQ(e->size(), 1u);
  EXPECT_EQ(rows.rows.size(), 1u);
  e->Release(kJobA);  // nothing kept for it any more
  EXPECT_EQ(applied.size(), 1u);
}

// A report kept after this LC deleted the job of uid u1 is applied to a job of uid u1 (the GM
// sending the same object again) and dropped, not applied, when the job that arrives is another
// one made under the same name (uid u2); reports kept with no delete seen go to either. The uid
// is in the row: the same holds after a restart.
TEST_F(EarlyReportsTest, AReportKeptAfterADeleteGoesOnlyToTheSameJob) {
  for (bool restart : {false, true}) {
    for (const char* arriving : {"u1", "u2"}) {
      SCOPED_TRACE(std::string(arriving) + (restart ? ", after a restart" : ""));
      rows.rows.clear();
      applied.clear();
      auto e = Start({});
      ASSERT_EQ(e->Hold(kJobA, "train-worker-1", "train completed", "late", "u1").held,
                EarlyReports::Held::kKept);
      ASSERT_EQ(e->Hold(kJobA, "eval-worker-1", "eval completed", "unknown").held,
                EarlyReports::Held::kKept);
      if (restart) e = Start({});
      e->Release(kJobA, arriving);
      ASSERT_EQ(applied.size(), 1u);
      EXPECT_EQ(Bodies(applied[0]), std::string(arriving) == "u1"
                                        ? (std::vector<std::string>{"late", "unknown"})
                                        : (std::vector<std::string>{"unknown"}));
      EXPECT_FALSE(e->holds(kJobA));
      EXPECT_TRUE(rows.rows.empty()) << "the dropped report's row goes too";
    }
  }
}

// Refused over a bound, never an older one evicted; the byte bound counts worker, what and body.
TEST_F(EarlyReportsTest, Bounds) {
  struct Case {
    const char* name;
    EarlyLimits limits;
    std::vector<std::pair<std::string, std::string>> holds;  // owner, body
    std::vector<EarlyReports::Held> want;
  };
  using H = EarlyReports::Held;
  const std::string big(100, 'x');
  const std::vector<Case> cases = {
      {"per job",
       {2, 10, 1 << 20, 60000},
       {{kJobA, "1"}, {kJobA, "2"}, {kJobA, "3"}, {kJobB, "4"}},
       {H::kKept, H::kKept, H::kOwnerFull, H::kKept}},
      {"total count",
       {5, 3, 1 << 20, 60000},
       {{kJobA, "1"}, {kJobB, "2"}, {kJobA, "3"}, {"c", "4"}},
       {H::kKept, H::kKept, H::kKept, H::kTotalFull}},
      // "w" + "k" + 100 bytes = 102 per report: two fit in 204, not three.
      {"total bytes",
       {5, 10, 204, 60000},
       {{kJobA, big}, {kJobB, big}, {"c", big}, {"c", "y"}},
       {H::kKept, H::kKept, H::kTotalFull, H::kTotalFull}},
      {"zero keeps nothing", {0, 10, 1 << 20, 60000}, {{kJobA, "1"}}, {H::kOwnerFull}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    rows.rows.clear();
    auto e = Start(c.limits);
    std::vector<H> got;
    for (const auto& [owner, body] : c.holds) {
      auto h = e->Hold(owner, "w", "k", body);
      got.push_back(h.held);
      if (h.held != H::kKept) {
        EXPECT_FALSE(h.why.empty());
      }
    }
    EXPECT_EQ(got, c.want);
    size_t kept = 0;
    for (H h : c.want) kept += h == H::kKept;
    EXPECT_EQ(e->size(), kept);
    EXPECT_EQ(rows.rows.size(), kept) << "a refused report leaves no row";
  }
}

TEST_F(EarlyReportsTest, RefusedMessagesNameTheFlag) {
  auto e = Start({1, 1, 1 << 20, 60000});
  ASSERT_EQ(e->Hold(kJobA, "w", "k", "1").held, EarlyReports::Held::kKept);
  EXPECT_NE(e->Hold(kJobA, "w", "k", "2").why.find("--early-reports-per-job"), std::string::npos);
  EXPECT_NE(e->Hold(kJobB, "w", "k", "2").why.find("--early-reports-max"), std::string::npos);
}

TEST_F(EarlyReportsTest, ExpiresAfterTheTtlAndFreesItsRoom) {
  auto e = Start({5, 2, 1 << 20, 60000});
  ASSERT_EQ(e->Hold(kJobA, "w", "k", "old").held, EarlyReports::Held::kKept);
  now += 30000;
  ASSERT_EQ(e->Hold(kJobB, "w", "k", "new").held, EarlyReports::Held::kKept);
  EXPECT_EQ(e->Hold(kJobB, "w", "k", "more").held, EarlyReports::Held::kTotalFull);
  EXPECT_EQ(e->next_expiry_ms(), now - 30000 + 60000);
  now += 29999;
  EXPECT_EQ(e->Expire(), 0u);
  now += 1;
  EXPECT_EQ(e->Expire(), 1u);
  EXPECT_FALSE(e->holds(kJobA));
  EXPECT_TRUE(e->holds(kJobB));
  EXPECT_EQ(rows.rows.size(), 1u);
  EXPECT_EQ(e->Hold(kJobB, "w", "k", "more").held, EarlyReports::Held::kKept);
  e->Release(kJobA);
  EXPECT_TRUE(applied.empty()) << "an expired report is never applied";
}

// Across a restart: the rows come back in order, sequence numbers go on above them, and the
// expiry counts from when the report arrived (the wall clock), not from the restart.
TEST_F(EarlyReportsTest, SurvivesARestart) {
  {
    auto e = Start({5, 10, 1 << 20, 60000});
    ASSERT_EQ(e->Hold(kJobA, "w", "k", "a1").held, EarlyReports::Held::kKept);
    ASSERT_EQ(e->Hold(kJobB, "w", "k", "b1").held, EarlyReports::Held::kKept);
    now += 50000;
    ASSERT_EQ(e->Hold(kJobA, "w", "k", "a2").held, EarlyReports::Held::kKept);
  }  // killed: nothing more is written
  now += 20000;
  auto e = Start({5, 10, 1 << 20, 60000});
  EXPECT_EQ(e->size(), 3u);
  EXPECT_EQ(e->Expire(), 2u) << "a1 and b1 arrived 70 s ago";
  ASSERT_EQ(e->Hold(kJobA, "w", "k", "a3").held, EarlyReports::Held::kKept);
  e->ReleaseKnown([](const std::string& o) -> std::optional<std::string> {
    if (o == kJobA) return "uid-a";
    return std::nullopt;
  });
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(Bodies(applied[0]), (std::vector<std::string>{"a2", "a3"}));
  EXPECT_LT(applied[0][0].seq, applied[0][1].seq);
  EXPECT_TRUE(rows.rows.empty());
}

TEST_F(EarlyReportsTest, ReleaseLaterOrFailedKeepsThemForTheNextRelease) {
  auto e = Start({});
  ASSERT_EQ(e->Hold(kJobA, "w", "k", "a1").held, EarlyReports::Held::kKept);
  answer = EarlyReports::Applied::kLater;  // queued behind the intake: it calls Release again
  e->Release(kJobA);
  EXPECT_TRUE(e->holds(kJobA));
  ASSERT_EQ(e->Hold(kJobA, "w", "k", "a2").held, EarlyReports::Held::kKept);
  answer = EarlyReports::Applied::kFailed;  // the commit failed: retried by Expire's pass
  e->Release(kJobA);
  EXPECT_EQ(rows.rows.size(), 2u);
  answer = EarlyReports::Applied::kApplied;
  EXPECT_EQ(e->Expire(), 0u);
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(Bodies(applied[0]), (std::vector<std::string>{"a1", "a2"}));
  EXPECT_FALSE(e->holds(kJobA));
}

TEST_F(EarlyReportsTest, AFailedWriteKeepsNothingAndSaysWhy) {
  auto e = Start({});
  rows.fail = true;
  auto h = e->Hold(kJobA, "w", "k", "a1");
  EXPECT_EQ(h.held, EarlyReports::Held::kFailed);
  EXPECT_EQ(h.why, "disk I/O error");
  EXPECT_FALSE(e->holds(kJobA));
  EXPECT_EQ(e->size(), 0u);
  rows.fail = false;
  EXPECT_EQ(e->Hold(kJobA, "w", "k", "a1").held, EarlyReports::Held::kKept);
}

// The rows in the real store: a report with newlines in its body comes back whole, in order.
TEST(EarlyStoreRowsTest, RoundTripThroughLcState) {
  const std::string dir = ::testing::TempDir() + "early-rows-" + std::to_string(::getpid());
  struct RemoveAtEnd {
    std::string dir;
    ~RemoveAtEnd() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  } remove_at_end{dir};
  auto st = store::Store::Open(dir + "/db.db");
  ASSERT_TRUE(st.ok()) << st.message();
  auto rows = StoreEarlyRows(**st);
  EarlyReport a{2, kJobA, "eval-worker-x", "eval completed", "{\n\"a\": 1}\n", 123};
  EarlyReport b{10, kJobB, "train-worker-y", "train completed", "", 456};
  ASSERT_TRUE(rows->Put(b).ok());
  ASSERT_TRUE(rows->Put(a).ok());
  ASSERT_TRUE(
      (*st)
          ->Transact([](store::Store::Tx& tx) { return tx.PutState(kScopeEarly, "garbage", "x"); })
          .ok());
  std::vector<std::string> skipped;
  auto got = rows->Load(&skipped);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, (std::vector<EarlyReport>{a, b}));
  EXPECT_EQ(skipped, std::vector<std::string>{"garbage"});
  ASSERT_TRUE(rows->Erase({2}, nullptr).ok());
  skipped.clear();
  EXPECT_EQ(*rows->Load(&skipped), std::vector<EarlyReport>{b});
}

}  // namespace
}  // namespace sedna::app
