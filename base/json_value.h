// A JSON value with the semantics of Python's json module, which is what the
// official MLPerf tools use to write and read logs: ints and floats stay
// distinct, ints may exceed 64 bits, NaN/Infinity literals are accepted,
// objects keep insertion order and a repeated key replaces the earlier value
// in place.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace mlperf::json {

class Value;
struct Member;
using Array = std::vector<Value>;
using Object = std::vector<Member>;

enum class Type { kNull, kBool, kInt, kFloat, kString, kArray, kObject };

class Value {
 public:
  Value() = default;
  Value(std::nullptr_t) {}
  Value(bool b) : type_(Type::kBool), int_(b) {}
  template <typename T>
  requires(std::is_integral_v<T> && !std::is_same_v<T, bool>) Value(T i)
      : type_(Type::kInt), int_(static_cast<int64_t>(i)) {}
  Value(double d) : type_(Type::kFloat), float_(d) {}
  Value(float f) : type_(Type::kFloat), float_(f) {}
  Value(const char* s) : type_(Type::kString), str_(s) {}
  Value(std::string s) : type_(Type::kString), str_(std::move(s)) {}
  Value(std::string_view s) : type_(Type::kString), str_(s) {}
  Value(Array a);
  Value(Object o);

  // An integer outside int64, kept exactly as decimal text (Python ints are
  // unbounded). as_float() approximates it.
  static Value BigInt(std::string decimal_digits);

  Type type() const { return type_; }
  bool is_null() const { return type_ == Type::kNull; }
  bool is_bool() const { return type_ == Type::kBool; }
  bool is_int() const { return type_ == Type::kInt; }
  bool is_float() const { return type_ == Type::kFloat; }
  bool is_number() const { return type_ == Type::kInt || type_ == Type::kFloat; }
  bool is_string() const { return type_ == Type::kString; }
  bool is_array() const { return type_ == Type::kArray; }
  bool is_object() const { return type_ == Type::kObject; }
  bool is_big_int() const { return type_ == Type::kInt && !str_.empty(); }

  bool as_bool() const { return int_ != 0; }
  int64_t as_int() const { return int_; }                // meaningful for kInt (not big) and kBool
  double as_float() const;                               // kFloat, kInt (also big) and kBool
  const std::string& as_string() const { return str_; }  // kString; digits for a big int
  const Array& as_array() const;
  Array& as_array();
  const Object& as_object() const;
  Object& as_object();

  // Object access. Find returns nullptr when absent or when this is no object.
  const Value* Find(std::string_view key) const;
  // Replaces an existing member in place (keeping its position), else appends.
  void Set(std::string key, Value v);

 private:
  Type type_ = Type::kNull;
  int64_t int_ = 0;
  double float_ = 0;
  std::string str_;
  // Shared so that copying a parsed log line is cheap; mutation copies first.
  std::shared_ptr<Array> array_;
  std::shared_ptr<Object> object_;
};

// One name/value pair of an object; constructible from any string-like name so
// that {{"epoch_num", 1}} and {{meta::kEpochNum, 1}} both read naturally.
struct Member {
  Member(std::string_view name, Value v) : first(name), second(std::move(v)) {}
  std::string first;
  Value second;
};

}  // namespace mlperf::json
