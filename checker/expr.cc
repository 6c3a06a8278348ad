// Recursive-descent parser for rule expressions, following Python's grammar
// and precedence for the subset described in docs/RULES_FORMAT.md.
#include "checker/expr.h"

#include <algorithm>
#include <cstdlib>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "checker/expr_lexer.h"
#include "checker/expr_node.h"

namespace mlperf::checker {
namespace {

using NodePtr = std::unique_ptr<ExprNode>;

// Deeper nesting than any rule needs is refused, so the evaluator's recursion stays bounded.
constexpr int kMaxDepth = 100;

struct FunctionName {
  const char* name;
  Function function;
  int min_args;
  int max_args;  // -1: any
};
constexpr FunctionName kFunctions[] = {
    {"abs", Function::kAbs, 1, 1},       {"min", Function::kMin, 1, -1},
    {"max", Function::kMax, 1, -1},      {"len", Function::kLen, 1, 1},
    {"int", Function::kInt, 1, 1},       {"float", Function::kFloat, 1, 1},
    {"sorted", Function::kSorted, 1, 1}, {"is_integer", Function::kIsInteger, 1, 1},
    {"is_int", Function::kIsInt, 1, 1},  {"log2", Function::kLog2, 1, 1},
    {"ceil", Function::kCeil, 1, 1},     {"floor", Function::kFloor, 1, 1},
};

NodePtr MakeNode(NodeKind kind) {
  auto n = std::make_unique<ExprNode>();
  n->kind = kind;
  return n;
}

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  absl::StatusOr<NodePtr> ParseAll() {
    absl::StatusOr<NodePtr> root = ParseConditional();
    if (!root.ok()) return root;
    if (Peek().kind != TokenKind::kEnd) return Error("unexpected '" + Peek().text + "'");
    return root;
  }

  std::vector<std::string> state_reads;
  bool reads_line = false;

 private:
  const Token& Peek(size_t ahead = 0) const {
    return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
  }
  bool IsOp(const char* op, size_t ahead = 0) const {
    return Peek(ahead).kind == TokenKind::kOp && Peek(ahead).text == op;
  }
  bool IsKeyword(const char* word, size_t ahead = 0) const {
    return Peek(ahead).kind == TokenKind::kName && Peek(ahead).text == word;
  }
  absl::Status Error(std::string what) const {
    return absl::InvalidArgumentError(absl::StrCat("column ", Peek().column, ": ", what));
  }
  absl::Status Expect(const char* op) {
    if (!IsOp(op)) return Error(absl::StrCat("expected '", op, "'"));
    ++pos_;
    return absl::OkStatus();
  }

  // RAII guard for nesting depth.
  struct Depth {
    explicit Depth(int& d) : d_(d) { ++d_; }
    ~Depth() { --d_; }
    int& d_;
  };

  absl::StatusOr<NodePtr> ParseConditional() {
    Depth guard(depth_);
    if (depth_ > kMaxDepth) return Error("expression nested too deeply");
    absl::StatusOr<NodePtr> then = ParseOr();
    if (!then.ok() || !IsKeyword("if")) return then;
    ++pos_;
    absl::StatusOr<NodePtr> cond = ParseOr();
    if (!cond.ok()) return cond;
    if (!IsKeyword("else")) return Error("expected 'else'");
    ++pos_;
    absl::StatusOr<NodePtr> otherwise = ParseConditional();
    if (!otherwise.ok()) return otherwise;
    NodePtr n = MakeNode(NodeKind::kConditional);
    n->kids.push_back(std::move(*then));
    n->kids.push_back(std::move(*cond));
    n->kids.push_back(std::move(*otherwise));
    return n;
  }

  absl::StatusOr<NodePtr> ParseOr() {
    absl::StatusOr<NodePtr> left = ParseAnd();
    while (left.ok() && IsKeyword("or")) {
      ++pos_;
      absl::StatusOr<NodePtr> right = ParseAnd();
      if (!right.ok()) return right;
      NodePtr n = MakeNode(NodeKind::kOr);
      n->kids.push_back(std::move(*left));
      n->kids.push_back(std::move(*right));
      left = std::move(n);
    }
    return left;
  }

  absl::StatusOr<NodePtr> ParseAnd() {
    absl::StatusOr<NodePtr> left = ParseNot();
    while (left.ok() && IsKeyword("and")) {
      ++pos_;
      absl::StatusOr<NodePtr> right = ParseNot();
      if (!right.ok()) return right;
      NodePtr n = MakeNode(NodeKind::kAnd);
      n->kids.push_back(std::move(*left));
      n->kids.push_back(std::move(*right));
      left = std::move(n);
    }
    return left;
  }

  absl::StatusOr<NodePtr> ParseNot() {
    if (!IsKeyword("not")) return ParseComparison();
    Depth guard(depth_);
    if (depth_ > kMaxDepth) return Error("expression nested too deeply");
    ++pos_;
    absl::StatusOr<NodePtr> operand = ParseNot();
    if (!operand.ok()) return operand;
    NodePtr n = MakeNode(NodeKind::kNot);
    n->kids.push_back(std::move(*operand));
    return n;
  }

  bool AtCompareOp(py::CompareOp* op, int* width) const {
    static constexpr std::pair<const char*, py::CompareOp> kOps[] = {
        {"==", py::CompareOp::kEq}, {"!=", py::CompareOp::kNe}, {"<=", py::CompareOp::kLe},
        {">=", py::CompareOp::kGe}, {"<", py::CompareOp::kLt},  {">", py::CompareOp::kGt}};
    for (const auto& [text, kind] : kOps) {
      if (IsOp(text)) {
        *op = kind;
        *width = 1;
        return true;
      }
    }
    if (IsKeyword("in")) {
      *op = py::CompareOp::kIn;
      *width = 1;
      return true;
    }
    if (IsKeyword("not") && IsKeyword("in", 1)) {
      *op = py::CompareOp::kNotIn;
      *width = 2;
      return true;
    }
    return false;
  }

  absl::StatusOr<NodePtr> ParseComparison() {
    absl::StatusOr<NodePtr> first = ParseBitOr();
    if (!first.ok()) return first;
    py::CompareOp op;
    int width;
    if (!AtCompareOp(&op, &width)) return first;
    NodePtr n = MakeNode(NodeKind::kCompare);
    n->kids.push_back(std::move(*first));
    while (AtCompareOp(&op, &width)) {
      pos_ += width;
      absl::StatusOr<NodePtr> next = ParseBitOr();
      if (!next.ok()) return next;
      n->compare_ops.push_back(op);
      n->kids.push_back(std::move(*next));
    }
    return n;
  }

  absl::StatusOr<NodePtr> Binary(py::BinaryOp op, NodePtr left, NodePtr right) {
    NodePtr n = MakeNode(NodeKind::kBinary);
    n->binary_op = op;
    n->kids.push_back(std::move(left));
    n->kids.push_back(std::move(right));
    return n;
  }

  absl::StatusOr<NodePtr> ParseBitOr() {
    absl::StatusOr<NodePtr> left = ParseSum();
    while (left.ok() && IsOp("|")) {
      ++pos_;
      absl::StatusOr<NodePtr> right = ParseSum();
      if (!right.ok()) return right;
      left = Binary(py::BinaryOp::kBitOr, std::move(*left), std::move(*right));
    }
    return left;
  }

  absl::StatusOr<NodePtr> ParseSum() {
    absl::StatusOr<NodePtr> left = ParseTerm();
    while (left.ok() && (IsOp("+") || IsOp("-"))) {
      py::BinaryOp op = IsOp("+") ? py::BinaryOp::kAdd : py::BinaryOp::kSub;
      ++pos_;
      absl::StatusOr<NodePtr> right = ParseTerm();
      if (!right.ok()) return right;
      left = Binary(op, std::move(*left), std::move(*right));
    }
    return left;
  }

  absl::StatusOr<NodePtr> ParseTerm() {
    absl::StatusOr<NodePtr> left = ParseUnary();
    while (left.ok() && (IsOp("*") || IsOp("/") || IsOp("//") || IsOp("%"))) {
      py::BinaryOp op = IsOp("*")    ? py::BinaryOp::kMul
                        : IsOp("/")  ? py::BinaryOp::kDiv
                        : IsOp("//") ? py::BinaryOp::kFloorDiv
                                     : py::BinaryOp::kMod;
      ++pos_;
      absl::StatusOr<NodePtr> right = ParseUnary();
      if (!right.ok()) return right;
      left = Binary(op, std::move(*left), std::move(*right));
    }
    return left;
  }

  absl::StatusOr<NodePtr> ParseUnary() {
    if (!IsOp("-") && !IsOp("+")) return ParsePower();
    Depth guard(depth_);
    if (depth_ > kMaxDepth) return Error("expression nested too deeply");
    NodeKind kind = IsOp("-") ? NodeKind::kNegate : NodeKind::kPlus;
    ++pos_;
    absl::StatusOr<NodePtr> operand = ParseUnary();
    if (!operand.ok()) return operand;
    NodePtr n = MakeNode(kind);
    n->kids.push_back(std::move(*operand));
    return n;
  }

  // power: postfix ['**' unary]  (right-associative, binds tighter than a unary minus on its left)
  absl::StatusOr<NodePtr> ParsePower() {
    absl::StatusOr<NodePtr> base = ParsePostfix();
    if (!base.ok() || !IsOp("**")) return base;
    ++pos_;
    absl::StatusOr<NodePtr> exponent = ParseUnary();
    if (!exponent.ok()) return exponent;
    return Binary(py::BinaryOp::kPow, std::move(*base), std::move(*exponent));
  }

  absl::StatusOr<NodePtr> ParsePostfix() {
    absl::StatusOr<NodePtr> node = ParseAtom();
    while (node.ok()) {
      if (IsOp("[")) {
        ++pos_;
        absl::StatusOr<NodePtr> index = ParseConditional();
        if (!index.ok()) return index;
        if (absl::Status s = Expect("]"); !s.ok()) return s;
        NoteStateRead(**node, **index);
        NodePtr n = MakeNode(NodeKind::kSubscript);
        n->kids.push_back(std::move(*node));
        n->kids.push_back(std::move(*index));
        node = std::move(n);
      } else if (IsOp(".")) {
        ++pos_;
        if (Peek().kind != TokenKind::kName) return Error("expected a name after '.'");
        NodePtr index = MakeNode(NodeKind::kLiteral);
        index->value = json::Value(Peek().text);
        ++pos_;
        NoteStateRead(**node, *index);
        NodePtr n = MakeNode(NodeKind::kSubscript);
        n->kids.push_back(std::move(*node));
        n->kids.push_back(std::move(index));
        node = std::move(n);
      } else {
        break;
      }
    }
    return node;
  }

  void NoteStateRead(const ExprNode& container, const ExprNode& index) {
    if (container.kind == NodeKind::kState && index.kind == NodeKind::kLiteral &&
        index.value.is_string() &&
        std::find(state_reads.begin(), state_reads.end(), index.value.as_string()) ==
            state_reads.end()) {
      state_reads.push_back(index.value.as_string());
    }
  }

  absl::StatusOr<NodePtr> ParseAtom() {
    Depth guard(depth_);
    if (depth_ > kMaxDepth) return Error("expression nested too deeply");
    const Token& t = Peek();
    switch (t.kind) {
      case TokenKind::kInt: {
        NodePtr n = MakeNode(NodeKind::kLiteral);
        errno = 0;
        char* end = nullptr;
        long long value = std::strtoll(t.text.c_str(), &end, 10);
        if (errno == ERANGE) return Error("integer literal beyond 64 bits");
        n->value = json::Value(static_cast<int64_t>(value));
        ++pos_;
        return n;
      }
      case TokenKind::kFloat: {
        NodePtr n = MakeNode(NodeKind::kLiteral);
        n->value = json::Value(std::strtod(t.text.c_str(), nullptr));
        ++pos_;
        return n;
      }
      case TokenKind::kString: {
        NodePtr n = MakeNode(NodeKind::kLiteral);
        n->value = json::Value(t.text);
        ++pos_;
        // Adjacent string literals concatenate, as in Python.
        while (Peek().kind == TokenKind::kString) {
          n->value = json::Value(n->value.as_string() + Peek().text);
          ++pos_;
        }
        return n;
      }
      case TokenKind::kOp:
        if (t.text == "(") {
          ++pos_;
          absl::StatusOr<NodePtr> inner = ParseConditional();
          if (!inner.ok()) return inner;
          if (absl::Status s = Expect(")"); !s.ok()) return s;
          return inner;
        }
        if (t.text == "[") {
          ++pos_;
          NodePtr n = MakeNode(NodeKind::kList);
          while (!IsOp("]")) {
            absl::StatusOr<NodePtr> item = ParseConditional();
            if (!item.ok()) return item;
            n->kids.push_back(std::move(*item));
            if (IsOp(",")) {
              ++pos_;
            } else if (!IsOp("]")) {
              return Error("expected ',' or ']'");
            }
          }
          ++pos_;
          return n;
        }
        return Error("unexpected '" + t.text + "'");
      case TokenKind::kName:
        return ParseName();
      case TokenKind::kEnd:
        return Error("unexpected end of expression");
    }
    return Error("unexpected token");
  }

  absl::StatusOr<NodePtr> ParseName() {
    const std::string name = Peek().text;
    ++pos_;
    if (name == "True" || name == "False" || name == "None") {
      NodePtr n = MakeNode(NodeKind::kLiteral);
      if (name != "None") n->value = json::Value(name == "True");
      return n;
    }
    if (name == "v" || name == "md" || name == "ts") {
      reads_line = true;
      return MakeNode(name == "v"    ? NodeKind::kLineValue
                      : name == "md" ? NodeKind::kMetadata
                                     : NodeKind::kTimestamp);
    }
    if (name == "s") return MakeNode(NodeKind::kState);
    for (const FunctionName& f : kFunctions) {
      if (name != f.name) continue;
      if (!IsOp("(")) return Error(absl::StrCat("'", name, "' must be called"));
      ++pos_;
      NodePtr n = MakeNode(NodeKind::kCall);
      n->function = f.function;
      while (!IsOp(")")) {
        absl::StatusOr<NodePtr> arg = ParseConditional();
        if (!arg.ok()) return arg;
        n->kids.push_back(std::move(*arg));
        if (IsOp(",")) {
          ++pos_;
        } else if (!IsOp(")")) {
          return Error("expected ',' or ')'");
        }
      }
      ++pos_;
      const int n_args = static_cast<int>(n->kids.size());
      if (n_args < f.min_args || (f.max_args >= 0 && n_args > f.max_args)) {
        return Error(absl::StrCat("wrong number of arguments for ", name, "()"));
      }
      return n;
    }
    return absl::InvalidArgumentError(
        absl::StrCat("column ", tokens_[pos_ - 1].column, ": unknown name '", name, "'"));
  }

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

absl::StatusOr<Expr> Expr::Parse(absl::string_view text) {
  absl::StatusOr<std::vector<Token>> tokens = Tokenize(text);
  if (!tokens.ok()) return tokens.status();
  Parser parser(std::move(*tokens));
  absl::StatusOr<NodePtr> root = parser.ParseAll();
  if (!root.ok()) return root.status();
  Expr e;
  e.root_ = std::shared_ptr<const ExprNode>(std::move(*root));
  e.text_ = std::string(text);
  e.state_reads_ = std::move(parser.state_reads);
  e.reads_line_ = parser.reads_line;
  return e;
}

}  // namespace mlperf::checker
