// Tokens of the rule expression language (docs/RULES_FORMAT.md).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace mlperf::checker {

enum class TokenKind { kInt, kFloat, kString, kName, kOp, kEnd };

struct Token {
  TokenKind kind = TokenKind::kEnd;
  std::string text;  // the operator/name; for strings the decoded contents; digits without '_'
  int column = 1;    // 1-based
};

// Splits an expression into tokens; errors name the column.
absl::StatusOr<std::vector<Token>> Tokenize(absl::string_view text);

}  // namespace mlperf::checker
