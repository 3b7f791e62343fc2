#include "app/cluster/observation/status_view.h"

#include <cstdio>
#include <nlohmann/json.hpp>

namespace sedna::app {

using Json = nlohmann::json;

namespace {

std::string MetricsSummary(const core::Metrics& m) {
  std::string out;
  for (const auto& [k, v] : m) {
    if (!out.empty()) out += ",";
    char buf[64];
    if (v.kind == core::MetricValue::Kind::kNumber) {
      std::snprintf(buf, sizeof buf, "%s=%.3g", k.c_str(), v.number);
      out += buf;
    } else if (v.kind == core::MetricValue::Kind::kList && !v.list.empty()) {
      double sum = 0;
      for (double x : v.list) sum += x;
      std::snprintf(buf, sizeof buf, "%s~%.3g", k.c_str(), sum / v.list.size());
      out += buf;
    }
  }
  return out;
}

}  // namespace

void FillIlView(const core::il::State& s, int64_t last_condition, JobView& v) {
  v.round = s.round;
  v.samples_waiting = s.train_pending.count;
  v.samples_seen = s.samples_seen;
  v.work = core::il::WorkName(s.work);
  if (s.work == core::il::Work::kNone && last_condition >= 0 &&
      (last_condition == s.answered_train_waiting || last_condition == s.answered_eval_waiting ||
       last_condition == s.answered_deploy_waiting)) {
    v.work = "reported";
  }
  v.last_decision = s.last_decision;
  v.decisions = s.decisions;
  v.decided_round = s.decided_round;
  v.last_error = s.last_error;
  v.last_eval = s.last_eval_results;
  if (!s.deployments.empty()) {
    v.deployed_url = s.deployments.back().url;
    v.deployed_at = s.deployments.back().at;
  }
}

void FillLlView(const core::ll::State& s, JobView& v) {
  v.round = s.version;
  v.samples_waiting = s.train_pending.count;
  v.samples_seen = s.samples_seen;
  v.work = std::string(core::ll::PhaseName(s.phase)) + "/" + core::il::WorkName(s.work);
  v.last_error = s.last_error;
  v.decisions = s.deploy_count;
  if (!s.deployments.empty()) {
    v.deployed_url = s.deployments.back().url;
    v.deployed_at = s.deployments.back().at;
    v.decided_round = s.deployments.back().round;
  }
}

std::string EncodeStatusJson(const std::vector<JobView>& jobs) {
  Json arr = Json::array();
  for (const auto& j : jobs) {
    Json ev = Json::array();
    for (const auto& m : j.last_eval) {
      Json metrics = Json::object();
      for (const auto& [k, v] : m.metrics) {
        if (v.kind == core::MetricValue::Kind::kNumber) metrics[k] = v.number;
        if (v.kind == core::MetricValue::Kind::kList) metrics[k] = v.list;
      }
      ev.push_back(Json{{"url", m.url}, {"format", m.format}, {"metrics", metrics}});
    }
    arr.push_back(Json{{"kind", j.kind},
                       {"namespace", j.ns},
                       {"name", j.name},
                       {"stage", j.stage},
                       {"round", j.round},
                       {"samplesWaiting", j.samples_waiting},
                       {"samplesSeen", j.samples_seen},
                       {"work", j.work},
                       {"lastDecision", j.last_decision},
                       {"decisions", j.decisions},
                       {"decidedRound", j.decided_round},
                       {"lastError", j.last_error},
                       {"lastEval", ev},
                       {"deployedUrl", j.deployed_url},
                       {"deployedAt", j.deployed_at},
                       {"outputDirs", j.output_dirs}});
  }
  return Json{{"jobs", arr}}.dump(1) + "\n";
}

Result<std::vector<JobView>> DecodeStatusJson(const std::string& text) {
  try {
    Json j = Json::parse(text);
    std::vector<JobView> out;
    for (const auto& e : j.at("jobs")) {
      JobView v;
      v.kind = e.value("kind", "");
      v.ns = e.value("namespace", "");
      v.name = e.value("name", "");
      v.stage = e.value("stage", "");
      v.round = e.value("round", int64_t{0});
      v.samples_waiting = e.value("samplesWaiting", int64_t{0});
      v.samples_seen = e.value("samplesSeen", int64_t{0});
      v.work = e.value("work", "");
      v.last_decision = e.value("lastDecision", "");
      v.decisions = e.value("decisions", int64_t{0});
      v.decided_round = e.value("decidedRound", int64_t{0});
      v.last_error = e.value("lastError", "");
      for (const auto& m : e.value("lastEval", Json::array())) {
        core::ModelRef r;
        r.url = m.value("url", "");
        r.format = m.value("format", "");
        for (auto it = m["metrics"].begin(); it != m["metrics"].end(); ++it) {
          if (it->is_number()) r.metrics[it.key()] = core::MetricValue::Number(it->get<double>());
          if (it->is_array()) {
            r.metrics[it.key()] = core::MetricValue::List(it->get<std::vector<double>>());
          }
        }
        v.last_eval.push_back(r);
      }
      v.deployed_url = e.value("deployedUrl", "");
      v.deployed_at = e.value("deployedAt", "");
      v.output_dirs = e.value("outputDirs", "");
      out.push_back(std::move(v));
    }
    return out;
  } catch (const std::exception& e) {
    return Result<std::vector<JobView>>::Error(std::string("status: ") + e.what());
  }
}

std::string RenderMetrics(const Metrics& m) {
  std::string s;
  auto add = [&](const char* name, const char* type, const char* help, int64_t v) {
    s += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n" +
         name + " " + std::to_string(v) + "\n";
  };
  add("sedna_lc_gm_frames_received_total", "counter", "Frames received from the GM.",
      m.frames_received);
  add("sedna_lc_gm_frames_sent_total", "counter", "Frames written to the GM.", m.frames_sent);
  add("sedna_lc_gm_frames_rejected_total", "counter", "GM frames that failed to decode.",
      m.rejected_frames);
  add("sedna_lc_objects_rejected_total", "counter", "Resources rejected as invalid.",
      m.rejected_objects);
  add("sedna_lc_worker_posts_total", "counter", "Worker API requests.", m.worker_posts);
  add("sedna_lc_samples_ingested_total", "counter", "Dataset samples spooled for jobs.",
      m.samples_ingested);
  add("sedna_lc_index_bytes_read_total", "counter",
      "Bytes read from dataset index files (counts and ingest).", m.index_bytes_read);
  add("sedna_lc_store_commits_total", "counter", "Database transactions committed.",
      m.store_commits);
  add("sedna_lc_s3_index_polls_total", "counter", "Syncs of S3 dataset indexes.", m.s3_index_polls);
  add("sedna_lc_s3_index_requests_total", "counter", "S3 requests sent by index syncs.",
      m.s3_index_requests);
  add("sedna_lc_s3_index_bytes_total", "counter", "S3 index bytes fetched.", m.s3_index_bytes);
  add("sedna_lc_gm_connects_total", "counter", "Successful GM connections.", m.gm_connects);
  add("sedna_lc_gm_connected", "gauge", "1 while connected to the GM.", m.gm_connected ? 1 : 0);
  add("sedna_lc_outbox_messages", "gauge", "Upstream messages waiting to be sent.", m.outbox_count);
  add("sedna_lc_outbox_bytes", "gauge", "Bytes of upstream messages waiting.", m.outbox_bytes);
  add("sedna_lc_reports_pending", "gauge",
      "Worker reports acknowledged and not yet committed (in the intake journal).",
      m.reports_pending);
  add("sedna_lc_jobs", "gauge", "Jobs known to this LC.", m.jobs);
  return s;
}

std::string RenderStatusTable(const std::vector<JobView>& jobs) {
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"KIND", "NAMESPACE/NAME", "STAGE", "ROUND", "WAITING", "WORK",
                  "LAST EVAL [new | deployed]", "DEPLOYED", "NOTE"});
  for (const auto& j : jobs) {
    std::string eval;
    for (size_t i = 0; i < j.last_eval.size() && i < 2; ++i) {
      if (i) eval += " | ";
      eval += MetricsSummary(j.last_eval[i].metrics);
    }
    std::string deployed = j.deployed_url.empty() ? "-" : j.deployed_url + " @ " + j.deployed_at;
    std::string note = !j.last_error.empty() ? j.last_error : j.last_decision;
    if (j.last_error.empty() && !j.output_dirs.empty() && j.output_dirs != "made" &&
        j.output_dirs != "making") {
      note = "spec.outputDir: " + j.output_dirs;
    }
    rows.push_back({j.kind == "IncrementalLearningJob" ? "IL" : "LL", j.ns + "/" + j.name, j.stage,
                    std::to_string(j.round), std::to_string(j.samples_waiting),
                    j.work.empty() ? "-" : j.work, eval.empty() ? "-" : eval, deployed,
                    note.empty() ? "-" : note});
  }
  return RenderAlignedRows(rows);
}

std::string RenderAlignedRows(const std::vector<std::vector<std::string>>& rows) {
  if (rows.empty()) return "";
  std::vector<size_t> w(rows[0].size(), 0);
  for (const auto& r : rows) {
    for (size_t i = 0; i < r.size() && i < w.size(); ++i) w[i] = std::max(w[i], r[i].size());
  }
  std::string out;
  for (const auto& r : rows) {
    for (size_t i = 0; i < r.size(); ++i) {
      out += r[i];
      if (i + 1 < r.size() && i < w.size()) out += std::string(w[i] - r[i].size() + 2, ' ');
    }
    out += "\n";
  }
  return out;
}

}  // namespace sedna::app
