// Python exceptions as statuses: the message starts with the exception's
// name, as Python prints it, so that rule messages match the official checker.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace mlperf::checker::py {

inline absl::Status TypeError(std::string msg) {
  return absl::InvalidArgumentError(absl::StrCat("TypeError: ", msg));
}
inline absl::Status ValueError(std::string msg) {
  return absl::InvalidArgumentError(absl::StrCat("ValueError: ", msg));
}
inline absl::Status ZeroDivision(std::string msg) {
  return absl::InvalidArgumentError(absl::StrCat("ZeroDivisionError: ", msg));
}
inline absl::Status Overflow(std::string msg) {
  return absl::OutOfRangeError(absl::StrCat("OverflowError: ", msg));
}

}  // namespace mlperf::checker::py
