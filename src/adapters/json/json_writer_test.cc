// JsonWriter writes what nlohmann::json's dump() writes for the same values (keys in byte order),
// and where dump() would throw (not UTF-8) a text that parses, with U+FFFD for each bad byte.
#include "adapters/json/json_writer.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/utf8.h"

namespace sedna::json {
namespace {

using Json = nlohmann::json;

// Writes `v` through a JsonWriter the way a record encoder does (an nlohmann object iterates its
// keys in byte order).
void WriteTree(JsonWriter& w, const Json& v) {
  switch (v.type()) {
    case Json::value_t::object:
      w.BeginObject();
      for (auto it = v.begin(); it != v.end(); ++it) WriteTree(w.Key(it.key()), it.value());
      w.EndObject();
      break;
    case Json::value_t::array:
      w.BeginArray();
      for (const auto& e : v) WriteTree(w, e);
      w.EndArray();
      break;
    case Json::value_t::string:
      w.String(v.get_ref<const std::string&>());
      break;
    case Json::value_t::boolean:
      w.Bool(v.get<bool>());
      break;
    case Json::value_t::number_integer:
      w.Int(v.get<int64_t>());
      break;
    case Json::value_t::number_unsigned:
      w.UInt(v.get<uint64_t>());
      break;
    case Json::value_t::number_float:
      w.Double(v.get<double>());
      break;
    default:
      w.Null();
  }
}

std::string Written(const Json& v) {
  std::string out;
  JsonWriter w(out);
  WriteTree(w, v);
  return out;
}

TEST(JsonWriterTest, StringsAreEscapedAsDumpEscapesThem) {
  std::string every_ascii;
  for (int c = 0; c < 0x80; ++c) every_ascii += static_cast<char>(c);
  for (const std::string& s : {std::string(""), std::string("plain"), std::string("q\"b\\s/"),
                               std::string("\b\f\n\r\t", 5), std::string("\0\x01\x1f", 3),
                               std::string("del \x7f"), std::string("\xc3\xbc \xe2\x82\xac"),
                               std::string("\xf0\x9f\x98\x80 \xef\xbf\xbf"), every_ascii}) {
    EXPECT_EQ(Written(Json(s)), Json(s).dump()) << s;
  }
}

TEST(JsonWriterTest, NumbersAreWrittenAsDumpWritesThem) {
  for (int64_t v : {int64_t{0}, int64_t{-1}, int64_t{42}, std::numeric_limits<int64_t>::min(),
                    std::numeric_limits<int64_t>::max()}) {
    EXPECT_EQ(Written(Json(v)), Json(v).dump());
  }
  EXPECT_EQ(Written(Json(std::numeric_limits<uint64_t>::max())),
            Json(std::numeric_limits<uint64_t>::max()).dump());
  for (double v : {0.0, -0.0, 1.0, 3.0, 0.1, 0.125, 1e-7, 1e15, 1e16, 1e21, -1.5e300, 5e-324,
                   std::numeric_limits<double>::max(), std::numeric_limits<double>::infinity(),
                   std::numeric_limits<double>::quiet_NaN()}) {
    EXPECT_EQ(Written(Json(v)), Json(v).dump()) << v;
  }
  std::mt19937_64 rng(7);
  for (int i = 0; i < 20000; ++i) {
    const uint64_t bits = rng();
    double v;
    std::memcpy(&v, &bits, sizeof v);
    ASSERT_EQ(Written(Json(v)), Json(v).dump()) << bits;
  }
}

// Random trees: objects (keys with escapes and UTF-8), arrays, every scalar type, nested.
Json RandomTree(std::mt19937_64& rng, int depth) {
  const auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
  const auto text = [&] {
    static const char* const kPieces[] = {
        "a",    "Z",    "_", "\"",       "\\",           "\n",
        "\x01", "\x7f", " ", "\xc3\xa9", "\xe6\x97\xa5", "\xf0\x9f\x8c\x8d",
        "0"};
    std::string s;
    for (int n = pick(6); n > 0; --n) s += kPieces[pick(13)];
    return s;
  };
  const int kind = depth >= 4 ? 2 + pick(6) : pick(8);
  switch (kind) {
    case 0: {
      Json o = Json::object();
      for (int n = pick(5); n > 0; --n) o[text()] = RandomTree(rng, depth + 1);
      return o;
    }
    case 1: {
      Json a = Json::array();
      for (int n = pick(5); n > 0; --n) a.push_back(RandomTree(rng, depth + 1));
      return a;
    }
    case 2:
      return text();
    case 3:
      return static_cast<int64_t>(rng());
    case 4:
      return static_cast<uint64_t>(rng());
    case 5:
      return static_cast<double>(static_cast<int64_t>(rng() % 2000000) - 1000000) / 64.0;
    case 6:
      return pick(2) == 0;
    default:
      return nullptr;
  }
}

TEST(JsonWriterTest, RandomTreesAreWrittenAsDumpWritesThem) {
  std::mt19937_64 rng(2026);
  for (int i = 0; i < 3000; ++i) {
    const Json v = RandomTree(rng, 0);
    ASSERT_EQ(Written(v), v.dump()) << v.dump();
  }
}

TEST(JsonWriterTest, BytesThatAreNotUtf8BecomeReplacementCharacters) {
  struct Row {
    std::string in, want;  // want: the decoded string of the written text
  };
  const std::string r = "\xef\xbf\xbd";
  for (const Row& row :
       {Row{"\xff", r}, Row{"a\xc3", "a" + r}, Row{"\xc0\x80", r + r},
        Row{"\xed\xa0\x80", r + r + r}, Row{"\xf4\x90\x80\x80", r + r + r + r},
        Row{"\xe2\x82", r + r}, Row{"ok \xc3\xa9 \x80!", "ok \xc3\xa9 " + r + "!"}}) {
    std::string out;
    JsonWriter(out).String(row.in);
    Json back;
    ASSERT_NO_THROW(back = Json::parse(out)) << out;
    EXPECT_EQ(back.get<std::string>(), row.want) << out;
    EXPECT_FALSE(core::IsValidUtf8(row.in)) << row.in;
  }
  for (const char* ok : {"", "plain", "\xc3\xa9", "\xf0\x9f\x98\x80", "\xef\xbf\xbf\x7f"}) {
    EXPECT_TRUE(core::IsValidUtf8(ok)) << ok;
  }
}

}  // namespace
}  // namespace sedna::json
