// Evaluation of rule expressions with Python's semantics.
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "checker/expr.h"
#include "checker/expr_node.h"
#include "checker/py_ops.h"

namespace mlperf::checker {
namespace {

using json::Value;

class Evaluator {
 public:
  explicit Evaluator(const EvalContext& ctx) : ctx_(ctx) {}

  absl::StatusOr<Value> Eval(const ExprNode& n) {
    switch (n.kind) {
      case NodeKind::kLiteral:
        return n.value;
      case NodeKind::kLineValue:
        if (ctx_.line_value == nullptr) return NoLine("v");
        return *ctx_.line_value;
      case NodeKind::kMetadata:
        if (ctx_.line_metadata == nullptr) return NoLine("md");
        return *ctx_.line_metadata;
      case NodeKind::kTimestamp:
        if (ctx_.line_value == nullptr) return NoLine("ts");
        return Value(ctx_.timestamp_ms);
      case NodeKind::kState:
        if (ctx_.state == nullptr) return Value(json::Object{});
        return *ctx_.state;
      case NodeKind::kList: {
        json::Array items;
        items.reserve(n.kids.size());
        for (const auto& kid : n.kids) {
          absl::StatusOr<Value> item = Eval(*kid);
          if (!item.ok()) return item;
          items.push_back(std::move(*item));
        }
        return Value(std::move(items));
      }
      case NodeKind::kSubscript: {
        // s.NAME is by far the most common subscript; look it up without copying the state.
        if (n.kids[0]->kind == NodeKind::kState && n.kids[1]->kind == NodeKind::kLiteral &&
            ctx_.state != nullptr) {
          return py::Subscript(*ctx_.state, n.kids[1]->value);
        }
        absl::StatusOr<Value> container = Eval(*n.kids[0]);
        if (!container.ok()) return container;
        absl::StatusOr<Value> index = Eval(*n.kids[1]);
        if (!index.ok()) return index;
        return py::Subscript(*container, *index);
      }
      case NodeKind::kCall:
        return Call(n);
      case NodeKind::kNegate:
      case NodeKind::kPlus: {
        absl::StatusOr<Value> operand = Eval(*n.kids[0]);
        if (!operand.ok()) return operand;
        return n.kind == NodeKind::kNegate ? py::Negate(*operand) : py::Plus(*operand);
      }
      case NodeKind::kNot: {
        absl::StatusOr<Value> operand = Eval(*n.kids[0]);
        if (!operand.ok()) return operand;
        return Value(!py::Truthy(*operand));
      }
      case NodeKind::kBinary: {
        absl::StatusOr<Value> a = Eval(*n.kids[0]);
        if (!a.ok()) return a;
        absl::StatusOr<Value> b = Eval(*n.kids[1]);
        if (!b.ok()) return b;
        return py::Binary(n.binary_op, *a, *b);
      }
      case NodeKind::kAnd:
      case NodeKind::kOr: {
        // Python returns the deciding operand, not a bool.
        absl::StatusOr<Value> a = Eval(*n.kids[0]);
        if (!a.ok()) return a;
        const bool truthy = py::Truthy(*a);
        if ((n.kind == NodeKind::kAnd) != truthy) return a;
        return Eval(*n.kids[1]);
      }
      case NodeKind::kCompare: {
        // a < b < c  ==  a < b and b < c, each operand evaluated at most once.
        absl::StatusOr<Value> left = Eval(*n.kids[0]);
        if (!left.ok()) return left;
        for (size_t i = 0; i < n.compare_ops.size(); ++i) {
          absl::StatusOr<Value> right = Eval(*n.kids[i + 1]);
          if (!right.ok()) return right;
          absl::StatusOr<bool> holds = py::Compare(n.compare_ops[i], *left, *right);
          if (!holds.ok()) return holds.status();
          if (!*holds) return Value(false);
          left = std::move(right);
        }
        return Value(true);
      }
      case NodeKind::kConditional: {
        absl::StatusOr<Value> cond = Eval(*n.kids[1]);
        if (!cond.ok()) return cond;
        return Eval(*n.kids[py::Truthy(*cond) ? 0 : 2]);
      }
    }
    return absl::InternalError("unknown expression node");
  }

 private:
  static absl::Status NoLine(const char* name) {
    return absl::InvalidArgumentError(
        absl::StrCat("NameError: name '", name, "' is not defined outside a key record"));
  }

  absl::StatusOr<Value> Call(const ExprNode& n) {
    json::Array args;
    args.reserve(n.kids.size());
    for (const auto& kid : n.kids) {
      absl::StatusOr<Value> arg = Eval(*kid);
      if (!arg.ok()) return arg;
      args.push_back(std::move(*arg));
    }
    switch (n.function) {
      case Function::kAbs:
        return py::Abs(args[0]);
      case Function::kLen:
        return py::Len(args[0]);
      case Function::kInt:
        return py::Int(args[0]);
      case Function::kFloat:
        return py::Float(args[0]);
      case Function::kSorted:
        return py::Sorted(args[0]);
      case Function::kLog2:
        return py::Log2(args[0]);
      case Function::kCeil:
        return py::Ceil(args[0]);
      case Function::kFloor:
        return py::Floor(args[0]);
      case Function::kIsInt:
        return Value(args[0].is_int() || args[0].is_bool());
      case Function::kIsInteger: {
        // The official helper: abs(round(x) - x) < 0.00001; always true for an int.
        if (args[0].is_int() || args[0].is_bool()) return Value(true);
        absl::StatusOr<Value> rounded = py::Round(args[0]);
        if (!rounded.ok()) return rounded;
        absl::StatusOr<Value> diff = py::Binary(py::BinaryOp::kSub, *rounded, args[0]);
        if (!diff.ok()) return diff;
        absl::StatusOr<Value> magnitude = py::Abs(*diff);
        if (!magnitude.ok()) return magnitude;
        absl::StatusOr<bool> small = py::Compare(py::CompareOp::kLt, *magnitude, Value(0.00001));
        if (!small.ok()) return small.status();
        return Value(*small);
      }
      case Function::kMin:
      case Function::kMax: {
        const bool want_max = n.function == Function::kMax;
        if (args.size() > 1) return py::MinMax(args, want_max);
        absl::StatusOr<json::Array> items = py::Iterate(args[0]);
        if (!items.ok()) return items.status();
        return py::MinMax(*items, want_max);
      }
    }
    return absl::InternalError("unknown function");
  }

  const EvalContext& ctx_;
};

}  // namespace

absl::StatusOr<json::Value> Evaluate(const Expr& expr, const EvalContext& ctx) {
  if (expr.root() == nullptr) return absl::InternalError("empty expression");
  return Evaluator(ctx).Eval(*expr.root());
}

}  // namespace mlperf::checker
