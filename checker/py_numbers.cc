#include "checker/py_numbers.h"

#include <cmath>
#include <cstdio>
#include <string_view>

namespace mlperf::checker::py {
namespace {

// Three-way comparison of canonical signed decimal integers.
int CompareDecimal(const std::string& a, const std::string& b) {
  const bool neg_a = !a.empty() && a[0] == '-', neg_b = !b.empty() && b[0] == '-';
  if (neg_a != neg_b) return neg_a ? -1 : 1;
  std::string_view x(a), y(b);
  if (neg_a) {
    x.remove_prefix(1);
    y.remove_prefix(1);
  }
  int mag = x.size() != y.size() ? (x.size() < y.size() ? -1 : 1) : (x < y ? -1 : (x > y ? 1 : 0));
  return neg_a ? -mag : mag;
}

std::string DecimalOf(int64_t i) { return std::to_string(i); }

// The exact decimal value of an integral finite double.
std::string DecimalOf(double d) {
  char buf[400];
  std::snprintf(buf, sizeof buf, "%.0f", d);
  return d == 0 ? "0" : buf;
}

}  // namespace

std::optional<Num> ToNum(const json::Value& v) {
  if (v.is_bool()) return Num{false, v.as_bool() ? 1 : 0, 0};
  if (v.is_int()) {
    if (v.is_big_int()) return Num{true, 0, v.as_float(), &v.as_string()};
    return Num{false, v.as_int(), 0};
  }
  if (v.is_float()) return Num{true, 0, v.as_float()};
  return std::nullopt;
}

json::Value FromNum(const Num& n) { return n.is_float ? json::Value(n.f) : json::Value(n.i); }

std::optional<int> CompareNums(const Num& a, const Num& b) {
  if (!a.is_float && !b.is_float) return a.i < b.i ? -1 : (a.i > b.i ? 1 : 0);
  if (a.big != nullptr || b.big != nullptr) {
    if ((a.big == nullptr && std::isnan(a.f) && a.is_float) ||
        (b.big == nullptr && b.is_float && std::isnan(b.f))) {
      return std::nullopt;
    }
    // An int beyond 64 bits against an int64, a non-integral double or an
    // infinity is decided by the magnitudes; otherwise compare exact decimals.
    auto decimal = [](const Num& n) -> std::optional<std::string> {
      if (n.big != nullptr) return *n.big;
      if (!n.is_float) return DecimalOf(n.i);
      if (std::isfinite(n.f) && n.f == std::floor(n.f)) return DecimalOf(n.f);
      return std::nullopt;
    };
    std::optional<std::string> x = decimal(a), y = decimal(b);
    if (x && y) return CompareDecimal(*x, *y);
    // One side is an int beyond 64 bits, the other a non-integral double
    // (|d| < 2**52) or an infinity: the sign of the int or the infinity decides.
    const bool a_is_big = a.big != nullptr;
    const double d = a_is_big ? b.f : a.f;
    const bool big_negative = (a_is_big ? *a.big : *b.big)[0] == '-';
    int big_vs_double = std::isinf(d) ? (d > 0 ? -1 : 1) : (big_negative ? -1 : 1);
    return a_is_big ? big_vs_double : -big_vs_double;
  }
  if ((a.is_float && std::isnan(a.f)) || (b.is_float && std::isnan(b.f))) return std::nullopt;
  long double x = a.is_float ? static_cast<long double>(a.f) : static_cast<long double>(a.i);
  long double y = b.is_float ? static_cast<long double>(b.f) : static_cast<long double>(b.i);
  return x < y ? -1 : (x > y ? 1 : 0);
}

}  // namespace mlperf::checker::py
