// The outbox (outbox.h) over a real store: committed frames only, in id order, one batch in flight;
// the sent mark across a reopen; a lost or partly written batch sent again; the bound and the
// informational quota.
#include "app/cluster/intake/outbox.h"

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "adapters/json/envelope.h"
#include "adapters/json/upstream_codec.h"
#include "app/cluster/part_test_env.h"

namespace sedna::app {
namespace {

using testing::ClusterTestEnv;

// Takes batches while connected; each completes when the test says (Complete), or at once with
// `auto_complete`.
class RecordingSink : public UpstreamSink {
 public:
  bool connected() const override { return connected_; }
  bool Send(std::span<const std::string_view> frames, std::function<void(size_t)> done) override {
    if (!connected_) return false;
    sent.insert(sent.end(), frames.begin(), frames.end());
    batches.push_back(frames.size());
    if (auto_complete) {
      done(frames.size());
    } else {
      pending.emplace_back(frames.size(), std::move(done));
    }
    return true;
  }
  // Completes the oldest batch in flight: every frame written, or none.
  void Complete(bool written) { CompletePartly(written ? pending.front().first : 0); }
  // Completes it with only its first `written` frames written.
  void CompletePartly(size_t written) {
    ASSERT_FALSE(pending.empty());
    auto done = std::move(pending.front().second);
    pending.erase(pending.begin());
    done(written);
  }

  bool connected_ = true;
  bool auto_complete = false;
  std::vector<std::string> sent;  // every frame of every batch, in order
  std::vector<size_t> batches;    // their sizes
  std::vector<std::pair<size_t, std::function<void(size_t)>>> pending;
};

// A frame of the LC's own (a Dataset count: never informational) and a forwarded worker report
// (informational unless a train/eval completion), `pad` bytes long or more.
std::string CountFrame(int64_t n) {
  return json::EncodeFrame({"default", "Dataset", "d" + std::to_string(n), "status"},
                           json::EncodeDatasetStatus(n));
}
std::string ReportFrame(const std::string& kind, const std::string& status, size_t pad) {
  json::WorkerMessage m;
  m.report.kind = kind;
  m.report.status = status;
  m.results = json::RawJson::Array({});
  m.owner_info = json::RawJson::Object({{"pad", json::RawJson::String(std::string(pad, 'x'))}});
  return json::EncodeFrame({"default", "incrementallearningjob", "j", "status"},
                           json::EncodeForwardedWorkerMessage(m));
}

class OutboxTest : public ::testing::Test {
 protected:
  explicit OutboxTest(Config cfg = {}) : env(cfg) { Make(); }

  void Make() {
    outbox = std::make_unique<Outbox>(env.ctx());
    outbox->SetSink(&sink);
  }
  // Commits `frames` in one transaction; fails it (nothing appended) with `fail`.
  std::vector<int64_t> Commit(const std::vector<std::string>& frames, bool fail = false) {
    std::vector<int64_t> ids;
    Status s = env.store().Transact([&](store::Store::Tx& tx) -> Status {
      for (const auto& f : frames) {
        auto id = Outbox::AppendId(tx, f);
        if (!id.ok()) return id.status();
        ids.push_back(*id);
      }
      return fail ? Status::Error("the caller's step failed") : Status::Ok();
    });
    EXPECT_EQ(s.ok(), !fail) << s.message();
    return ids;
  }
  int64_t Unsent() {
    auto st = env.store().GetOutboxStats();
    EXPECT_TRUE(st.ok());
    return st.ok() ? st->count : -1;
  }

  ClusterTestEnv env;
  RecordingSink sink;
  std::unique_ptr<Outbox> outbox;
};

TEST_F(OutboxTest, SendsCommittedFramesInIdOrderOneBatchInFlight) {
  const auto a = Commit({CountFrame(1), CountFrame(2)});
  const auto b = Commit({CountFrame(3)});
  ASSERT_EQ(a.size(), 2u);
  EXPECT_LT(a[0], a[1]);
  outbox->Pump();
  EXPECT_EQ(sink.sent, (std::vector<std::string>{CountFrame(1), CountFrame(2), CountFrame(3)}));
  EXPECT_EQ(sink.batches, std::vector<size_t>{3});  // what was committed, in one batch
  const auto c = Commit({CountFrame(4)});
  outbox->Pump();
  EXPECT_EQ(sink.batches, std::vector<size_t>{3});  // in flight: nothing more
  EXPECT_EQ(env.store().OutboxAckedThrough(), 0);
  sink.Complete(true);
  EXPECT_EQ(env.store().OutboxAckedThrough(), b[0]);
  EXPECT_EQ(sink.batches, (std::vector<size_t>{3, 1}));  // the next batch at once
  EXPECT_EQ(sink.sent.back(), CountFrame(4));
  sink.Complete(true);
  EXPECT_EQ(env.store().OutboxAckedThrough(), c[0]);
  EXPECT_TRUE(sink.pending.empty());
  EXPECT_EQ(Unsent(), 0);
  EXPECT_EQ(env.ctx().metrics.frames_sent, 4u);
}

// A batch ends before the frame that would take it past 256 KiB; a larger frame goes alone.
TEST_F(OutboxTest, ABatchStaysWithin256KiBUnlessOneFrameIsLarger) {
  const std::string k100(100u << 10, 'a'), k300(300u << 10, 'b');
  Commit({k100, k100, k100, k300, "small"});
  sink.auto_complete = true;
  outbox->Pump();
  EXPECT_EQ(sink.batches, (std::vector<size_t>{2, 1, 1, 1}));
  EXPECT_EQ(sink.sent, (std::vector<std::string>{k100, k100, k100, k300, "small"}));
  EXPECT_EQ(Unsent(), 0);
}

TEST_F(OutboxTest, AFrameOfATransactionThatFailedIsNeverSent) {
  Commit({CountFrame(1)}, /*fail=*/true);
  Commit({CountFrame(2)});
  sink.auto_complete = true;
  outbox->Pump();
  EXPECT_EQ(sink.sent, std::vector<std::string>{CountFrame(2)});
}

TEST_F(OutboxTest, PostPumpSendsAfterTheCurrentHandlerOnce) {
  Commit({CountFrame(1)});
  outbox->PostPump();
  outbox->PostPump();
  EXPECT_TRUE(sink.sent.empty());
  env.RunReady();
  EXPECT_EQ(sink.sent, std::vector<std::string>{CountFrame(1)});
}

TEST_F(OutboxTest, NothingIsSentWhileDisconnectedAndALostWriteIsSentAgainFirst) {
  Commit({CountFrame(1), CountFrame(2)});
  sink.connected_ = false;
  outbox->Pump();
  EXPECT_TRUE(sink.sent.empty());
  sink.connected_ = true;
  outbox->Pump();
  ASSERT_EQ(sink.sent.size(), 2u);
  sink.Complete(false);  // lost with the connection
  outbox->OnDisconnected();
  EXPECT_EQ(env.store().OutboxAckedThrough(), 0);
  EXPECT_EQ(Unsent(), 2);
  outbox->Pump();  // reconnected
  sink.Complete(true);
  EXPECT_EQ(sink.sent,
            (std::vector<std::string>{CountFrame(1), CountFrame(2), CountFrame(1), CountFrame(2)}));
  EXPECT_EQ(Unsent(), 0);
}

// The connection failed after the batch's first frame was written whole: that one is recorded as
// sent, and only the rest is sent again.
TEST_F(OutboxTest, APartlyWrittenBatchSendsAgainOnlyWhatWasNotWritten) {
  const auto ids = Commit({CountFrame(1), CountFrame(2), CountFrame(3)});
  outbox->Pump();
  sink.CompletePartly(1);
  outbox->OnDisconnected();
  EXPECT_EQ(env.store().OutboxAckedThrough(), ids[0]);
  EXPECT_EQ(Unsent(), 2);
  EXPECT_EQ(env.ctx().metrics.frames_sent, 1u);
  outbox->Pump();  // reconnected
  sink.Complete(true);
  EXPECT_EQ(sink.sent, (std::vector<std::string>{CountFrame(1), CountFrame(2), CountFrame(3),
                                                 CountFrame(2), CountFrame(3)}));
  EXPECT_EQ(Unsent(), 0);
  EXPECT_EQ(env.ctx().metrics.frames_sent, 3u);
}

// A restart (the store closed and opened again): what was written is not sent again, the rest is
// sent in its order, and new frames follow it.
TEST_F(OutboxTest, OrderIsKeptAcrossAReopen) {
  Commit({CountFrame(1), CountFrame(2), CountFrame(3), CountFrame(4)});
  outbox->Pump();
  sink.CompletePartly(2);  // 1 and 2 written; the LC stops before 3 was
  ASSERT_EQ(sink.sent.size(), 4u);
  outbox.reset();
  env.Reopen();
  sink.sent.clear();
  sink.pending.clear();
  Make();
  EXPECT_EQ(Unsent(), 2);
  Commit({CountFrame(5)});
  sink.auto_complete = true;
  outbox->Pump();
  EXPECT_EQ(sink.sent, (std::vector<std::string>{CountFrame(3), CountFrame(4), CountFrame(5)}));
  EXPECT_EQ(Unsent(), 0);
}

TEST_F(OutboxTest, WhenWrittenRunsOnceTheFrameIsWritten) {
  const auto ids = Commit({CountFrame(1), CountFrame(2)});
  int ran = 0;
  outbox->WhenWritten(ids[1], [&] { ++ran; });
  outbox->Pump();
  sink.CompletePartly(1);  // frame 1 only
  env.RunReady();
  EXPECT_EQ(ran, 0);
  outbox->Pump();
  sink.Complete(true);
  EXPECT_EQ(ran, 0);  // posted, not called inside the sink's callback
  env.RunReady();
  EXPECT_EQ(ran, 1);
  outbox->WhenWritten(ids[0], [&] { ++ran; });  // already written: at once (posted)
  env.RunReady();
  EXPECT_EQ(ran, 2);
}

TEST_F(OutboxTest, FlushAcksDeletesTheWrittenRowsAndTheyStayGoneAfterAReopen) {
  Commit({CountFrame(1), CountFrame(2)});
  sink.auto_complete = true;
  outbox->Pump();
  ASSERT_EQ(sink.sent.size(), 2u);
  outbox->Stop();  // flushes the acknowledgements
  EXPECT_EQ(env.OutboxFrames(), std::vector<std::string>{});
  outbox.reset();
  env.Reopen();
  EXPECT_EQ(Unsent(), 0);
  EXPECT_EQ(env.OutboxFrames(), std::vector<std::string>{});
}

// --outbox-max-bytes 4000: the bound counts the frames that are not informational; informational
// frames have a quarter of it (1000 bytes) on top.
class OutboxQuotaTest : public OutboxTest {
 protected:
  static Config Bound() {
    Config c;
    c.outbox_max_bytes = 4000;
    return c;
  }
  OutboxQuotaTest() : OutboxTest(Bound()) {}
};

TEST_F(OutboxQuotaTest, InformationalFramesNeverFillTheBound) {
  const std::string info = ReportFrame("inference", "completed", 600);
  ASSERT_TRUE(json::IsInformationalFrame(info));
  Commit({info, info, info, info, info, info, info, info});  // > 4000 bytes, all informational
  EXPECT_FALSE(outbox->Full());
  EXPECT_TRUE(outbox->InformationalFull());
}

TEST_F(OutboxQuotaTest, CompletionsCountAgainstTheBoundAndInformationalFramesOnlyTheirShare) {
  const std::string done = ReportFrame("train", "completed", 600);
  const std::string info = ReportFrame("inference", "completed", 300);
  ASSERT_FALSE(json::IsInformationalFrame(done));
  Commit({info});  // under its share
  EXPECT_FALSE(outbox->InformationalFull());
  Commit({done, done, done});
  EXPECT_FALSE(outbox->Full());
  EXPECT_FALSE(outbox->InformationalFull());
  Commit({done, done, done, done});  // > 4000 bytes of completions
  EXPECT_TRUE(outbox->Full());
  EXPECT_TRUE(outbox->InformationalFull());  // full refuses informational reports too
}

TEST_F(OutboxQuotaTest, DrainingBelowTheBoundResumesOnce) {
  const std::string done = ReportFrame("eval", "completed", 600);
  Commit({done, done, done, done, done, done, done, done});
  int resumed = 0;
  outbox->set_on_below_limit([&] { ++resumed; });
  ASSERT_TRUE(outbox->Full());
  outbox->Pump();
  sink.CompletePartly(1);
  EXPECT_EQ(resumed, 0);  // still above
  outbox->Pump();
  while (!sink.pending.empty()) sink.Complete(true);
  EXPECT_EQ(resumed, 1);
  EXPECT_FALSE(outbox->Full());
  EXPECT_EQ(resumed, 1);
}

}  // namespace
}  // namespace sedna::app
