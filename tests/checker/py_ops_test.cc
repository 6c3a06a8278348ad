// Python semantics the official verdicts depend on (spec section 5.7).
#include "checker/py_ops.h"

#include <cmath>
#include <limits>

#include "gtest/gtest.h"

namespace mlperf::checker::py {
namespace {

using json::Value;

bool Eq(const Value& a, const Value& b) { return *Compare(CompareOp::kEq, a, b); }

TEST(PyOpsTest, IntFloatAndBoolAreEqualNumbers) {
  EXPECT_TRUE(Eq(Value(1), Value(1.0)));
  EXPECT_TRUE(Eq(Value(true), Value(1)));
  EXPECT_TRUE(Eq(Value(false), Value(0.0)));
  EXPECT_FALSE(Eq(Value(1), Value("1")));
  EXPECT_FALSE(Eq(Value(), Value(0)));
  EXPECT_TRUE(*Compare(CompareOp::kLt, Value(true), Value(2)));
}

TEST(PyOpsTest, OrderingStringAgainstNumberIsAnError) {
  absl::StatusOr<bool> r = Compare(CompareOp::kGe, Value("0.9"), Value(0.5));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("not supported between instances of 'str' and 'float'"),
            absl::string_view::npos);
  EXPECT_FALSE(Compare(CompareOp::kLt, Value(), Value(1)).ok());
  EXPECT_FALSE(Compare(CompareOp::kLt, Value(json::Object{}), Value(json::Object{})).ok());
  // Equality never raises.
  EXPECT_TRUE(Compare(CompareOp::kNe, Value("a"), Value(1)).ok());
}

TEST(PyOpsTest, NanOrderingIsFalse) {
  const Value nan(std::numeric_limits<double>::quiet_NaN());
  EXPECT_FALSE(*Compare(CompareOp::kLt, nan, Value(1)));
  EXPECT_FALSE(*Compare(CompareOp::kGe, nan, Value(1)));
  EXPECT_TRUE(*Compare(CompareOp::kNe, nan, nan));
}

TEST(PyOpsTest, IntAgainstFloatComparisonIsExact) {
  // 2**53 + 1 is not representable as a double; Python still orders it correctly.
  const Value big(int64_t{9007199254740993});
  EXPECT_TRUE(*Compare(CompareOp::kGt, big, Value(9007199254740992.0)));
  EXPECT_TRUE(*Compare(CompareOp::kLt, Value(9007199254740992.0), big));
}

TEST(PyOpsTest, IntsBeyond64BitsCompareExactly) {
  const Value big = Value::BigInt("100000000000000000001");
  const Value big_round = Value::BigInt("100000000000000000000");
  EXPECT_FALSE(Equals(big, Value(1e20)));  // Python: 10**20 + 1 != 1e20
  EXPECT_TRUE(Equals(big_round, Value(1e20)));
  EXPECT_TRUE(*Compare(CompareOp::kGt, big, Value(1e20)));
  EXPECT_TRUE(*Compare(CompareOp::kGt, big, Value(std::numeric_limits<int64_t>::max())));
  EXPECT_TRUE(*Compare(CompareOp::kLt, Value::BigInt("-100000000000000000000"), Value(-0.5)));
  EXPECT_TRUE(*Compare(CompareOp::kLt, big, Value(std::numeric_limits<double>::infinity())));
  EXPECT_FALSE(Equals(big, Value(1)));
}

TEST(PyOpsTest, LoggedNansAreOneObject) {
  const Value nan(std::numeric_limits<double>::quiet_NaN());
  EXPECT_FALSE(Equals(nan, nan));       // float.__eq__
  EXPECT_TRUE(SameOrEquals(nan, nan));  // identity first, as list.count and `in` do
  EXPECT_TRUE(Equals(Value(json::Array{nan}), Value(json::Array{nan})));
  EXPECT_TRUE(*Compare(CompareOp::kIn, nan, Value(json::Array{Value(1), nan})));
}

TEST(PyOpsTest, MembershipFollowsContainerType) {
  Value dict(json::Object{{"epoch_num", Value(1)}});
  EXPECT_TRUE(*Compare(CompareOp::kIn, Value("epoch_num"), dict));
  EXPECT_FALSE(*Compare(CompareOp::kIn, Value(1), dict));                  // tests keys, not values
  EXPECT_FALSE(Compare(CompareOp::kIn, Value(json::Array{}), dict).ok());  // unhashable
  EXPECT_TRUE(*Compare(CompareOp::kIn, Value("och"), Value("epoch_num")));  // substring
  EXPECT_FALSE(Compare(CompareOp::kIn, Value(1), Value("epoch_num")).ok());
  EXPECT_TRUE(*Compare(CompareOp::kIn, Value(1.0), Value(json::Array{Value(1), Value("x")})));
  EXPECT_FALSE(Compare(CompareOp::kIn, Value("x"), Value()).ok());
  EXPECT_FALSE(Compare(CompareOp::kIn, Value("x"), Value(3)).ok());
  EXPECT_TRUE(*Compare(CompareOp::kNotIn, Value("y"), Value(json::Array{Value("x")})));
}

TEST(PyOpsTest, ArithmeticFollowsPython) {
  EXPECT_TRUE(Binary(BinaryOp::kDiv, Value(7), Value(2))->is_float());
  EXPECT_EQ(Binary(BinaryOp::kDiv, Value(7), Value(2))->as_float(), 3.5);
  EXPECT_EQ(Binary(BinaryOp::kFloorDiv, Value(-7), Value(2))->as_int(), -4);
  EXPECT_EQ(Binary(BinaryOp::kMod, Value(-7), Value(2))->as_int(), 1);
  EXPECT_EQ(Binary(BinaryOp::kMod, Value(-7.0), Value(2))->as_float(), 1.0);
  EXPECT_EQ(Binary(BinaryOp::kPow, Value(2), Value(10))->as_int(), 1024);
  EXPECT_EQ(Binary(BinaryOp::kPow, Value(2), Value(-1))->as_float(), 0.5);
  EXPECT_EQ(Binary(BinaryOp::kAdd, Value(true), Value(true))->as_int(), 2);
  EXPECT_EQ(Binary(BinaryOp::kAdd, Value("ab"), Value("c"))->as_string(), "abc");
  EXPECT_EQ(Binary(BinaryOp::kAdd, Value(json::Array{Value(1)}), Value(json::Array{Value(2)}))
                ->as_array()
                .size(),
            2u);
  EXPECT_TRUE(Binary(BinaryOp::kBitOr, Value(false), Value(true))->is_bool());
  EXPECT_TRUE(Binary(BinaryOp::kBitOr, Value(false), Value(true))->as_bool());
}

TEST(PyOpsTest, ArithmeticErrors) {
  EXPECT_FALSE(Binary(BinaryOp::kDiv, Value(1), Value(0)).ok());
  EXPECT_FALSE(Binary(BinaryOp::kDiv, Value(1.0), Value(0.0)).ok());
  EXPECT_FALSE(Binary(BinaryOp::kMod, Value(1), Value(0)).ok());
  EXPECT_FALSE(Binary(BinaryOp::kPow, Value(0.0), Value(-1)).ok());
  EXPECT_FALSE(Binary(BinaryOp::kAdd, Value("a"), Value(1)).ok());
  EXPECT_FALSE(Binary(BinaryOp::kSub, Value(), Value(1)).ok());
  EXPECT_FALSE(Binary(BinaryOp::kBitOr, Value(1.0), Value(1)).ok());
  EXPECT_FALSE(Binary(BinaryOp::kMul, Value(std::numeric_limits<int64_t>::max()), Value(2)).ok());
  EXPECT_FALSE(Binary(BinaryOp::kPow, Value(10.0), Value(400)).ok());  // OverflowError
}

TEST(PyOpsTest, MathFunctions) {
  EXPECT_FALSE(Log2(Value(0)).ok());
  EXPECT_FALSE(Log2(Value(-1.0)).ok());
  EXPECT_FALSE(Log2(Value("8")).ok());
  EXPECT_EQ(Log2(Value(8))->as_float(), 3.0);
  EXPECT_EQ(Ceil(Value(2.1))->as_int(), 3);
  EXPECT_EQ(Floor(Value(-2.1))->as_int(), -3);
  EXPECT_FALSE(Floor(Value(std::numeric_limits<double>::infinity())).ok());
  EXPECT_FALSE(Ceil(Value(std::numeric_limits<double>::quiet_NaN())).ok());
  EXPECT_EQ(Abs(Value(-3))->as_int(), 3);
  EXPECT_EQ(Int(Value(" 42 "))->as_int(), 42);
  EXPECT_EQ(Int(Value(-2.9))->as_int(), -2);
  EXPECT_FALSE(Int(Value("1.5")).ok());
  EXPECT_FALSE(Int(Value()).ok());
  EXPECT_TRUE(std::isinf(Float(Value("inf"))->as_float()));
  EXPECT_EQ(Float(Value("-1e3"))->as_float(), -1000.0);
  EXPECT_FALSE(Float(Value("abc")).ok());
  EXPECT_EQ(Len(Value("abc"))->as_int(), 3);
  EXPECT_FALSE(Len(Value(3)).ok());
  EXPECT_EQ(Round(Value(2.5))->as_float(), 2.0);  // half to even
  EXPECT_FALSE(Round(Value("2")).ok());
}

TEST(PyOpsTest, MinMaxAndSorted) {
  json::Array items{Value(3), Value(1.5), Value(2)};
  EXPECT_EQ(MinMax(items, false)->as_float(), 1.5);
  EXPECT_EQ(MinMax(items, true)->as_int(), 3);
  EXPECT_FALSE(MinMax({}, false).ok());
  EXPECT_FALSE(MinMax({Value(1), Value("a")}, false).ok());
  Value sorted = *Sorted(Value(json::Array{Value("b"), Value("a")}));
  EXPECT_EQ(sorted.as_array()[0].as_string(), "a");
  EXPECT_FALSE(Sorted(Value(json::Array{Value("b"), Value(1)})).ok());
}

TEST(PyOpsTest, SubscriptErrors) {
  Value dict(json::Object{{"a", Value(1)}});
  EXPECT_EQ(Subscript(dict, Value("a"))->as_int(), 1);
  EXPECT_FALSE(Subscript(dict, Value("b")).ok());
  EXPECT_FALSE(Subscript(Value("abc"), Value("a")).ok());
  EXPECT_FALSE(Subscript(Value(), Value("a")).ok());
  Value list(json::Array{Value(1), Value(2)});
  EXPECT_EQ(Subscript(list, Value(-1))->as_int(), 2);
  EXPECT_FALSE(Subscript(list, Value(2)).ok());
  EXPECT_FALSE(Subscript(list, Value(1.0)).ok());
}

TEST(PyOpsTest, StrAndTruthiness) {
  EXPECT_EQ(Str(Value("closed")), "closed");
  EXPECT_EQ(Str(Value(true)), "True");
  EXPECT_EQ(Str(Value()), "None");
  EXPECT_EQ(Str(Value(1.0)), "1.0");
  EXPECT_EQ(Str(Value(json::Array{Value("a"), Value(1)})), "['a', 1]");
  EXPECT_FALSE(Truthy(Value(0.0)));
  EXPECT_FALSE(Truthy(Value("")));
  EXPECT_FALSE(Truthy(Value(json::Array{})));
  EXPECT_TRUE(Truthy(Value("0")));
}

}  // namespace
}  // namespace mlperf::checker::py
