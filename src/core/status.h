// Errors as values: every fallible call returns Status or Result<T>. No exception crosses a
// module boundary.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace sedna {

class Status {
 public:
  Status() = default;
  static Status Ok() { return Status(); }
  static Status Error(std::string message) { return Status(std::move(message)); }

  bool ok() const { return !error_.has_value(); }
  explicit operator bool() const { return ok(); }
  // The error text; empty when ok.
  const std::string& message() const {
    static const std::string kEmpty;
    return error_ ? *error_ : kEmpty;
  }
  // Returns a copy of this error with `context + ": "` prepended.
  Status With(const std::string& context) const {
    return ok() ? *this : Status(context + ": " + *error_);
  }

 private:
  explicit Status(std::string m) : error_(std::move(m)) {}
  std::optional<std::string> error_;
};

template <class T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {}  // NOLINT: must be an error status
  static Result Error(std::string m) { return Result(Status::Error(std::move(m))); }

  bool ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  Status status() const { return ok() ? Status::Ok() : std::get<Status>(v_); }
  const std::string& message() const {
    static const std::string kEmpty;
    return ok() ? kEmpty : std::get<Status>(v_).message();
  }

 private:
  std::variant<T, Status> v_;
};

}  // namespace sedna
