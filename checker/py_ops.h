// Python's semantics for the operations rule expressions use, on json::Value.
// The official rules are Python expressions, so verdicts hinge on Python's
// behaviour: 1 == 1.0 == True, bool is an int, ordering a string against a
// number raises, `in` on a dict tests keys. Every operation that raises in
// Python returns an error status here (message like Python's).
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "base/json.h"

namespace mlperf::checker::py {

using json::Value;

enum class BinaryOp { kAdd, kSub, kMul, kDiv, kFloorDiv, kMod, kPow, kBitOr };
enum class CompareOp { kEq, kNe, kLt, kLe, kGt, kGe, kIn, kNotIn };

// Python's type name, for messages ("int", "str", "NoneType", ...).
std::string TypeName(const Value& v);

bool Truthy(const Value& v);

// Python's a == b, exact between ints (also beyond 64 bits) and floats.
bool Equals(const Value& a, const Value& b);
// PyObject_RichCompareBool: like Equals, but a value is equal to itself. All
// NaNs in a log are one object in Python (json's shared NaN constant), so
// logged NaNs are equal here; used by containers, `in` and duplicate detection.
bool SameOrEquals(const Value& a, const Value& b);

absl::StatusOr<Value> Binary(BinaryOp op, const Value& a, const Value& b);
absl::StatusOr<bool> Compare(CompareOp op, const Value& a, const Value& b);
absl::StatusOr<Value> Negate(const Value& v);
absl::StatusOr<Value> Plus(const Value& v);

// container[index] (also `x.name`, which the rule language defines as x['name']).
absl::StatusOr<Value> Subscript(const Value& container, const Value& index);

// str(v) as Python prints it (strings unquoted, floats as repr, dicts/lists
// with repr'd items); used to format chain targets.
std::string Str(const Value& v);
// repr(v).
std::string Repr(const Value& v);

// Builtins.
absl::StatusOr<Value> Abs(const Value& v);
absl::StatusOr<Value> Int(const Value& v);
absl::StatusOr<Value> Float(const Value& v);
absl::StatusOr<Value> Len(const Value& v);
absl::StatusOr<Value> Round(const Value& v);  // round(x) -> int
absl::StatusOr<Value> Log2(const Value& v);
absl::StatusOr<Value> Ceil(const Value& v);
absl::StatusOr<Value> Floor(const Value& v);
absl::StatusOr<Value> Sorted(const Value& v);
// min/max over a list of arguments (already unpacked from a single iterable).
absl::StatusOr<Value> MinMax(const json::Array& items, bool want_max);
// Iterating a value as Python's min(x)/max(x)/sorted(x) would.
absl::StatusOr<json::Array> Iterate(const Value& v);

}  // namespace mlperf::checker::py
