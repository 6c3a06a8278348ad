// Python's builtins and conversions that rule expressions call: str, repr,
// abs, int, float, len, round, math.log2/ceil/floor, sorted, min, max.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "base/json_writer.h"
#include "checker/py_errors.h"
#include "checker/py_numbers.h"
#include "checker/py_ops.h"  // the builtins are declared there

namespace mlperf::checker::py {
namespace {

using json::Array;
using json::Type;

size_t CodePoints(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

std::string QuoteRepr(const std::string& s) {
  // Python prefers single quotes unless the string contains one and no double quote.
  const bool use_double = s.find('\'') != std::string::npos && s.find('"') == std::string::npos;
  const char q = use_double ? '"' : '\'';
  std::string out(1, q);
  for (char c : s) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c == q) out += '\\';
        out += c;
    }
  }
  out += q;
  return out;
}

// Parses a Python int() string: optional sign, digits with single underscores between them.
absl::StatusOr<Value> ParseIntString(const std::string& raw) {
  std::string s(absl::StripAsciiWhitespace(raw));
  size_t i = 0;
  bool negative = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) negative = s[i++] == '-';
  if (i >= s.size() || !absl::ascii_isdigit(s[i])) {
    return ValueError(absl::StrCat("invalid literal for int() with base 10: ", QuoteRepr(raw)));
  }
  int64_t value = 0;
  for (; i < s.size(); ++i) {
    if (s[i] == '_' && i + 1 < s.size() && absl::ascii_isdigit(s[i + 1]) &&
        absl::ascii_isdigit(s[i - 1]))
      continue;
    if (!absl::ascii_isdigit(s[i])) {
      return ValueError(absl::StrCat("invalid literal for int() with base 10: ", QuoteRepr(raw)));
    }
    if (__builtin_mul_overflow(value, 10, &value) ||
        __builtin_add_overflow(value, negative ? -(s[i] - '0') : (s[i] - '0'), &value)) {
      return Overflow("integer beyond 64 bits (unsupported by the rule engine)");
    }
  }
  return Value(value);
}

absl::StatusOr<Value> ParseFloatString(const std::string& raw) {
  std::string s(absl::StripAsciiWhitespace(raw));
  std::string lower = absl::AsciiStrToLower(s);
  std::string body = lower;
  double sign = 1;
  if (!body.empty() && (body[0] == '+' || body[0] == '-')) {
    sign = body[0] == '-' ? -1 : 1;
    body = body.substr(1);
  }
  if (body == "inf" || body == "infinity")
    return Value(sign * std::numeric_limits<double>::infinity());
  if (body == "nan") return Value(std::numeric_limits<double>::quiet_NaN());
  // Digits, one optional '.', optional exponent; underscores only between digits.
  std::string cleaned;
  bool digits = false, dot = false, exp = false;
  for (size_t i = 0; i < body.size(); ++i) {
    char c = body[i];
    if (absl::ascii_isdigit(c)) {
      digits = true;
      cleaned += c;
    } else if (c == '_' && i > 0 && i + 1 < body.size() && absl::ascii_isdigit(body[i - 1]) &&
               absl::ascii_isdigit(body[i + 1])) {
      continue;
    } else if (c == '.' && !dot && !exp) {
      dot = true;
      cleaned += c;
    } else if (c == 'e' && digits && !exp) {
      exp = true;
      cleaned += c;
      if (i + 1 < body.size() && (body[i + 1] == '+' || body[i + 1] == '-')) cleaned += body[++i];
      if (i + 1 >= body.size() || !absl::ascii_isdigit(body[i + 1])) digits = false;
    } else {
      digits = false;
      break;
    }
  }
  if (!digits)
    return ValueError(absl::StrCat("could not convert string to float: ", QuoteRepr(raw)));
  return Value(sign * std::strtod(cleaned.c_str(), nullptr));
}

absl::StatusOr<Value> FloatToInt(double d, const char* what) {
  if (std::isnan(d))
    return ValueError(absl::StrCat("cannot convert float NaN to integer (", what, ")"));
  if (std::isinf(d))
    return Overflow(absl::StrCat("cannot convert float infinity to integer (", what, ")"));
  if (d >= 9223372036854775808.0 || d < -9223372036854775808.0) {
    return Overflow("integer beyond 64 bits (unsupported by the rule engine)");
  }
  return Value(static_cast<int64_t>(d));
}

}  // namespace

std::string Str(const Value& v) {
  if (v.is_string()) return v.as_string();
  return Repr(v);
}

std::string Repr(const Value& v) {
  switch (v.type()) {
    case Type::kNull:
      return "None";
    case Type::kBool:
      return v.as_bool() ? "True" : "False";
    case Type::kInt:
      return v.is_big_int() ? v.as_string() : std::to_string(v.as_int());
    case Type::kFloat:
      return json::PythonFloatRepr(v.as_float());
    case Type::kString:
      return QuoteRepr(v.as_string());
    case Type::kArray: {
      std::string out = "[";
      for (size_t i = 0; i < v.as_array().size(); ++i) {
        if (i > 0) out += ", ";
        out += Repr(v.as_array()[i]);
      }
      return out + "]";
    }
    case Type::kObject: {
      std::string out = "{";
      bool first = true;
      for (const auto& [k, x] : v.as_object()) {
        if (!first) out += ", ";
        first = false;
        out += QuoteRepr(k) + ": " + Repr(x);
      }
      return out + "}";
    }
  }
  return "?";
}

absl::StatusOr<Value> Abs(const Value& v) {
  auto n = ToNum(v);
  if (!n) return TypeError(absl::StrCat("bad operand type for abs(): '", TypeName(v), "'"));
  if (n->is_float) return Value(std::fabs(n->f));
  if (n->i == std::numeric_limits<int64_t>::min()) return Overflow("integer beyond 64 bits");
  return Value(n->i < 0 ? -n->i : n->i);
}

absl::StatusOr<Value> Int(const Value& v) {
  if (v.is_string()) return ParseIntString(v.as_string());
  auto n = ToNum(v);
  if (!n) {
    return TypeError(
        absl::StrCat("int() argument must be a string, a bytes-like object or a real number, not '",
                     TypeName(v), "'"));
  }
  if (!n->is_float) return Value(n->i);
  return FloatToInt(std::trunc(n->f), "int");
}

absl::StatusOr<Value> Float(const Value& v) {
  if (v.is_string()) return ParseFloatString(v.as_string());
  auto n = ToNum(v);
  if (!n) {
    return TypeError(absl::StrCat("float() argument must be a string or a real number, not '",
                                  TypeName(v), "'"));
  }
  return Value(n->as_double());
}

absl::StatusOr<Value> Len(const Value& v) {
  switch (v.type()) {
    case Type::kString:
      return Value(static_cast<int64_t>(CodePoints(v.as_string())));
    case Type::kArray:
      return Value(static_cast<int64_t>(v.as_array().size()));
    case Type::kObject:
      return Value(static_cast<int64_t>(v.as_object().size()));
    default:
      return TypeError(absl::StrCat("object of type '", TypeName(v), "' has no len()"));
  }
}

absl::StatusOr<Value> Round(const Value& v) {
  auto n = ToNum(v);
  if (!n) return TypeError(absl::StrCat("type ", TypeName(v), " doesn't define __round__ method"));
  if (!n->is_float) return Value(n->i);
  if (std::isnan(n->f)) return ValueError("cannot convert float NaN to integer");
  if (std::isinf(n->f)) return Overflow("cannot convert float infinity to integer");
  // Round half to even, like Python; the result as a float keeps huge values exact.
  return Value(std::nearbyint(n->f));
}

absl::StatusOr<Value> Log2(const Value& v) {
  auto n = ToNum(v);
  if (!n) return TypeError(absl::StrCat("must be real number, not ", TypeName(v)));
  const double d = n->as_double();
  if (std::isnan(d)) return Value(d);
  if (d <= 0) return ValueError("math domain error");
  return Value(std::log2(d));
}

absl::StatusOr<Value> Ceil(const Value& v) {
  auto n = ToNum(v);
  if (!n) return TypeError(absl::StrCat("must be real number, not ", TypeName(v)));
  if (!n->is_float) return Value(n->i);
  return FloatToInt(std::ceil(n->f), "ceil");
}

absl::StatusOr<Value> Floor(const Value& v) {
  auto n = ToNum(v);
  if (!n) return TypeError(absl::StrCat("must be real number, not ", TypeName(v)));
  if (!n->is_float) return Value(n->i);
  return FloatToInt(std::floor(n->f), "floor");
}

absl::StatusOr<json::Array> Iterate(const Value& v) {
  switch (v.type()) {
    case Type::kArray:
      return v.as_array();
    case Type::kObject: {
      Array keys;
      for (const auto& [k, x] : v.as_object()) keys.emplace_back(k);
      return keys;
    }
    case Type::kString: {
      Array chars;
      const std::string& s = v.as_string();
      for (size_t i = 0; i < s.size();) {
        size_t j = i + 1;
        while (j < s.size() && (static_cast<unsigned char>(s[j]) & 0xC0) == 0x80) ++j;
        chars.emplace_back(s.substr(i, j - i));
        i = j;
      }
      return chars;
    }
    default:
      return TypeError(absl::StrCat("'", TypeName(v), "' object is not iterable"));
  }
}

absl::StatusOr<Value> Sorted(const Value& v) {
  absl::StatusOr<Array> items = Iterate(v);
  if (!items.ok()) return items.status();
  absl::Status error;
  std::stable_sort(items->begin(), items->end(), [&](const Value& a, const Value& b) {
    if (!error.ok()) return false;
    absl::StatusOr<bool> lt = Compare(CompareOp::kLt, a, b);
    if (!lt.ok()) {
      error = lt.status();
      return false;
    }
    return *lt;
  });
  if (!error.ok()) return error;
  return Value(std::move(*items));
}

absl::StatusOr<Value> MinMax(const json::Array& items, bool want_max) {
  if (items.empty()) {
    return ValueError(absl::StrCat(want_max ? "max" : "min", "() arg is an empty sequence"));
  }
  const Value* best = &items[0];
  for (size_t i = 1; i < items.size(); ++i) {
    absl::StatusOr<bool> better =
        Compare(want_max ? CompareOp::kGt : CompareOp::kLt, items[i], *best);
    if (!better.ok()) return better.status();
    if (*better) best = &items[i];
  }
  return *best;
}

}  // namespace mlperf::checker::py
