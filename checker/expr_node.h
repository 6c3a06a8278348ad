// The expression tree shared by the parser (expr.cc) and the evaluator
// (expr_eval.cc).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/json.h"
#include "checker/py_ops.h"

namespace mlperf::checker {

enum class NodeKind {
  kLiteral,      // value
  kLineValue,    // v
  kMetadata,     // md
  kTimestamp,    // ts
  kState,        // s
  kList,         // [kids...]
  kSubscript,    // kids[0][kids[1]]
  kCall,         // function(kids...)
  kNegate,       // -kids[0]
  kPlus,         // +kids[0]
  kNot,          // not kids[0]
  kBinary,       // kids[0] binary_op kids[1]
  kAnd,          // kids[0] and kids[1]
  kOr,           // kids[0] or kids[1]
  kCompare,      // kids[0] compare_ops[0] kids[1] compare_ops[1] kids[2] ...
  kConditional,  // kids[0] if kids[1] else kids[2]
};

enum class Function {
  kAbs,
  kMin,
  kMax,
  kLen,
  kInt,
  kFloat,
  kSorted,
  kIsInteger,
  kIsInt,
  kLog2,
  kCeil,
  kFloor
};

struct ExprNode {
  NodeKind kind = NodeKind::kLiteral;
  json::Value value;
  py::BinaryOp binary_op = py::BinaryOp::kAdd;
  std::vector<py::CompareOp> compare_ops;
  Function function = Function::kAbs;
  std::vector<std::unique_ptr<ExprNode>> kids;
};

}  // namespace mlperf::checker
