// What the unit tests of the controller's parts share: a Context over a real store in a fresh
// temporary directory, a FakeClock, and an io_context the test runs itself (RunReady,
// RunUntil): no sleeps, no whole controller.
#pragma once

#include <utility>  // before Asio (Boost 1.74 + g++ 12)

#include <gtest/gtest.h>
#include <stdlib.h>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "adapters/clock/fake_clock.h"
#include "adapters/json/upstream_codec.h"
#include "adapters/store/store.h"
#include "app/cluster/context.h"

namespace sedna::app::testing {

// A directory of its own, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    std::string tmpl =
        (std::filesystem::temp_directory_path() / "sedna-cluster-test.XXXXXX").string();
    if (::mkdtemp(tmpl.data()) != nullptr) path_ = tmpl;
    EXPECT_FALSE(path_.empty()) << "mkdtemp failed";
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A Context as the composition root builds it (the store opened with the outbox's informational
// rule and the context's clock), with `cfg.db_path` in its own temporary directory. Reopen() is a
// restart: the store (and so the sent mark) is closed and opened again over the same files.
class ClusterTestEnv {
 public:
  explicit ClusterTestEnv(Config cfg = {}) : cfg_(WithPaths(std::move(cfg), dir_.path())) {
    ctx_ = std::make_unique<Context>(io, cfg_, clock);
    OpenStore();
  }

  Context& ctx() { return *ctx_; }
  store::Store& store() { return *ctx_->store; }
  const std::string& dir() const { return dir_.path(); }

  // Closes the store and the context (as a stopped or killed LC leaves them) and opens both again.
  void Reopen() {
    ctx_->store.reset();
    ctx_ = std::make_unique<Context>(io, cfg_, clock);
    OpenStore();
  }

  // Runs the handlers that are ready now, and those they make ready, until none is; never waits
  // for a timer or for the pool.
  void RunReady() {
    for (;;) {
      io.restart();
      if (io.poll() == 0) return;
    }
  }

  // Runs the loop until `done` holds, waiting for handlers posted by the pool (an awaited event,
  // not a sleep); false if it does not hold within 20 s. Then runs what is ready.
  bool RunUntil(const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    auto guard = boost::asio::make_work_guard(io);
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      io.restart();
      io.run_one_for(std::chrono::milliseconds(100));
    }
    guard.reset();
    RunReady();
    return true;
  }

  // The unsent outbox frames, oldest first.
  std::vector<std::string> OutboxFrames() {
    std::vector<std::string> out;
    auto peek = store().OutboxPeek(10000);
    EXPECT_TRUE(peek.ok()) << peek.message();
    if (peek.ok()) {
      for (auto& e : *peek) out.push_back(e.frame);
    }
    return out;
  }

  boost::asio::io_context io;
  sedna::clock::FakeClock clock;

 private:
  static Config WithPaths(Config c, const std::string& dir) {
    c.db_path = dir + "/db/database.db";
    if (c.spool_dir.empty()) c.spool_dir = dir + "/spool";
    c.rootfs = dir + "/host";
    c.status_port = 0;
    return c;
  }
  void OpenStore() {
    store::StoreOptions so;
    so.outbox_informational = json::IsInformationalFrame;
    so.clock = &clock;
    auto st = store::Store::Open(cfg_.db_path, so);
    ASSERT_TRUE(st.ok()) << st.message();
    ctx_->store = std::move(*st);
  }

  TempDir dir_;
  Config cfg_;
  std::unique_ptr<Context> ctx_;
};

}  // namespace sedna::app::testing
