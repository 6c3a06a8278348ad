// Reading JSON with the rules of Python's json.loads, which is how the
// official MLPerf tools read logs and submission files.
#pragma once

#include <string_view>

#include "absl/status/statusor.h"
#include "base/json_value.h"

namespace mlperf::json {

enum class Encoding {
  kLatin1,  // each byte is one code point, as the official log parser reads files
  kUtf8,    // strict UTF-8, as Python reads JSON files by default
};

struct ParseOptions {
  Encoding encoding = Encoding::kLatin1;
};

// Things that Python accepts but that a careful reader wants to hear about.
struct ParseNotes {
  bool non_finite = false;    // NaN, Infinity or -Infinity (or a float overflowing to inf)
  bool big_int = false;       // an integer outside int64
  bool invalid_utf8 = false;  // (latin-1 mode) bytes that are not valid UTF-8
};

// json.loads(text) with Python's rules (strict: no control characters inside
// strings, no trailing data). Errors say what was expected and at which
// 1-based column, e.g. "expected ',' or '}' at column 57".
absl::StatusOr<Value> Parse(std::string_view text, const ParseOptions& options = {},
                            ParseNotes* notes = nullptr);

}  // namespace mlperf::json
