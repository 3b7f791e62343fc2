// The frames and worker reports of one IL round against the GM emulator, byte for byte as the Go
// LC sends and lib/sedna posts them (docs/protocol.md §P3.3): shared by the tests that drive that
// round (il_restart_test, container_test).
#pragma once

namespace sedna::testing::il_round {

constexpr const char* kIl1 =
    R"({"phase":"Train","status":"Ready","input":{"models":[{"format":"ckpt","url":"/models/base_model"}],"dataURL":"/output/data/train/1/data.txt","outputDir":"/output/train/1"},"output":null})";
constexpr const char* kTrainReport =
    R"({"name": "train-worker-h4k9q", "namespace": "default", "ownerName": "helmet-detection-demo", "ownerKind": "incrementallearningjob", "kind": "train", "status": "completed", "results": [{"format": "pb", "url": "/output/train/1/model.pb", "metrics": {"loss": 0.8113}}, {"format": "ckpt", "url": "/output/train/1", "metrics": {"loss": 0.8113}}]})";
constexpr const char* kIl2 =
    R"({"phase":"train","status":"completed","output":{"models":[{"format":"pb","metrics":{"loss":0.8113},"url":"/output/train/1/model.pb"},{"format":"ckpt","metrics":{"loss":0.8113},"url":"/output/train/1"}],"ownerInfo":null}})";
constexpr const char* kIl3 =
    R"({"phase":"Eval","status":"Ready","input":{"models":[{"format":"pb","url":"/output/train/1/model.pb"},{"format":"pb","url":"/models/deploy_model/saved_model.pb"}],"dataURL":"/output/data/eval/1/data.txt"},"output":null})";
constexpr const char* kEvalReport =
    R"({"name": "eval-worker-2bq7d", "namespace": "default", "ownerName": "helmet-detection-demo", "ownerKind": "incrementallearningjob", "kind": "eval", "status": "completed", "results": [{"format": "pb", "url": "/output/train/1/model.pb", "metrics": {"recall": [0.77, 0.70], "precision": [0.81, 0.74]}}, {"format": "pb", "url": "/models/deploy_model/saved_model.pb", "metrics": {"recall": [0.62, 0.66], "precision": [0.66, 0.71]}}]})";
constexpr const char* kIl4 =
    R"({"phase":"eval","status":"completed","output":{"models":[{"format":"pb","metrics":{"precision":[0.81,0.74],"recall":[0.77,0.70]},"url":"/output/train/1/model.pb"},{"format":"pb","metrics":{"precision":[0.66,0.71],"recall":[0.62,0.66]},"url":"/models/deploy_model/saved_model.pb"}],"ownerInfo":null}})";
constexpr const char* kIl5 =
    R"({"phase":"Deploy","status":"Ready","input":{"models":[{"format":"pb","url":"/output/train/1/model.pb"},{"format":"pb","url":"/models/deploy_model/saved_model.pb"}]},"output":null})";
constexpr const char* kR2Il1 =
    R"({"phase":"Train","status":"Ready","input":{"models":[{"format":"ckpt","url":"/output/train/1"}],"dataURL":"/output/data/train/2/data.txt","outputDir":"/output/train/2"},"output":null})";
constexpr const char* kOldModel = "OLD-DEPLOYED-MODEL-BYTES-THAT-ARE-LONGER-THAN-THE-NEW-ONES";

}  // namespace sedna::testing::il_round
