// Python's numbers on json::Value, shared by the operators and the builtins:
// bool and int are ints, ints and floats compare exactly.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/json_value.h"

namespace mlperf::checker::py {

// A number as Python sees it: bool and int are ints; ints beyond 64 bits are
// approximated by their float value (documented limit).
struct Num {
  bool is_float = false;
  int64_t i = 0;
  double f = 0;
  const std::string* big =
      nullptr;  // decimal digits of an int beyond 64 bits (then is_float, f ~ value)
  double as_double() const { return is_float ? f : static_cast<double>(i); }
};

// The number v is, or nullopt for a non-number.
std::optional<Num> ToNum(const json::Value& v);
json::Value FromNum(const Num& n);

// Three-way comparison of two numbers, exact for int64 against double (long
// double holds every int64). Returns nullopt when a NaN is involved.
std::optional<int> CompareNums(const Num& a, const Num& b);

}  // namespace mlperf::checker::py
