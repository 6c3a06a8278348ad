#include "checker/expr_lexer.h"

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace mlperf::checker {
namespace {

absl::Status ErrorAt(int column, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("column ", column, ": ", what));
}

bool IsNameStart(char c) { return absl::ascii_isalpha(c) || c == '_'; }
bool IsNameChar(char c) { return absl::ascii_isalnum(c) || c == '_'; }

}  // namespace

absl::StatusOr<std::vector<Token>> Tokenize(absl::string_view text) {
  std::vector<Token> tokens;
  size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    const int column = static_cast<int>(i) + 1;
    if (absl::ascii_isspace(c)) {
      ++i;
      continue;
    }
    if (IsNameStart(c)) {
      size_t j = i;
      while (j < text.size() && IsNameChar(text[j])) ++j;
      tokens.push_back({TokenKind::kName, std::string(text.substr(i, j - i)), column});
      i = j;
      continue;
    }
    if (absl::ascii_isdigit(c) ||
        (c == '.' && i + 1 < text.size() && absl::ascii_isdigit(text[i + 1]))) {
      // Python numeric literal: digits with single '_' separators, fraction, exponent.
      std::string digits;
      bool is_float = false;
      size_t j = i;
      auto take_digits = [&]() -> absl::Status {
        bool any = false;
        while (j < text.size()) {
          if (absl::ascii_isdigit(text[j])) {
            digits += text[j++];
            any = true;
          } else if (text[j] == '_' && any && j + 1 < text.size() &&
                     absl::ascii_isdigit(text[j + 1])) {
            ++j;
          } else {
            break;
          }
        }
        return any ? absl::OkStatus() : ErrorAt(static_cast<int>(j) + 1, "expected a digit");
      };
      if (text[j] != '.') {
        if (absl::Status s = take_digits(); !s.ok()) return s;
      }
      if (j < text.size() && text[j] == '.') {
        is_float = true;
        digits += text[j++];
        if (j < text.size() && absl::ascii_isdigit(text[j])) {
          if (absl::Status s = take_digits(); !s.ok()) return s;
        }
      }
      if (j < text.size() && (text[j] == 'e' || text[j] == 'E')) {
        is_float = true;
        digits += 'e';
        ++j;
        if (j < text.size() && (text[j] == '+' || text[j] == '-')) digits += text[j++];
        if (absl::Status s = take_digits(); !s.ok()) return s;
      }
      if (j < text.size() && IsNameChar(text[j]))
        return ErrorAt(static_cast<int>(j) + 1, "invalid number");
      tokens.push_back({is_float ? TokenKind::kFloat : TokenKind::kInt, digits, column});
      i = j;
      continue;
    }
    if (c == '\'' || c == '"') {
      std::string value;
      size_t j = i + 1;
      bool closed = false;
      while (j < text.size()) {
        char d = text[j];
        if (d == c) {
          closed = true;
          ++j;
          break;
        }
        if (d == '\n') break;
        if (d == '\\' && j + 1 < text.size()) {
          char e = text[j + 1];
          switch (e) {
            case 'n':
              value += '\n';
              break;
            case 't':
              value += '\t';
              break;
            case '\\':
              value += '\\';
              break;
            case '\'':
              value += '\'';
              break;
            case '"':
              value += '"';
              break;
            default:
              return ErrorAt(static_cast<int>(j) + 1, "unsupported escape sequence");
          }
          j += 2;
          continue;
        }
        value += d;
        ++j;
      }
      if (!closed) return ErrorAt(column, "unterminated string");
      tokens.push_back({TokenKind::kString, value, column});
      i = j;
      continue;
    }
    // Operators, longest first.
    static constexpr absl::string_view kOps[] = {"**", "//", "==", "!=", "<=", ">=", "+=", "(",
                                                 ")",  "[",  "]",  ",",  ".",  ":",  "+",  "-",
                                                 "*",  "/",  "%",  "|",  "<",  ">",  "="};
    bool matched = false;
    for (absl::string_view op : kOps) {
      if (text.substr(i, op.size()) == op) {
        tokens.push_back({TokenKind::kOp, std::string(op), column});
        i += op.size();
        matched = true;
        break;
      }
    }
    if (!matched)
      return ErrorAt(column, absl::StrCat("unexpected character '", std::string(1, c), "'"));
  }
  tokens.push_back({TokenKind::kEnd, "", static_cast<int>(text.size()) + 1});
  return tokens;
}

}  // namespace mlperf::checker
