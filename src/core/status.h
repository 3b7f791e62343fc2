// Errors as values: every fallible call returns Status or Result<T>. No exception crosses a
// module boundary. Both types are [[nodiscard]]: an error is handled (returned, logged, turned
// into a reply) or dropped on purpose with IgnoreError() and a comment saying why.
//
// The contract:
//   * Every error has an ErrorCode. A caller that decides something from an error decides it from
//     code(), errno_value() or http_status(); the message is for humans (logs, replies, the CLI)
//     and its wording may change at any time: never match it.
//   * The code is set by the producer that knows what happened (the adapter that saw the errno
//     or the HTTP answer, the journal that is full), and travels with the error: With() and
//     WithMessage() keep the code and the detail. Status::Error(message) alone is kUnknown: fine
//     for an error every caller only reports, wrong for one a caller branches on.
//   * Status::Errno / Status::Http carry the number they came from (the detail), so a caller that
//     needs more than the code (ENOENT rather than any kNotFound; 412 rather than any precondition)
//     reads it as a value.
//
// The codes are the few this code base branches on or reports as a class, no more:
//   kUnknown            not classified; no caller branches on it.
//   kInvalidArgument    the input is malformed or out of bounds (a URL, a path, a document);
//                       HTTP 400.
//   kNotFound           what was named does not exist: ENOENT, HTTP 404 (a missing directory is
//                       nothing to remove; a missing S3 object is version 0 / a Dataset index
//                       not there yet).
//   kAlreadyExists      EEXIST, HTTP 409.
//   kPermissionDenied   EACCES, EPERM, EROFS; HTTP 401, 403.
//   kFailedPrecondition the state is not the one the request assumed: HTTP 412 (an If-Match
//                       that no longer holds: the object changed during a sync).
//   kResourceExhausted  a bound is reached: the intake journal is full, ENOSPC, EDQUOT, EMFILE;
//                       HTTP 429.
//   kUnavailable        a peer did not answer or answered 5xx; ETIMEDOUT, ECONNREFUSED: worth
//                       trying again later.
//   kIo                 any other errno: the OS refused for a reason not above.
// No kInternal / kTimeout: nothing branches on them (a timeout is kUnavailable); add a code when
// a caller needs to tell a new class apart, and set it where the error is made.
#pragma once

#include <cerrno>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace sedna {

enum class ErrorCode : uint8_t {
  kOk = 0,  // code() of an ok Status: not an error
  kUnknown,
  kInvalidArgument,
  kNotFound,
  kAlreadyExists,
  kPermissionDenied,
  kFailedPrecondition,
  kResourceExhausted,
  kUnavailable,
  kIo,
};

// "NotFound", ...: for logs and test output.
constexpr std::string_view ErrorCodeName(ErrorCode c) {
  switch (c) {
    case ErrorCode::kOk:
      return "Ok";
    case ErrorCode::kUnknown:
      return "Unknown";
    case ErrorCode::kInvalidArgument:
      return "InvalidArgument";
    case ErrorCode::kNotFound:
      return "NotFound";
    case ErrorCode::kAlreadyExists:
      return "AlreadyExists";
    case ErrorCode::kPermissionDenied:
      return "PermissionDenied";
    case ErrorCode::kFailedPrecondition:
      return "FailedPrecondition";
    case ErrorCode::kResourceExhausted:
      return "ResourceExhausted";
    case ErrorCode::kUnavailable:
      return "Unavailable";
    case ErrorCode::kIo:
      return "Io";
  }
  return "Unknown";
}

// The code of an errno value (0 is not an error: kUnknown).
constexpr ErrorCode ErrorCodeOfErrno(int e) {
  switch (e) {
    case ENOENT:
      return ErrorCode::kNotFound;
    case EEXIST:
      return ErrorCode::kAlreadyExists;
    case EACCES:
    case EPERM:
    case EROFS:
      return ErrorCode::kPermissionDenied;
    case ENOSPC:
    case EDQUOT:
    case EMFILE:
    case ENFILE:
    case ENOMEM:
      return ErrorCode::kResourceExhausted;
    case ETIMEDOUT:
    case ECONNREFUSED:
    case ECONNRESET:
    case EHOSTUNREACH:
    case ENETUNREACH:
      return ErrorCode::kUnavailable;
    case EINVAL:
    case ENAMETOOLONG:
      return ErrorCode::kInvalidArgument;
    case 0:
      return ErrorCode::kUnknown;
    default:
      return ErrorCode::kIo;
  }
}

// The code of an HTTP status that is an error (>= 400; anything else: kUnknown).
constexpr ErrorCode ErrorCodeOfHttpStatus(int status) {
  switch (status) {
    case 400:
      return ErrorCode::kInvalidArgument;
    case 401:
    case 403:
      return ErrorCode::kPermissionDenied;
    case 404:
      return ErrorCode::kNotFound;
    case 409:
      return ErrorCode::kAlreadyExists;
    case 412:
      return ErrorCode::kFailedPrecondition;
    case 429:
      return ErrorCode::kResourceExhausted;
    default:
      return status >= 500 && status < 600 ? ErrorCode::kUnavailable : ErrorCode::kUnknown;
  }
}

class [[nodiscard]] Status {
 public:
  Status() = default;
  static Status Ok() { return Status(); }
  // An error no caller branches on (kUnknown).
  static Status Error(std::string message) {
    return Status(ErrorCode::kUnknown, Detail::kNone, 0, std::move(message));
  }
  // `code` must not be kOk.
  static Status Error(ErrorCode code, std::string message) {
    return Status(code == ErrorCode::kOk ? ErrorCode::kUnknown : code, Detail::kNone, 0,
                  std::move(message));
  }
  // An error from errno `e` (its code from ErrorCodeOfErrno); `message` already says it in words.
  static Status Errno(int e, std::string message) {
    return Status(ErrorCodeOfErrno(e), Detail::kErrno, e, std::move(message));
  }
  // An error answer with HTTP status `status` (its code from ErrorCodeOfHttpStatus).
  static Status Http(int status, std::string message) {
    return Status(ErrorCodeOfHttpStatus(status), Detail::kHttpStatus, status, std::move(message));
  }

  bool ok() const { return !error_.has_value(); }
  explicit operator bool() const { return ok(); }
  // kOk when ok.
  ErrorCode code() const { return error_ ? error_->code : ErrorCode::kOk; }
  // The errno of a Status::Errno error, else 0.
  int errno_value() const { return error_ && error_->kind == Detail::kErrno ? error_->detail : 0; }
  // The HTTP status of a Status::Http error, else 0.
  int http_status() const {
    return error_ && error_->kind == Detail::kHttpStatus ? error_->detail : 0;
  }
  // The error text, for humans; empty when ok.
  const std::string& message() const {
    static const std::string kEmpty;
    return error_ ? error_->message : kEmpty;
  }
  // Returns a copy of this error with `context + ": "` prepended; code and detail kept.
  Status With(const std::string& context) const {
    return ok() ? *this : WithMessage(context + ": " + error_->message);
  }
  // Returns a copy of this error with its text replaced; code and detail kept.
  Status WithMessage(std::string message) const {
    if (ok()) return *this;
    Status s = *this;
    s.error_->message = std::move(message);
    return s;
  }
  // Drops this status on purpose; the call site says why it may.
  void IgnoreError() const {}

 private:
  enum class Detail : uint8_t { kNone, kErrno, kHttpStatus };
  struct Rep {
    ErrorCode code;
    Detail kind;
    int detail;
    std::string message;
  };
  Status(ErrorCode code, Detail kind, int detail, std::string message)
      : error_(Rep{code, kind, detail, std::move(message)}) {}
  std::optional<Rep> error_;
};

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {}  // NOLINT: must be an error status
  static Result Error(std::string m) { return Result(Status::Error(std::move(m))); }
  static Result Error(ErrorCode code, std::string m) {
    return Result(Status::Error(code, std::move(m)));
  }

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
  ErrorCode code() const { return ok() ? ErrorCode::kOk : std::get<Status>(v_).code(); }
  const std::string& message() const {
    static const std::string kEmpty;
    return ok() ? kEmpty : std::get<Status>(v_).message();
  }
  // Drops this result on purpose; the call site says why it may.
  void IgnoreError() const {}

 private:
  std::variant<T, Status> v_;
};

}  // namespace sedna
