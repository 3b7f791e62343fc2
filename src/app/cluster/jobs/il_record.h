// The durable record of one IL job: the core state plus the job's read cursor over its dataset
// index. Stored as JSON in lc_state(scope "il", key "<ns>/incrementallearningjob/<name>").
#pragma once

#include <string>

#include "adapters/dataset/index_reader.h"
#include "core/il_job.h"
#include "core/ll_job.h"
#include "core/status.h"

namespace sedna::app {

struct IlRecord {
  core::il::State state;
  dataset::IndexCursor cursor;
};

std::string EncodeIlRecord(const IlRecord& r);
Result<IlRecord> DecodeIlRecord(const std::string& json);

// The durable record of one LL job (scope "ll").
struct LlRecord {
  core::ll::State state;
  dataset::IndexCursor cursor;
};

std::string EncodeLlRecord(const LlRecord& r);
Result<LlRecord> DecodeLlRecord(const std::string& json);

// Dataset counter record (scope "dataset"): cursor for numberOfSamples and the last value sent.
struct DatasetRecord {
  dataset::IndexCursor cursor;
  int64_t reported = 0;
};
std::string EncodeDatasetRecord(const DatasetRecord& r);
Result<DatasetRecord> DecodeDatasetRecord(const std::string& json);

}  // namespace sedna::app
