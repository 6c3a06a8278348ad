// The rule expression language (docs/RULES_FORMAT.md): a small subset of
// Python expressions, parsed once into a tree and evaluated per log line with
// Python's semantics (checker/py_ops.h).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "base/json.h"
#include "checker/py_ops.h"

namespace mlperf::checker {

struct ExprNode;

// A parsed expression; cheap to copy (the tree is shared and immutable).
class Expr {
 public:
  Expr() = default;

  // Parses `text`; errors name the 1-based column.
  static absl::StatusOr<Expr> Parse(absl::string_view text);

  const std::string& text() const { return text_; }
  // State variables the expression reads (s.NAME / s['NAME']), for messages.
  const std::vector<std::string>& state_reads() const { return state_reads_; }
  // Whether the expression reads v, md or ts (not allowed in file-level code).
  bool reads_line() const { return reads_line_; }
  bool empty() const { return root_ == nullptr; }

  const ExprNode* root() const { return root_.get(); }

 private:
  std::shared_ptr<const ExprNode> root_;
  std::string text_;
  std::vector<std::string> state_reads_;
  bool reads_line_ = false;
};

// What names resolve to during one evaluation. `line_value` etc. are null in
// file-level code (state initialisers, end checks).
struct EvalContext {
  const json::Value* line_value = nullptr;
  const json::Value* line_metadata = nullptr;
  double timestamp_ms = 0;
  const json::Value* state = nullptr;  // an object
};

// Evaluates with Python semantics; an error status is what Python would raise.
absl::StatusOr<json::Value> Evaluate(const Expr& expr, const EvalContext& ctx);

}  // namespace mlperf::checker
