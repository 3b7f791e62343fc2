#include "adapters/json/envelope.h"

#include <gtest/gtest.h>

#include "adapters/json/resource_codec.h"
#include "adapters/json/test_util.h"
#include "adapters/json/upstream_codec.h"

namespace sedna::json {
namespace {

using testing::NestedArrays;
using testing::ReadTestdata;

struct GoldenFrame {
  std::string file;
  MessageHeader header;
};

const GoldenFrame kGoldenFrames[] = {
    {"frame_gm_dataset_insert.json", {"default", "dataset", "incremental-dataset", "insert"}},
    {"frame_gm_model_insert.json", {"default", "model", "initial-model", "insert"}},
    {"frame_lc_dataset_status.json", {"default", "Dataset", "incremental-dataset", "status"}},
    {"frame_lc_il_train_ready.json",
     {"default", "IncrementalLearningJob", "helmet-detection-demo", "status"}},
};

TEST(Envelope, DecodesGoldenFrames) {
  for (const auto& g : kGoldenFrames) {
    auto f = DecodeFrame(ReadTestdata(g.file));
    ASSERT_TRUE(f.ok()) << g.file << ": " << f.message();
    EXPECT_EQ(f->header, g.header) << g.file;
    EXPECT_FALSE(f->content_null);
    EXPECT_EQ(f->content, ReadTestdata("content_" + g.file.substr(6))) << g.file;
  }
}

TEST(Envelope, EncodesGoldenFramesByteExact) {
  for (const auto& g : kGoldenFrames) {
    std::string content = ReadTestdata("content_" + g.file.substr(6));
    EXPECT_EQ(EncodeFrame(g.header, content), ReadTestdata(g.file)) << g.file;
  }
}

TEST(Envelope, LcFramesFromCodecsMatchGolden) {
  EXPECT_EQ(EncodeFrame(kGoldenFrames[2].header, EncodeDatasetStatus(1000)),
            ReadTestdata("frame_lc_dataset_status.json"));
  core::StatusReport il1{core::ReportPhase::kTrain,
                         core::ReportStatus::kReady,
                         true,
                         {{"ckpt", "/models/base_model", {}}},
                         "/output/data/train/1/data.txt",
                         "",
                         "/output/train/1"};
  EXPECT_EQ(EncodeFrame(kGoldenFrames[3].header, EncodeStatusReport(il1, ReportSpelling::kIl)),
            ReadTestdata("frame_lc_il_train_ready.json"));
}

TEST(Envelope, GmFramesDecodeIntoResources) {
  auto f = DecodeFrame(ReadTestdata("frame_gm_dataset_insert.json"));
  ASSERT_TRUE(f.ok());
  auto ds = DecodeDataset(f->content);
  ASSERT_TRUE(ds.ok()) << ds.message();
  EXPECT_EQ(ds->object.meta.name, "incremental-dataset");
  EXPECT_EQ(ds->object.meta.ns, "default");
  EXPECT_EQ(ds->object.meta.uid, "7b3c2f0e-1111-4c3a-9c1e-000000000001");
  EXPECT_EQ(ds->object.spec.url, "/data/helmet_detection/train_data/train_data.txt");
  EXPECT_EQ(ds->object.spec.format, "txt");
  EXPECT_EQ(ds->object.spec.node_name, "edge-node");
  EXPECT_EQ(ds->object.spec.credential_name, "");

  f = DecodeFrame(ReadTestdata("frame_gm_model_insert.json"));
  ASSERT_TRUE(f.ok());
  auto model = DecodeModel(f->content);
  ASSERT_TRUE(model.ok()) << model.message();
  EXPECT_EQ(model->object.meta.name, "initial-model");
  EXPECT_EQ(model->object.meta.ns, "default");
  EXPECT_EQ(model->object.spec.url, "/models/base_model");
  EXPECT_EQ(model->object.spec.format, "ckpt");
}

TEST(Envelope, BareHeaderMatchesGolden) {
  EXPECT_EQ(EncodeBareHeader({}), ReadTestdata("frame_lc_bare_header.json"));
  EXPECT_EQ(
      EncodeBareHeader({"ns", "Dataset", "d", "status"}),
      R"({"namespace":"ns","resourceKind":"Dataset","resourceName":"d","operation":"status"})");
}

TEST(Envelope, EscapesHeaderStringsLikeGo) {
  std::string frame = EncodeFrame({"a<b", "k&\"", "n>\n", "op\xff"}, "");
  EXPECT_EQ(
      frame,
      R"({"header":{"namespace":"a\u003cb","resourceKind":"k\u0026\"","resourceName":"n\u003e\n","operation":"op\ufffd"},"content":""})");
  // Such names are not Kubernetes names: the decoder refuses them (see BadNamesAreRejected);
  // escaping is decoded back in the other header fields.
  EXPECT_FALSE(DecodeFrame(frame).ok());
  auto f = DecodeFrame(EncodeFrame({"ns", "k&\"<>\n", "n", "op\xff"}, ""));
  ASSERT_TRUE(f.ok()) << f.message();
  EXPECT_EQ(f->header.resource_kind, "k&\"<>\n");
  EXPECT_EQ(f->header.operation, "op\ufffd");
  EXPECT_EQ(f->content, "");
  EXPECT_FALSE(f->content_null);
}

// [D:I15.10]: names and namespaces are Kubernetes names; a '/' would make another key.
TEST(Envelope, BadNamesAreRejected) {
  struct Case {
    std::string ns, name;
    std::string error;  // "" : accepted
  };
  const Case kCases[] = {
      {"default", "helmet-detection-demo", ""},
      {"", "", ""},  // Go's zero values (a bare or null header)
      {"kube-system", "a.b-c.0", ""},
      {"default", "a/b", "header.resourceName: \"a/b\" must not contain '/'"},
      {"default", "..", "header.resourceName: \"..\" is not a valid name: "},
      {"default", "Job", "header.resourceName: \"Job\" is not a valid name: "},
      {"default", std::string(254, 'n'), "header.resourceName: \"nnnn"},
      {"a/b", "j", "header.namespace: \"a/b\" must not contain '/'"},
      {"Default", "j", "header.namespace: \"Default\" is not a valid namespace: "},
      {"a.b", "j", "header.namespace: \"a.b\" is not a valid namespace: "},
      {std::string(64, 'a'), "j", "header.namespace: \"aaaa"},
  };
  for (const auto& c : kCases) {
    auto f = DecodeFrame(EncodeFrame({c.ns, "dataset", c.name, "delete"}, ""));
    if (c.error.empty()) {
      EXPECT_TRUE(f.ok()) << c.ns << "/" << c.name << ": " << f.message();
    } else {
      ASSERT_FALSE(f.ok()) << c.ns << "/" << c.name;
      EXPECT_EQ(f.message().rfind(c.error, 0), 0u) << f.message();
    }
  }
}

TEST(Envelope, BinaryContentRoundTrips) {
  std::string bytes;
  for (int i = 0; i < 256; ++i) bytes += static_cast<char>(i);
  auto f = DecodeFrame(EncodeFrame({"n", "k", "r", "insert"}, bytes));
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->content, bytes);
}

TEST(Envelope, GoZeroValuesForAbsentOrNullParts) {
  struct Case {
    std::string text;
    bool content_null;
  };
  const Case kCases[] = {
      {"{}", true},
      {"null", true},
      {R"({"header":null,"content":null})", true},
      {R"({"header":{"namespace":null},"content":""})", false},
      {R"({"unknown":[1,{"x":2}],"content":"e30="})", false},
  };
  for (const auto& c : kCases) {
    auto f = DecodeFrame(c.text);
    ASSERT_TRUE(f.ok()) << c.text << ": " << f.message();
    EXPECT_EQ(f->header, MessageHeader{}) << c.text;
    EXPECT_EQ(f->content_null, c.content_null) << c.text;
  }
  auto f = DecodeFrame(R"({"content":"e30="})");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->content, "{}");
}

TEST(Envelope, AcceptsLineBreaksInsideBase64) {
  auto f = DecodeFrame(R"({"header":{},"content":"eyJu\r\ndW1i\nZXJPZlNhbXBsZXMiOjEwMDB9"})");
  ASSERT_TRUE(f.ok()) << f.message();
  EXPECT_EQ(f->content, R"({"numberOfSamples":1000})");
}

struct BadFrame {
  std::string text;
  std::string error;  // expected prefix of the message
};

TEST(Envelope, ErrorsNameThePart) {
  const BadFrame kCases[] = {
      {R"({"header":{},"content":{}})", "content: expected a base64 string, got object"},
      {R"({"header":{},"content":[]})", "content: expected a base64 string, got array"},
      {R"({"header":{},"content":42})", "content: expected a base64 string, got number"},
      {R"({"header":{},"content":"@@@@"})",
       "content: invalid base64: illegal character '@' at offset 0"},
      {R"({"header":{},"content":"eyJ9="})", "content: invalid base64: unexpected padding"},
      {R"({"header":{},"content":"eyJ"})", "content: invalid base64: truncated input"},
      {R"({"header":{"operation":1},"content":""})",
       "header.operation: expected a string, got number"},
      {R"({"header":{"namespace":{}},"content":""})",
       "header.namespace: expected a string, got object"},
      {R"({"header":{"resourceKind":true}})",
       "header.resourceKind: expected a string, got boolean"},
      {R"({"header":{"resourceName":["x"]}})", "header.resourceName: expected a string, got array"},
      {R"({"header":"x","content":""})", "header: expected an object, got string"},
      {"[]", "frame: expected an object, got array"},
      {"\"eyJ9\"", "frame: expected an object, got string"},
      {R"({"header":{},"content":"eyJ9")", "invalid JSON: "},
      {"", "invalid JSON: "},
      {"{\"header\":{},\"content\":\"\xff\"}", "invalid JSON: "},
      {"{\"header\":{\"x\":" + NestedArrays(20000) + "}}", "invalid JSON: exceeded max depth"},
  };
  for (const auto& c : kCases) {
    Result<Frame> f = Result<Frame>::Error("unset");
    EXPECT_NO_THROW(f = DecodeFrame(c.text)) << c.text;
    ASSERT_FALSE(f.ok()) << c.text;
    EXPECT_EQ(f.message().rfind(c.error, 0), 0u) << c.text << " -> " << f.message();
  }
}

TEST(Envelope, ToleratesDeepUnknownMembersAndLargeStrings) {
  auto f = DecodeFrame("{\"header\":{\"x\":" + NestedArrays(9000) + "},\"content\":\"\"}");
  ASSERT_TRUE(f.ok()) << f.message();
  std::string big(100 * 1024, 'n');
  f = DecodeFrame(EncodeFrame({"default", big, "d", "insert"}, big));
  ASSERT_TRUE(f.ok()) << f.message();
  EXPECT_EQ(f->header.resource_kind, big);
  EXPECT_EQ(f->content, big);
}

TEST(Envelope, DecodeFrameHeaderNamesARefusedFrameWithinTheSameBounds) {
  auto h = DecodeFrameHeader(
      R"({"header":{"namespace":"ns","resourceKind":"dataset","resourceName":"a/b",)"
      R"("operation":7},"content":{}})");
  ASSERT_TRUE(h.ok()) << h.message();
  EXPECT_EQ(h->ns, "ns");
  EXPECT_EQ(h->resource_kind, "dataset");
  EXPECT_EQ(h->resource_name, "a/b");  // not checked: it only names the frame
  EXPECT_EQ(h->operation, "");         // not a string
  EXPECT_FALSE(DecodeFrameHeader("[1]").ok());
  std::string bomb = R"({"header":{"resourceName":"x"},"x":[0)";
  for (size_t i = 0; i < kMaxFrameValues; ++i) bomb += ",0";
  bomb += "]}";
  auto b = DecodeFrameHeader(bomb);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.message(), "invalid JSON: more than 32768 values");
}

}  // namespace
}  // namespace sedna::json
