#include "logging/mllog_parser.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"

namespace mlperf::mllog {
namespace {

std::string Line(std::string_view key, std::string_view value = "null",
                 std::string_view metadata = R"({"file": "f.py", "lineno": 1})") {
  return std::string(
             R"(:::MLLOG {"namespace": "", "time_ms": 1000, "event_type": "POINT_IN_TIME", "key": ")") +
         std::string(key) + R"(", "value": )" + std::string(value) + R"(, "metadata": )" +
         std::string(metadata) + "}";
}

const Diagnostic* Only(const ParsedLog& log, Problem problem) {
  const Diagnostic* found = nullptr;
  for (const auto& d : log.diagnostics) {
    if (d.problem == problem) {
      EXPECT_EQ(found, nullptr) << "more than one diagnostic of this kind";
      found = &d;
    }
  }
  EXPECT_NE(found, nullptr);
  return found;
}

TEST(Parser, KeepsOnlyMllogLinesAndNumbersThemFromZero) {
  const std::string text =
      "garbage\n" + Line("a", "1") + "\nmore garbage\n[1,0]<stdout>:" + Line("b", "2.5") + "\n";
  ParsedLog log = ParseText(text, "t.txt");
  ASSERT_EQ(log.lines.size(), 2u);
  EXPECT_EQ(log.lines[0].index, 0);
  EXPECT_EQ(log.lines[0].file_line, 2);
  EXPECT_EQ(log.lines[1].index, 1);
  EXPECT_EQ(log.lines[1].file_line, 4);
  EXPECT_EQ(log.lines[1].key, "b");
  EXPECT_DOUBLE_EQ(log.lines[1].value.as_float(), 2.5);
  EXPECT_EQ(log.lines[1].text.rfind(":::MLLOG {", 0), 0u);  // prefix garbage removed
  EXPECT_EQ(log.lines[0].time_ms, 1000.0);
  EXPECT_TRUE(log.diagnostics.empty());
}

TEST(Parser, UsesTheTextAfterTheLastToken) {
  ParsedLog log = ParseText(":::MLLOG broken :::MLLOG " + Line("k").substr(9) + "\n", "t");
  ASSERT_EQ(log.lines.size(), 1u);
  EXPECT_EQ(log.lines[0].key, "k");
}

TEST(Parser, UniversalNewlines) {
  ParsedLog log = ParseText(Line("a") + "\r\n" + Line("b") + "\r" + Line("c"), "t");
  ASSERT_EQ(log.lines.size(), 3u);
  EXPECT_EQ(log.lines[2].file_line, 3);
  EXPECT_EQ(log.lines[2].key, "c");
}

TEST(Parser, MalformedLineIsSkippedAndCountedAndParsingGoesOn) {
  ParsedLog log = ParseText(Line("a") + "\n:::MLLOG {\"key\": \n" + Line("b") + "\n", "t.txt");
  ASSERT_EQ(log.lines.size(), 2u);
  EXPECT_EQ(log.lines[1].index, 2);
  EXPECT_EQ(log.mllog_line_count, 3);
  const Diagnostic* d = Only(log, Problem::kMalformedJson);
  EXPECT_EQ(d->outcome, OfficialOutcome::kSkipped);
  EXPECT_EQ(d->file_line, 2);
  EXPECT_EQ(d->index, 1);
  EXPECT_EQ(FormatDiagnostic(log, *d),
            "t.txt:2: [MLLOG line 1] malformed JSON: expected a value at column 17 (the line "
            "ends early)");
  EXPECT_TRUE(log.official_parse_error());
  EXPECT_FALSE(log.official_crash());
}

TEST(Parser, TruncatedLastLineIsNamed) {
  const std::string full = Line("a");
  ParsedLog log = ParseText(full.substr(0, full.size() - 10), "t");
  const Diagnostic* d = Only(log, Problem::kMalformedJson);
  EXPECT_NE(d->reason.find("the file ends inside this line"), std::string::npos) << d->reason;
}

TEST(Parser, MissingFieldsAreWhatTheOfficialToolCrashesOn) {
  for (const char* field : {"time_ms", "key", "value", "metadata"}) {
    std::string line = Line("a");
    const std::string name = std::string("\"") + field + "\": ";
    const size_t at = line.find(name);
    ASSERT_NE(at, std::string::npos);
    line.replace(at, name.size(), "\"other_" + std::string(field) + "\": ");
    ParsedLog log = ParseText(line, "t");
    const Diagnostic* d = Only(log, Problem::kMissingField);
    EXPECT_EQ(d->outcome, OfficialOutcome::kCrash);
    EXPECT_NE(d->reason.find(field), std::string::npos);
    EXPECT_TRUE(log.official_crash());
    EXPECT_TRUE(log.lines.empty());
  }
}

TEST(Parser, TimestampsConvertLikePythonFloat) {
  auto with_time = [](std::string_view t) {
    std::string line = Line("a");
    line.replace(line.find("1000"), 4, t);
    return ParseText(line, "t");
  };
  EXPECT_EQ(with_time("\" 1_000.5 \"").lines.at(0).time_ms, 1000.5);
  EXPECT_EQ(with_time("true").lines.at(0).time_ms, 1.0);
  EXPECT_EQ(Only(with_time("\"1.2.3\""), Problem::kBadTimestamp)->outcome,
            OfficialOutcome::kSkipped);
  EXPECT_EQ(Only(with_time("null"), Problem::kBadTimestamp)->outcome, OfficialOutcome::kCrash);
  EXPECT_EQ(with_time("\"\\u0661\\u0662\"").lines.at(0).time_ms, 12.0);   // Arabic-Indic digits
  EXPECT_EQ(with_time("\"\\u2003 7\\u00a0\"").lines.at(0).time_ms, 7.0);  // Unicode spaces
  EXPECT_EQ(Only(with_time("\"\\u00bd\""), Problem::kBadTimestamp)->outcome,
            OfficialOutcome::kSkipped);  // a fraction is no decimal digit
  EXPECT_EQ(Only(with_time("[1]"), Problem::kBadTimestamp)->outcome, OfficialOutcome::kCrash);
}

TEST(Parser, OddButAcceptedValuesAreNoted) {
  ParsedLog log = ParseText(Line("a", "NaN") + "\n" + Line("b", "99999999999999999999") + "\n" +
                                Line("c", "\"caf\xe9\"") + "\n",
                            "t");
  EXPECT_EQ(log.lines.size(), 3u);
  EXPECT_EQ(Only(log, Problem::kNonFiniteNumber)->outcome, OfficialOutcome::kKept);
  EXPECT_EQ(Only(log, Problem::kBigInteger)->file_line, 2);
  EXPECT_EQ(Only(log, Problem::kInvalidUtf8)->file_line, 3);
}

TEST(Parser, NonObjectsAndUnhashableKeys) {
  EXPECT_EQ(Only(ParseText(":::MLLOG [1, 2]", "t"), Problem::kNotAnObject)->outcome,
            OfficialOutcome::kCrash);
  std::string line = Line("a");
  line.replace(line.find("\"a\""), 3, "[1]");
  EXPECT_EQ(Only(ParseText(line, "t"), Problem::kBadKey)->outcome, OfficialOutcome::kKept);
  line = Line("a");
  line.replace(line.find("\"a\""), 3, "7");
  ParsedLog log = ParseText(line, "t");
  ASSERT_EQ(log.lines.size(), 1u);
  EXPECT_FALSE(log.lines[0].key_is_string);
}

TEST(Parser, EmptyAndTokenFreeFiles) {
  EXPECT_EQ(Only(ParseText("", "t"), Problem::kNoMllogLines)->reason, "the file is empty");
  ParsedLog log = ParseText("hello\n:::MLLOG\n", "t");  // no token: it needs its space
  EXPECT_EQ(log.mllog_line_count, 0);
  EXPECT_NE(Only(log, Problem::kNoMllogLines), nullptr);
  // A token followed only by whitespace is a line the official parser rejects.
  EXPECT_EQ(Only(ParseText(":::MLLOG   \n", "t"), Problem::kMalformedJson)->outcome,
            OfficialOutcome::kSkipped);
}

TEST(ParseFile, MissingFileIsAnError) {
  auto log = ParseFile("/nonexistent/result_0.txt");
  ASSERT_FALSE(log.ok());
  EXPECT_NE(log.status().message().find("/nonexistent/result_0.txt: cannot open"),
            std::string::npos);
}

// A line far longer than the read chunk, with a token near its end, and a
// token split across two chunks: the file reader must see both.
TEST(ParseFile, LongLinesAndTokensAcrossChunks) {
  const auto path = std::filesystem::temp_directory_path() / "mllog_parser_long.txt";
  {
    std::ofstream out(path, std::ios::binary);
    out << std::string((4 << 20) - 3, 'x') << Line("split") << "\n";
    out << std::string(9 << 20, 'y') << "\n";
    out << Line("last") << "\n";
  }
  auto log = ParseFile(path.string());
  std::filesystem::remove(path);
  ASSERT_TRUE(log.ok());
  ASSERT_EQ(log->lines.size(), 2u);
  EXPECT_EQ(log->lines[0].key, "split");
  EXPECT_EQ(log->lines[1].key, "last");
  EXPECT_EQ(log->lines[1].file_line, 3);
  EXPECT_TRUE(log->diagnostics.empty());
}

}  // namespace
}  // namespace mlperf::mllog
