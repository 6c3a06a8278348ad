// The rule expression language: parsing, precedence and evaluation.
#include "checker/expr.h"

#include "gtest/gtest.h"

namespace mlperf::checker {
namespace {

using json::Value;

struct Line {
  Value v;
  Value md = Value(json::Object{});
  double ts = 0;
  Value s = Value(json::Object{});
};

absl::StatusOr<Value> Eval(absl::string_view text, const Line& line = {}) {
  absl::StatusOr<Expr> e = Expr::Parse(text);
  if (!e.ok()) return e.status();
  return Evaluate(*e, EvalContext{&line.v, &line.md, line.ts, &line.s});
}

bool True(absl::string_view text, const Line& line = {}) {
  absl::StatusOr<Value> r = Eval(text, line);
  EXPECT_TRUE(r.ok()) << text << ": " << r.status();
  return r.ok() && py::Truthy(*r);
}

TEST(ExprTest, LiteralsAndPrecedence) {
  EXPECT_TRUE(True("1 + 2 * 3 == 7"));
  EXPECT_TRUE(True("-2 ** 2 == -4"));
  EXPECT_TRUE(True("2 ** 3 ** 2 == 512"));
  EXPECT_TRUE(True("1_200_000 - 4 == 1199996"));
  EXPECT_TRUE(True("2.4e-05 * 2 == 4.8e-05"));
  EXPECT_TRUE(True("9e+99 > 1e99"));
  EXPECT_TRUE(True("not 1 == 2"));
  EXPECT_TRUE(True("(1 if False else 2) == 2"));
  EXPECT_TRUE(True("240 if 'open' == 'open' else 30"));
  EXPECT_TRUE(True("'a' 'b' == 'ab'"));
  EXPECT_TRUE(True("7 // 2 == 3 and 7 % 2 == 1"));
  EXPECT_TRUE(True("float('inf') > 1e308"));
}

TEST(ExprTest, ChainedComparisonsShortCircuit) {
  EXPECT_TRUE(True("0.0 <= 0.5 <= 1.0"));
  EXPECT_FALSE(True("0.0 <= 1.5 <= 1.0"));
  // The second comparison is not evaluated once the first fails, so no error.
  EXPECT_FALSE(True("1 > 2 > 'x'"));
  EXPECT_FALSE(Eval("1 < 2 < 'x'").ok());
}

TEST(ExprTest, AndOrReturnOperands) {
  EXPECT_EQ(Eval("0 or 'x'")->as_string(), "x");
  EXPECT_EQ(Eval("'' and 1/0")->as_string(), "");
  EXPECT_TRUE(Eval("1 or 1/0").ok());
  EXPECT_FALSE(Eval("0 or 1/0").ok());
}

TEST(ExprTest, LineNames) {
  Line line{.v = Value(0.76), .md = Value(json::Object{{"epoch_num", Value(3)}}), .ts = 1500.0};
  EXPECT_TRUE(True("v >= 0.7590 and v < 1.0", line));
  EXPECT_TRUE(True("'epoch_num' in md and md.epoch_num == 3 and md['epoch_num'] == 3.0", line));
  EXPECT_TRUE(True("ts - 500 == 1000", line));
  EXPECT_FALSE(Eval("md.samples_count > 0", line).ok());  // KeyError
  Line text{.v = Value("0.9")};
  EXPECT_FALSE(Eval("v >= 0.72", text).ok());  // str vs float
  Line null_md{.v = Value(1), .md = Value()};
  EXPECT_FALSE(Eval("'epoch_num' in md", null_md).ok());
}

TEST(ExprTest, StateAndFunctions) {
  Line line{.v = Value(3.2e-5)};
  line.s.Set("global_batch_size", Value(16384));
  line.s.Set("warmup", Value(4));
  EXPECT_TRUE(True("abs(v - 3.2e-05 * (s.global_batch_size / 16384) ** 0.5) < 1e-9", line));
  EXPECT_TRUE(True("12000 - s['warmup'] == 11996", line));
  EXPECT_TRUE(
      True("s.global_batch_size * floor(42 + 24576 / s.global_batch_size) == 16384 * 43", line));
  EXPECT_TRUE(True("is_integer(log2(0.0008 / 0.0001))"));
  EXPECT_FALSE(True("is_integer(log2(0.0003 / 0.0001))"));
  EXPECT_FALSE(Eval("is_integer(log2(0 / 0.0001))").ok());  // math domain error
  Line huge{.v = Value::BigInt("1" + std::string(400, '0'))};
  EXPECT_TRUE(True("is_integer(v) and v > 0", huge));  // round(int) is the int itself
  EXPECT_TRUE(True("is_int(True) and is_int(3) and not is_int(3.0)"));
  EXPECT_TRUE(True("min(3, 1, 2) == 1 and max([1, 5]) == 5 and len([1, 2]) == 2"));
  EXPECT_TRUE(True("int('12') == 12 and ceil(2.5) == 3"));
  EXPECT_TRUE(True("sorted(['b', 'a']) == ['a', 'b']"));
  EXPECT_FALSE(Eval("s.missing", line).ok());
  EXPECT_FALSE(Eval("v > None", line).ok());
}

TEST(ExprTest, StateReadsAreRecorded) {
  absl::StatusOr<Expr> e = Expr::Parse("v == 1200000 - s.opt_learning_rate_warmup_steps + s['x']");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->state_reads(), (std::vector<std::string>{"opt_learning_rate_warmup_steps", "x"}));
  EXPECT_TRUE(e->reads_line());
  EXPECT_FALSE(Expr::Parse("s.a + 1")->reads_line());
}

TEST(ExprTest, ParseErrorsNameTheColumn) {
  absl::StatusOr<Expr> e = Expr::Parse("v >= ");
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("column"), absl::string_view::npos);
  EXPECT_FALSE(Expr::Parse("foo(1)").ok());
  EXPECT_FALSE(Expr::Parse("v if v").ok());
  EXPECT_FALSE(Expr::Parse("'abc").ok());
  EXPECT_FALSE(Expr::Parse("1 +* 2").ok());
  EXPECT_FALSE(Expr::Parse("abs(1, 2)").ok());
  EXPECT_FALSE(Expr::Parse("99999999999999999999").ok());
  EXPECT_FALSE(Expr::Parse(std::string(500, '(') + "1" + std::string(500, ')')).ok());
}

}  // namespace
}  // namespace mlperf::checker
