// Writing JSON exactly as Python's json.dumps does with its defaults, so that
// our logs and reports compare byte for byte with the official tools'.
#pragma once

#include <string>
#include <string_view>

#include "base/json_value.h"

namespace mlperf::json {

// Python's repr() of a float: shortest round-trip digits, scientific notation
// below 1e-4 and from 1e16 on, "inf"/"nan" as Python spells them.
std::string PythonFloatRepr(double d);

// json.dumps(v) with Python's defaults: separators ", " and ": ", non-ASCII
// escaped as \uXXXX, floats as repr, NaN/Infinity/-Infinity literals.
std::string Dump(const Value& v);
void DumpTo(const Value& v, std::string& out);
// json.dumps(v, indent=indent): one member or item per line; empty arrays and
// objects stay "[]" and "{}".
std::string DumpIndented(const Value& v, int indent);
void DumpStringTo(std::string_view s, std::string& out);  // a string, quoted and escaped

}  // namespace mlperf::json
