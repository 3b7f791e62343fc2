#include "adapters/log/logging.h"

// First: fmt's extern declarations before spdlog's headers.
#include "adapters/log/log.h"

#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <mutex>
#include <nlohmann/json.hpp>

namespace sedna::app {
namespace {

// {"time":"...","level":"info","msg":"..."} per line on stderr.
class JsonSink : public spdlog::sinks::base_sink<std::mutex> {
 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    using namespace std::chrono;
    auto t = system_clock::to_time_t(msg.time);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[64];  // room for any int year (-Wformat-truncation)
    auto ms = duration_cast<milliseconds>(msg.time.time_since_epoch()).count() % 1000;
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03lldZ", tm.tm_year + 1900,
                  tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                  static_cast<long long>(ms));
    nlohmann::json j{{"time", buf},
                     {"level", std::string(spdlog::level::to_string_view(msg.level).data(),
                                           spdlog::level::to_string_view(msg.level).size())},
                     {"msg", std::string(msg.payload.data(), msg.payload.size())}};
    std::string line = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    std::fwrite(line.data(), 1, line.size(), stderr);
  }
  void flush_() override { std::fflush(stderr); }
};

}  // namespace

void SetupLogging(bool json, const std::string& level) {
  std::shared_ptr<spdlog::logger> logger;
  if (json) {
    logger = std::make_shared<spdlog::logger>("sedna-lc", std::make_shared<JsonSink>());
  } else {
    logger = spdlog::stderr_color_mt("sedna-lc");
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%-5l%$ %v");
  }
  logger->set_level(spdlog::level::from_str(level));
  logger->flush_on(spdlog::level::trace);
  spdlog::set_default_logger(logger);
}

}  // namespace sedna::app
