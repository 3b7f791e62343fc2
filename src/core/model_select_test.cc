#include "core/model_select.h"

#include <gtest/gtest.h>

namespace sedna::core {
namespace {

ModelRef M(std::string format, std::string url, std::vector<std::string> devices = {}) {
  ModelRef m;
  m.format = std::move(format);
  m.url = std::move(url);
  m.devices = std::move(devices);
  return m;
}

// §H4.3's test: deploy Model {om, devices:[Ascend710]}, outputs
// [{om,[Ascend310],x},{om,[Ascend710],y},{pb,z}] -> y; with deploy devices [] -> x.
TEST(SelectModelTest, DeviceRuleOfTheHeadProtocol) {
  const std::vector<ModelRef> out = {M("om", "x", {"Ascend310"}), M("om", "y", {"Ascend710"}),
                                     M("pb", "z")};
  ModelChoice c = SelectModel(out, M("om", "/models/deploy.om", {"Ascend710"}), 0);
  ASSERT_TRUE(c.model);
  EXPECT_TRUE(c.matched);
  EXPECT_EQ(c.model->url, "y");
  c = SelectModel(out, M("om", "/models/deploy.om"), 0);
  EXPECT_EQ(c.model->url, "x");
  c = SelectModel(out, M("pb", "/models/eval.pb", {"Ascend710"}), 0);
  EXPECT_EQ(c.model->url, "z");
}

TEST(SelectModelTest, CandidatesWithNoneOrSeveralDevicesMatchOnFormat) {
  const std::vector<ModelRef> out = {M("om", "two", {"Ascend310", "Ascend910"}), M("om", "one")};
  ModelChoice c = SelectModel(out, M("om", "d", {"Ascend710"}), 0);
  EXPECT_EQ(c.model->url, "two");
}

TEST(SelectModelTest, FormatIsCaseSensitive) {
  ModelChoice c = SelectModel({M("PB", "a"), M("pb", "b")}, M("pb", "d"), 0);
  EXPECT_EQ(c.model->url, "b");
}

TEST(SelectModelTest, NoMatchFallsBackByIndexWithANoteNamingTheFormats) {
  const std::vector<ModelRef> out = {M("pb", "a"), M("ckpt", "b")};
  ModelChoice c = SelectModel(out, M("om", "d", {"Ascend710"}), 1);
  ASSERT_TRUE(c.model);
  EXPECT_FALSE(c.matched);
  EXPECT_EQ(c.model->url, "b");
  EXPECT_NE(c.note.find("\"om\""), std::string::npos) << c.note;
  EXPECT_NE(c.note.find("\"pb\""), std::string::npos) << c.note;
  EXPECT_NE(c.note.find("Ascend710"), std::string::npos) << c.note;
  c = SelectModel({M("pb", "a")}, M("om", "d"), 1);  // fewer candidates: the last one
  EXPECT_EQ(c.model->url, "a");
  c = SelectModel({}, M("om", "d"), 0);
  EXPECT_FALSE(c.model);
}

}  // namespace
}  // namespace sedna::core
