#include "app/cluster/datasets/problem_shape.h"

namespace sedna::app {

std::string ProblemShape(std::string_view message) {
  std::string out;
  out.reserve(message.size());
  bool in_digits = false;
  for (char c : message) {
    const bool digit = c >= '0' && c <= '9';
    if (!digit) {
      out += c;
    } else if (!in_digits) {
      out += '#';
    }
    in_digits = digit;
  }
  return out;
}

}  // namespace sedna::app
