#include "core/trigger.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace sedna::core {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

TriggerSpec Spec(std::string metric, std::string op, double threshold) {
  TriggerSpec s;
  s.metric = std::move(metric);
  s.op = std::move(op);
  s.threshold = threshold;
  return s;
}

TriggerSpec SpecWithTimer(std::string metric, std::string op, double threshold, std::string start,
                          std::string end) {
  TriggerSpec s = Spec(std::move(metric), std::move(op), threshold);
  s.timer = TimerSpec{std::move(start), std::move(end)};
  return s;
}

Trigger MustCompile(const TriggerSpec& spec) {
  auto t = CompileTrigger(spec);
  EXPECT_TRUE(t.ok()) << t.message();
  return t.ok() ? *t : Trigger{};
}

template <class Row>
std::string RowName(const ::testing::TestParamInfo<Row>& info) {
  return info.param.name;
}

// EvaluateTrigger, and TriggerFires (the steppers' check without the reason) agreeing with it.
TriggerDecision Evaluate(const Trigger& t, const Metrics& stats, int minute_of_day) {
  TriggerDecision d = EvaluateTrigger(t, stats, minute_of_day);
  EXPECT_EQ(TriggerFires(t, stats, minute_of_day), d.fired) << d.reason;
  return d;
}

// ---------------------------------------------------------------------------------------------
// Operators (§P6.2 table) with the 1e-6 equality tolerance.

struct CompareRow {
  std::string name;
  std::string op;
  double value;
  double threshold;
  bool fired;
};

class CompareTest : public ::testing::TestWithParam<CompareRow> {};

TEST_P(CompareTest, EvaluatesLikeSedna) {
  const CompareRow& r = GetParam();
  const Trigger t = MustCompile(Spec("m", r.op, r.threshold));
  const TriggerDecision d = Evaluate(t, {{"m", MetricValue::Number(r.value)}}, 0);
  EXPECT_EQ(d.fired, r.fired) << d.reason;
  EXPECT_FALSE(d.reason.empty());
}

constexpr double kT = 0.5;
constexpr double kInTol = 5e-7;   // |v-t| < 1e-6: equal
constexpr double kOutTol = 2e-6;  // |v-t| > 1e-6: not equal

INSTANTIATE_TEST_SUITE_P(
    Operators, CompareTest,
    ::testing::Values(CompareRow{"GtAbove", ">", 0.6, kT, true},
                      CompareRow{"GtEqual", ">", kT, kT, false},
                      CompareRow{"GtAboveWithinTolerance", ">", kT + kInTol, kT, false},
                      CompareRow{"GtAboveBeyondTolerance", ">", kT + kOutTol, kT, true},
                      CompareRow{"GtBelow", ">", 0.4, kT, false},
                      CompareRow{"GtWordSpelling", "gt", 0.6, kT, true},
                      CompareRow{"GeEqual", ">=", kT, kT, true},
                      CompareRow{"GeBelowWithinTolerance", ">=", kT - kInTol, kT, true},
                      CompareRow{"GeBelowBeyondTolerance", ">=", kT - kOutTol, kT, false},
                      CompareRow{"GeAbove", ">=", 0.6, kT, true},
                      CompareRow{"GeWordSpelling", "ge", kT - kInTol, kT, true},
                      CompareRow{"EqExact", "==", kT, kT, true},
                      CompareRow{"EqWithinToleranceAbove", "==", kT + kInTol, kT, true},
                      CompareRow{"EqWithinToleranceBelow", "==", kT - kInTol, kT, true},
                      CompareRow{"EqBeyondTolerance", "==", kT + kOutTol, kT, false},
                      CompareRow{"EqSingleEquals", "=", kT + kInTol, kT, true},
                      CompareRow{"EqWordSpelling", "eq", kT, kT, true},
                      CompareRow{"NeExact", "!=", kT, kT, false},
                      CompareRow{"NeWithinTolerance", "!=", kT + kInTol, kT, false},
                      CompareRow{"NeBeyondTolerance", "!=", kT - kOutTol, kT, true},
                      CompareRow{"NeWordSpelling", "ne", 1.0, kT, true},
                      CompareRow{"LeEqual", "<=", kT, kT, true},
                      CompareRow{"LeAboveWithinTolerance", "<=", kT + kInTol, kT, true},
                      CompareRow{"LeAboveBeyondTolerance", "<=", kT + kOutTol, kT, false},
                      CompareRow{"LeBelow", "<=", 0.4, kT, true},
                      CompareRow{"LeWordSpelling", "le", 0.4, kT, true},
                      CompareRow{"LtBelow", "<", 0.4, kT, true},
                      CompareRow{"LtEqual", "<", kT, kT, false},
                      CompareRow{"LtBelowWithinTolerance", "<", kT - kInTol, kT, false},
                      CompareRow{"LtBelowBeyondTolerance", "<", kT - kOutTol, kT, true},
                      CompareRow{"LtWordSpelling", "lt", 0.4, kT, true},
                      CompareRow{"IntegerCountAtThreshold", ">", 500, 500, false},
                      CompareRow{"IntegerCountAboveThreshold", ">", 501, 500, true},
                      CompareRow{"OperatorWithSurroundingSpaces", "  >=\t", 500, 500, true}),
    RowName<CompareRow>);

struct OpSpellingRow {
  std::string name;
  std::string text;
  std::optional<CompareOp> op;
};

class OpSpellingTest : public ::testing::TestWithParam<OpSpellingRow> {};

TEST_P(OpSpellingTest, ParsesExactSpellingsOnly) {
  EXPECT_EQ(ParseCompareOp(GetParam().text), GetParam().op);
}

INSTANTIATE_TEST_SUITE_P(
    Spellings, OpSpellingTest,
    ::testing::Values(
        OpSpellingRow{"Gt", ">", CompareOp::kGt}, OpSpellingRow{"GtWord", "gt", CompareOp::kGt},
        OpSpellingRow{"Ge", ">=", CompareOp::kGe}, OpSpellingRow{"GeWord", "ge", CompareOp::kGe},
        OpSpellingRow{"EqSingle", "=", CompareOp::kEq},
        OpSpellingRow{"EqDouble", "==", CompareOp::kEq},
        OpSpellingRow{"EqWord", "eq", CompareOp::kEq}, OpSpellingRow{"Ne", "!=", CompareOp::kNe},
        OpSpellingRow{"NeWord", "ne", CompareOp::kNe}, OpSpellingRow{"Le", "<=", CompareOp::kLe},
        OpSpellingRow{"LeWord", "le", CompareOp::kLe}, OpSpellingRow{"Lt", "<", CompareOp::kLt},
        OpSpellingRow{"LtWord", "lt", CompareOp::kLt},
        OpSpellingRow{"Trimmed", " \t<= ", CompareOp::kLe},
        OpSpellingRow{"Tilde", "~", std::nullopt}, OpSpellingRow{"UpperCase", "GT", std::nullopt},
        OpSpellingRow{"Reversed", "=>", std::nullopt},
        OpSpellingRow{"NotEqualSql", "<>", std::nullopt},
        OpSpellingRow{"TripleEquals", "===", std::nullopt},
        OpSpellingRow{"InnerSpace", "> =", std::nullopt}, OpSpellingRow{"Empty", "", std::nullopt}),
    RowName<OpSpellingRow>);

// ---------------------------------------------------------------------------------------------
// The verified cases of §P6.2, with the bare list now comparing its mean (design-notes §D4).

struct VerifiedRow {
  std::string name;
  std::string metric;
  std::string op;
  bool fired;
  std::string value_in_reason;
};

class VerifiedCaseTest : public ::testing::TestWithParam<VerifiedRow> {};

TEST_P(VerifiedCaseTest, PrecisionDelta) {
  const VerifiedRow& r = GetParam();
  const Metrics stats = {{"precision_delta", MetricValue::List({0.2, 0.05})}};
  const Trigger t = MustCompile(Spec(r.metric, r.op, 0.1));
  const TriggerDecision d = Evaluate(t, stats, 0);
  EXPECT_EQ(d.fired, r.fired) << d.reason;
  EXPECT_THAT(d.reason, HasSubstr(r.value_in_reason));
}

INSTANTIATE_TEST_SUITE_P(
    Section6_2, VerifiedCaseTest,
    ::testing::Values(
        VerifiedRow{"IndexZeroAbove", "precision_delta[0]", ">", true, "precision_delta[0] = 0.2"},
        VerifiedRow{"IndexOneBelow", "precision_delta[1]", ">", false, "precision_delta[1] = 0.05"},
        VerifiedRow{"BareListComparesMean", "precision_delta", ">", true,
                    "precision_delta = 0.125 (mean of 2 values)"},
        VerifiedRow{"BareListLessThanNowFalse", "precision_delta", "<", false,
                    "precision_delta = 0.125"}),
    RowName<VerifiedRow>);

// ---------------------------------------------------------------------------------------------
// Metric expressions.

struct MetricParseRow {
  std::string name;
  std::string text;
  MetricRef expected;
};

class MetricParseTest : public ::testing::TestWithParam<MetricParseRow> {};

TEST_P(MetricParseTest, Accepted) {
  const auto ref = ParseMetricRef(GetParam().text);
  ASSERT_TRUE(ref.ok()) << ref.message();
  EXPECT_EQ(*ref, GetParam().expected);
}

INSTANTIATE_TEST_SUITE_P(
    WellFormed, MetricParseTest,
    ::testing::Values(MetricParseRow{"Bare", "num_of_samples", {"num_of_samples", std::nullopt}},
                      MetricParseRow{
                          "BareSpaces", "  num_of_samples ", {"num_of_samples", std::nullopt}},
                      MetricParseRow{"Indexed", "precision_delta[1]", {"precision_delta", 1}},
                      MetricParseRow{"IndexZero", "p[0]", {"p", 0}},
                      MetricParseRow{"SpacesAroundNameAndIndex", " p [ 12 ] ", {"p", 12}},
                      MetricParseRow{"LeadingZeros", "p[007]", {"p", 7}},
                      MetricParseRow{"PunctuatedName", "mAP@0.5", {"mAP@0.5", std::nullopt}}),
    RowName<MetricParseRow>);

TEST(TriggerCompile, B11_MalformedMetricRejectedNotCrash) {
  struct Row {
    const char* name;
    const char* metric;
    const char* message;  // exact when set, else checked for the field and the quoted input
  };
  const Row rows[] = {
      {"MissingClose", "p[1", R"(condition.metric: "p[1": missing "]")"},
      {"NegativeIndex", "p[-1]",
       R"(condition.metric: "p[-1]": index "-1" is not a non-negative integer)"},
      {"NonNumericIndex", "p[x]",
       R"(condition.metric: "p[x]": index "x" is not a non-negative integer)"},
      {"TrailingText", "p[1]x", nullptr},
      {"MissingName", "[1]", R"(condition.metric: "[1]": missing metric name before "[")"},
      {"EmptyIndex", "p[]", nullptr},
      {"TwoIndexes", "p[1][2]", nullptr},
      {"FractionalIndex", "p[1.5]", nullptr},
      {"SignedIndex", "p[+1]", nullptr},
      {"HugeIndex", "p[99999999999999999999999]", nullptr},
      {"CloseWithoutOpen", "p]", nullptr},
      {"NestedOpen", "p[[1]]", nullptr},
      {"OnlySpacesName", "  [0]", nullptr},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    const auto t = CompileTrigger(Spec(r.metric, ">", 0.1));
    ASSERT_FALSE(t.ok());
    if (r.message != nullptr) {
      EXPECT_EQ(t.message(), r.message);
    } else {
      EXPECT_THAT(t.message(), StartsWith(std::string("condition.metric: \"") + r.metric + "\""));
    }
  }
  const auto empty = CompileTrigger(Spec("", ">", 0.1));
  ASSERT_FALSE(empty.ok());
  EXPECT_THAT(empty.message(), StartsWith("condition.metric: empty"));
  const auto blank = CompileTrigger(Spec("   ", ">", 0.1));
  ASSERT_FALSE(blank.ok());
  EXPECT_THAT(blank.message(), StartsWith("condition.metric: empty"));
}

// ---------------------------------------------------------------------------------------------
// Other compile errors.

struct CompileErrorRow {
  std::string name;
  TriggerSpec spec;
  std::string message_prefix;
};

class CompileErrorTest : public ::testing::TestWithParam<CompileErrorRow> {};

TEST_P(CompileErrorTest, NamesTheField) {
  const auto t = CompileTrigger(GetParam().spec);
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(t.message(), StartsWith(GetParam().message_prefix));
}

TriggerSpec WithPeriod(int64_t seconds) {
  TriggerSpec s = Spec("m", ">", 1);
  s.check_period_seconds = seconds;
  return s;
}

INSTANTIATE_TEST_SUITE_P(
    Errors, CompileErrorTest,
    ::testing::Values(
        CompileErrorRow{
            "UnknownOperator", Spec("m", "~", 1),
            R"(condition.operator: unknown operator "~" (expected one of >, >=, =, ==, !=, <=, <, gt, ge, eq, ne, le, lt))"},
        CompileErrorRow{"UpperCaseOperator", Spec("m", "GT", 1),
                        R"(condition.operator: unknown operator "GT")"},
        CompileErrorRow{"EmptyOperator", Spec("m", "", 1), "condition.operator: empty (expected"},
        CompileErrorRow{"BlankOperator", Spec("m", "  ", 1), "condition.operator: empty"},
        CompileErrorRow{"NegativePeriod", WithPeriod(-5),
                        "checkPeriodSeconds: must be > 0, got -5"},
        CompileErrorRow{"ZeroPeriod", WithPeriod(0), "checkPeriodSeconds: must be > 0, got 0"},
        CompileErrorRow{"StartHourTooLarge", SpecWithTimer("m", ">", 1, "25:00", "24:00"),
                        R"(timer.start: "25:00" is not a time HH:MM (00:00-24:00))"},
        CompileErrorRow{"EndPastMidnight", SpecWithTimer("m", ">", 1, "02:00", "24:01"),
                        R"(timer.end: "24:01" is not a time HH:MM (00:00-24:00))"},
        CompileErrorRow{"EmptyStart", SpecWithTimer("m", ">", 1, "", "04:00"),
                        R"(timer.start: "" is not a time)"},
        CompileErrorRow{"NaNThreshold", Spec("m", ">", std::nan("")),
                        "condition.threshold: must be a finite number"},
        CompileErrorRow{"InfiniteThreshold",
                        Spec("m", ">", std::numeric_limits<double>::infinity()),
                        "condition.threshold: must be a finite number, got inf"}),
    RowName<CompileErrorRow>);

TEST(TriggerCompile, W2_CheckPeriodSecondsHonoured) {
  struct Row {
    const char* name;
    std::optional<int64_t> given;
    int64_t compiled;
  };
  const Row rows[] = {
      {"AbsentDefaultsTo60", std::nullopt, 60},
      {"OneSecond", 1, 1},
      {"Fifteen", 15, 15},
      {"OneHour", 3600, 3600},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    TriggerSpec s = Spec("num_of_samples", ">", 500);
    s.check_period_seconds = r.given;
    const auto t = CompileTrigger(s);
    ASSERT_TRUE(t.ok()) << t.message();
    EXPECT_EQ(t->check_period_seconds, r.compiled);
  }
}

TEST(TriggerCompile, CompilesFieldsAndText) {
  const auto t = CompileTrigger(SpecWithTimer(" num_of_samples ", "gt", 500, "02:00", "24:00"));
  ASSERT_TRUE(t.ok()) << t.message();
  EXPECT_EQ(t->op, CompareOp::kGt);
  EXPECT_EQ(t->threshold, 500);
  EXPECT_EQ(t->metric, (MetricRef{"num_of_samples", std::nullopt}));
  EXPECT_EQ(t->window, (TimeWindow{120, 1440}));
  EXPECT_EQ(t->text, "num_of_samples > 500 during 02:00-24:00");

  const auto u = CompileTrigger(Spec("precision_delta [ 0 ]", "eq", 0.1));
  ASSERT_TRUE(u.ok()) << u.message();
  EXPECT_FALSE(u->window.has_value());
  EXPECT_EQ(u->text, "precision_delta[0] == 0.1");
}

// ---------------------------------------------------------------------------------------------
// Timers.

struct TimeParseRow {
  std::string name;
  std::string text;
  std::optional<int> minute;  // nullopt: rejected
};

class TimeParseTest : public ::testing::TestWithParam<TimeParseRow> {};

TEST_P(TimeParseTest, Parses) {
  const auto m = ParseTimeOfDay(GetParam().text);
  if (GetParam().minute) {
    ASSERT_TRUE(m.ok()) << m.message();
    EXPECT_EQ(*m, *GetParam().minute);
  } else {
    ASSERT_FALSE(m.ok());
    EXPECT_THAT(m.message(), HasSubstr("is not a time HH:MM (00:00-24:00)"));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Times, TimeParseTest,
    ::testing::Values(
        TimeParseRow{"Midnight", "00:00", 0}, TimeParseRow{"MidnightUnpadded", "0:00", 0},
        TimeParseRow{"TwoPadded", "02:00", 120}, TimeParseRow{"TwoUnpadded", "2:00", 120},
        TimeParseRow{"NineThirtyUnpadded", "9:30", 570}, TimeParseRow{"LastMinute", "23:59", 1439},
        TimeParseRow{"EndOfDay", "24:00", 1440}, TimeParseRow{"SurroundingSpaces", " 02:00 ", 120},
        TimeParseRow{"HourTooLarge", "25:00", std::nullopt},
        TimeParseRow{"PastEndOfDay", "24:01", std::nullopt},
        TimeParseRow{"MinuteTooLarge", "02:60", std::nullopt},
        TimeParseRow{"OneDigitMinute", "2:5", std::nullopt},
        TimeParseRow{"NoColon", "0200", std::nullopt},
        TimeParseRow{"ThreeDigitHour", "002:00", std::nullopt},
        TimeParseRow{"Seconds", "02:00:00", std::nullopt},
        TimeParseRow{"Suffix", "2:00pm", std::nullopt},
        TimeParseRow{"Negative", "-1:00", std::nullopt},
        TimeParseRow{"NoHour", ":00", std::nullopt}, TimeParseRow{"NoMinute", "12:", std::nullopt},
        TimeParseRow{"Letters", "ab:cd", std::nullopt}, TimeParseRow{"Empty", "", std::nullopt}),
    RowName<TimeParseRow>);

struct WindowRow {
  std::string name;
  std::string start;
  std::string end;
  int now;
  bool inside;
};

class WindowTest : public ::testing::TestWithParam<WindowRow> {};

TEST_P(WindowTest, InclusiveAtMinuteGranularity) {
  const WindowRow& r = GetParam();
  const Trigger t = MustCompile(SpecWithTimer("m", ">", 0, r.start, r.end));
  const TriggerDecision d = Evaluate(t, {{"m", MetricValue::Number(1)}}, r.now);
  EXPECT_EQ(d.fired, r.inside) << d.reason;
  EXPECT_THAT(d.reason, HasSubstr(r.inside ? " within " : " outside "));
}

constexpr int At(int h, int m) { return h * 60 + m; }

INSTANTIATE_TEST_SUITE_P(
    Windows, WindowTest,
    ::testing::Values(WindowRow{"UntilEndOfDayBeforeStart", "02:00", "24:00", At(1, 59), false},
                      WindowRow{"UntilEndOfDayAtStart", "02:00", "24:00", At(2, 0), true},
                      WindowRow{"UntilEndOfDayLastMinute", "02:00", "24:00", At(23, 59), true},
                      WindowRow{"UntilEndOfDayMidnight", "02:00", "24:00", At(0, 0), false},
                      WindowRow{"CrossingBeforeStart", "23:00", "01:00", At(22, 59), false},
                      WindowRow{"CrossingAtStart", "23:00", "01:00", At(23, 0), true},
                      WindowRow{"CrossingLastMinute", "23:00", "01:00", At(23, 59), true},
                      WindowRow{"CrossingMidnight", "23:00", "01:00", At(0, 0), true},
                      WindowRow{"CrossingAtEnd", "23:00", "01:00", At(1, 0), true},
                      WindowRow{"CrossingAfterEnd", "23:00", "01:00", At(1, 1), false},
                      WindowRow{"CrossingMidday", "23:00", "01:00", At(12, 0), false},
                      WindowRow{"CrossingUnpadded", "22:00", "2:00", At(1, 30), true},
                      WindowRow{"SingleMinuteInside", "12:00", "12:00", At(12, 0), true},
                      WindowRow{"SingleMinuteAfter", "12:00", "12:00", At(12, 1), false},
                      WindowRow{"WholeDayFirstMinute", "00:00", "24:00", At(0, 0), true},
                      WindowRow{"WholeDayLastMinute", "00:00", "24:00", At(23, 59), true}),
    RowName<WindowRow>);

TEST(TriggerTimer, UnpaddedTimerAccepted) {
  struct Row {
    const char* name;
    int now;
    bool inside;
  };
  // "9:00" < "10:00" lexicographically fails in the Go LC; minutes compare correctly.
  const Trigger t = MustCompile(SpecWithTimer("m", ">", 0, "9:00", "17:30"));
  ASSERT_TRUE(t.window.has_value());
  EXPECT_EQ(*t.window, (TimeWindow{At(9, 0), At(17, 30)}));
  EXPECT_EQ(t.text, "m > 0 during 09:00-17:30");
  const Row rows[] = {
      {"BeforeStart", At(8, 59), false}, {"AtStart", At(9, 0), true},
      {"TenOClock", At(10, 0), true},    {"AtEnd", At(17, 30), true},
      {"AfterEnd", At(17, 31), false},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    EXPECT_EQ(Evaluate(t, {{"m", MetricValue::Number(1)}}, r.now).fired, r.inside);
  }
  const auto two = CompileTrigger(SpecWithTimer("m", ">", 0, "2:00", "4:30"));
  ASSERT_TRUE(two.ok()) << two.message();
  EXPECT_EQ(*two->window, (TimeWindow{120, 270}));
}

// ---------------------------------------------------------------------------------------------
// Numbers in a reason read as people write them ([D:I16]: "0.0334", not 0.033440000000000004).
TEST(TriggerReasonTest, NumbersHaveAtMostTwelveSignificantDigits) {
  const Trigger t = MustCompile(Spec("precision_delta", ">", 0.01));
  const double delta = 0.81 - 0.77656;  // 0.03344000000000005 in binary
  const TriggerDecision d = Evaluate(t, {{"precision_delta", MetricValue::Number(delta)}}, 0);
  EXPECT_TRUE(d.fired);
  EXPECT_THAT(d.reason, HasSubstr("= 0.03344 > 0.01")) << d.reason;
  EXPECT_THAT(d.reason, ::testing::Not(HasSubstr("0000000"))) << d.reason;
}

// Evaluation: condition AND window, and the reason.

struct DecisionRow {
  std::string name;
  Metrics stats;
  int now;
  bool fired;
  std::vector<std::string> reason_parts;
};

class DecisionTest : public ::testing::TestWithParam<DecisionRow> {};

TEST_P(DecisionTest, ConditionAndWindow) {
  const DecisionRow& r = GetParam();
  const Trigger t = MustCompile(SpecWithTimer("num_of_samples", ">", 500, "02:00", "24:00"));
  const TriggerDecision d = Evaluate(t, r.stats, r.now);
  EXPECT_EQ(d.fired, r.fired) << d.reason;
  for (const std::string& part : r.reason_parts) EXPECT_THAT(d.reason, HasSubstr(part));
}

INSTANTIATE_TEST_SUITE_P(
    AndSemantics, DecisionTest,
    ::testing::Values(
        DecisionRow{"BothHold",
                    {{"num_of_samples", MetricValue::Number(600)}},
                    At(3, 0),
                    true,
                    {"fired: ", "num_of_samples = 600 > 500", "now 03:00 within 02:00-24:00"}},
        DecisionRow{"ConditionFails",
                    {{"num_of_samples", MetricValue::Number(400)}},
                    At(3, 0),
                    false,
                    {"not fired: ", "num_of_samples = 400, not > 500"}},
        DecisionRow{"WindowFails",
                    {{"num_of_samples", MetricValue::Number(600)}},
                    At(1, 30),
                    false,
                    {"not fired: now 01:30 outside 02:00-24:00", "num_of_samples = 600"}},
        DecisionRow{"BothFail",
                    {{"num_of_samples", MetricValue::Number(400)}},
                    At(1, 30),
                    false,
                    {"not > 500", "outside"}},
        DecisionRow{"MetricMissing",
                    {{"other", MetricValue::Number(600)}},
                    At(3, 0),
                    false,
                    {"not fired: ", "\"num_of_samples\"", "not reported", "other"}},
        DecisionRow{"MetricNotNumeric",
                    {{"num_of_samples", MetricValue::Other()}},
                    At(3, 0),
                    false,
                    {"\"num_of_samples\"", "not a number"}}),
    RowName<DecisionRow>);

TEST(TriggerEvaluate, NoWindowReasonHasNoTime) {
  const Trigger t = MustCompile(Spec("num_of_samples", ">=", 10));
  const TriggerDecision d = Evaluate(t, {{"num_of_samples", MetricValue::Number(10)}}, 0);
  EXPECT_TRUE(d.fired);
  EXPECT_EQ(d.reason, "fired: num_of_samples = 10 >= 10");
}

// ---------------------------------------------------------------------------------------------
// ResolveMetric.

struct ResolveRow {
  std::string name;
  std::string metric;
  Metrics stats;
  std::optional<double> value;  // nullopt: error
  std::string error_part;
};

class ResolveTest : public ::testing::TestWithParam<ResolveRow> {};

TEST_P(ResolveTest, Resolves) {
  const ResolveRow& r = GetParam();
  const auto ref = ParseMetricRef(r.metric);
  ASSERT_TRUE(ref.ok()) << ref.message();
  const auto v = ResolveMetric(*ref, r.stats);
  if (r.value) {
    ASSERT_TRUE(v.ok()) << v.message();
    EXPECT_DOUBLE_EQ(*v, *r.value);
  } else {
    ASSERT_FALSE(v.ok());
    EXPECT_THAT(v.message(), HasSubstr("metric \"" + r.metric + "\""));
    EXPECT_THAT(v.message(), HasSubstr(r.error_part));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Values, ResolveTest,
    ::testing::Values(
        ResolveRow{"Number", "n", {{"n", MetricValue::Number(3.5)}}, 3.5, ""},
        ResolveRow{"ListElement", "l[2]", {{"l", MetricValue::List({1, 2, 3})}}, 3, ""},
        ResolveRow{"ListMean", "l", {{"l", MetricValue::List({1, 2, 6})}}, 3, ""},
        ResolveRow{"SingleElementMean", "l", {{"l", MetricValue::List({0.7})}}, 0.7, ""},
        ResolveRow{
            "HugeListMeanNoOverflow", "l", {{"l", MetricValue::List({1e308, 1e308})}}, 1e308, ""},
        ResolveRow{"Missing", "x", {{"n", MetricValue::Number(1)}}, std::nullopt, "not reported"},
        ResolveRow{"MissingFromEmpty", "x", {}, std::nullopt, "no metrics reported"},
        ResolveRow{"IndexOutOfRange",
                   "l[2]",
                   {{"l", MetricValue::List({1, 2})}},
                   std::nullopt,
                   "index 2 out of range (list has 2 values)"},
        ResolveRow{"EmptyList", "l", {{"l", MetricValue::List({})}}, std::nullopt, "empty list"},
        ResolveRow{"EmptyListIndexed",
                   "l[0]",
                   {{"l", MetricValue::List({})}},
                   std::nullopt,
                   "out of range"},
        ResolveRow{"Other", "o", {{"o", MetricValue::Other()}}, std::nullopt, "not a number"},
        ResolveRow{"IndexOnNumber",
                   "n[0]",
                   {{"n", MetricValue::Number(1)}},
                   std::nullopt,
                   "is a number, not a list"},
        ResolveRow{
            "NaNValue", "n", {{"n", MetricValue::Number(std::nan(""))}}, std::nullopt, "NaN"}),
    RowName<ResolveRow>);

// ---------------------------------------------------------------------------------------------
// Deploy stats (§P6.4).

void ExpectListNear(const MetricValue& v, const std::vector<double>& expected) {
  ASSERT_EQ(v.kind, MetricValue::Kind::kList);
  ASSERT_EQ(v.list.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_NEAR(v.list[i], expected[i], 1e-9) << i;
}

TEST(DeployStats, Section6_4Example) {
  const Metrics new_model = {{"precision", MetricValue::List({0.81, 0.74, 0.69, 0.52})},
                             {"accuracy", MetricValue::Number(0.9)}};
  const Metrics old_model = {{"precision", MetricValue::List({0.66, 0.71, 0.58, 0.40})},
                             {"accuracy", MetricValue::Number(0.85)},
                             {"recall", MetricValue::Number(0.5)}};
  const DeployStats ds = BuildDeployStats(new_model, old_model);
  EXPECT_TRUE(ds.notes.empty());
  ASSERT_EQ(ds.stats.size(), 4u);
  EXPECT_EQ(ds.stats.at("precision"), new_model.at("precision"));
  ExpectListNear(ds.stats.at("precision_delta"), {0.15, 0.03, 0.11, 0.12});
  EXPECT_EQ(ds.stats.at("accuracy"), new_model.at("accuracy"));
  ASSERT_EQ(ds.stats.at("accuracy_delta").kind, MetricValue::Kind::kNumber);
  EXPECT_NEAR(ds.stats.at("accuracy_delta").number, 0.05, 1e-9);
  EXPECT_EQ(ds.stats.count("recall"), 0u);

  // precision_delta[0] fires; the bare list compares its mean 0.1025 (never fired in Go).
  EXPECT_TRUE(Evaluate(MustCompile(Spec("precision_delta[0]", ">", 0.1)), ds.stats, 0).fired);
  EXPECT_FALSE(Evaluate(MustCompile(Spec("precision_delta[1]", ">", 0.1)), ds.stats, 0).fired);
  const TriggerDecision mean =
      Evaluate(MustCompile(Spec("precision_delta", ">", 0.1)), ds.stats, 0);
  EXPECT_TRUE(mean.fired) << mean.reason;
  EXPECT_THAT(mean.reason, HasSubstr("mean of 4 values"));
}

TEST(DeployStats, B9_DeployedMetricShorterNoCrash) {
  struct Row {
    const char* name;
    Metrics new_model;
    Metrics old_model;
    const char* note_part;  // nullptr: no note expected
  };
  const Row rows[] = {
      {"OldShorter",
       {{"precision", MetricValue::List({0.8, 0.7, 0.6})}},
       {{"precision", MetricValue::List({0.6, 0.5})}},
       "3 values, the deployed model 2"},
      {"OldLonger",
       {{"precision", MetricValue::List({0.8})}},
       {{"precision", MetricValue::List({0.6, 0.5})}},
       "1 value, the deployed model 2"},
      {"OldMissing",
       {{"precision", MetricValue::List({0.8})}},
       {{"recall", MetricValue::List({0.6})}},
       "not reported for the deployed model"},
      {"OldEmpty", {{"precision", MetricValue::Number(0.8)}}, {}, "not reported"},
      {"NumberVersusList",
       {{"precision", MetricValue::Number(0.8)}},
       {{"precision", MetricValue::List({0.6})}},
       "a number, the deployed model does not"},
      {"ListVersusOther",
       {{"precision", MetricValue::List({0.8})}},
       {{"precision", MetricValue::Other()}},
       "a list, the deployed model does not"},
      {"NewIsOther",
       {{"precision", MetricValue::Other()}},
       {{"precision", MetricValue::Other()}},
       "not a number or a list"},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    const DeployStats ds = BuildDeployStats(r.new_model, r.old_model);
    EXPECT_EQ(ds.stats, r.new_model);  // copied as is, no precision_delta
    ASSERT_EQ(ds.notes.size(), 1u);
    EXPECT_THAT(ds.notes[0], HasSubstr("\"precision\""));
    EXPECT_THAT(ds.notes[0], HasSubstr(r.note_part));
    // A trigger on the missing delta is an error-valued "not fired", never a crash.
    const TriggerDecision d =
        Evaluate(MustCompile(Spec("precision_delta[0]", ">", 0.1)), ds.stats, 0);
    EXPECT_FALSE(d.fired);
    EXPECT_THAT(d.reason, HasSubstr("not reported"));
  }
}

TEST(DeployStats, OneBadKeyDoesNotSpoilTheOthers) {
  const Metrics new_model = {{"precision", MetricValue::List({0.8, 0.7})},
                             {"recall", MetricValue::List({0.5, 0.4})}};
  const Metrics old_model = {{"precision", MetricValue::List({0.6})},
                             {"recall", MetricValue::List({0.25, 0.5})}};
  const DeployStats ds = BuildDeployStats(new_model, old_model);
  EXPECT_EQ(ds.notes.size(), 1u);
  EXPECT_EQ(ds.stats.count("precision_delta"), 0u);
  ExpectListNear(ds.stats.at("recall_delta"), {0.25, -0.1});
}

TEST(DeployStats, ReportedDeltaKeptAndEmptyInputs) {
  const Metrics new_model = {{"p", MetricValue::Number(0.8)}, {"p_delta", MetricValue::Number(42)}};
  const Metrics old_model = {{"p", MetricValue::Number(0.6)}};
  const DeployStats ds = BuildDeployStats(new_model, old_model);
  EXPECT_EQ(ds.stats.at("p_delta"), MetricValue::Number(42));
  ASSERT_EQ(ds.notes.size(), 2u);  // p: reported delta kept; p_delta: no deployed value
  EXPECT_THAT(ds.notes[0], HasSubstr("reports \"p_delta\" itself"));

  const DeployStats empty = BuildDeployStats({}, old_model);
  EXPECT_TRUE(empty.stats.empty());
  EXPECT_TRUE(empty.notes.empty());
}

}  // namespace
}  // namespace sedna::core
