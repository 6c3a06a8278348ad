#include "base/json_value.h"

#include <cstdlib>

namespace mlperf::json {

Value::Value(Array a) : type_(Type::kArray), array_(std::make_shared<Array>(std::move(a))) {}
Value::Value(Object o) : type_(Type::kObject), object_(std::make_shared<Object>(std::move(o))) {}

Value Value::BigInt(std::string decimal_digits) {
  Value v;
  v.type_ = Type::kInt;
  v.str_ = std::move(decimal_digits);
  return v;
}

double Value::as_float() const {
  if (type_ == Type::kFloat) return float_;
  if (is_big_int()) return std::strtod(str_.c_str(), nullptr);
  return static_cast<double>(int_);
}

namespace {
const Array& EmptyArray() {
  static const Array empty;
  return empty;
}
const Object& EmptyObject() {
  static const Object empty;
  return empty;
}
}  // namespace

const Array& Value::as_array() const { return array_ ? *array_ : EmptyArray(); }
const Object& Value::as_object() const { return object_ ? *object_ : EmptyObject(); }

Array& Value::as_array() {
  if (!array_) array_ = std::make_shared<Array>();
  if (array_.use_count() > 1) array_ = std::make_shared<Array>(*array_);
  return *array_;
}

Object& Value::as_object() {
  if (!object_) object_ = std::make_shared<Object>();
  if (object_.use_count() > 1) object_ = std::make_shared<Object>(*object_);
  return *object_;
}

const Value* Value::Find(std::string_view key) const {
  if (type_ != Type::kObject) return nullptr;
  for (const auto& [k, v] : as_object()) {
    if (k == key) return &v;
  }
  return nullptr;
}

void Value::Set(std::string key, Value v) {
  if (type_ != Type::kObject) {
    *this = Value(Object{});
  }
  Object& members = as_object();
  for (auto& [k, existing] : members) {
    if (k == key) {
      existing = std::move(v);
      return;
    }
  }
  members.emplace_back(std::move(key), std::move(v));
}

}  // namespace mlperf::json
