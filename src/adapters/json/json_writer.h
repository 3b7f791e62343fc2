// JsonWriter: JSON text written straight into a string, byte for byte as nlohmann::json's dump()
// writes the same values, for the LC's own records (src/app/cluster/jobs/il_record.h), which are
// read back with nlohmann::json::parse. A record encoded through an nlohmann::json tree cost
// ~250 k instructions (a map node and a copy per key); written here it costs a few thousand.
//
// Contract: the caller writes an object's keys in byte order (nlohmann's objects are std::maps,
// so that is the order dump() gives) and each key once; the writer does not sort or check them.
// Given that, the text equals nlohmann::json::dump() of the same values: no whitespace; strings
// escaped as dump() does (`\"` `\\` `\b` `\f` `\n` `\r` `\t`, other bytes below 0x20 as `\u00xx`,
// everything else verbatim); integers in decimal; doubles as dump() formats them (non-finite:
// null). Where dump() would throw (a string that is not UTF-8), each byte that does not start a
// valid UTF-8 sequence is written as U+FFFD instead, so every text the writer gives parses.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace sedna::json {

class JsonWriter {
 public:
  explicit JsonWriter(std::string& out) : out_(out) {}

  JsonWriter& BeginObject();
  JsonWriter& EndObject();
  JsonWriter& BeginArray();
  JsonWriter& EndArray();
  JsonWriter& Key(std::string_view key);  // inside an object, before each value
  JsonWriter& Int(int64_t v);
  JsonWriter& UInt(uint64_t v);
  JsonWriter& Bool(bool v);
  JsonWriter& Double(double v);
  JsonWriter& String(std::string_view v);
  JsonWriter& Null();

 private:
  void BeforeValue();
  void Open(char bracket);   // a container's opening bracket, one level deeper
  void Close(char bracket);  // its closing bracket, one level up
  void AppendEscaped(std::string_view s);

  std::string& out_;
  // Bit d: the container at depth d already holds an element (a comma goes before the next).
  uint64_t has_element_ = 0;
  int depth_ = 0;  // at most 64 (the LC's records nest 5 deep)
  bool after_key_ = false;
};

}  // namespace sedna::json
