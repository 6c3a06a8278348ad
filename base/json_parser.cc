#include "base/json_parser.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>

#include "base/utf8.h"
#include "fmt/format.h"

namespace mlperf::json {
namespace {

// Python refuses int literals longer than this (sys.int_info.default_max_str_digits).
constexpr size_t kMaxIntDigits = 4300;
// Deeper nesting than this is refused rather than risking the stack.
constexpr int kMaxDepth = 500;

class Parser {
 public:
  Parser(std::string_view text, const ParseOptions& options, ParseNotes* notes)
      : text_(text), options_(options), notes_(notes) {}

  absl::StatusOr<Value> ParseDocument() {
    SkipWhitespace();
    Value v;
    if (!ParseValue(v, 0)) return absl::InvalidArgumentError(error_);
    SkipWhitespace();
    if (pos_ != text_.size()) {
      return absl::InvalidArgumentError(
          fmt::format("extra data after the JSON value at column {}", pos_ + 1));
    }
    return v;
  }

 private:
  bool Fail(std::string_view what) {
    if (pos_ >= text_.size()) {
      error_ = fmt::format("{} at column {} (the line ends early)", what, pos_ + 1);
    } else {
      error_ = fmt::format("{} at column {}", what, pos_ + 1);
    }
    return false;
  }

  void SkipWhitespace() {
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
      ++pos_;
    }
  }

  bool Consume(std::string_view literal) {
    if (text_.substr(pos_, literal.size()) != literal) return false;
    pos_ += literal.size();
    return true;
  }

  void NoteNonFinite() {
    if (notes_) notes_->non_finite = true;
  }

  bool ParseValue(Value& out, int depth) {
    if (depth > kMaxDepth) return Fail("nesting deeper than 500 levels");
    if (pos_ >= text_.size()) return Fail("expected a value");
    const char c = text_[pos_];
    switch (c) {
      case '{':
        return ParseObject(out, depth);
      case '[':
        return ParseArray(out, depth);
      case '"': {
        std::string s;
        if (!ParseString(s)) return false;
        out = Value(std::move(s));
        return true;
      }
      case 'n':
        if (Consume("null")) {
          out = Value();
          return true;
        }
        break;
      case 't':
        if (Consume("true")) {
          out = Value(true);
          return true;
        }
        break;
      case 'f':
        if (Consume("false")) {
          out = Value(false);
          return true;
        }
        break;
      case 'N':
        if (Consume("NaN")) {
          NoteNonFinite();
          out = Value(std::nan(""));
          return true;
        }
        break;
      case 'I':
        if (Consume("Infinity")) {
          NoteNonFinite();
          out = Value(HUGE_VAL);
          return true;
        }
        break;
      case '-':
        if (Consume("-Infinity")) {
          NoteNonFinite();
          out = Value(-HUGE_VAL);
          return true;
        }
        return ParseNumber(out);
      default:
        if (c >= '0' && c <= '9') return ParseNumber(out);
        break;
    }
    return Fail("expected a value");
  }

  bool ParseNumber(Value& out) {
    const size_t start = pos_;
    if (text_[pos_] == '-') ++pos_;
    auto digits = [&] {
      const size_t from = pos_;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') ++pos_;
      return pos_ - from;
    };
    if (pos_ < text_.size() && text_[pos_] == '0') {
      ++pos_;  // a leading zero stands alone; "01" leaves "1" as extra data, like Python
    } else if (digits() == 0) {
      pos_ = start;
      return Fail("expected a value");
    }
    bool is_float = false;
    if (pos_ + 1 < text_.size() && text_[pos_] == '.' && text_[pos_ + 1] >= '0' &&
        text_[pos_ + 1] <= '9') {
      ++pos_;
      digits();
      is_float = true;
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      size_t p = pos_ + 1;
      if (p < text_.size() && (text_[p] == '+' || text_[p] == '-')) ++p;
      if (p < text_.size() && text_[p] >= '0' && text_[p] <= '9') {
        pos_ = p;
        digits();
        is_float = true;
      }
    }
    const std::string_view number = text_.substr(start, pos_ - start);
    if (!is_float) {
      int64_t i = 0;
      auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), i);
      if (ec == std::errc() && end == number.data() + number.size()) {
        out = Value(i);
        return true;
      }
      const size_t n_digits = number.size() - (number[0] == '-' ? 1 : 0);
      if (n_digits > kMaxIntDigits) {
        pos_ = start;
        return Fail("integer with more than 4300 digits");
      }
      if (notes_) notes_->big_int = true;
      out = Value::BigInt(std::string(number));
      return true;
    }
    double d = 0;
    auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), d);
    if (ec == std::errc::result_out_of_range) {
      // Python's float() saturates: huge magnitudes become inf, tiny ones 0.
      d = std::strtod(std::string(number).c_str(), nullptr);
    }
    if (std::isinf(d) && notes_) notes_->non_finite = true;
    out = Value(d);
    return true;
  }

  bool ParseHex4(uint32_t& u) {
    if (pos_ + 4 > text_.size()) return Fail("incomplete \\u escape");
    u = 0;
    for (int k = 0; k < 4; ++k) {
      const char h = text_[pos_ + k];
      u <<= 4;
      if (h >= '0' && h <= '9') {
        u |= h - '0';
      } else if (h >= 'a' && h <= 'f') {
        u |= h - 'a' + 10;
      } else if (h >= 'A' && h <= 'F') {
        u |= h - 'A' + 10;
      } else {
        return Fail("invalid \\u escape");
      }
    }
    pos_ += 4;
    return true;
  }

  bool ParseString(std::string& out) {
    ++pos_;  // opening quote
    const size_t raw_start = pos_;
    bool has_high_bytes = false;
    while (true) {
      // Most strings are plain ASCII: copy such runs in one go.
      size_t run = pos_;
      while (run < text_.size() && IsPlainAscii(static_cast<unsigned char>(text_[run]))) ++run;
      out.append(text_.data() + pos_, run - pos_);
      pos_ = run;
      if (pos_ >= text_.size()) return Fail("unterminated string");
      const auto c = static_cast<unsigned char>(text_[pos_]);
      if (c == '"') {
        ++pos_;
        break;
      }
      if (c < 0x20) return Fail("control character inside a string");
      if (c != '\\') {
        if (c >= 0x80) {
          has_high_bytes = true;
          if (options_.encoding == Encoding::kLatin1) {
            AppendUtf8(c, out);  // one byte, one code point
            ++pos_;
            continue;
          }
        }
        out += static_cast<char>(c);
        ++pos_;
        continue;
      }
      ++pos_;
      if (pos_ >= text_.size()) return Fail("unterminated string");
      const char e = text_[pos_++];
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          uint32_t u = 0;
          if (!ParseHex4(u)) return false;
          // A high surrogate followed by an escaped low one is one code point.
          if (u >= 0xD800 && u < 0xDC00 && text_.substr(pos_, 2) == "\\u") {
            const size_t save = pos_;
            pos_ += 2;
            uint32_t low = 0;
            if (ParseHex4(low) && low >= 0xDC00 && low < 0xE000) {
              u = 0x10000 + ((u - 0xD800) << 10) + (low - 0xDC00);
            } else {
              pos_ = save;
            }
          }
          AppendUtf8(u, out);
          break;
        }
        default:
          --pos_;
          return Fail("invalid escape in a string");
      }
    }
    if (has_high_bytes) {
      const std::string_view raw = text_.substr(raw_start, pos_ - 1 - raw_start);
      if (!IsValidUtf8(raw)) {
        if (options_.encoding == Encoding::kUtf8) {
          pos_ = raw_start;
          return Fail("invalid UTF-8 in a string");
        }
        if (notes_) notes_->invalid_utf8 = true;
      }
    }
    return true;
  }

  bool ParseArray(Value& out, int depth) {
    ++pos_;
    Array items;
    SkipWhitespace();
    if (pos_ < text_.size() && text_[pos_] == ']') {
      ++pos_;
      out = Value(std::move(items));
      return true;
    }
    while (true) {
      SkipWhitespace();
      Value item;
      if (!ParseValue(item, depth + 1)) return false;
      items.push_back(std::move(item));
      SkipWhitespace();
      if (pos_ < text_.size() && text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < text_.size() && text_[pos_] == ']') {
        ++pos_;
        break;
      }
      return Fail("expected ',' or ']'");
    }
    out = Value(std::move(items));
    return true;
  }

  bool ParseObject(Value& out, int depth) {
    ++pos_;
    Object members;
    members.reserve(8);  // log lines and their metadata have a handful of members
    // Index of each key, built only for large objects, so that repeated keys
    // (the later value wins, in the first one's position) stay linear.
    std::unordered_map<std::string, size_t> index;
    SkipWhitespace();
    if (pos_ < text_.size() && text_[pos_] == '}') {
      ++pos_;
      out = Value(std::move(members));
      return true;
    }
    while (true) {
      SkipWhitespace();
      if (pos_ >= text_.size() || text_[pos_] != '"') {
        return Fail("expected a property name in double quotes");
      }
      std::string key;
      if (!ParseString(key)) return false;
      SkipWhitespace();
      if (pos_ >= text_.size() || text_[pos_] != ':') return Fail("expected ':'");
      ++pos_;
      SkipWhitespace();
      Value item;
      if (!ParseValue(item, depth + 1)) return false;
      Insert(members, index, std::move(key), std::move(item));
      SkipWhitespace();
      if (pos_ < text_.size() && text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < text_.size() && text_[pos_] == '}') {
        ++pos_;
        break;
      }
      return Fail("expected ',' or '}'");
    }
    out = Value(std::move(members));
    return true;
  }

  static void Insert(Object& members, std::unordered_map<std::string, size_t>& index,
                     std::string key, Value item) {
    constexpr size_t kIndexFrom = 16;
    if (members.size() < kIndexFrom) {
      for (auto& [k, v] : members) {
        if (k == key) {
          v = std::move(item);
          return;
        }
      }
      members.emplace_back(std::move(key), std::move(item));
      if (members.size() == kIndexFrom) {
        for (size_t i = 0; i < members.size(); ++i) index.emplace(members[i].first, i);
      }
      return;
    }
    auto [it, inserted] = index.emplace(key, members.size());
    if (!inserted) {
      members[it->second].second = std::move(item);
      return;
    }
    members.emplace_back(std::move(key), std::move(item));
  }

  std::string_view text_;
  const ParseOptions& options_;
  ParseNotes* notes_;
  size_t pos_ = 0;
  std::string error_;
};

}  // namespace

absl::StatusOr<Value> Parse(std::string_view text, const ParseOptions& options, ParseNotes* notes) {
  return Parser(text, options, notes).ParseDocument();
}

}  // namespace mlperf::json
