// The samples the integration tests append to a dataset's index, and the train/eval files the LC
// must write for them by the running-totals split (design-notes §D4, core::IsTrainSample).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace sedna::testing {

// Index line n (a txt dataset): "<dir>/<n, 6 digits>.jpg x,y,w,h,1", then " " and `pad` x's when
// pad > 0. Every n gives a distinct line.
std::string IndexLine(int n, const std::string& dir = "train_images", size_t pad = 0);
// Index lines from..to of "train_images", each ended by "\n".
std::string IndexLines(int from, int to);
// Index lines from..to, one per element, without line ends.
std::vector<std::string> IndexLineList(int from, int to, const std::string& dir = "train_images",
                                       size_t pad = 0);

// The train and eval files (lines ended by "\n") of IndexLines(from, to), where sample n is the
// job's n-th new sample.
std::pair<std::string, std::string> Split(int from, int to, double p);
// The train and eval files of `seq`, the job's new samples 1..seq.size() in order.
std::pair<std::string, std::string> Split(const std::vector<std::string>& seq, double p = 0.8);

// The header line of the lifelong-learning example's CSV dataset (no line end).
inline constexpr const char* kCsvHeader =
    "Sample,Season,Cooling startegy_building level,Air temperature (C),Thermal preference";
// CSV row n (1-based) of that dataset; every row is distinct.
std::string CsvRow(int64_t n);
// The header line plus rows 1..n, each ended by "\n".
std::string Csv(int n);
// Rows from..to (no header) that the split with `p` sends to train (or to eval), row n being the
// job's n-th sample.
std::string CsvSplitRows(int from, int to, double p, bool train);

}  // namespace sedna::testing
