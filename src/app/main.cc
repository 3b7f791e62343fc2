// sedna-lc: cluster mode (Sedna's environment contract) and the `status` subcommand.
#include <utility>  // before Asio (Boost 1.74 + g++ 12)

#include <spdlog/spdlog.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <cstring>
#include <iostream>
#include <map>

#include "app/config.h"
#include "app/controller.h"
#include "app/logging.h"
#include "app/status_cmd.h"

extern char** environ;

namespace {

std::map<std::string, std::string> Environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq) env[std::string(*e, static_cast<size_t>(eq - *e))] = std::string(eq + 1);
  }
  return env;
}

int RunDaemon(const sedna::app::Config& cfg) {
  boost::asio::io_context io(1);
  sedna::app::Controller controller(io, cfg);
  if (sedna::Status s = controller.Start(); !s.ok()) {
    spdlog::critical("cannot start: {}", s.message());
    controller.Stop();
    return 2;
  }
  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& ec, int sig) {
    if (ec) return;
    spdlog::info("signal {}: shutting down", sig);
    controller.Stop();
    io.stop();
  });
  io.run();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::string sub;
  if (!args.empty() && (args[0] == "status" || args[0] == "jobs")) {
    sub = args[0];
    args.erase(args.begin());
  }
  auto cfg = sedna::app::LoadConfig(Environment(), args);
  if (!cfg.ok()) {
    std::cerr << "sedna-lc: " << cfg.message() << "\n";
    return 2;
  }
  if (!sub.empty()) return sedna::app::RunStatusCommand(*cfg, std::cout, std::cerr);
  sedna::app::SetupLogging(cfg->log_json, cfg->log_level);
  return RunDaemon(*cfg);
}
