// Early reports (early_reports.h): the bounded, expiring store of reports kept for jobs not
// known yet, and its rows in lc_state.
#include "app/cluster/intake/early_reports.h"

#include "adapters/log/log.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>

namespace sedna::app {

namespace {

// A release whose Apply failed (the database refused the commit) is tried again after this long.
constexpr int64_t kRetryMs = 1000;

std::string RowKey(uint64_t seq) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%020llu", static_cast<unsigned long long>(seq));
  return buf;
}

// "<received_ms>\n<owner>\n<worker>\n<what>\n<after_uid>\n<body>": the body, last, may hold
// newlines.
std::string EncodeRow(const EarlyReport& r) {
  return std::to_string(r.received_ms) + "\n" + r.owner + "\n" + r.worker + "\n" + r.what + "\n" +
         r.after_uid + "\n" + r.body;
}

bool DecodeRow(const std::string& key, const std::string& v, EarlyReport* r) {
  auto [kend, kec] = std::from_chars(key.data(), key.data() + key.size(), r->seq);
  if (kec != std::errc() || kend != key.data() + key.size() || r->seq == 0) return false;
  std::string_view rest(v);
  std::string_view fields[5];
  for (auto& f : fields) {
    const size_t nl = rest.find('\n');
    if (nl == std::string_view::npos) return false;
    f = rest.substr(0, nl);
    rest.remove_prefix(nl + 1);
  }
  auto [tend, tec] =
      std::from_chars(fields[0].data(), fields[0].data() + fields[0].size(), r->received_ms);
  if (tec != std::errc() || tend != fields[0].data() + fields[0].size()) return false;
  r->owner = std::string(fields[1]);
  r->worker = std::string(fields[2]);
  r->what = std::string(fields[3]);
  r->after_uid = std::string(fields[4]);
  r->body = std::string(rest);
  return !r->owner.empty();
}

class StoreRows : public EarlyReportRows {
 public:
  explicit StoreRows(store::Store& store) : store_(store) {}
  Result<std::vector<EarlyReport>> Load(std::vector<std::string>* skipped) override {
    auto rows = store_.LoadStates(kScopeEarly);
    if (!rows.ok()) return rows.status();
    std::vector<EarlyReport> out;
    for (const auto& [k, v] : *rows) {
      EarlyReport r;
      if (DecodeRow(k, v, &r)) {
        out.push_back(std::move(r));
      } else {
        skipped->push_back(k);
      }
    }
    return out;
  }
  Status Put(const EarlyReport& r) override {
    return store_.Transact([&](store::Store::Tx& tx) {
      return tx.PutState(kScopeEarly, RowKey(r.seq), EncodeRow(r));
    });
  }
  Status Erase(const std::vector<uint64_t>& seqs, store::Store::Tx* tx) override {
    auto erase = [&](store::Store::Tx& t) -> Status {
      for (uint64_t s : seqs) {
        if (Status st = t.DeleteState(kScopeEarly, RowKey(s)); !st.ok()) return st;
      }
      return Status::Ok();
    };
    if (tx) return erase(*tx);
    return store_.Transact(erase);
  }

 private:
  store::Store& store_;
};

}  // namespace

std::unique_ptr<EarlyReportRows> StoreEarlyRows(store::Store& store) {
  return std::make_unique<StoreRows>(store);
}

const char* HeldName(EarlyReports::Held h) {
  switch (h) {
    case EarlyReports::Held::kKept:
      return "kept";
    case EarlyReports::Held::kOwnerFull:
      return "owner full";
    case EarlyReports::Held::kTotalFull:
      return "total full";
    case EarlyReports::Held::kFailed:
      return "failed";
  }
  return "?";
}

void EarlyReports::set_timer(boost::asio::io_context& io) {
  timer_ = std::make_unique<boost::asio::steady_timer>(io);
  Arm();
}

Status EarlyReports::Open(std::unique_ptr<EarlyReportRows> rows) {
  rows_ = std::move(rows);
  std::vector<std::string> skipped;
  auto loaded = rows_->Load(&skipped);
  if (!loaded.ok()) return loaded.status().With("reports kept before their job arrived");
  for (const std::string& k : skipped) {
    spdlog::warn("lc_state {}/{}: unreadable kept worker report skipped", kScopeEarly, k);
  }
  std::sort(loaded->begin(), loaded->end(),
            [](const EarlyReport& a, const EarlyReport& b) { return a.seq < b.seq; });
  for (EarlyReport& r : *loaded) Add(std::move(r));
  if (count_ > 0) {
    spdlog::info(
        "{} worker report(s) kept before their job arrived, for {} job(s), from the last run",
        count_, by_owner_.size());
  }
  Arm();
  return Status::Ok();
}

void EarlyReports::ReleaseKnown(
    const std::function<std::optional<std::string>(const std::string& owner)>& known) {
  std::vector<std::string> owners;
  std::map<std::string, std::string> uids;
  for (const auto& [o, v] : by_owner_) {
    if (auto uid = known(o)) {
      owners.push_back(o);
      uids[o] = *uid;
    }
  }
  // Owners in the order of their oldest report.
  std::sort(owners.begin(), owners.end(), [this](const std::string& a, const std::string& b) {
    return by_owner_.at(a).front().seq < by_owner_.at(b).front().seq;
  });
  for (const std::string& o : owners) Release(o, uids[o]);
}

void EarlyReports::Add(EarlyReport r) {
  next_seq_ = std::max(next_seq_, r.seq + 1);
  ++count_;
  bytes_ += r.bytes();
  std::string owner = r.owner;
  by_owner_[owner].push_back(std::move(r));
}

void EarlyReports::Remove(const std::string& owner, const std::set<uint64_t>& seqs) {
  auto it = by_owner_.find(owner);
  if (it == by_owner_.end()) return;
  auto& v = it->second;
  for (auto r = v.begin(); r != v.end();) {
    if (seqs.count(r->seq)) {
      --count_;
      bytes_ -= r->bytes();
      r = v.erase(r);
    } else {
      ++r;
    }
  }
  if (v.empty()) {
    by_owner_.erase(it);
    retry_.erase(owner);
    arrived_uid_.erase(owner);
  }
}

size_t EarlyReports::kept_for(const std::string& owner) const {
  auto it = by_owner_.find(owner);
  return it == by_owner_.end() ? 0 : it->second.size();
}

EarlyReports::HoldResult EarlyReports::Hold(const std::string& owner, std::string_view worker,
                                            std::string_view what, std::string_view body,
                                            std::string_view after_uid) {
  if (!rows_) return {Held::kFailed, "the store of early reports is not open (read-only?)"};
  const size_t n = kept_for(owner);
  if (n >= limits_.per_owner) {
    return {Held::kOwnerFull, std::to_string(n) + " reports are kept already for " + owner +
                                  ", the most per job (--early-reports-per-job)"};
  }
  const size_t b = worker.size() + what.size() + body.size() + after_uid.size();
  if (count_ >= limits_.total) {
    return {Held::kTotalFull, std::to_string(count_) +
                                  " reports are kept already for jobs not known yet, the most in "
                                  "total (--early-reports-max)"};
  }
  if (bytes_ + b > limits_.total_bytes) {
    return {Held::kTotalFull, "keeping it would hold " + std::to_string(bytes_ + b) +
                                  " bytes of reports for jobs not known yet, above "
                                  "--early-reports-max-bytes (" +
                                  std::to_string(limits_.total_bytes) + ")"};
  }
  EarlyReport r{next_seq_,         owner,  std::string(worker),   std::string(what),
                std::string(body), now_(), std::string(after_uid)};
  if (Status s = rows_->Put(r); !s.ok()) return {Held::kFailed, s.message()};
  Add(std::move(r));
  Arm();
  return {Held::kKept, ""};
}

void EarlyReports::Release(const std::string& owner) {
  auto u = arrived_uid_.find(owner);
  Release(owner, u == arrived_uid_.end() ? std::string() : u->second);
}

void EarlyReports::Release(const std::string& owner, const std::string& uid) {
  if (stopped_ || !apply_) return;
  auto it = by_owner_.find(owner);
  if (it == by_owner_.end()) {
    arrived_uid_.erase(owner);
    return;
  }
  arrived_uid_[owner] = uid;
  // Reports kept after a job of another uid was deleted belong to that job, not to this one.
  std::vector<uint64_t> stale;
  for (const EarlyReport& r : it->second) {
    if (r.after_uid.empty() || r.after_uid == uid) continue;
    spdlog::warn(
        "{}: the {} report of worker {}, kept after the job of uid {} was deleted, is that job's: "
        "the job that arrived is another (uid {}); dropped",
        owner, r.what, r.worker, r.after_uid, uid);
    stale.push_back(r.seq);
  }
  if (!stale.empty()) {
    if (Status s = rows_->Erase(stale, nullptr); !s.ok()) {
      spdlog::error("{}: erasing stale early reports: {}", owner, s.message());
      retry_.insert(owner);
      Arm();
      return;
    }
    Remove(owner, std::set<uint64_t>(stale.begin(), stale.end()));
    it = by_owner_.find(owner);
    if (it == by_owner_.end()) return;
  }
  const std::vector<EarlyReport> batch = it->second;
  std::vector<uint64_t> seqs;
  seqs.reserve(batch.size());
  for (const EarlyReport& r : batch) seqs.push_back(r.seq);
  retry_.erase(owner);
  const Applied a =
      apply_(batch, [this, seqs](store::Store::Tx* tx) { return rows_->Erase(seqs, tx); });
  switch (a) {
    case Applied::kApplied:
      Remove(owner, std::set<uint64_t>(seqs.begin(), seqs.end()));
      spdlog::info("{}: {} worker report(s) kept before the job arrived applied, in arrival order",
                   owner, seqs.size());
      Arm();
      break;
    case Applied::kLater:
      break;
    case Applied::kFailed:
      retry_.insert(owner);
      Arm();
      break;
  }
}

size_t EarlyReports::Expire() {
  if (!rows_) return 0;
  const int64_t now = now_();
  std::map<std::string, std::set<uint64_t>> gone;
  std::vector<uint64_t> seqs;
  for (const auto& [owner, v] : by_owner_) {
    for (const EarlyReport& r : v) {
      if (r.received_ms + limits_.ttl_ms > now) continue;
      gone[owner].insert(r.seq);
      seqs.push_back(r.seq);
    }
  }
  size_t n = 0;
  if (!seqs.empty()) {
    if (Status s = rows_->Erase(seqs, nullptr); !s.ok()) {
      spdlog::error("early worker reports: erasing {} expired: {}; tried again later", seqs.size(),
                    s.message());
    } else {
      for (const auto& [owner, set] : gone) {
        for (const EarlyReport& r : by_owner_.at(owner)) {
          if (!set.count(r.seq)) continue;
          spdlog::warn(
              "{}: the {} report of worker {} expired after {} s unapplied: this LC never "
              "received the job (--early-report-ttl {} s); dropped",
              owner, r.what, r.worker, (now - r.received_ms) / 1000, limits_.ttl_ms / 1000);
        }
        Remove(owner, set);
        n += set.size();
      }
    }
  }
  const std::set<std::string> retry = retry_;
  for (const std::string& o : retry) Release(o);
  Arm();
  return n;
}

std::optional<int64_t> EarlyReports::next_expiry_ms() const {
  std::optional<int64_t> due;
  for (const auto& [o, v] : by_owner_) {
    for (const EarlyReport& r : v) {
      const int64_t t = r.received_ms + limits_.ttl_ms;
      if (!due || t < *due) due = t;
    }
  }
  return due;
}

void EarlyReports::Arm() {
  if (!timer_ || stopped_) return;
  std::optional<int64_t> due = next_expiry_ms();
  const int64_t now = now_();
  if (!retry_.empty() && (!due || *due > now + kRetryMs)) due = now + kRetryMs;
  if (!due) {
    timer_->cancel();
    return;
  }
  timer_->expires_after(std::chrono::milliseconds(std::max<int64_t>(0, *due - now)));
  timer_->async_wait([this](const boost::system::error_code& ec) {
    if (ec || stopped_) return;
    Expire();
  });
}

void EarlyReports::Stop() {
  stopped_ = true;
  if (timer_) timer_->cancel();
}

}  // namespace sedna::app
