#include "checker/py_ops.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "checker/py_errors.h"
#include "checker/py_numbers.h"

namespace mlperf::checker::py {
namespace {

using json::Array;
using json::Type;

// Repetition (`'ab' * n`) beyond this many elements is refused rather than
// exhausting memory; no rule needs it.
constexpr int64_t kMaxRepeat = 1 << 20;

absl::StatusOr<Value> Repeat(const Value& seq, const Num& count) {
  if (count.is_float) return TypeError("can't multiply sequence by non-int of type 'float'");
  const int64_t n = std::max<int64_t>(count.i, 0);
  if (seq.is_string()) {
    if (n > 0 && static_cast<int64_t>(seq.as_string().size()) > kMaxRepeat / n) {
      return Overflow("repeated string too large for the rule engine");
    }
    std::string out;
    for (int64_t k = 0; k < n; ++k) out += seq.as_string();
    return Value(std::move(out));
  }
  const Array& items = seq.as_array();
  if (n > 0 && static_cast<int64_t>(items.size()) > kMaxRepeat / n) {
    return Overflow("repeated list too large for the rule engine");
  }
  Array out;
  for (int64_t k = 0; k < n; ++k) out.insert(out.end(), items.begin(), items.end());
  return Value(std::move(out));
}

absl::StatusOr<Value> IntPow(int64_t base, int64_t exp) {
  int64_t result = 1;
  while (exp > 0) {
    if (exp & 1) {
      if (__builtin_mul_overflow(result, base, &result)) {
        return Overflow("integer result beyond 64 bits (unsupported by the rule engine)");
      }
    }
    exp >>= 1;
    if (exp > 0 && __builtin_mul_overflow(base, base, &base)) {
      return Overflow("integer result beyond 64 bits (unsupported by the rule engine)");
    }
  }
  return Value(result);
}

absl::StatusOr<Value> FloatPow(double a, double b) {
  if (a == 0.0 && b < 0) return ZeroDivision("0.0 cannot be raised to a negative power");
  if (a < 0 && std::isfinite(b) && b != std::floor(b)) {
    return ValueError(
        "negative number raised to a fractional power (Python gives a complex number)");
  }
  double r = std::pow(a, b);
  if (std::isinf(r) && std::isfinite(a) && std::isfinite(b))
    return Overflow("(34, 'Numerical result out of range')");
  return Value(r);
}

// Python's float floor division and modulo (Objects/floatobject.c float_divmod).
void FloatDivMod(double vx, double wx, double* div_out, double* mod_out) {
  double mod = std::fmod(vx, wx);
  double div = (vx - mod) / wx;
  if (mod != 0.0) {
    if ((wx < 0) != (mod < 0)) {
      mod += wx;
      div -= 1.0;
    }
  } else {
    mod = std::copysign(0.0, wx);
  }
  double floordiv;
  if (div != 0.0) {
    floordiv = std::floor(div);
    if (div - floordiv > 0.5) floordiv += 1.0;
  } else {
    floordiv = std::copysign(0.0, vx / wx);
  }
  *div_out = floordiv;
  *mod_out = mod;
}

absl::StatusOr<Value> Arith(BinaryOp op, const Num& a, const Num& b) {
  if (!a.is_float && !b.is_float) {
    int64_t r = 0;
    switch (op) {
      case BinaryOp::kAdd:
        if (__builtin_add_overflow(a.i, b.i, &r)) break;
        return Value(r);
      case BinaryOp::kSub:
        if (__builtin_sub_overflow(a.i, b.i, &r)) break;
        return Value(r);
      case BinaryOp::kMul:
        if (__builtin_mul_overflow(a.i, b.i, &r)) break;
        return Value(r);
      case BinaryOp::kDiv:
        if (b.i == 0) return ZeroDivision("division by zero");
        return Value(static_cast<double>(a.i) / static_cast<double>(b.i));
      case BinaryOp::kFloorDiv:
      case BinaryOp::kMod: {
        if (b.i == 0) return ZeroDivision("integer division or modulo by zero");
        if (a.i == std::numeric_limits<int64_t>::min() && b.i == -1) break;
        int64_t q = a.i / b.i, m = a.i % b.i;
        if (m != 0 && ((m < 0) != (b.i < 0))) {
          q -= 1;
          m += b.i;
        }
        return Value(op == BinaryOp::kFloorDiv ? q : m);
      }
      case BinaryOp::kPow:
        if (b.i >= 0) return IntPow(a.i, b.i);
        return FloatPow(static_cast<double>(a.i), static_cast<double>(b.i));
      case BinaryOp::kBitOr:
        return Value(a.i | b.i);
    }
    return Overflow("integer result beyond 64 bits (unsupported by the rule engine)");
  }
  const double x = a.as_double(), y = b.as_double();
  switch (op) {
    case BinaryOp::kAdd:
      return Value(x + y);
    case BinaryOp::kSub:
      return Value(x - y);
    case BinaryOp::kMul:
      return Value(x * y);
    case BinaryOp::kDiv:
      if (y == 0.0) return ZeroDivision("float division by zero");
      return Value(x / y);
    case BinaryOp::kFloorDiv:
    case BinaryOp::kMod: {
      if (y == 0.0) return ZeroDivision("float floor division by zero");
      double d, m;
      FloatDivMod(x, y, &d, &m);
      return Value(op == BinaryOp::kFloorDiv ? d : m);
    }
    case BinaryOp::kPow:
      return FloatPow(x, y);
    case BinaryOp::kBitOr:
      break;
  }
  return TypeError("unsupported operand type(s) for |: 'float'");
}

const char* OpSymbol(BinaryOp op) {
  switch (op) {
    case BinaryOp::kAdd:
      return "+";
    case BinaryOp::kSub:
      return "-";
    case BinaryOp::kMul:
      return "*";
    case BinaryOp::kDiv:
      return "/";
    case BinaryOp::kFloorDiv:
      return "//";
    case BinaryOp::kMod:
      return "%";
    case BinaryOp::kPow:
      return "**";
    case BinaryOp::kBitOr:
      return "|";
  }
  return "?";
}

const char* CompareSymbol(CompareOp op) {
  switch (op) {
    case CompareOp::kLt:
      return "<";
    case CompareOp::kLe:
      return "<=";
    case CompareOp::kGt:
      return ">";
    case CompareOp::kGe:
      return ">=";
    default:
      return "==";
  }
}

// Python's a < b (and friends) for orderable values; lists lexicographically.
absl::StatusOr<bool> Order(CompareOp op, const Value& a, const Value& b) {
  auto na = ToNum(a), nb = ToNum(b);
  std::optional<int> cmp;
  if (na && nb) {
    cmp = CompareNums(*na, *nb);
    if (!cmp) return false;  // NaN: every ordering is false
  } else if (a.is_string() && b.is_string()) {
    // UTF-8 byte order is code point order.
    int c = a.as_string().compare(b.as_string());
    cmp = c < 0 ? -1 : (c > 0 ? 1 : 0);
  } else if (a.is_array() && b.is_array()) {
    const Array& x = a.as_array();
    const Array& y = b.as_array();
    size_t i = 0;
    while (i < x.size() && i < y.size() && SameOrEquals(x[i], y[i])) ++i;
    if (i < x.size() && i < y.size()) return Order(op, x[i], y[i]);
    cmp = x.size() < y.size() ? -1 : (x.size() > y.size() ? 1 : 0);
  } else {
    return TypeError(absl::StrCat("'", CompareSymbol(op), "' not supported between instances of '",
                                  TypeName(a), "' and '", TypeName(b), "'"));
  }
  switch (op) {
    case CompareOp::kLt:
      return *cmp < 0;
    case CompareOp::kLe:
      return *cmp <= 0;
    case CompareOp::kGt:
      return *cmp > 0;
    case CompareOp::kGe:
      return *cmp >= 0;
    default:
      return false;
  }
}

bool IsNan(const Value& v) { return v.is_float() && std::isnan(v.as_float()); }

bool Hashable(const Value& v) { return !v.is_array() && !v.is_object(); }

absl::StatusOr<bool> Contains(const Value& container, const Value& item) {
  switch (container.type()) {
    case Type::kObject:
      if (!Hashable(item))
        return TypeError(absl::StrCat("unhashable type: '", TypeName(item), "'"));
      // JSON object keys are strings; no other type equals a string.
      return item.is_string() && container.Find(item.as_string()) != nullptr;
    case Type::kArray:
      for (const Value& x : container.as_array()) {
        if (SameOrEquals(x, item)) return true;
      }
      return false;
    case Type::kString:
      if (!item.is_string()) {
        return TypeError(
            absl::StrCat("'in <string>' requires string as left operand, not ", TypeName(item)));
      }
      return container.as_string().find(item.as_string()) != std::string::npos;
    default:
      return TypeError(
          absl::StrCat("argument of type '", TypeName(container), "' is not iterable"));
  }
}

}  // namespace

bool Equals(const Value& a, const Value& b) {
  auto na = ToNum(a), nb = ToNum(b);
  if (na && nb) {
    std::optional<int> c = CompareNums(*na, *nb);
    return c.has_value() && *c == 0;
  }
  if (a.type() != b.type()) return false;
  switch (a.type()) {
    case Type::kNull:
      return true;
    case Type::kString:
      return a.as_string() == b.as_string();
    case Type::kArray: {
      const Array& x = a.as_array();
      const Array& y = b.as_array();
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i) {
        if (!SameOrEquals(x[i], y[i])) return false;
      }
      return true;
    }
    case Type::kObject: {
      if (a.as_object().size() != b.as_object().size()) return false;
      for (const auto& [k, x] : a.as_object()) {
        const Value* other = b.Find(k);
        if (other == nullptr || !SameOrEquals(x, *other)) return false;
      }
      return true;
    }
    default:
      return false;
  }
}

bool SameOrEquals(const Value& a, const Value& b) {
  // Python's json module returns one shared NaN object, and containers,
  // `in` and list.count compare identity first: logged NaNs equal each other.
  if (IsNan(a) && IsNan(b)) return true;
  return Equals(a, b);
}

std::string TypeName(const Value& v) {
  switch (v.type()) {
    case Type::kNull:
      return "NoneType";
    case Type::kBool:
      return "bool";
    case Type::kInt:
      return "int";
    case Type::kFloat:
      return "float";
    case Type::kString:
      return "str";
    case Type::kArray:
      return "list";
    case Type::kObject:
      return "dict";
  }
  return "object";
}

bool Truthy(const Value& v) {
  switch (v.type()) {
    case Type::kNull:
      return false;
    case Type::kBool:
      return v.as_bool();
    case Type::kInt:
      return v.is_big_int() || v.as_int() != 0;
    case Type::kFloat:
      return v.as_float() != 0.0;
    case Type::kString:
      return !v.as_string().empty();
    case Type::kArray:
      return !v.as_array().empty();
    case Type::kObject:
      return !v.as_object().empty();
  }
  return false;
}

absl::StatusOr<Value> Binary(BinaryOp op, const Value& a, const Value& b) {
  auto na = ToNum(a), nb = ToNum(b);
  if (op == BinaryOp::kBitOr) {
    if (a.is_bool() && b.is_bool()) return Value(a.as_bool() || b.as_bool());
    if (na && nb && !na->is_float && !nb->is_float) return Value(na->i | nb->i);
  } else if (na && nb) {
    return Arith(op, *na, *nb);
  } else if (op == BinaryOp::kAdd && a.is_string() && b.is_string()) {
    return Value(a.as_string() + b.as_string());
  } else if (op == BinaryOp::kAdd && a.is_array() && b.is_array()) {
    Array out = a.as_array();
    out.insert(out.end(), b.as_array().begin(), b.as_array().end());
    return Value(std::move(out));
  } else if (op == BinaryOp::kMul && (a.is_string() || a.is_array()) && nb) {
    return Repeat(a, *nb);
  } else if (op == BinaryOp::kMul && (b.is_string() || b.is_array()) && na) {
    return Repeat(b, *na);
  }
  return TypeError(absl::StrCat("unsupported operand type(s) for ", OpSymbol(op), ": '",
                                TypeName(a), "' and '", TypeName(b), "'"));
}

absl::StatusOr<bool> Compare(CompareOp op, const Value& a, const Value& b) {
  switch (op) {
    case CompareOp::kEq:
      return Equals(a, b);
    case CompareOp::kNe:
      return !Equals(a, b);
    case CompareOp::kIn:
      return Contains(b, a);
    case CompareOp::kNotIn: {
      absl::StatusOr<bool> r = Contains(b, a);
      if (!r.ok()) return r.status();
      return !*r;
    }
    default:
      return Order(op, a, b);
  }
}

absl::StatusOr<Value> Negate(const Value& v) {
  auto n = ToNum(v);
  if (!n) return TypeError(absl::StrCat("bad operand type for unary -: '", TypeName(v), "'"));
  if (n->is_float) return Value(-n->f);
  if (n->i == std::numeric_limits<int64_t>::min()) return Overflow("integer beyond 64 bits");
  return Value(-n->i);
}

absl::StatusOr<Value> Plus(const Value& v) {
  auto n = ToNum(v);
  if (!n) return TypeError(absl::StrCat("bad operand type for unary +: '", TypeName(v), "'"));
  return FromNum(*n);
}

absl::StatusOr<Value> Subscript(const Value& container, const Value& index) {
  if (container.is_object()) {
    if (!Hashable(index))
      return TypeError(absl::StrCat("unhashable type: '", TypeName(index), "'"));
    const Value* found = index.is_string() ? container.Find(index.as_string()) : nullptr;
    if (found == nullptr) return absl::NotFoundError(absl::StrCat("KeyError: ", Repr(index)));
    return *found;
  }
  if (container.is_array() || container.is_string()) {
    if (!index.is_int() && !index.is_bool()) {
      return TypeError(
          absl::StrCat(TypeName(container), " indices must be integers, not ", TypeName(index)));
    }
    const int64_t size = container.is_array() ? static_cast<int64_t>(container.as_array().size())
                                              : static_cast<int64_t>(container.as_string().size());
    int64_t i = index.is_big_int() ? std::numeric_limits<int64_t>::max() : index.as_int();
    if (i < 0) i += size;
    if (i < 0 || i >= size) {
      return absl::OutOfRangeError(
          absl::StrCat("IndexError: ", TypeName(container), " index out of range"));
    }
    if (container.is_array()) return container.as_array()[i];
    return Value(container.as_string().substr(i, 1));
  }
  return TypeError(absl::StrCat("'", TypeName(container), "' object is not subscriptable"));
}

}  // namespace mlperf::checker::py
