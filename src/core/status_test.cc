#include "core/status.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <string>

namespace sedna {
namespace {

TEST(StatusTest, OkHasNoCodeDetailOrText) {
  const Status s = Status::Ok();
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), ErrorCode::kOk);
  EXPECT_EQ(s.errno_value(), 0);
  EXPECT_EQ(s.http_status(), 0);
  EXPECT_EQ(s.message(), "");
  EXPECT_TRUE(s.With("context").ok());
  EXPECT_TRUE(s.WithMessage("text").ok());
}

TEST(StatusTest, AnErrorWithoutACodeIsUnknown) {
  const Status s = Status::Error("boom");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), ErrorCode::kUnknown);
  EXPECT_EQ(s.errno_value(), 0);
  EXPECT_EQ(s.http_status(), 0);
  EXPECT_EQ(s.message(), "boom");
}

TEST(StatusTest, AGivenCodeIsKeptAndKOkIsNotAnErrorCode) {
  const Status s = Status::Error(ErrorCode::kResourceExhausted, "full");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), ErrorCode::kResourceExhausted);
  EXPECT_EQ(s.message(), "full");
  const Status not_ok = Status::Error(ErrorCode::kOk, "an error all the same");
  EXPECT_FALSE(not_ok.ok());
  EXPECT_EQ(not_ok.code(), ErrorCode::kUnknown);
}

struct ErrnoCase {
  int e;
  ErrorCode code;
};

class StatusErrnoTest : public ::testing::TestWithParam<ErrnoCase> {};

TEST_P(StatusErrnoTest, CarriesTheErrnoAndItsCode) {
  const Status s = Status::Errno(GetParam().e, "open x: why");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), GetParam().code) << ErrorCodeName(s.code());
  EXPECT_EQ(s.errno_value(), GetParam().e);
  EXPECT_EQ(s.http_status(), 0);
  EXPECT_EQ(s.message(), "open x: why");  // the text is the caller's, nothing appended
}

INSTANTIATE_TEST_SUITE_P(Codes, StatusErrnoTest,
                         ::testing::Values(ErrnoCase{ENOENT, ErrorCode::kNotFound},
                                           ErrnoCase{EEXIST, ErrorCode::kAlreadyExists},
                                           ErrnoCase{EACCES, ErrorCode::kPermissionDenied},
                                           ErrnoCase{EPERM, ErrorCode::kPermissionDenied},
                                           ErrnoCase{EROFS, ErrorCode::kPermissionDenied},
                                           ErrnoCase{ENOSPC, ErrorCode::kResourceExhausted},
                                           ErrnoCase{EDQUOT, ErrorCode::kResourceExhausted},
                                           ErrnoCase{ETIMEDOUT, ErrorCode::kUnavailable},
                                           ErrnoCase{EINVAL, ErrorCode::kInvalidArgument},
                                           ErrnoCase{EIO, ErrorCode::kIo},
                                           ErrnoCase{ENOTDIR, ErrorCode::kIo}));

struct HttpCase {
  int status;
  ErrorCode code;
};

class StatusHttpTest : public ::testing::TestWithParam<HttpCase> {};

TEST_P(StatusHttpTest, CarriesTheHttpStatusAndItsCode) {
  const Status s = Status::Http(GetParam().status, "GET s3://b/k: answer");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), GetParam().code) << ErrorCodeName(s.code());
  EXPECT_EQ(s.http_status(), GetParam().status);
  EXPECT_EQ(s.errno_value(), 0);
}

INSTANTIATE_TEST_SUITE_P(Codes, StatusHttpTest,
                         ::testing::Values(HttpCase{400, ErrorCode::kInvalidArgument},
                                           HttpCase{401, ErrorCode::kPermissionDenied},
                                           HttpCase{403, ErrorCode::kPermissionDenied},
                                           HttpCase{404, ErrorCode::kNotFound},
                                           HttpCase{409, ErrorCode::kAlreadyExists},
                                           HttpCase{412, ErrorCode::kFailedPrecondition},
                                           HttpCase{416, ErrorCode::kUnknown},
                                           HttpCase{429, ErrorCode::kResourceExhausted},
                                           HttpCase{500, ErrorCode::kUnavailable},
                                           HttpCase{503, ErrorCode::kUnavailable},
                                           HttpCase{301, ErrorCode::kUnknown}));

TEST(StatusTest, AnErrnoIsNotAnHttpStatusNorTheOtherWayRound) {
  // 404 is no errno a caller means, and ENOENT (2) no HTTP status: each is read as what it is.
  EXPECT_EQ(Status::Errno(ENOENT, "x").http_status(), 0);
  EXPECT_EQ(Status::Http(404, "x").errno_value(), 0);
}

TEST(StatusTest, WithPrependsContextAndKeepsCodeAndDetail) {
  const Status errno_error = Status::Errno(ENOENT, "open /a: No such file or directory");
  const Status e = errno_error.With("outer").With("outermost");
  EXPECT_EQ(e.message(), "outermost: outer: open /a: No such file or directory");
  EXPECT_EQ(e.code(), ErrorCode::kNotFound);
  EXPECT_EQ(e.errno_value(), ENOENT);

  const Status h = Status::Http(412, "GET s3://b/k: 412 PreconditionFailed").With("sync");
  EXPECT_EQ(h.message(), "sync: GET s3://b/k: 412 PreconditionFailed");
  EXPECT_EQ(h.code(), ErrorCode::kFailedPrecondition);
  EXPECT_EQ(h.http_status(), 412);

  const Status c = Status::Error(ErrorCode::kResourceExhausted, "full").With("journal");
  EXPECT_EQ(c.code(), ErrorCode::kResourceExhausted);
  EXPECT_EQ(c.errno_value(), 0);
}

TEST(StatusTest, WithMessageReplacesTheTextOnly) {
  const Status s = Status::Http(404, "HEAD s3://b/k: 404 Not Found").WithMessage("it is gone");
  EXPECT_EQ(s.message(), "it is gone");
  EXPECT_EQ(s.code(), ErrorCode::kNotFound);
  EXPECT_EQ(s.http_status(), 404);
}

Result<int> Half(int n) {
  if (n % 2 != 0) return Status::Errno(EINVAL, std::to_string(n) + " is odd");
  return n / 2;
}

Result<int> Quarter(int n) {
  auto h = Half(n);
  if (!h.ok()) return h.status().With("quarter");
  return Half(*h);
}

TEST(StatusTest, ResultCarriesAValueOrTheCodedError) {
  auto ok = Quarter(8);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 2);
  EXPECT_EQ(ok.code(), ErrorCode::kOk);
  EXPECT_TRUE(ok.status().ok());

  auto bad = Quarter(6);  // 6 / 2 = 3 is odd: the second Half fails, returned as is
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(bad.status().errno_value(), EINVAL);
  EXPECT_EQ(bad.message(), "3 is odd");

  auto wrapped = Quarter(5);  // the first Half fails: wrapped with context, code kept
  ASSERT_FALSE(wrapped.ok());
  EXPECT_EQ(wrapped.code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(wrapped.status().errno_value(), EINVAL);
  EXPECT_EQ(wrapped.message(), "quarter: 5 is odd");
}

TEST(StatusTest, ResultErrorWithACode) {
  const Result<std::string> r = Result<std::string>::Error(ErrorCode::kNotFound, "no such key");
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.code(), ErrorCode::kNotFound);
  EXPECT_EQ(r.message(), "no such key");
  EXPECT_EQ(Result<int>::Error("plain").code(), ErrorCode::kUnknown);
}

TEST(StatusTest, EveryCodeHasAName) {
  for (ErrorCode c :
       {ErrorCode::kOk, ErrorCode::kUnknown, ErrorCode::kInvalidArgument, ErrorCode::kNotFound,
        ErrorCode::kAlreadyExists, ErrorCode::kPermissionDenied, ErrorCode::kFailedPrecondition,
        ErrorCode::kResourceExhausted, ErrorCode::kUnavailable, ErrorCode::kIo}) {
    EXPECT_FALSE(ErrorCodeName(c).empty());
  }
  EXPECT_EQ(ErrorCodeName(ErrorCode::kNotFound), "NotFound");
}

}  // namespace
}  // namespace sedna
