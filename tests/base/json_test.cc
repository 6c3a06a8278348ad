#include "base/json.h"

#include <cmath>

#include "gtest/gtest.h"

namespace mlperf::json {
namespace {

Value MustParse(std::string_view text, Encoding encoding = Encoding::kLatin1) {
  auto v = Parse(text, {.encoding = encoding});
  EXPECT_TRUE(v.ok()) << text << ": " << v.status();
  return v.ok() ? *v : Value();
}

std::string ParseError(std::string_view text) {
  auto v = Parse(text);
  EXPECT_FALSE(v.ok()) << text;
  return v.ok() ? "" : std::string(v.status().message());
}

// Expected strings are Python 3.11's repr(float).
TEST(PythonFloatRepr, MatchesPython) {
  EXPECT_EQ(PythonFloatRepr(1e-05), "1e-05");
  EXPECT_EQ(PythonFloatRepr(1.5e-07), "1.5e-07");
  EXPECT_EQ(PythonFloatRepr(0.00012), "0.00012");
  EXPECT_EQ(PythonFloatRepr(0.0001), "0.0001");
  EXPECT_EQ(PythonFloatRepr(5e-324), "5e-324");
  EXPECT_EQ(PythonFloatRepr(1e16), "1e+16");
  EXPECT_EQ(PythonFloatRepr(1e15), "1000000000000000.0");
  EXPECT_EQ(PythonFloatRepr(123456789012345680.0), "1.2345678901234568e+17");
  EXPECT_EQ(PythonFloatRepr(9999999999999998.0), "9999999999999998.0");
  EXPECT_EQ(PythonFloatRepr(0.1), "0.1");
  EXPECT_EQ(PythonFloatRepr(-0.0), "-0.0");
  EXPECT_EQ(PythonFloatRepr(1e22), "1e+22");
  EXPECT_EQ(PythonFloatRepr(12345.678), "12345.678");
  EXPECT_EQ(PythonFloatRepr(123.0), "123.0");
  EXPECT_EQ(PythonFloatRepr(1.0 / 3), "0.3333333333333333");
  EXPECT_EQ(PythonFloatRepr(HUGE_VAL), "inf");
  EXPECT_EQ(PythonFloatRepr(std::nan("")), "nan");
}

TEST(Dump, PythonDefaults) {
  Value v(Object{{"a", 1}, {"b", Array{true, nullptr, 2.5, "x"}}, {"c", Object{}}});
  EXPECT_EQ(Dump(v), R"({"a": 1, "b": [true, null, 2.5, "x"], "c": {}})");
  EXPECT_EQ(Dump(Value(Array{std::nan(""), HUGE_VAL, -HUGE_VAL})), "[NaN, Infinity, -Infinity]");
  EXPECT_EQ(Dump(Value(1.0)), "1.0");
}

TEST(Dump, EscapesLikeEnsureAscii) {
  EXPECT_EQ(Dump(Value("q\"b\\s/")), R"("q\"b\\s/")");
  EXPECT_EQ(Dump(Value("\t\n\r\b\f\x01\x7f")), R"("\t\n\r\b\f\u0001\u007f")");
  EXPECT_EQ(Dump(Value("caf\xc3\xa9")), R"("caf\u00e9")");
  EXPECT_EQ(Dump(Value("\xf0\x9f\x98\x80")), R"("\ud83d\ude00")");  // a surrogate pair
}

TEST(Parse, Scalars) {
  EXPECT_TRUE(MustParse("null").is_null());
  EXPECT_TRUE(MustParse(" true ").as_bool());
  EXPECT_EQ(MustParse("-12").as_int(), -12);
  EXPECT_TRUE(MustParse("-12").is_int());
  EXPECT_TRUE(MustParse("12.0").is_float());
  EXPECT_TRUE(MustParse("1e2").is_float());
  EXPECT_DOUBLE_EQ(MustParse("1E-2").as_float(), 0.01);
  EXPECT_EQ(MustParse(R"("a\u00e9\ud83d\ude00")").as_string(), "a\xc3\xa9\xf0\x9f\x98\x80");
}

TEST(Parse, IntegersBeyond64BitsStayExact) {
  ParseNotes notes;
  auto v = Parse("18446744073709551616", {}, &notes);
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->is_big_int());
  EXPECT_EQ(Dump(*v), "18446744073709551616");
  EXPECT_TRUE(notes.big_int);
  EXPECT_EQ(MustParse("-9223372036854775808").as_int(), INT64_MIN);
  EXPECT_FALSE(Parse(std::string(4301, '7')).ok());  // Python's digit limit
}

TEST(Parse, NonFiniteLiteralsAreAcceptedAndNoted) {
  ParseNotes notes;
  auto v = Parse("[NaN, Infinity, -Infinity, 1e999]", {}, &notes);
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(notes.non_finite);
  EXPECT_TRUE(std::isnan(v->as_array()[0].as_float()));
  EXPECT_EQ(v->as_array()[3].as_float(), HUGE_VAL);
}

TEST(Parse, RepeatedKeyKeepsFirstPositionAndLastValue) {
  Value v = MustParse(R"({"a": 1, "b": 2, "a": 3})");
  ASSERT_EQ(v.as_object().size(), 2u);
  EXPECT_EQ(v.as_object()[0].first, "a");
  EXPECT_EQ(v.Find("a")->as_int(), 3);
  std::string many = "{";
  for (int i = 0; i < 100; ++i)
    many += "\"k" + std::to_string(i % 40) + "\": " + std::to_string(i) + ",";
  many.back() = '}';
  Value big = MustParse(many);
  EXPECT_EQ(big.as_object().size(), 40u);
  EXPECT_EQ(big.Find("k3")->as_int(), 83);
  EXPECT_EQ(big.as_object()[3].first, "k3");
}

TEST(Parse, ErrorsNameWhatAndWhere) {
  EXPECT_EQ(ParseError("01"), "extra data after the JSON value at column 2");
  EXPECT_EQ(ParseError("[1,]"), "expected a value at column 4");
  EXPECT_EQ(ParseError(R"({"a" 1})"), "expected ':' at column 6");
  EXPECT_EQ(ParseError("\"\x01\""), "control character inside a string at column 2");
  EXPECT_EQ(ParseError(R"({"a": 1)"), "expected ',' or '}' at column 8 (the line ends early)");
  EXPECT_EQ(ParseError(R"("\x")"), "invalid escape in a string at column 3");
  EXPECT_EQ(ParseError(""), "expected a value at column 1 (the line ends early)");
  EXPECT_EQ(ParseError("-"), "expected a value at column 1");
  EXPECT_EQ(ParseError(std::string(600, '[')), "nesting deeper than 500 levels at column 502");
}

TEST(Parse, Latin1ReadsEveryByteAsACodePoint) {
  ParseNotes notes;
  auto v = Parse("\"caf\xe9\"", {.encoding = Encoding::kLatin1}, &notes);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->as_string(), "caf\xc3\xa9");  // U+00E9, as Python's latin-1 decoding gives
  EXPECT_TRUE(notes.invalid_utf8);
  EXPECT_FALSE(Parse("\"caf\xe9\"", {.encoding = Encoding::kUtf8}).ok());
  EXPECT_EQ(MustParse("\"\xc3\xa9\"", Encoding::kUtf8).as_string(), "\xc3\xa9");
}

TEST(RoundTrip, EveryValueTypeSurvives) {
  const std::string text =
      R"({"n": null, "t": true, "f": false, "i": -7, "x": 0.30000000000000004, )"
      R"("big": 123456789012345678901234567890, "s": "a\"\\\n\u00e9", "a": [[], {}, [1e-07]], )"
      R"("inf": Infinity})";
  EXPECT_EQ(Dump(MustParse(text, Encoding::kUtf8)), text);
}

}  // namespace
}  // namespace mlperf::json
