#include "logging/mllog_parser.h"

#include <algorithm>
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

// str.isspace() for a latin-1 character, which is what str.strip() removes
// from a line read as latin-1.
bool IsPythonSpace(unsigned char c) {
  return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f) || c == 0x85 || c == 0xa0;
}

// str.isspace() for any code point (Unicode 14, as in Python 3.11).
bool IsPythonSpace(uint32_t cp) {
  if (cp < 0x100) return IsPythonSpace(static_cast<unsigned char>(cp));
  return cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 || cp == 0x2029 ||
         cp == 0x202f || cp == 0x205f || cp == 0x3000;
}

// The digit zero of every run of Unicode decimal digits (category Nd; each
// run is ten consecutive code points), which Python's float() accepts.
constexpr uint32_t kDecimalZeros[] = {
    0x30,    0x660,   0x6f0,   0x7c0,   0x966,   0x9e6,   0xa66,   0xae6,   0xb66,   0xbe6,
    0xc66,   0xce6,   0xd66,   0xde6,   0xe50,   0xed0,   0xf20,   0x1040,  0x1090,  0x17e0,
    0x1810,  0x1946,  0x19d0,  0x1a80,  0x1a90,  0x1b50,  0x1bb0,  0x1c40,  0x1c50,  0xa620,
    0xa8d0,  0xa900,  0xa9d0,  0xa9f0,  0xaa50,  0xabf0,  0xff10,  0x104a0, 0x10d30, 0x11066,
    0x110f0, 0x11136, 0x111d0, 0x112f0, 0x11450, 0x114d0, 0x11650, 0x116c0, 0x11730, 0x118e0,
    0x11950, 0x11c50, 0x11d50, 0x11da0, 0x16a60, 0x16ac0, 0x16b50, 0x1d7ce, 0x1d7d8, 0x1d7e2,
    0x1d7ec, 0x1d7f6, 0x1e140, 0x1e2f0, 0x1e950, 0x1fbf0};

// Python's float() first turns Unicode whitespace into spaces and Unicode
// decimal digits into ASCII ones; any other non-ASCII character fails it.
std::optional<std::string> AsciiForFloat(std::string_view utf8) {
  std::string out;
  for (size_t i = 0; i < utf8.size();) {
    const uint32_t cp = json::NextCodePoint(utf8, i);
    if (IsPythonSpace(cp)) {
      out += ' ';
    } else if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else {
      const auto* run = std::find_if(std::begin(kDecimalZeros), std::end(kDecimalZeros),
                                     [&](uint32_t zero) { return cp >= zero && cp < zero + 10; });
      if (run == std::end(kDecimalZeros)) return std::nullopt;
      out += static_cast<char>('0' + (cp - *run));
    }
  }
  return out;
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
std::optional<double> PythonFloatFromString(std::string_view utf8) {
  const std::optional<std::string> ascii = AsciiForFloat(utf8);
  if (!ascii) return std::nullopt;
  std::string_view s = *ascii;
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
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
    while (!rest.empty() && IsPythonSpace(static_cast<unsigned char>(rest.back())))
      rest.remove_suffix(1);
    const size_t json_column = token_column + kToken.size();

    json::ParseNotes notes;
    auto parsed = json::Parse(rest, {.encoding = json::Encoding::kLatin1}, &notes);
    if (!parsed.ok()) {
      std::string reason =
          fmt::format("malformed JSON: {}", std::string(parsed.status().message()));
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
    } else {
      if (key->is_array() || key->is_object()) {
        Report(file_line, index, Problem::kBadKey, OfficialOutcome::kKept,
               fmt::format("\"key\" is {}, so no rule can match this line", TypeName(*key)));
      }
      line.key = json::Dump(*key);
      line.key_is_string = false;
    }
    const json::Value* value = m.Find("value");
    if (value == nullptr) return MissingField(file_line, index, "value");
    const json::Value* metadata = m.Find("metadata");
    if (metadata == nullptr) return MissingField(file_line, index, "metadata");
    // The parsed line is ours alone: move its value and metadata out.
    for (auto& [name, member] : m.as_object()) {
      if (name == "value") line.value = std::move(member);
      if (name == "metadata") line.metadata = std::move(member);
    }
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
      if (line_length_ == 0) {
        WholeLine(std::string_view(start, end - start));  // no copy for the common case
      } else {
        Append(std::string_view(start, end - start));
        EndLine(false);
      }
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

  void WholeLine(std::string_view line) {
    ++file_line_;
    const size_t at = line.rfind(kToken);
    if (at != std::string_view::npos) {
      parser_.Parse(line.substr(at + kToken.size()), file_line_, at, false);
    }
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
    log.diagnostics.push_back(
        {0, -1, Problem::kNoMllogLines, OfficialOutcome::kKept,
         log.bytes == 0 ? "the file is empty" : "the file has no \":::MLLOG \" line"});
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
  const std::unique_ptr<char[]> buffer(new char[kChunkBytes]);  // uninitialised on purpose
  while (true) {
    const size_t n = std::fread(buffer.get(), 1, kChunkBytes, file.get());
    if (n > 0) {
      splitter.Feed(std::string_view(buffer.get(), n));
      log.bytes += static_cast<int64_t>(n);
    }
    if (n < kChunkBytes) {
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
