// Parsed documents kept for reuse (KeepParsedDocuments, kept_documents.h): a kept document is the
// next parse's, with its own values; at most the limit, never a large one; what a failed parse
// took goes back; one freed on another thread is not kept there.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "adapters/json/go_json.h"
#include "adapters/json/go_json_internal.h"

namespace sedna::json {
namespace {

const RawJson::Doc* DocOf(const RawJson& v) { return RawJsonAccess::node(v)->doc; }

// Keeping is per thread; each test starts and ends with none kept here.
class KeptDocuments : public ::testing::Test {
 protected:
  void SetUp() override { KeepParsedDocuments(0); }
  void TearDown() override { KeepParsedDocuments(0); }
};

TEST_F(KeptDocuments, AThreadKeepsNoneUnlessAsked) {
  { auto v = RawJson::Parse(R"({"a":[1,2]})"); }
  EXPECT_EQ(KeptParsedDocuments(), 0u);
}

TEST_F(KeptDocuments, AFreedDocumentIsTheNextParsesWithItsOwnValues) {
  KeepParsedDocuments(4);
  const RawJson::Doc* first = nullptr;
  {
    auto a = RawJson::Parse(R"({"name":"a","results":[{"url":"/m/1","metrics":{"f1":[0.5]}}]})");
    ASSERT_TRUE(a.ok());
    first = DocOf(*a);
  }
  EXPECT_EQ(KeptParsedDocuments(), 1u);
  auto b = RawJson::Parse(R"(["x\ty", {"k": 2.5, "m": null}, true, "\u00e9", []])");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(KeptParsedDocuments(), 0u);
  EXPECT_EQ(DocOf(*b), first);  // built in the kept document
  EXPECT_EQ(b->Dump(), R"(["x\ty",{"k":2.5,"m":null},true,"é",[]])");
  // A child copied out shares the document: it outlives the root, and the document is kept only
  // when the child lets go too.
  RawJson child = (*b)[1];
  b = RawJson::Parse("0");
  EXPECT_EQ(KeptParsedDocuments(), 0u);
  EXPECT_EQ(child.Dump(), R"({"k":2.5,"m":null})");
  child = RawJson();
  b = RawJson::Parse("1");
  EXPECT_EQ(KeptParsedDocuments(), 1u);
}

TEST_F(KeptDocuments, AtMostTheLimitAndNeverALargeDocument) {
  KeepParsedDocuments(2);
  {
    std::vector<RawJson> docs;
    for (int i = 0; i < 5; ++i) docs.push_back(*RawJson::Parse("[" + std::to_string(i) + "]"));
  }
  EXPECT_EQ(KeptParsedDocuments(), 2u);
  ReleaseKeptDocuments();
  EXPECT_EQ(KeptParsedDocuments(), 0u);
  std::string big = "[";
  for (int i = 0; i < 1000; ++i) big += "\"" + std::to_string(i) + "\",";
  big += "0]";  // about 1000 nodes: over kMaxKeptDocumentBytes
  {
    auto v = RawJson::Parse(big);
    ASSERT_TRUE(v.ok());
  }
  EXPECT_EQ(KeptParsedDocuments(), 0u);
  // What a failed parse took goes back.
  { auto v = RawJson::Parse("[1]"); }
  EXPECT_EQ(KeptParsedDocuments(), 1u);
  EXPECT_FALSE(RawJson::Parse("[1, {\"a\": tru}]").ok());
  EXPECT_EQ(KeptParsedDocuments(), 1u);
  auto ok = RawJson::Parse(R"({"a":"b"})");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->Dump(), R"({"a":"b"})");
  KeepParsedDocuments(0);  // frees what was kept
  EXPECT_EQ(KeptParsedDocuments(), 0u);
}

TEST_F(KeptDocuments, ADocumentFreedOnAnotherThreadIsNotKeptThere) {
  KeepParsedDocuments(4);
  auto v = RawJson::Parse(R"({"a":[1,2,3]})");
  ASSERT_TRUE(v.ok());
  size_t kept_there = 99;
  std::thread t([&] {
    RawJson mine = std::move(*v);
    mine = RawJson();  // the last owner lets go on a thread that keeps none
    kept_there = KeptParsedDocuments();
  });
  t.join();
  EXPECT_EQ(kept_there, 0u);
  EXPECT_EQ(KeptParsedDocuments(), 0u);
}

}  // namespace
}  // namespace sedna::json
