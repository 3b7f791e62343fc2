#include "samples.h"

#include <cstdio>

#include "core/split.h"

namespace sedna::testing {

std::string IndexLine(int n, const std::string& dir, size_t pad) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "%s/%06d.jpg %d,%d,%d,%d,1", dir.c_str(), n, n % 97, n % 89,
                n % 83 + 100, n % 79 + 100);
  std::string s = buf;
  if (pad > 0) s += " " + std::string(pad, 'x');
  return s;
}

std::string IndexLines(int from, int to) {
  std::string s;
  for (int n = from; n <= to; ++n) s += IndexLine(n) + "\n";
  return s;
}

std::vector<std::string> IndexLineList(int from, int to, const std::string& dir, size_t pad) {
  std::vector<std::string> v;
  for (int n = from; n <= to; ++n) v.push_back(IndexLine(n, dir, pad));
  return v;
}

std::pair<std::string, std::string> Split(int from, int to, double p) {
  std::string train, eval;
  for (int n = from; n <= to; ++n) {
    (core::IsTrainSample(p, n) ? train : eval) += IndexLine(n) + "\n";
  }
  return {train, eval};
}

std::pair<std::string, std::string> Split(const std::vector<std::string>& seq, double p) {
  std::string train, eval;
  for (size_t i = 0; i < seq.size(); ++i) {
    (core::IsTrainSample(p, static_cast<int64_t>(i) + 1) ? train : eval) += seq[i] + "\n";
  }
  return {train, eval};
}

std::string CsvRow(int64_t n) {
  static const char* const kSeasons[] = {"Summer", "Autumn", "Winter", "Spring"};
  static const char* const kPrefs[] = {"no change", "warmer", "cooler"};
  char buf[128];
  std::snprintf(buf, sizeof buf, "%lld,%s,%lld,%lld.%lld,%s", static_cast<long long>(n),
                kSeasons[n % 4], static_cast<long long>(n % 2 + 1),
                static_cast<long long>(18 + n % 12), static_cast<long long>(n % 10), kPrefs[n % 3]);
  return buf;
}

std::string Csv(int n) {
  std::string s = std::string(kCsvHeader) + "\n";
  for (int i = 1; i <= n; ++i) s += CsvRow(i) + "\n";
  return s;
}

std::string CsvSplitRows(int from, int to, double p, bool train) {
  std::string s;
  for (int n = from; n <= to; ++n) {
    if (core::IsTrainSample(p, n) == train) s += CsvRow(n) + "\n";
  }
  return s;
}

}  // namespace sedna::testing
