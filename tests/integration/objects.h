// The Sedna objects the GM sends to the LC in the integration tests (docs/protocol.md §P2), built
// as the GM marshals them. Every default is the value most tests use; a test that needs another
// passes it, and gets exactly the object it built before the builders were shared (the LC's
// answers are compared byte for byte, and they quote these objects).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gm_emulator.h"

namespace sedna::testing {

inline constexpr const char* kUid = "7b3c2f0e-1111-4c3a-9c1e-000000000001";
inline constexpr const char* kIlJobName = "helmet-detection-demo";
inline constexpr const char* kIlDatasetName = "incremental-dataset";
inline constexpr const char* kIlIndexUrl = "/data/train_data.txt";
inline constexpr const char* kBaseModelUrl = "/models/base_model";
inline constexpr const char* kDeployModelUrl = "/models/deploy_model/saved_model.pb";
inline constexpr const char* kBarrierIndexUrl = "/data/barrier.txt";
// The image of the incremental-learning example's workers.
inline constexpr const char* kExampleImage = "example:v0.1.0";
// The image of the lifelong-learning example's workers (§P2.4).
inline constexpr const char* kAtciiImage =
    "kubeedge/sedna-example-lifelong-learning-atcii-classifier:v0.3.0";

// metadata: name in namespace "default", the given uid, resourceVersion 12345, generation 1 and
// a fixed creationTimestamp.
Json Meta(const std::string& name, const std::string& uid = kUid);

// A Dataset on edge-node with numberOfSamples 0.
Json DatasetObject(const std::string& name = kIlDatasetName, const std::string& url = kIlIndexUrl,
                   const std::string& format = "txt", const std::string& uid = kUid);

Json ModelObject(const std::string& name, const std::string& url, const std::string& format,
                 const std::string& uid = kUid);

// A pod template on edge-node with one container `name` running `script` in `image`;
// imagePullPolicy is left out when `pull_policy` is empty.
Json Template(const std::string& name, const std::string& script,
              const std::string& image = kExampleImage, const std::string& pull_policy = "");

// trainSpec.trigger: num_of_samples > threshold, checked every `check_period_seconds` all day.
Json TrainTrigger(int64_t threshold, int check_period_seconds = 60);

// The IL job of docs/protocol.md §P2.3 (helmet detection), and what may differ between tests.
struct IlJobSpec {
  std::string name = kIlJobName;
  std::string uid = kUid;
  std::string dataset = kIlDatasetName;
  double train_prob = 0.8;
  std::string initial_model = "initial-model";
  int64_t threshold = 500;
  int check_period_seconds = 60;
  std::string output_dir = "/output";
  // deploySpec.model.hotUpdateEnabled (and pollPeriodSeconds 60) when true; left out when false.
  bool hot_update = false;
  // evalSpec.initialEvalModel.name when non-empty; left out when empty.
  std::string initial_eval_model;
};
// Train/eval/infer workers from kExampleImage; deploy when precision_delta[0] > 0.1, with IBT.
Json IlJobObject(const IlJobSpec& spec = {});

// The LL job of docs/protocol.md §P2.4 (atcii classifier), and what may differ between tests.
struct LlJobSpec {
  std::string name = "atcii-classifier-demo";
  std::string uid = kUid;
  std::string dataset = "lifelong-dataset";
  double train_prob = 0.8;
  int64_t threshold = 300;
  int check_period_seconds = 60;
  std::string output_dir = "/output";
  std::string image = kAtciiImage;
  std::string pull_policy = "IfNotPresent";
};
Json LlJobObject(const LlJobSpec& spec = {});

// What the GM sends for an IL job now (§P4.3): nothing while the job is unchanged, else the job
// followed by the model its condition calls for (the initial model at kBaseModelUrl, or the
// deploy model at `deploy_url`).
std::vector<Json> IlDownstream(const GmJob& job, const std::string& deploy_url = kDeployModelUrl);

// The Model CRs GmEmulator::Sync sends for an IL job: the initial model at kBaseModelUrl (ckpt)
// and the deploy model at `deploy_url` (pb), as IlDownstream sends them.
void SetIlModels(GmJob& job, const std::string& deploy_url = kDeployModelUrl);

}  // namespace sedna::testing
