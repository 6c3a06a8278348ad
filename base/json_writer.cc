#include "base/json_writer.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <iterator>

#include "base/utf8.h"
#include "fmt/format.h"

namespace mlperf::json {

namespace {

void AppendPythonFloatRepr(double d, std::string& out) {
  if (std::isnan(d)) {
    out += "nan";
    return;
  }
  if (std::isinf(d)) {
    out += d > 0 ? "inf" : "-inf";
    return;
  }
  // Shortest round-trip digits in scientific form, e.g. "-1.2345e+02".
  char buf[64];
  const char* end = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific).ptr;
  const char* p = buf;
  if (*p == '-') out += *p++;
  char digits[32];
  size_t n_digits = 0;
  for (; *p != 'e'; ++p) {
    if (*p != '.') digits[n_digits++] = *p;
  }
  ++p;  // 'e'
  if (*p == '+') ++p;
  int exponent = 0;
  std::from_chars(p, end, exponent);
  // Python's repr switches to exponent notation below 1e-4 and from 1e16 on.
  if (exponent < -4 || exponent >= 16) {
    out += digits[0];
    if (n_digits > 1) {
      out += '.';
      out.append(digits + 1, n_digits - 1);
    }
    out += exponent < 0 ? "e-" : "e+";
    const int mag = std::abs(exponent);
    if (mag < 10) out += '0';
    fmt::format_to(std::back_inserter(out), "{}", mag);
  } else if (exponent < 0) {
    out += "0.";
    out.append(static_cast<size_t>(-exponent - 1), '0');
    out.append(digits, n_digits);
  } else {
    const size_t int_len = static_cast<size_t>(exponent) + 1;
    if (n_digits <= int_len) {
      out.append(digits, n_digits);
      out.append(int_len - n_digits, '0');
      out += ".0";
    } else {
      out.append(digits, int_len);
      out += '.';
      out.append(digits + int_len, n_digits - int_len);
    }
  }
}

}  // namespace

std::string PythonFloatRepr(double d) {
  std::string out;
  AppendPythonFloatRepr(d, out);
  return out;
}

namespace {

void AppendHex4(uint32_t u, std::string& out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += "\\u";
  for (int shift = 12; shift >= 0; shift -= 4) out += kHex[(u >> shift) & 0xF];
}

void DumpStringImpl(std::string_view s, std::string& out) {
  out += '"';
  for (size_t i = 0; i < s.size();) {
    // Printable ASCII goes through as is, a run at a time; everything else is
    // escaped, as json.dumps does with ensure_ascii.
    size_t run = i;
    while (run < s.size() && IsPlainAscii(static_cast<unsigned char>(s[run]))) ++run;
    out.append(s.data() + i, run - i);
    i = run;
    if (i == s.size()) break;
    const auto c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"':
        out += "\\\"";
        ++i;
        continue;
      case '\\':
        out += "\\\\";
        ++i;
        continue;
      case '\n':
        out += "\\n";
        ++i;
        continue;
      case '\r':
        out += "\\r";
        ++i;
        continue;
      case '\t':
        out += "\\t";
        ++i;
        continue;
      case '\b':
        out += "\\b";
        ++i;
        continue;
      case '\f':
        out += "\\f";
        ++i;
        continue;
      default:
        break;
    }
    const uint32_t cp = NextCodePoint(s, i);
    if (cp >= 0x10000) {
      const uint32_t v = cp - 0x10000;
      AppendHex4(0xD800 + (v >> 10), out);
      AppendHex4(0xDC00 + (v & 0x3FF), out);
    } else {
      AppendHex4(cp, out);
    }
  }
  out += '"';
}

void DumpFloat(double d, std::string& out) {
  if (std::isnan(d)) {
    out += "NaN";
  } else if (std::isinf(d)) {
    out += d > 0 ? "Infinity" : "-Infinity";
  } else {
    AppendPythonFloatRepr(d, out);
  }
}

}  // namespace

void DumpTo(const Value& v, std::string& out) {
  switch (v.type()) {
    case Type::kNull:
      out += "null";
      return;
    case Type::kBool:
      out += v.as_bool() ? "true" : "false";
      return;
    case Type::kInt:
      if (v.is_big_int()) {
        out += v.as_string();
      } else {
        fmt::format_to(std::back_inserter(out), "{}", v.as_int());
      }
      return;
    case Type::kFloat:
      DumpFloat(v.as_float(), out);
      return;
    case Type::kString:
      DumpStringImpl(v.as_string(), out);
      return;
    case Type::kArray: {
      out += '[';
      bool first = true;
      for (const Value& item : v.as_array()) {
        if (!first) out += ", ";
        first = false;
        DumpTo(item, out);
      }
      out += ']';
      return;
    }
    case Type::kObject: {
      out += '{';
      bool first = true;
      for (const auto& [key, item] : v.as_object()) {
        if (!first) out += ", ";
        first = false;
        DumpStringImpl(key, out);
        out += ": ";
        DumpTo(item, out);
      }
      out += '}';
      return;
    }
  }
}

void DumpStringTo(std::string_view s, std::string& out) { DumpStringImpl(s, out); }

std::string Dump(const Value& v) {
  std::string out;
  DumpTo(v, out);
  return out;
}

namespace {

void DumpIndentedTo(const Value& v, int indent, int depth, std::string& out) {
  const bool array = v.type() == Type::kArray, object = v.type() == Type::kObject;
  if ((!array && !object) || (array && v.as_array().empty()) || (object && v.as_object().empty())) {
    DumpTo(v, out);
    return;
  }
  const std::string inner(static_cast<size_t>(indent) * (depth + 1), ' ');
  out += array ? '[' : '{';
  bool first = true;
  const auto item = [&](const std::string* key, const Value& value) {
    out += first ? "\n" : ",\n";
    first = false;
    out += inner;
    if (key != nullptr) {
      DumpStringImpl(*key, out);
      out += ": ";
    }
    DumpIndentedTo(value, indent, depth + 1, out);
  };
  if (array) {
    for (const Value& value : v.as_array()) item(nullptr, value);
  } else {
    for (const auto& [key, value] : v.as_object()) item(&key, value);
  }
  out += '\n';
  out.append(static_cast<size_t>(indent) * depth, ' ');
  out += array ? ']' : '}';
}

}  // namespace

std::string DumpIndented(const Value& v, int indent) {
  std::string out;
  DumpIndentedTo(v, indent, 0, out);
  return out;
}

}  // namespace mlperf::json
