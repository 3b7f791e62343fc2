// NameMap (name_map.h) against std::map<std::string, V>, whose behaviour it stands in for.
#include "core/name_map.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

namespace sedna::core {
namespace {

template <class V>
std::vector<std::pair<std::string, V>> Items(const NameMap<V>& m) {
  return {m.begin(), m.end()};
}
template <class V>
std::vector<std::pair<std::string, V>> Items(const std::map<std::string, V>& m) {
  return {m.begin(), m.end()};
}

// Random inserts (operator[], emplace), lookups and erases over a small alphabet of names, the
// same on both: the same contents in the same order after every operation.
TEST(NameMapTest, BehavesAsStdMapUnderRandomOperations) {
  const std::vector<std::string> names = {
      "",  "a",      "b",       "ab",     "precision",           "recall", "f1_score",
      "Z", "task/1", "task/10", "task/2", std::string("\0x", 2), "\xff",   "\x7f"};
  std::mt19937 rng(7);
  NameMap<int> m;
  std::map<std::string, int> want;
  for (int step = 0; step < 5000; ++step) {
    const std::string& name = names[rng() % names.size()];
    const int value = static_cast<int>(rng() % 100);
    switch (rng() % 5) {
      case 0:
        m[name] = value;
        want[name] = value;
        break;
      case 1: {
        auto [it, inserted] = m.emplace(name, value);
        auto [wit, winserted] = want.emplace(name, value);
        ASSERT_EQ(inserted, winserted);
        ASSERT_EQ(it->second, wit->second);
        break;
      }
      case 2:
        ASSERT_EQ(m.erase(name), want.erase(name));
        break;
      case 3:
        ASSERT_EQ(m.count(name), want.count(name));
        ASSERT_EQ(m.find(name) == m.end(), want.find(name) == want.end());
        if (m.contains(name)) {
          ASSERT_EQ(m.at(name), want.at(name));
        }
        break;
      default:
        ASSERT_EQ(m[name], want[name]);  // inserts a zero when absent, on both
        break;
    }
    ASSERT_EQ(Items(m), Items(want)) << "step " << step;
    ASSERT_EQ(m.size(), want.size());
  }
}

TEST(NameMapTest, AnInitializerListKeepsTheFirstOfANameAsStdMapDoes) {
  const NameMap<double> m = {{"recall", 0.5}, {"precision", 0.9}, {"recall", 0.1}};
  const std::map<std::string, double> want = {{"recall", 0.5}, {"precision", 0.9}, {"recall", 0.1}};
  EXPECT_EQ(Items(m), Items(want));
  EXPECT_EQ(m.at("recall"), 0.5);
}

TEST(NameMapTest, EqualityIsOnContentsWhateverTheInsertionOrder) {
  NameMap<double> a, b;
  a["x"] = 1;
  a["y"] = 2;
  b["y"] = 2;
  b["x"] = 1;
  EXPECT_EQ(a, b);
  b["x"] = 3;
  EXPECT_NE(a, b);
  b.clear();
  EXPECT_TRUE(b.empty());
  EXPECT_THROW((void)b.at("x"), std::out_of_range);
}

}  // namespace
}  // namespace sedna::core
