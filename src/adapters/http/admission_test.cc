#include "adapters/http/admission.h"

#include <gtest/gtest.h>

namespace sedna::http {
namespace {

using namespace std::chrono_literals;
using State = Admission::State;

Admission::Limits Small() {
  Admission::Limits l;
  l.max_connections = 3;
  l.body_buffer_limit = 1000;
  l.small_body = 100;
  return l;
}

const Admission::Clock::time_point t0{std::chrono::seconds(100)};

TEST(AdmissionTest, BelowMaxEveryConnectionIsAdmitted) {
  Admission a(Small());
  for (int i = 0; i < 3; ++i) {
    const Admission::Room r = a.MakeRoom(t0);
    EXPECT_TRUE(r.admit);
    EXPECT_EQ(r.evict, 0u);
    a.Open(t0);
  }
  EXPECT_EQ(a.open(), 3u);
}

// Full: the connection closing longest goes first, then the one waiting longest, whatever it
// waits for; busy ones never.
TEST(AdmissionTest, TheVictimIsClosingThenLongestWaitingNeverBusy) {
  Admission a(Small());
  const auto w1 = a.Open(t0);
  const auto w2 = a.Open(t0 + 1ms);
  const auto d = a.Open(t0 + 2ms);
  a.Drain(d, t0 + 3ms);
  EXPECT_EQ(a.MakeRoom(t0 + 4ms).evict, d);
  a.Close(d);
  const auto w3 = a.Open(t0 + 4ms);
  EXPECT_EQ(a.MakeRoom(t0 + 5ms).evict, w1);
  a.Busy(w1);
  EXPECT_EQ(a.MakeRoom(t0 + 5ms).evict, w2);
  a.Wait(w1, t0 + 6ms);  // its reply is written: waiting again, the newest
  a.Busy(w2);
  a.Busy(w3);
  EXPECT_EQ(a.MakeRoom(t0 + 7ms).evict, w1);
  a.Busy(w1);
  const Admission::Room none = a.MakeRoom(t0 + 8ms);
  EXPECT_FALSE(none.admit);
  EXPECT_EQ(a.RoomAt(), Admission::kNever);
}

TEST(AdmissionTest, EvictionGraceDelaysTheVictim) {
  Admission::Limits l = Small();
  l.max_connections = 1;
  l.eviction_grace = 100ms;
  Admission a(l);
  a.Open(t0);
  EXPECT_FALSE(a.MakeRoom(t0 + 99ms).admit);
  EXPECT_EQ(a.RoomAt(), t0 + 100ms);
  EXPECT_TRUE(a.MakeRoom(t0 + 100ms).admit);
}

// Bodies within small_body are free; larger ones are charged their length while it fits, and
// queue first come, first served otherwise; every release grants what fits, in order.
TEST(AdmissionTest, BodiesAreChargedOrQueuedInOrder) {
  Admission::Limits l = Small();
  l.max_connections = 0;
  Admission a(l);
  const auto s = a.Open(t0), b1 = a.Open(t0), b2 = a.Open(t0), b3 = a.Open(t0), b4 = a.Open(t0);
  EXPECT_TRUE(a.AskBody(s, 100));
  EXPECT_EQ(a.buffered_body_bytes(), 0u);
  EXPECT_TRUE(a.AskBody(b1, 600));
  EXPECT_FALSE(a.AskBody(b2, 500));
  EXPECT_FALSE(a.AskBody(b3, 300));  // would fit, but b2 asked first
  EXPECT_EQ(a.body_queue(), 2u);
  EXPECT_EQ(a.PopGranted(), 0u);
  EXPECT_FALSE(a.AskBody(b4, 250));
  a.Busy(b1);  // complete: b2 and b3 fit now; b4 not
  EXPECT_EQ(a.PopGranted(), b2);
  EXPECT_EQ(a.PopGranted(), b3);
  EXPECT_EQ(a.PopGranted(), 0u);
  EXPECT_EQ(a.buffered_body_bytes(), 800u);
  EXPECT_EQ(a.body_queue(), 1u);
  a.Close(b4);  // a queued body's connection closes: withdrawn
  EXPECT_EQ(a.body_queue(), 0u);
  a.Close(b2);
  a.Drain(b3, t0);
  EXPECT_EQ(a.buffered_body_bytes(), 0u);
  EXPECT_EQ(a.peak_body_bytes(), 800u);
}

// A body larger than the whole budget is granted alone rather than never.
TEST(AdmissionTest, ABodyOverTheLimitGoesAlone) {
  Admission::Limits l = Small();
  l.max_connections = 0;
  Admission a(l);
  const auto x = a.Open(t0), y = a.Open(t0);
  EXPECT_TRUE(a.AskBody(x, 200));
  EXPECT_FALSE(a.AskBody(y, 5000));
  a.Close(x);
  EXPECT_EQ(a.PopGranted(), y);
  EXPECT_EQ(a.buffered_body_bytes(), 5000u);
}

}  // namespace
}  // namespace sedna::http
