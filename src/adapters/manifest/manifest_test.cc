#include "adapters/manifest/manifest.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "adapters/json/go_json.h"
#include "adapters/json/resource_codec.h"
#include "adapters/json/test_util.h"

namespace sedna::manifest {
namespace {

namespace fs = std::filesystem;
using json::RawJson;
using json::testing::ReadTestdata;
using json::testing::ReplaceOnce;

// A fresh directory under the system temp dir, removed with its content on destruction.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "manifest_test.XXXXXX").string();
    if (mkdtemp(tmpl.data()) != nullptr) path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  // Writes `text` to <dir>/<name> and returns that path.
  std::string Write(const std::string& name, const std::string& text) const {
    std::string p = (fs::path(path_) / name).string();
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }

 private:
  std::string path_;
};

// Every message of `r`, for failure output.
std::string Dump(const LoadResult& r) {
  std::string out;
  for (const auto& o : r.objects) out += "object: " + o.source + " " + o.kind + "\n";
  for (const auto& w : r.warnings) out += "warning: " + w + "\n";
  for (const auto& e : r.errors) out += "error: " + e + "\n";
  return out;
}

// The member at `path` (dot-separated keys) of the JSON object `text`, compact in source order.
std::string At(const std::string& text, const std::vector<std::string>& path) {
  auto j = RawJson::Parse(text);
  if (!j.ok()) return "<bad json: " + j.message() + ">";
  const RawJson* v = &*j;
  for (const std::string& key : path) {
    v = v->Find(key);
    if (v == nullptr) return "<none>";
  }
  return v->DumpInOrder();
}

// ---- the Sedna samples ---------------------------------------------------------------------

// The helmet-detection job of build/crd-samples (§P2.3, §P10.1) as a user writes it: quoted and
// plain scalars mixed, HEM parameters, an env value that looks like a number.
constexpr const char* kIlSample = R"(apiVersion: sedna.io/v1alpha1
kind: IncrementalLearningJob
metadata:
  name: helmet-detection-demo
spec:
  initialModel:
    name: "initial-model"
  dataset:
    name: "incremental-dataset"
    trainProb: 0.8
  trainSpec:
    template:
      spec:
        nodeName: "edge-node"
        containers:
          - image: kubeedge/sedna-example-incremental-learning-helmet-detection:v0.1.0
            name: train-worker
            imagePullPolicy: IfNotPresent
            args: ["train.py"]
            env:
              - name: "batch_size"
                value: "32"
              - name: "epochs"
                value: "1"
              - name: "input_shape"
                value: "352,640"
              - name: "max_samples"
                value: "500"
    trigger:
      checkPeriodSeconds: 60
      timer:
        start: 02:00
        end: 24:00
      condition:
        operator: ">"
        threshold: 500
        metric: num_of_samples
  evalSpec:
    template:
      spec:
        nodeName: "edge-node"
        containers:
          - image: kubeedge/sedna-example-incremental-learning-helmet-detection:v0.1.0
            name: eval-worker
            imagePullPolicy: IfNotPresent
            args: ["eval.py"]
            env:
              - name: "input_shape"
                value: "352,640"
  deploySpec:
    model:
      name: "deploy-model"
    trigger:
      condition:
        operator: ">"
        threshold: 0.1
        metric: precision_delta
    hardExampleMining:
      name: "IBT"
      parameters:
        - key: "threshold_img"
          value: "0.9"
        - key: "threshold_box"
          value: "0.9"
    template:
      spec:
        nodeName: "edge-node"
        containers:
          - image: kubeedge/sedna-example-incremental-learning-helmet-detection:v0.1.0
            name: infer-worker
            imagePullPolicy: IfNotPresent
            args: ["inference.py"]
            env:
              - name: "video_url"
                value: "file://video/video.mp4"
              - name: "HE_SAVED_URL"
                value: "/he_saved_url"
            volumeMounts:
              - name: localvideo
                mountPath: /video/
            resources:
              limits:
                memory: 2Gi
        volumes:
          - name: localvideo
            hostPath:
              path: /incremental_learning/video/
              type: Directory
  outputDir: "/output"
)";

TEST(Manifest, IlSampleBecomesADecodableJob) {
  LoadResult r = LoadManifestText(kIlSample, "il.yaml");
  ASSERT_TRUE(r.errors.empty() && r.warnings.empty()) << Dump(r);
  ASSERT_EQ(r.objects.size(), 1u);
  const ManifestObject& o = r.objects[0];
  EXPECT_EQ(o.kind, "IncrementalLearningJob");
  EXPECT_EQ(o.ns, "default");
  EXPECT_EQ(o.name, "helmet-detection-demo");
  EXPECT_EQ(o.source, "il.yaml (document 1)");
  EXPECT_EQ(At(o.json, {"metadata"}), R"({"name":"helmet-detection-demo","namespace":"default"})");
  EXPECT_EQ(At(o.json, {"spec", "dataset"}), R"({"name":"incremental-dataset","trainProb":0.8})");
  EXPECT_EQ(At(o.json, {"spec", "trainSpec", "trigger"}),
            R"({"checkPeriodSeconds":60,"timer":{"start":"02:00","end":"24:00"},)"
            R"("condition":{"operator":"\u003e","threshold":500,"metric":"num_of_samples"}})");
  EXPECT_EQ(At(o.json, {"spec", "deploySpec", "trigger"}),
            R"({"condition":{"operator":"\u003e","threshold":0.1,"metric":"precision_delta"}})");

  auto d = json::DecodeIlJob(o.json);
  ASSERT_TRUE(d.ok()) << d.message();
  const core::IlJob& job = d->object;
  EXPECT_EQ(job.meta.name, "helmet-detection-demo");
  EXPECT_EQ(job.meta.ns, "default");
  EXPECT_EQ(job.spec.dataset_name, "incremental-dataset");
  EXPECT_DOUBLE_EQ(job.spec.train_prob, 0.8);
  EXPECT_EQ(job.spec.initial_model_name, "initial-model");
  EXPECT_EQ(job.spec.deploy_model_name, "deploy-model");
  EXPECT_EQ(job.spec.output_dir, "/output");
  ASSERT_EQ(job.spec.train_template.containers.size(), 1u);
  const core::ContainerSpec& train = job.spec.train_template.containers[0];
  EXPECT_EQ(train.name, "train-worker");
  EXPECT_EQ(train.args, std::vector<std::string>{"train.py"});
  ASSERT_EQ(train.env.size(), 4u);
  EXPECT_EQ(train.env[0].name, "batch_size");
  EXPECT_EQ(train.env[0].value, "32");
  EXPECT_EQ(train.env[3].value, "500");
  EXPECT_EQ(job.spec.train_template.node_name, "edge-node");
  EXPECT_EQ(job.spec.train_trigger.check_period_seconds, 60);
  ASSERT_TRUE(job.spec.train_trigger.timer.has_value());
  EXPECT_EQ(job.spec.train_trigger.timer->start, "02:00");
  EXPECT_EQ(job.spec.train_trigger.timer->end, "24:00");
  EXPECT_EQ(job.spec.train_trigger.op, ">");
  EXPECT_DOUBLE_EQ(job.spec.train_trigger.threshold, 500);
  EXPECT_EQ(job.spec.train_trigger.metric, "num_of_samples");
  EXPECT_FALSE(job.spec.deploy_trigger.check_period_seconds.has_value());
  EXPECT_DOUBLE_EQ(job.spec.deploy_trigger.threshold, 0.1);
  EXPECT_EQ(job.spec.deploy_trigger.metric, "precision_delta");
  EXPECT_EQ(job.spec.hem.name, "IBT");
  ASSERT_TRUE(job.spec.hem.has_parameters);
  ASSERT_EQ(job.spec.hem.parameters.size(), 2u);
  EXPECT_EQ(job.spec.hem.parameters[0],
            (std::pair<std::string, std::string>{"threshold_img", "0.9"}));
  ASSERT_EQ(job.spec.eval_template.containers.size(), 1u);
  EXPECT_EQ(job.spec.eval_template.containers[0].name, "eval-worker");
  ASSERT_EQ(job.spec.deploy_template.containers.size(), 1u);
  EXPECT_EQ(job.spec.deploy_template.containers[0].env[1].value, "/he_saved_url");
  EXPECT_TRUE(job.conditions.empty());
}

// The lifelong-learning job of §P2.4 / §P10.2 as a user writes it.
constexpr const char* kLlSample = R"(apiVersion: sedna.io/v1alpha1
kind: LifelongLearningJob
metadata:
  name: atcii-classifier-demo
spec:
  dataset:
    name: "lifelong-dataset"
    trainProb: 0.8
  trainSpec:
    template:
      spec:
        nodeName: "edge-node"
        containers:
          - image: kubeedge/sedna-example-lifelong-learning-atcii-classifier:v0.3.0
            name: train-worker
            imagePullPolicy: IfNotPresent
            args: ["train.py"]
            env:
              - name: "early_stopping_rounds"
                value: "100"
              - name: "metric_name"
                value: "mlogloss"
    trigger:
      checkPeriodSeconds: 60
      timer:
        start: 02:00
        end: 24:00
      condition:
        operator: ">"
        threshold: 500
        metric: num_of_samples
  evalSpec:
    template:
      spec:
        nodeName: "edge-node"
        containers:
          - image: kubeedge/sedna-example-lifelong-learning-atcii-classifier:v0.3.0
            name: eval-worker
            imagePullPolicy: IfNotPresent
            args: ["eval.py"]
            env:
              - name: "model_threshold"
                value: "0.5"
  deploySpec:
    template:
      spec:
        nodeName: "edge-node"
        containers:
        - image: kubeedge/sedna-example-lifelong-learning-atcii-classifier:v0.3.0
          name: infer-worker
          imagePullPolicy: IfNotPresent
          args: ["inference.py"]
  outputDir: "/output"
)";

TEST(Manifest, LlSampleBecomesADecodableJob) {
  LoadResult r = LoadManifestText(kLlSample, "ll.yaml");
  ASSERT_TRUE(r.errors.empty() && r.warnings.empty()) << Dump(r);
  ASSERT_EQ(r.objects.size(), 1u);
  EXPECT_EQ(r.objects[0].kind, "LifelongLearningJob");
  auto d = json::DecodeLlJob(r.objects[0].json);
  ASSERT_TRUE(d.ok()) << d.message();
  const core::LlJob& job = d->object;
  EXPECT_EQ(job.meta.name, "atcii-classifier-demo");
  EXPECT_EQ(job.meta.ns, "default");
  EXPECT_EQ(job.spec.dataset_name, "lifelong-dataset");
  EXPECT_DOUBLE_EQ(job.spec.train_prob, 0.8);
  EXPECT_EQ(job.spec.train_trigger.check_period_seconds, 60);
  EXPECT_EQ(job.spec.train_trigger.op, ">");
  EXPECT_DOUBLE_EQ(job.spec.train_trigger.threshold, 500);
  ASSERT_EQ(job.spec.train_template.containers.size(), 1u);
  EXPECT_EQ(job.spec.train_template.containers[0].env[0].value, "100");
  EXPECT_EQ(job.spec.eval_template.containers[0].env[0].value, "0.5");
  ASSERT_EQ(job.spec.deploy_template.containers.size(), 1u);
  EXPECT_EQ(job.spec.deploy_template.containers[0].name, "infer-worker");
  EXPECT_EQ(job.spec.deploy_template.node_name, "edge-node");
  EXPECT_EQ(job.spec.output_dir, "/output");
}

// The §P1.5/§P2.3/§P2.4 wire literals written as YAML in the GM's key order: the produced JSON is
// the literal byte for byte (Go escaping of '>', float and integer text, nulls, key order).
constexpr const char* kIlLiteralYaml = R"(kind: IncrementalLearningJob
apiVersion: sedna.io/v1alpha1
metadata:
  name: helmet-detection-demo
  namespace: default
  uid: 7b3c2f0e-1111-4c3a-9c1e-000000000003
  resourceVersion: "12345"
  generation: 1
  creationTimestamp: 2021-08-20T08:00:00Z
spec:
  dataset: {name: incremental-dataset, trainProb: 0.8}
  initialModel: {name: initial-model}
  trainSpec:
    template:
      metadata: {creationTimestamp: null}
      spec:
        containers:
          - name: train-worker
            image: kubeedge/sedna-example-incremental-learning-helmet-detection:v0.1.0
            args: [train.py]
            env:
              - {name: batch_size, value: "32"}
              - {name: epochs, value: "1"}
              - {name: input_shape, value: "352,640"}
              - {name: class_names, value: "person,helmet,helmet-on,helmet-off"}
              - {name: nms_threshold, value: "0.4"}
              - {name: obj_threshold, value: "0.3"}
            resources: {}
            imagePullPolicy: IfNotPresent
        nodeName: edge-node
    trigger:
      checkPeriodSeconds: 60
      timer: {start: "02:00", end: "24:00"}
      condition: {operator: ">", threshold: 500, metric: num_of_samples}
  evalSpec:
    template:
      metadata: {creationTimestamp: ~}
      spec:
        containers:
          - name: eval-worker
            image: kubeedge/sedna-example-incremental-learning-helmet-detection:v0.1.0
            args: [eval.py]
            env:
              - {name: input_shape, value: "352,640"}
              - {name: class_names, value: "person,helmet,helmet-on,helmet-off"}
            resources: {}
            imagePullPolicy: IfNotPresent
        nodeName: edge-node
  deploySpec:
    model: {name: deploy-model}
    trigger:
      condition: {operator: '>', threshold: 0.1, metric: precision_delta}
    hardExampleMining: {name: IBT}
    template:
      metadata:
        creationTimestamp:
      spec:
        volumes:
          - name: localvideo
            hostPath: {path: /incremental_learning/video/, type: Directory}
          - name: hedir
            hostPath: {path: /incremental_learning/he/, type: Directory}
        containers:
          - name: infer-worker
            image: kubeedge/sedna-example-incremental-learning-helmet-detection:v0.1.0
            args: [inference.py]
            env:
              - {name: input_shape, value: "352,640"}
              - {name: video_url, value: "file://video/video.mp4"}
              - {name: HE_SAVED_URL, value: /he_saved_url}
            resources:
              limits: {memory: 2Gi}
            volumeMounts:
              - {name: localvideo, mountPath: /video/}
              - {name: hedir, mountPath: /he_saved_url}
            imagePullPolicy: IfNotPresent
        nodeName: edge-node
  outputDir: /output
status:
  conditions:
    - type: Waiting
      status: "True"
      stage: Train
      lastHeartbeatTime: "2021-08-20T08:00:00Z"
      lastTransitionTime: 2021-08-20T08:00:00Z
  startTime: 2021-08-20T08:00:00Z
)";

constexpr const char* kLlLiteralYaml = R"(kind: LifelongLearningJob
apiVersion: sedna.io/v1alpha1
metadata:
  name: atcii-classifier-demo
  namespace: default
  uid: 7b3c2f0e-1111-4c3a-9c1e-000000000004
  resourceVersion: "12345"
  generation: 1
  creationTimestamp: 2021-08-20T08:00:00Z
spec:
  dataset: {name: lifelong-dataset, trainProb: 0.8}
  trainSpec:
    template:
      metadata: {creationTimestamp: null}
      spec:
        containers:
          - name: train-worker
            image: kubeedge/sedna-example-lifelong-learning-atcii-classifier:v0.3.0
            args: [train.py]
            env:
              - {name: early_stopping_rounds, value: "100"}
              - {name: metric_name, value: mlogloss}
            resources: {}
            imagePullPolicy: IfNotPresent
        nodeName: edge-node
    trigger:
      checkPeriodSeconds: 60
      timer: {start: 02:00, end: 24:00}
      condition: {operator: ">", threshold: 500, metric: num_of_samples}
  evalSpec:
    template:
      metadata: {creationTimestamp: null}
      spec:
        containers:
          - name: eval-worker
            image: kubeedge/sedna-example-lifelong-learning-atcii-classifier:v0.3.0
            args: [eval.py]
            env:
              - {name: model_threshold, value: "0.5"}
            resources: {}
            imagePullPolicy: IfNotPresent
        nodeName: edge-node
  deploySpec:
    template:
      metadata: {creationTimestamp: null}
      spec:
        containers:
          - name: infer-worker
            image: kubeedge/sedna-example-lifelong-learning-atcii-classifier:v0.3.0
            args: [inference.py]
            resources: {}
            imagePullPolicy: IfNotPresent
        nodeName: edge-node
  outputDir: /output
status:
  conditions:
    - {type: Waiting, status: "True", stage: Train, lastHeartbeatTime: 2021-08-20T08:00:00Z,
       lastTransitionTime: 2021-08-20T08:00:00Z}
  startTime: 2021-08-20T08:00:00Z
)";

constexpr const char* kDatasetLiteralYaml = R"(kind: Dataset
apiVersion: sedna.io/v1alpha1
metadata:
  name: incremental-dataset
  namespace: default
  uid: 7b3c2f0e-1111-4c3a-9c1e-000000000001
  resourceVersion: "12345"
  generation: 1
  creationTimestamp: 2021-08-20T08:00:00Z
spec:
  url: /data/helmet_detection/train_data/train_data.txt
  format: txt
  nodeName: edge-node
status:
  numberOfSamples: 0
)";

constexpr const char* kModelLiteralYaml = R"(kind: Model
apiVersion: sedna.io/v1alpha1
metadata:
  name: initial-model
  namespace: default
  uid: 7b3c2f0e-1111-4c3a-9c1e-000000000002
  resourceVersion: "12345"
  generation: 1
  creationTimestamp: 2021-08-20T08:00:00Z
spec:
  url: /models/base_model
  format: ckpt
status: {}
)";

TEST(Manifest, WireLiteralsWrittenAsYamlReproduceTheGmJson) {
  struct Case {
    const char* yaml;
    const char* testdata;
  };
  const Case cases[] = {
      {kIlLiteralYaml, "il_job.json"},
      {kLlLiteralYaml, "ll_job.json"},
      {kDatasetLiteralYaml, "content_gm_dataset_insert.json"},
      {kModelLiteralYaml, "content_gm_model_insert.json"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.testdata);
    LoadResult r = LoadManifestText(c.yaml, "literal.yaml");
    ASSERT_TRUE(r.errors.empty() && r.warnings.empty()) << Dump(r);
    ASSERT_EQ(r.objects.size(), 1u);
    EXPECT_EQ(r.objects[0].json, ReadTestdata(c.testdata));
  }
}

// ---- files, directories, documents ---------------------------------------------------------

constexpr const char* kDataset = R"(apiVersion: sedna.io/v1alpha1
kind: Dataset
metadata:
  name: incremental-dataset
spec:
  url: "/data/helmet_detection/train_data/train_data.txt"
  format: "txt"
  nodeName: "edge-node"
)";

constexpr const char* kInitialModel = R"(apiVersion: sedna.io/v1alpha1
kind: Model
metadata:
  name: initial-model
spec:
  url : "/models/base_model"
  format: "ckpt"
)";

constexpr const char* kDeployModel = R"(apiVersion: sedna.io/v1alpha1
kind: Model
metadata:
  name: deploy-model
spec:
  url : "/models/deploy_model/saved_model.pb"
  format: "pb"
)";

constexpr const char* kSecret = R"(apiVersion: v1
kind: Secret
metadata:
  name: mysecret
  annotations:
    s3-endpoint: s3.amazonaws.com
    s3-usehttps: "1"
stringData:
  ACCESS_KEY_ID: XXXX
  SECRET_ACCESS_KEY: XXXXXXXX
)";

TEST(Manifest, MultiDocumentFileKeepsOrderAndNumbersDocuments) {
  TempDir dir;
  const std::string text = std::string("# helmet detection, all in one file\n---\n") + kDataset +
                           "---\n" + kInitialModel + "---\n---   # an empty document\n" +
                           kDeployModel + "...\n--- # the job\n" + kIlSample;
  const std::string file = dir.Write("all.yaml", text);
  LoadResult r = LoadManifests(file);
  ASSERT_TRUE(r.errors.empty() && r.warnings.empty()) << Dump(r);
  ASSERT_EQ(r.objects.size(), 4u);
  const std::vector<std::pair<std::string, std::string>> want = {
      {"Dataset", "incremental-dataset"},
      {"Model", "initial-model"},
      {"Model", "deploy-model"},
      {"IncrementalLearningJob", "helmet-detection-demo"},
  };
  const int want_doc[] = {1, 2, 4, 5};
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(r.objects[i].kind, want[i].first);
    EXPECT_EQ(r.objects[i].name, want[i].second);
    EXPECT_EQ(r.objects[i].ns, "default");
    EXPECT_EQ(r.objects[i].source, file + " (document " + std::to_string(want_doc[i]) + ")");
  }
  auto ds = json::DecodeDataset(r.objects[0].json);
  ASSERT_TRUE(ds.ok()) << ds.message();
  EXPECT_EQ(ds->object.spec.url, "/data/helmet_detection/train_data/train_data.txt");
  EXPECT_EQ(ds->object.spec.format, "txt");
  EXPECT_EQ(ds->object.spec.node_name, "edge-node");
  EXPECT_EQ(r.objects[0].json,
            R"({"apiVersion":"sedna.io/v1alpha1","kind":"Dataset","metadata":{"name":)"
            R"("incremental-dataset","namespace":"default"},"spec":{"url":)"
            R"("/data/helmet_detection/train_data/train_data.txt","format":"txt",)"
            R"("nodeName":"edge-node"}})");
  auto model = json::DecodeModel(r.objects[2].json);
  ASSERT_TRUE(model.ok()) << model.message();
  EXPECT_EQ(model->object.spec.url, "/models/deploy_model/saved_model.pb");
  EXPECT_EQ(model->object.spec.format, "pb");
}

TEST(Manifest, DirectoryLoadsYamlFilesInNameOrder) {
  TempDir dir;
  dir.Write("b-job.yml", kIlSample);
  dir.Write("a-resources.yaml", std::string(kDataset) + "---\n" + kInitialModel);
  dir.Write("notes.txt", "kind: [not yaml we read");
  dir.Write(".hidden.yaml", "kind: [not yaml we read");
  fs::create_directory(fs::path(dir.path()) / "sub.yaml");
  dir.Write("sub.yaml/inner.yaml", kDeployModel);
  LoadResult r = LoadManifests(dir.path());
  ASSERT_TRUE(r.errors.empty() && r.warnings.empty()) << Dump(r);
  ASSERT_EQ(r.objects.size(), 3u);
  const std::string a = (fs::path(dir.path()) / "a-resources.yaml").string();
  const std::string b = (fs::path(dir.path()) / "b-job.yml").string();
  EXPECT_EQ(r.objects[0].source, a + " (document 1)");
  EXPECT_EQ(r.objects[0].kind, "Dataset");
  EXPECT_EQ(r.objects[1].source, a + " (document 2)");
  EXPECT_EQ(r.objects[1].kind, "Model");
  EXPECT_EQ(r.objects[2].source, b + " (document 1)");
  EXPECT_EQ(r.objects[2].kind, "IncrementalLearningJob");
}

TEST(Manifest, OtherKindsAreWarnedAboutAndSkipped) {
  TempDir dir;
  const std::string file = dir.Write(
      "x.yaml", std::string(kDataset) + "---\n" + kInitialModel +
                    "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: b}\n");
  LoadResult r = LoadManifests(file);
  EXPECT_TRUE(r.errors.empty()) << Dump(r);
  EXPECT_EQ(r.objects.size(), 2u);
  EXPECT_TRUE(r.secrets.empty());
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_EQ(r.warnings[0],
            file + R"( (document 3): kind "ConfigMap" is not handled in standalone mode; skipped)");
}

// ---- Secrets ---------------------------------------------------------------------------------

// The S3 Secret of Sedna's examples/storage/s3/README.md (§P2.5) loads next to the objects.
TEST(Manifest, SecretIsLoaded) {
  TempDir dir;
  const std::string file =
      dir.Write("x.yaml", std::string(kDataset) + "---\n" + kInitialModel + "---\n" + kSecret);
  LoadResult r = LoadManifests(file);
  ASSERT_TRUE(r.errors.empty() && r.warnings.empty()) << Dump(r);
  EXPECT_EQ(r.objects.size(), 2u);
  ASSERT_EQ(r.secrets.size(), 1u);
  const Secret& s = r.secrets[0];
  EXPECT_EQ(s.ns, "default");
  EXPECT_EQ(s.name, "mysecret");
  EXPECT_EQ(s.source, file + " (document 3)");
  const std::map<std::string, std::string> annotations = {{"s3-endpoint", "s3.amazonaws.com"},
                                                          {"s3-usehttps", "1"}};
  EXPECT_EQ(s.annotations, annotations);
  const std::map<std::string, std::string> data = {{"ACCESS_KEY_ID", "XXXX"},
                                                   {"SECRET_ACCESS_KEY", "XXXXXXXX"}};
  EXPECT_EQ(s.data, data);
}

// `data` is base64 (Go's StdEncoding: line breaks ignored, any bytes), `stringData` plain text
// that wins over `data` for the same key; null reads as ""; the namespace defaults as for the
// other kinds; the same name in another namespace is another Secret.
TEST(Manifest, SecretDataAndStringData) {
  const std::string yaml = R"(apiVersion: v1
kind: Secret
metadata:
  name: creds
  annotations: {s3-endpoint: "minio:9000", empty: null}
type: Opaque
data:
  ACCESS_KEY_ID: QUtJQQ==          # AKIA
  SECRET_ACCESS_KEY: |
    c2VjcmV0L2tleStw
    YXJ0Mg==
  binary: /wA8Jg==                 # ff 00 3c 26
  s3-usehttps: MQ==                # 1, replaced by stringData
  blank: ""
  nothing: ~
stringData:
  s3-usehttps: "0"
  token: "a<b>&c"
---
apiVersion: v1
kind: Secret
metadata: {name: creds, namespace: other}
stringData: {k: v}
)";
  LoadResult r = LoadManifestText(yaml, "s.yaml");
  ASSERT_TRUE(r.errors.empty() && r.warnings.empty()) << Dump(r);
  EXPECT_TRUE(r.objects.empty());
  ASSERT_EQ(r.secrets.size(), 2u);
  const Secret& s = r.secrets[0];
  EXPECT_EQ(s.ns, "default");
  EXPECT_EQ(s.name, "creds");
  EXPECT_EQ(s.source, "s.yaml (document 1)");
  const std::map<std::string, std::string> annotations = {{"empty", ""},
                                                          {"s3-endpoint", "minio:9000"}};
  EXPECT_EQ(s.annotations, annotations);
  const std::map<std::string, std::string> data = {
      {"ACCESS_KEY_ID", "AKIA"},
      {"SECRET_ACCESS_KEY", "secret/key+part2"},
      {"binary", std::string("\xff\x00<&", 4)},
      {"blank", ""},
      {"nothing", ""},
      {"s3-usehttps", "0"},
      {"token", "a<b>&c"},
  };
  EXPECT_EQ(s.data, data);
  EXPECT_EQ(r.secrets[1].ns, "other");
  EXPECT_EQ(r.secrets[1].source, "s.yaml (document 2)");
  EXPECT_EQ(r.secrets[1].data, (std::map<std::string, std::string>{{"k", "v"}}));
  EXPECT_TRUE(r.secrets[1].annotations.empty());
}

// Every rejection names the file, the document, the Secret and the key, and no message of any
// kind contains a value (each value below holds "TOPSECRET").
TEST(Manifest, SecretErrorsNameTheKeyButNeverTheValue) {
  struct Case {
    const char* what;
    std::string yaml;   // after "apiVersion: v1\nkind: Secret\n"
    std::string error;  // the whole message after "s.yaml (document 1"
  };
  const std::string id = ", Secret default/creds): ";
  const std::string md = "metadata: {name: creds}\n";
  const Case cases[] = {
      {"bad base64", md + "data:\n  ok: QUE=\n  ACCESS_KEY_ID: TOPSECRET!\n",
       id + "data[\"ACCESS_KEY_ID\"]: not valid base64 (standard alphabet, padded with '='; plain "
            "text belongs under stringData); the value is not shown"},
      {"unpadded base64", md + "data: {k: TOPSECRETa}\n",
       id + "data[\"k\"]: not valid base64 (standard alphabet, padded with '='; plain text belongs "
            "under stringData); the value is not shown"},
      {"data value not a string", md + "data: {k: [TOPSECRET]}\n",
       id + "data[\"k\"]: expected a base64 string, got array"},
      {"stringData value a boolean", md + "stringData: {k: yes}\n",
       id + "stringData[\"k\"]: expected a string, got boolean"},
      {"stringData value a number", md + "stringData: {k: 12345}\n",
       id + "stringData[\"k\"]: expected a string, got number"},
      {"annotation value a number", "metadata:\n  name: creds\n  annotations: {a: 1}\n",
       id + "metadata.annotations[\"a\"]: expected a string, got number"},
      {"data not a mapping", md + "data: TOPSECRET\n", id + "data: expected an object, got string"},
      {"bad key", md + "stringData: {\"a/b\": TOPSECRET}\n",
       id + "stringData: key \"a/b\" is not a valid Secret key (letters, digits, '-', '_' and '.', "
            "not \".\" and not starting with \"..\", at most 253 characters)"},
      {"dot-dot key", md + "data: {..a: QUE=}\n",
       id + "data: key \"..a\" is not a valid Secret key"},
      {"missing name", "metadata: {namespace: x}\nstringData: {k: TOPSECRET}\n",
       "): Secret: metadata.name: missing"},
      {"tag mismatch", md + "stringData: {k: !!int TOPSECRET}\n",
       "): line 4, column 17: cannot decode !!str as a !!int"},
      {"infinity", md + "stringData: {k: .inf}\n",
       "): line 4, column 17: a value (infinity or NaN) cannot be represented in JSON"},
      {"bad escape", md + "stringData: {k: \"TOPSECRET\\qTOPSECRET\"}\n",
       "): line 4, column 29: unknown escape character (the text is not shown: the document may "
       "be a Secret)"},
      {"bad unicode escape", md + "stringData: {k: \"TOPSECRET\\ud800\"}\n",
       "): line 4, column 33: invalid unicode (the text is not shown: the document may be a "
       "Secret)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    LoadResult r = LoadManifestText("apiVersion: v1\nkind: Secret\n" + c.yaml, "s.yaml");
    EXPECT_TRUE(r.secrets.empty());
    ASSERT_EQ(r.errors.size(), 1u) << Dump(r);
    const std::string want = "s.yaml (document 1" + c.error;
    EXPECT_EQ(r.errors[0].substr(0, want.size()), want) << r.errors[0];
    EXPECT_EQ(r.errors[0].find("TOPSECRET"), std::string::npos) << r.errors[0];
    EXPECT_EQ(r.errors[0].find("12345"), std::string::npos) << r.errors[0];
  }

  const std::pair<std::string, std::string> api_cases[] = {
      {"kind: Secret\nmetadata: {name: creds}\nstringData: {k: TOPSECRET}\n",
       "s.yaml (document 1, Secret default/creds): apiVersion: missing (expected \"v1\")"},
      {"apiVersion: sedna.io/v1alpha1\nkind: Secret\nmetadata: {name: creds}\n",
       "s.yaml (document 1, Secret default/creds): apiVersion: \"sedna.io/v1alpha1\" is not the "
       "Secret's API version (expected \"v1\")"},
  };
  for (const auto& [yaml, want] : api_cases) {
    LoadResult r = LoadManifestText(yaml, "s.yaml");
    ASSERT_EQ(r.errors.size(), 1u) << Dump(r);
    EXPECT_EQ(r.errors[0], want);
  }

  // A duplicate names both sources; the first one stays.
  const std::string secret = "apiVersion: v1\nkind: Secret\nmetadata: {name: creds}\n";
  LoadResult twice = LoadManifestText(
      secret + "stringData: {k: TOPSECRET1}\n---\n" + secret + "stringData: {k: TOPSECRET2}\n",
      "d.yaml");
  ASSERT_EQ(twice.errors.size(), 1u) << Dump(twice);
  EXPECT_EQ(
      twice.errors[0],
      "d.yaml (document 2, Secret default/creds): duplicate of Secret default/creds in d.yaml "
      "(document 1)");
  ASSERT_EQ(twice.secrets.size(), 1u);
  EXPECT_EQ(twice.secrets[0].data.at("k"), "TOPSECRET1");

  // Too big as a whole (the API server's 1 MiB).
  LoadResult big = LoadManifestText(secret + "stringData:\n  a: " + std::string(600000, 'x') +
                                        "\n  b: " + std::string(600000, 'y') + "\n",
                                    "b.yaml");
  ASSERT_EQ(big.errors.size(), 1u) << Dump(big);
  EXPECT_EQ(big.errors[0],
            "b.yaml (document 1, Secret default/creds): data: the Secret holds 1200002 bytes, more "
            "than the 1048576 allowed");
}

TEST(Manifest, BrokenYamlNamesTheFileLineAndTheOtherDocumentsLoad) {
  TempDir dir;
  const std::string file = dir.Write("bad.yaml", std::string(kDataset) +  // lines 1-8
                                                     "---\n"              // line 9
                                                     "apiVersion: sedna.io/v1alpha1\n"
                                                     "kind: Model\n"
                                                     "metadata:\n"
                                                     "  name: broken\n"
                                                     "   namespace: x\n"  // line 14
                                                     "---\n" +
                                                     kInitialModel);
  LoadResult r = LoadManifests(file);
  ASSERT_EQ(r.errors.size(), 1u) << Dump(r);
  EXPECT_EQ(r.errors[0], file + " (document 2): line 14, column 13: illegal map value");
  ASSERT_EQ(r.objects.size(), 2u);
  EXPECT_EQ(r.objects[0].name, "incremental-dataset");
  EXPECT_EQ(r.objects[1].name, "initial-model");
  EXPECT_EQ(r.objects[1].source, file + " (document 3)");
}

TEST(Manifest, WrongFieldTypeNamesDocumentObjectAndPath) {
  TempDir dir;
  const std::string job =
      ReplaceOnce(ReplaceOnce(kIlSample, "name: helmet-detection-demo", "name: helmet"),
                  "trainProb: 0.8", "trainProb: \"0.8\"");
  ASSERT_FALSE(job.empty());
  const std::string file = dir.Write("il.yaml", std::string(kDataset) + "---\n" + job);
  LoadResult r = LoadManifests(file);
  ASSERT_EQ(r.errors.size(), 1u) << Dump(r);
  EXPECT_EQ(r.errors[0], file +
                             " (document 2, IncrementalLearningJob default/helmet): "
                             "spec.dataset.trainProb: expected a number, got string");
  ASSERT_EQ(r.objects.size(), 1u);
  EXPECT_EQ(r.objects[0].kind, "Dataset");
}

// A small IL job the rejection cases edit.
constexpr const char* kSmallIl = R"(apiVersion: sedna.io/v1alpha1
kind: IncrementalLearningJob
metadata:
  name: helmet
spec:
  dataset:
    name: ds
    trainProb: 0.8
  trainSpec:
    template:
      spec:
        containers:
          - name: train
            env:
              - name: a
                value: "1"
    trigger:
      checkPeriodSeconds: 60
      condition: {operator: ">", threshold: 500, metric: num_of_samples}
)";

TEST(Manifest, RejectsDocumentsWithTheReason) {
  struct Case {
    const char* what;
    std::string from, to;  // edit of kSmallIl
    std::string error;     // after "t.yaml (document 1"
  };
  const std::string id = ", IncrementalLearningJob default/helmet): ";
  const Case cases[] = {
      {"quoted float", "trainProb: 0.8", "trainProb: '0.8'",
       id + "spec.dataset.trainProb: expected a number, got string"},
      {"quoted threshold", "threshold: 500", "threshold: \"500\"",
       id + "spec.trainSpec.trigger.condition.threshold: expected a number, got string"},
      {"plain number as env value", "value: \"1\"", "value: 1",
       id + "spec.trainSpec.template.spec.containers[0].env[0].value: expected a string, got "
            "number"},
      {"yes is a boolean", "value: \"1\"", "value: yes",
       id + "spec.trainSpec.template.spec.containers[0].env[0].value: expected a string, got "
            "boolean"},
      {"fractional integer", "checkPeriodSeconds: 60", "checkPeriodSeconds: 1.5",
       id + "spec.trainSpec.trigger.checkPeriodSeconds: "},
      {"args not a list", "- name: train", "- name: train\n            args: train.py",
       id + "spec.trainSpec.template.spec.containers[0].args: expected an array, got string"},
      {"missing name", "  name: helmet\n", "  labels: {a: b}\n",
       "): IncrementalLearningJob: metadata.name: missing"},
      {"empty name", "name: helmet", "name: \"\"",
       "): IncrementalLearningJob: metadata.name: missing"},
      {"no metadata", "metadata:\n  name: helmet\n", "",
       "): IncrementalLearningJob: metadata.name: missing"},
      {"numeric name", "name: helmet", "name: 42",
       "): IncrementalLearningJob: metadata.name: expected a string, got number"},
      {"invalid name", "name: helmet", "name: Helmet_1",
       "): IncrementalLearningJob: metadata.name: \"Helmet_1\" is not a valid name"},
      {"metadata not a mapping", "metadata:\n  name: helmet\n", "metadata: helmet\n",
       "): metadata: expected an object, got string"},
      {"invalid namespace", "name: helmet", "name: helmet\n  namespace: a/b",
       "): IncrementalLearningJob helmet: metadata.namespace: \"a/b\" is not a valid namespace"},
      {"missing kind", "kind: IncrementalLearningJob\n", "", "): kind: missing"},
      {"kind not a string", "kind: IncrementalLearningJob", "kind: [a]",
       "): kind: expected a string, got array"},
      {"missing apiVersion", "apiVersion: sedna.io/v1alpha1\n", "",
       id + "apiVersion: missing (expected \"sedna.io/v1alpha1\")"},
      {"foreign group", "apiVersion: sedna.io/v1alpha1", "apiVersion: apps/v1",
       id + "apiVersion: \"apps/v1\" is not in the Sedna API group"},
      {"group without version", "apiVersion: sedna.io/v1alpha1", "apiVersion: sedna.io/",
       id + "apiVersion: \"sedna.io/\" is not in the Sedna API group"},
      {"duplicate key", "  dataset:\n", "  outputDir: /a\n  outputDir: /b\n  dataset:\n",
       "): line 7, column 3: mapping key \"outputDir\" already defined (first at line 6, column "
       "3)"},
      {"bad !!int", "trainProb: 0.8", "trainProb: !!int abc",
       "): line 8, column 16: cannot decode !!str `abc` as a !!int"},
      {"infinity", "trainProb: 0.8", "trainProb: .inf",
       "): line 8, column 16: `.inf` (infinity or NaN) cannot be represented in JSON"},
      {"null key", "  dataset:\n", "  ~: x\n  dataset:\n",
       "): line 6, column 3: a mapping key must not be null"},
      {"bad merge", "  dataset:\n", "  <<: 5\n  dataset:\n",
       "): line 6, column 7: a merge key (<<) needs a mapping or a sequence of mappings"},
      {"unknown condition type", "spec:\n", "status:\n  conditions: [{type: Done}]\nspec:\n",
       id + "status.conditions[0].type: unknown condition type \"Done\""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const std::string text = ReplaceOnce(kSmallIl, c.from, c.to);
    ASSERT_FALSE(text.empty());
    LoadResult r = LoadManifestText(text, "t.yaml");
    EXPECT_TRUE(r.objects.empty()) << Dump(r);
    ASSERT_EQ(r.errors.size(), 1u) << Dump(r);
    const std::string want = "t.yaml (document 1" + c.error;
    EXPECT_EQ(r.errors[0].substr(0, want.size()), want) << r.errors[0];
  }
}

TEST(Manifest, RejectsDocumentsThatAreNotObjects) {
  const std::pair<std::string, std::string> cases[] = {
      {"- a\n- b\n", "t.yaml (document 1): expected a mapping (a Kubernetes object), got array"},
      {"just text\n", "t.yaml (document 1): expected a mapping (a Kubernetes object), got string"},
      {"a: &x [1, *x]\n", "t.yaml (document 1): line 1, column 8: nested deeper than 256 levels"},
      {"a: " + std::string(300, '[') + std::string(300, ']') + "\n",
       "t.yaml (document 1): line 1, column 260: nested deeper than 256 levels"},
      // yaml-cpp 0.7's LoadAll would loop forever on these (jbeder/yaml-cpp#1040).
      {"{},\n", "t.yaml (document 1): line 1, column 3: invalid YAML: unexpected content here"},
      {"kind: ConfigMap\n---\n[1, 2],\n",
       "t.yaml (document 2): line 3, column 7: invalid YAML: unexpected content here"},
      {",", "t.yaml (document 1): line 1, column 1: invalid YAML: unexpected content here"},
      {"a: [1, 2\nb: 3\n", "t.yaml (document 1): line 2, column 2: end of sequence flow not found"},
  };
  for (const auto& [yaml, want] : cases) {
    SCOPED_TRACE(yaml);
    LoadResult r = LoadManifestText(yaml, "t.yaml");
    ASSERT_EQ(r.errors.size(), 1u) << Dump(r);
    EXPECT_EQ(r.errors[0].substr(0, want.size()), want) << r.errors[0];
    EXPECT_TRUE(r.objects.empty());
  }
}

TEST(Manifest, AliasExpansionIsBounded) {
  std::string yaml = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i <= 8; ++i) {
    std::string prev = "*a" + std::to_string(i - 1);
    yaml += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [" + prev;
    for (int k = 0; k < 9; ++k) yaml += ", " + prev;
    yaml += "]\n";
  }
  LoadResult r = LoadManifestText(yaml, "bomb.yaml");
  ASSERT_EQ(r.errors.size(), 1u) << Dump(r);
  EXPECT_NE(r.errors[0].find("expands to more than 200000 values"), std::string::npos)
      << r.errors[0];
}

TEST(Manifest, DuplicateObjectsAreRejectedNamingBothSources) {
  TempDir dir;
  const std::string a = dir.Write("a.yaml", kDataset);
  const std::string other_ns = ReplaceOnce(kDataset, "name: incremental-dataset",
                                           "name: incremental-dataset\n  namespace: other");
  const std::string same_name_model =
      ReplaceOnce(kInitialModel, "name: initial-model", "name: incremental-dataset");
  const std::string b =
      dir.Write("b.yaml", other_ns + "---\n" + same_name_model + "---\n" + kDataset);
  LoadResult r = LoadManifests(dir.path());
  ASSERT_EQ(r.errors.size(), 1u) << Dump(r);
  EXPECT_EQ(r.errors[0], b +
                             " (document 3, Dataset default/incremental-dataset): duplicate of "
                             "Dataset default/incremental-dataset in " +
                             a + " (document 1)");
  ASSERT_EQ(r.objects.size(), 3u);
  EXPECT_EQ(r.objects[1].ns, "other");
  EXPECT_EQ(r.objects[2].kind, "Model");

  LoadResult twice = LoadManifestText(std::string(kDataset) + "---\n" + kDataset, "s.yaml");
  ASSERT_EQ(twice.errors.size(), 1u) << Dump(twice);
  EXPECT_EQ(twice.errors[0],
            "s.yaml (document 2, Dataset default/incremental-dataset): duplicate of Dataset "
            "default/incremental-dataset in s.yaml (document 1)");
}

// ---- scalar typing ---------------------------------------------------------------------------

// spec.x of a Dataset whose manifest sets `x: <yaml>`, as JSON text; "error: ..." on rejection.
std::string SpecX(const std::string& yaml) {
  LoadResult r = LoadManifestText(
      "apiVersion: sedna.io/v1alpha1\nkind: Dataset\nmetadata: {name: ds}\nspec:\n  x: " + yaml +
          "\n",
      "t.yaml");
  if (!r.errors.empty()) return "error: " + r.errors[0];
  if (r.objects.size() != 1) return "<no object>";
  return At(r.objects[0].json, {"spec", "x"});
}

TEST(Manifest, ScalarsAreTypedAsKubectlTypesThem) {
  const std::pair<const char*, const char*> cases[] = {
      // numbers
      {"0.8", "0.8"},
      {"500", "500"},
      {"-5", "-5"},
      {"+5", "5"},
      {"500.0", "500"},
      {"1e3", "1000"},
      {"1.5E-7", "1.5e-7"},
      {".5", "0.5"},
      {"0x1F", "31"},
      {"0o17", "15"},
      {"017", "15"},
      {"08", "8"},
      {"0b101", "5"},
      {"1_000", "1000"},
      {"9223372036854775807", "9223372036854775807"},
      {"18446744073709551615", "18446744073709551615"},
      {"99999999999999999999", "100000000000000000000"},
      {"1e400", R"("1e400")"},
      // quoted and block scalars are strings
      {"\"32\"", R"("32")"},
      {"'0.8'", R"("0.8")"},
      {"\"true\"", R"("true")"},
      {"'null'", R"("null")"},
      {"|\n    line 1\n    line 2", R"("line 1\nline 2\n")"},
      {">-\n    folded\n    text", R"("folded text")"},
      // booleans
      {"true", "true"},
      {"False", "false"},
      {"TRUE", "true"},
      {"yes", "true"},
      {"No", "false"},
      {"on", "true"},
      {"OFF", "false"},
      {"y", "true"},
      {"n", "false"},
      {"tRUE", R"("tRUE")"},
      // nulls
      {"null", "null"},
      {"Null", "null"},
      {"~", "null"},
      {"", "null"},
      // strings that only look special
      {"02:00", R"("02:00")"},
      {"2021-08-20T08:00:00Z", R"("2021-08-20T08:00:00Z")"},
      {"1.2.3", R"("1.2.3")"},
      {"0x", R"("0x")"},
      {"-x", R"("-x")"},
      {"+-1", R"("+-1")"},
      {"a<b&c>", R"("a\u003cb\u0026c\u003e")"},
      {"Ünïcode", R"("Ünïcode")"},
      // tags
      {"!!str 5", R"("5")"},
      {"!!str true", R"("true")"},
      {"!!int \"7\"", "7"},
      {"!!float 5", "5"},
      {"!!bool yes", "true"},
      {"!!null ''", "null"},
      {"!custom 5", R"("5")"},
      // collections keep their order; keys are stringified
      {"[1, \"2\", x, true, ~]", R"([1,"2","x",true,null])"},
      {"{b: 1, a: 2}", R"({"b":1,"a":2})"},
      {"{1: a, true: b, 0x10: c}", R"({"1":"a","true":"b","16":"c"})"},
      {"{}", "{}"},
      {"[]", "[]"},
      // rejected
      {".nan",
       "error: t.yaml (document 1): line 5, column 6: `.nan` (infinity or NaN) cannot "
       "be represented in JSON"},
      {"-.Inf",
       "error: t.yaml (document 1): line 5, column 6: `-.Inf` (infinity or NaN) "
       "cannot be represented in JSON"},
      {"!!bool 1",
       "error: t.yaml (document 1): line 5, column 6: cannot decode !!int `1` as a "
       "!!bool"},
      {"!!binary aGk=",
       "error: t.yaml (document 1): line 5, column 6: !!binary values are not "
       "supported"},
      {"{[1]: a}",
       "error: t.yaml (document 1): line 5, column 7: a mapping key must be a "
       "scalar, got a sequence"},
  };
  for (const auto& [yaml, want] : cases) {
    EXPECT_EQ(SpecX(yaml), want) << "yaml: " << yaml;
  }
}

TEST(Manifest, TypedValuesReachTheDecodedJob) {
  using Job = core::IlJob;
  struct Case {
    const char* what;
    std::string from, to;  // edit of kSmallIl
    std::function<void(const Job&)> check;
  };
  const Case cases[] = {
      {"integral float for an integer field", "checkPeriodSeconds: 60", "checkPeriodSeconds: 60.0",
       [](const Job& j) { EXPECT_EQ(j.spec.train_trigger.check_period_seconds, 60); }},
      {"null keeps an optional unset", "checkPeriodSeconds: 60", "checkPeriodSeconds: ~",
       [](const Job& j) { EXPECT_FALSE(j.spec.train_trigger.check_period_seconds.has_value()); }},
      {"integer for a float field", "trainProb: 0.8", "trainProb: 1",
       [](const Job& j) { EXPECT_DOUBLE_EQ(j.spec.train_prob, 1.0); }},
      {"null keeps the zero value", "trainProb: 0.8", "trainProb: null",
       [](const Job& j) { EXPECT_EQ(j.spec.train_prob, 0.0); }},
      {"empty value is null", "trainProb: 0.8",
       "trainProb:", [](const Job& j) { EXPECT_EQ(j.spec.train_prob, 0.0); }},
      {"integer-looking threshold", "threshold: 500", "threshold: 0x1F4",
       [](const Job& j) { EXPECT_DOUBLE_EQ(j.spec.train_trigger.threshold, 500); }},
      {"single-quoted env value", "value: \"1\"", "value: '1'",
       [](const Job& j) {
         EXPECT_EQ(j.spec.train_template.containers.at(0).env.at(0).value, "1");
       }},
      {"tagged env value", "value: \"1\"", "value: !!str 1",
       [](const Job& j) {
         EXPECT_EQ(j.spec.train_template.containers.at(0).env.at(0).value, "1");
       }},
      {"quoted boolean-looking env value", "value: \"1\"", "value: \"yes\"",
       [](const Job& j) {
         EXPECT_EQ(j.spec.train_template.containers.at(0).env.at(0).value, "yes");
       }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const std::string text = ReplaceOnce(kSmallIl, c.from, c.to);
    ASSERT_FALSE(text.empty());
    LoadResult r = LoadManifestText(text, "t.yaml");
    ASSERT_TRUE(r.errors.empty()) << Dump(r);
    ASSERT_EQ(r.objects.size(), 1u);
    auto d = json::DecodeIlJob(r.objects[0].json);
    ASSERT_TRUE(d.ok()) << d.message();
    c.check(d->object);
  }
}

TEST(Manifest, NamespaceIsFilledInAfterTheName) {
  const std::pair<const char*, const char*> cases[] = {
      {"metadata: {name: ds}", R"({"name":"ds","namespace":"default"})"},
      {"metadata: {namespace: prod, name: ds}", R"({"namespace":"prod","name":"ds"})"},
      {"metadata: {name: ds, namespace: \"\", uid: u}",
       R"({"name":"ds","namespace":"default","uid":"u"})"},
      {"metadata: {name: ds, namespace: ~}", R"({"name":"ds","namespace":"default"})"},
      {"metadata: {labels: {a: b}, name: ds, uid: u}",
       R"({"labels":{"a":"b"},"name":"ds","namespace":"default","uid":"u"})"},
  };
  for (const auto& [metadata, want] : cases) {
    SCOPED_TRACE(metadata);
    LoadResult r = LoadManifestText(
        std::string("apiVersion: sedna.io/v1alpha1\nkind: Dataset\n") + metadata + "\n", "t.yaml");
    ASSERT_TRUE(r.errors.empty()) << Dump(r);
    ASSERT_EQ(r.objects.size(), 1u);
    EXPECT_EQ(At(r.objects[0].json, {"metadata"}), want);
    auto d = json::DecodeDataset(r.objects[0].json);
    ASSERT_TRUE(d.ok()) << d.message();
    EXPECT_EQ(d->object.meta.ns, r.objects[0].ns);
  }
}

TEST(Manifest, AnchorsAliasesAndMergeKeys) {
  const char* yaml = R"(apiVersion: sedna.io/v1alpha1
kind: LifelongLearningJob
metadata:
  name: ll
spec:
  trainSpec:
    template:
      spec:
        containers:
          - &worker
            name: train-worker
            image: img:v1
            env: &env
              - {name: a, value: "1"}
  evalSpec:
    template:
      spec:
        containers:
          - <<: *worker
            name: eval-worker
  deploySpec:
    template:
      spec:
        containers:
          - <<: [{name: ignored, args: [x]}, *worker]
            name: infer-worker
            env: *env
)";
  LoadResult r = LoadManifestText(yaml, "t.yaml");
  ASSERT_TRUE(r.errors.empty()) << Dump(r);
  ASSERT_EQ(r.objects.size(), 1u);
  EXPECT_EQ(At(r.objects[0].json, {"spec", "evalSpec"}),
            R"({"template":{"spec":{"containers":[{"image":"img:v1","env":[{"name":"a",)"
            R"("value":"1"}],"name":"eval-worker"}]}}})");
  auto d = json::DecodeLlJob(r.objects[0].json);
  ASSERT_TRUE(d.ok()) << d.message();
  const core::ContainerSpec& infer = d->object.spec.deploy_template.containers.at(0);
  EXPECT_EQ(infer.name, "infer-worker");
  EXPECT_EQ(infer.args, std::vector<std::string>{"x"});
  EXPECT_EQ(infer.image, "img:v1");
  ASSERT_EQ(infer.env.size(), 1u);
  EXPECT_EQ(infer.env[0].value, "1");
}

TEST(Manifest, PathsThatHoldNothing) {
  TempDir dir;
  LoadResult missing = LoadManifests(dir.path() + "/nope.yaml");
  ASSERT_EQ(missing.errors.size(), 1u);
  EXPECT_EQ(missing.errors[0], dir.path() + "/nope.yaml: no such file or directory");

  LoadResult empty_dir = LoadManifests(dir.path());
  EXPECT_TRUE(empty_dir.errors.empty() && empty_dir.objects.empty());
  ASSERT_EQ(empty_dir.warnings.size(), 1u);
  EXPECT_EQ(empty_dir.warnings[0], dir.path() + ": no *.yaml or *.yml files");

  const std::pair<const char*, const char*> quiet[] = {
      {"empty", ""},
      {"comments", "# nothing here\n\n"},
      {"separators", "---\n---\n# c\n---\n...\n"},
      {"bom", "\xEF\xBB\xBF---\n"},
  };
  for (const auto& [what, text] : quiet) {
    SCOPED_TRACE(what);
    LoadResult r = LoadManifests(dir.Write(std::string(what) + ".yaml", text));
    EXPECT_TRUE(r.errors.empty() && r.warnings.empty() && r.objects.empty()) << Dump(r);
  }
}

TEST(Manifest, CrLfLineEndings) {
  std::string text = std::string(kDataset) + "---\n" + kInitialModel;
  for (size_t pos = 0; (pos = text.find('\n', pos)) != std::string::npos; pos += 2) {
    text.replace(pos, 1, "\r\n");
  }
  LoadResult r = LoadManifestText(text, "t.yaml");
  ASSERT_TRUE(r.errors.empty()) << Dump(r);
  ASSERT_EQ(r.objects.size(), 2u);
  EXPECT_EQ(At(r.objects[0].json, {"spec", "nodeName"}), R"("edge-node")");
  EXPECT_EQ(At(r.objects[1].json, {"spec", "format"}), R"("ckpt")");
  EXPECT_EQ(r.objects[1].source, "t.yaml (document 2)");
}

TEST(Manifest, DirectivesBelongToTheFirstDocument) {
  LoadResult r = LoadManifestText(
      std::string("%YAML 1.2\n---\n") + kDataset + "---\n" + kInitialModel, "t.yaml");
  ASSERT_TRUE(r.errors.empty()) << Dump(r);
  ASSERT_EQ(r.objects.size(), 2u);
  EXPECT_EQ(r.objects[0].source, "t.yaml (document 1)");
  EXPECT_EQ(r.objects[1].source, "t.yaml (document 2)");
}

}  // namespace
}  // namespace sedna::manifest
