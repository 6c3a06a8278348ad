#include "logging/mllog_parser.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>

#include "fmt/format.h"

namespace mlperf::mllog {
namespace {

constexpr std::string_view kToken = ":::MLLOG ";
constexpr size_t kChunkBytes = 4 << 20;

// str.isspace() for a latin-1 character, which is what str.strip() removes.
bool IsPythonSpace(unsigned char c) {
  return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f) || c == 0x85 ||
         c == 0xa0;
}

std::string ToLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// float(s) for a Python str: surrounding whitespace, a sign, digits with
// single underscores between them, inf/infinity/nan in any case.
std::optional<double> PythonFloatFromString(std::string_view s) {
  while (!s.empty() && IsPythonSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsPythonSpace(s.back())) s.remove_suffix(1);
  std::string clean;
  size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) clean += s[i++];
  const std::string word = ToLower(s.substr(i));
  if (word == "inf" || word == "infinity") return clean == "-" ? -HUGE_VAL : HUGE_VAL;
  if (word == "nan") return std::nan("");
  auto digit = [&](size_t k) { return k < s.size() && s[k] >= '0' && s[k] <= '9'; };
  auto digits = [&] {
    size_t n = 0;
    while (digit(i)) {
      clean += s[i++];
      ++n;
      if (i < s.size() && s[i] == '_' && digit(i + 1)) ++i;
    }
    return n;
  };
  size_t mantissa_digits = digits();
  if (i < s.size() && s[i] == '.') {
    clean += s[i++];
    mantissa_digits += digits();
  }
  if (mantissa_digits == 0) return std::nullopt;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    clean += s[i++];
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) clean += s[i++];
    if (digits() == 0) return std::nullopt;
  }
  if (i != s.size()) return std::nullopt;
  return std::strtod(clean.c_str(), nullptr);
}

std::string_view TypeName(const json::Value& v) {
  switch (v.type()) {
    case json::Type::kNull:
      return "null";
    case json::Type::kBool:
      return "a boolean";
    case json::Type::kInt:
      return "an integer";
    case json::Type::kFloat:
      return "a float";
    case json::Type::kString:
      return "a string";
    case json::Type::kArray:
      return "a list";
    case json::Type::kObject:
      return "an object";
  }
  return "?";
}

// Turns one file line into a LogLine or a diagnostic, as the official parser
// would: see OfficialOutcome for what it does with each problem.
class LineParser {
 public:
  explicit LineParser(ParsedLog& log) : log_(log) {}

  // `line` holds the text after the last token; `token_column` is the 0-based
  // byte offset of that token in the file line.
  void Parse(std::string_view rest, int64_t file_line, size_t token_column, bool file_ended) {
    const int64_t index = log_.mllog_line_count++;
    while (!rest.empty() && IsPythonSpace(rest.back())) rest.remove_suffix(1);
    const size_t json_column = token_column + kToken.size();

    json::ParseNotes notes;
    auto parsed = json::Parse(rest, {.encoding = json::Encoding::kLatin1}, &notes);
    if (!parsed.ok()) {
      std::string reason = fmt::format("malformed JSON: {}", std::string(parsed.status().message()));
      ShiftColumn(reason, json_column);
      if (file_ended) reason += "; the file ends inside this line";
      Report(file_line, index, Problem::kMalformedJson, OfficialOutcome::kSkipped, reason);
      return;
    }
    json::Value& m = *parsed;
    if (!m.is_object()) {
      Report(file_line, index, Problem::kNotAnObject, OfficialOutcome::kCrash,
             fmt::format("the JSON after :::MLLOG is {}, not an object", TypeName(m)));
      return;
    }
    LogLine line;
    line.index = index;
    line.file_line = file_line;
    const json::Value* time_ms = m.Find("time_ms");
    if (time_ms == nullptr) return MissingField(file_line, index, "time_ms");
    if (!TimestampOf(*time_ms, file_line, index, line.time_ms)) return;
    const json::Value* key = m.Find("key");
    if (key == nullptr) return MissingField(file_line, index, "key");
    if (key->is_string()) {
      line.key = key->as_string();
    } else if (key->is_array() || key->is_object()) {
      Report(file_line, index, Problem::kBadKey, OfficialOutcome::kCrash,
             fmt::format("\"key\" is {}; it must be a string", TypeName(*key)));
      return;
    } else {
      line.key = json::Dump(*key);
      line.key_is_string = false;
    }
    const json::Value* value = m.Find("value");
    if (value == nullptr) return MissingField(file_line, index, "value");
    const json::Value* metadata = m.Find("metadata");
    if (metadata == nullptr) return MissingField(file_line, index, "metadata");
    line.value = *value;
    line.metadata = *metadata;
    line.text = fmt::format("{}{}", kToken, rest);

    if (notes.non_finite) {
      Report(file_line, index, Problem::kNonFiniteNumber, OfficialOutcome::kKept,
             "NaN or Infinity in the line (not standard JSON; the official parser accepts it)");
    }
    if (notes.big_int) {
      Report(file_line, index, Problem::kBigInteger, OfficialOutcome::kKept,
             "an integer outside the 64-bit range (compared as a float here)");
    }
    if (notes.invalid_utf8) {
      Report(file_line, index, Problem::kInvalidUtf8, OfficialOutcome::kKept,
             "bytes that are not valid UTF-8 inside a string (read as latin-1)");
    }
    log_.lines.push_back(std::move(line));
  }

 private:
  void Report(int64_t file_line, int64_t index, Problem problem, OfficialOutcome outcome,
              std::string reason) {
    log_.diagnostics.push_back({file_line, index, problem, outcome, std::move(reason)});
  }

  void MissingField(int64_t file_line, int64_t index, std::string_view field) {
    Report(file_line, index, Problem::kMissingField, OfficialOutcome::kCrash,
           fmt::format("the field \"{}\" is missing", field));
  }

  // float(time_ms): numbers and booleans convert, strings are parsed (a bad
  // one is a parse error), anything else stops the official tool.
  bool TimestampOf(const json::Value& t, int64_t file_line, int64_t index, double& out) {
    if (t.is_number() || t.is_bool()) {
      out = t.as_float();
      if (t.is_big_int() && std::isinf(out)) {
        Report(file_line, index, Problem::kBadTimestamp, OfficialOutcome::kCrash,
               "time_ms is an integer too large for a float");
        return false;
      }
      return true;
    }
    if (t.is_string()) {
      if (auto d = PythonFloatFromString(t.as_string())) {
        out = *d;
        return true;
      }
      Report(file_line, index, Problem::kBadTimestamp, OfficialOutcome::kSkipped,
             fmt::format("time_ms is the string {}, not a number", json::Dump(t)));
      return false;
    }
    Report(file_line, index, Problem::kBadTimestamp, OfficialOutcome::kCrash,
           fmt::format("time_ms is {}, not a number", TypeName(t)));
    return false;
  }

  // JSON errors count columns from the start of the JSON; people count from
  // the start of the line.
  static void ShiftColumn(std::string& reason, size_t offset) {
    const std::string_view marker = "at column ";
    const size_t at = reason.find(marker);
    if (at == std::string::npos) return;
    const size_t begin = at + marker.size();
    size_t end = begin;
    while (end < reason.size() && reason[end] >= '0' && reason[end] <= '9') ++end;
    const size_t column = std::stoul(reason.substr(begin, end - begin)) + offset;
    reason.replace(begin, end - begin, std::to_string(column));
  }

  ParsedLog& log_;
};

// Splits text into lines the way Python's universal-newline reading does
// (\n, \r\n and \r all end a line) and keeps, for each line, only what follows
// its last ":::MLLOG " token, so a huge line without one costs no memory.
class LineSplitter {
 public:
  explicit LineSplitter(ParsedLog& log) : parser_(log) {}

  void Feed(std::string_view chunk) {
    size_t i = 0;
    while (i < chunk.size()) {
      if (pending_cr_) {
        pending_cr_ = false;
        if (chunk[i] == '\n') {
          ++i;
          continue;
        }
      }
      const char* start = chunk.data() + i;
      const size_t n = chunk.size() - i;
      const char* nl = static_cast<const char*>(std::memchr(start, '\n', n));
      const char* cr = static_cast<const char*>(std::memchr(start, '\r', nl ? nl - start : n));
      const char* end = cr ? cr : nl;
      if (end == nullptr) {
        Append(std::string_view(start, n));
        return;
      }
      Append(std::string_view(start, end - start));
      EndLine(false);
      i = (end - chunk.data()) + 1;
      if (*end == '\r') pending_cr_ = true;
    }
  }

  void Finish() {
    if (!partial_.empty() || line_length_ > 0) EndLine(true);
  }

 private:
  void Append(std::string_view piece) {
    // A token may straddle two pieces, so the search starts a token's length
    // back; earlier text was searched already.
    const size_t overlap = kToken.size() - 1;
    const size_t search_from = partial_.size() > overlap ? partial_.size() - overlap : 0;
    const size_t base = line_length_ - partial_.size();  // line offset of partial_[0]
    partial_.append(piece);
    line_length_ += piece.size();
    const size_t found = std::string_view(partial_).substr(search_from).rfind(kToken);
    if (found != std::string::npos) {
      const size_t at = search_from + found;
      has_token_ = true;
      token_column_ = base + at;
      partial_.erase(0, at + kToken.size());
      return;
    }
    if (!has_token_ && partial_.size() > overlap) partial_.erase(0, partial_.size() - overlap);
  }

  void EndLine(bool file_ended) {
    ++file_line_;
    if (has_token_) {
      parser_.Parse(partial_, file_line_, token_column_, file_ended);
    }
    partial_.clear();
    line_length_ = 0;
    has_token_ = false;
  }

  LineParser parser_;
  std::string partial_;  // the line's tail: after its last token, or the last bytes before one
  size_t line_length_ = 0;
  size_t token_column_ = 0;
  bool has_token_ = false;
  bool pending_cr_ = false;
  int64_t file_line_ = 0;
};

void FinishLog(ParsedLog& log) {
  if (log.mllog_line_count == 0) {
    log.diagnostics.push_back({0, -1, Problem::kNoMllogLines, OfficialOutcome::kKept,
                               log.bytes == 0 ? "the file is empty"
                                              : "the file has no \":::MLLOG \" line"});
  }
}

}  // namespace

bool ParsedLog::official_crash() const {
  for (const auto& d : diagnostics) {
    if (d.outcome == OfficialOutcome::kCrash) return true;
  }
  return false;
}

bool ParsedLog::official_parse_error() const {
  for (const auto& d : diagnostics) {
    if (d.outcome == OfficialOutcome::kSkipped) return true;
  }
  return false;
}

std::string FormatDiagnostic(const ParsedLog& log, const Diagnostic& d) {
  if (d.index < 0) return fmt::format("{}: {}", log.path, d.reason);
  return fmt::format("{}:{}: [MLLOG line {}] {}", log.path, d.file_line, d.index, d.reason);
}

ParsedLog ParseText(std::string_view text, std::string path) {
  ParsedLog log;
  log.path = std::move(path);
  log.bytes = static_cast<int64_t>(text.size());
  LineSplitter splitter(log);
  splitter.Feed(text);
  splitter.Finish();
  FinishLog(log);
  return log;
}

absl::StatusOr<ParsedLog> ParseFile(const std::string& path) {
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) {
    return absl::NotFoundError(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  }
  ParsedLog log;
  log.path = path;
  LineSplitter splitter(log);
  std::string buffer(kChunkBytes, '\0');
  while (true) {
    const size_t n = std::fread(buffer.data(), 1, buffer.size(), file.get());
    if (n > 0) {
      splitter.Feed(std::string_view(buffer.data(), n));
      log.bytes += static_cast<int64_t>(n);
    }
    if (n < buffer.size()) {
      if (std::ferror(file.get())) {
        return absl::DataLossError(fmt::format("{}: read error: {}", path, std::strerror(errno)));
      }
      break;
    }
  }
  splitter.Finish();
  FinishLog(log);
  return log;
}

}  // namespace mlperf::mllog
