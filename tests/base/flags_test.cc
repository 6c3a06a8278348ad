// base::ParseFlags and FlagsHelp: every accepted spelling and every usage error.
#include "base/flags.h"

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "gtest/gtest.h"

ABSL_FLAG(std::string, test_name, "default name", "a string flag");
ABSL_FLAG(int, test_count, 3, "an int flag");
ABSL_FLAG(bool, test_verbose, false, "a bool flag");
ABSL_FLAG(std::string, test_empty, "", "a flag without a default");
ABSL_FLAG(int64_t, test_not_listed, 0, "defined but not one of the tool's flags");

namespace mlperf::base {
namespace {

constexpr std::string_view kNames[] = {"test_name", "test-count", "test_verbose", "test_empty"};

// Owns the argv strings; resets every flag so that tests do not see each other's values.
absl::StatusOr<ParsedArgs> Parse(std::initializer_list<const char*> args,
                                 bool allow_positional = true) {
  absl::SetFlag(&FLAGS_test_name, "default name");
  absl::SetFlag(&FLAGS_test_count, 3);
  absl::SetFlag(&FLAGS_test_verbose, false);
  absl::SetFlag(&FLAGS_test_empty, "");
  std::vector<std::string> storage = {"tool"};
  storage.insert(storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& s : storage) argv.push_back(s.data());
  return ParseFlags(static_cast<int>(argv.size()), argv.data(), kNames, allow_positional);
}

std::string Error(std::initializer_list<const char*> args, bool allow_positional = true) {
  absl::StatusOr<ParsedArgs> p = Parse(args, allow_positional);
  EXPECT_FALSE(p.ok());
  return p.ok() ? "" : std::string(p.status().message());
}

TEST(ParseFlags, ValueSpellings) {
  ASSERT_TRUE(Parse({"--test_name=a"}).ok());
  EXPECT_EQ(absl::GetFlag(FLAGS_test_name), "a");
  ASSERT_TRUE(Parse({"--test_name", "b"}).ok());
  EXPECT_EQ(absl::GetFlag(FLAGS_test_name), "b");
  ASSERT_TRUE(Parse({"-test_name", "c"}).ok());
  EXPECT_EQ(absl::GetFlag(FLAGS_test_name), "c");
  ASSERT_TRUE(Parse({"-test-name=d"}).ok());
  EXPECT_EQ(absl::GetFlag(FLAGS_test_name), "d");
  ASSERT_TRUE(Parse({"--test_name="}).ok());
  EXPECT_EQ(absl::GetFlag(FLAGS_test_name), "");
  // The next argument is the value even when it looks like a flag.
  ASSERT_TRUE(Parse({"--test-count", "-5"}).ok());
  EXPECT_EQ(absl::GetFlag(FLAGS_test_count), -5);
}

TEST(ParseFlags, HelpAndVersionAreSeenNotSet) {
  absl::StatusOr<ParsedArgs> p = Parse({"--version"});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE(p->version);
  EXPECT_FALSE(p->help);
  p = Parse({"-h", "--test_count=4"});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE(p->help);
  EXPECT_FALSE(p->version);
  EXPECT_EQ(absl::GetFlag(FLAGS_test_count), 4);
}

TEST(ParseFlags, DashesAndUnderscoresAreTheSame) {
  ASSERT_TRUE(Parse({"--test-count=7"}).ok());
  EXPECT_EQ(absl::GetFlag(FLAGS_test_count), 7);
  ASSERT_TRUE(Parse({"--test_count=8"}).ok());
  EXPECT_EQ(absl::GetFlag(FLAGS_test_count), 8);
}

TEST(ParseFlags, BoolSpellings) {
  ASSERT_TRUE(Parse({"--test_verbose"}).ok());
  EXPECT_TRUE(absl::GetFlag(FLAGS_test_verbose));
  ASSERT_TRUE(Parse({"--test-verbose", "--notest-verbose"}).ok());
  EXPECT_FALSE(absl::GetFlag(FLAGS_test_verbose));
  ASSERT_TRUE(Parse({"--test_verbose=true"}).ok());
  EXPECT_TRUE(absl::GetFlag(FLAGS_test_verbose));
  ASSERT_TRUE(Parse({"-test_verbose=false"}).ok());
  EXPECT_FALSE(absl::GetFlag(FLAGS_test_verbose));
  // A bool flag never takes the next argument as its value.
  absl::StatusOr<ParsedArgs> p = Parse({"--test_verbose", "false"});
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(absl::GetFlag(FLAGS_test_verbose));
  EXPECT_EQ(p->positional, std::vector<std::string>{"false"});
}

TEST(ParseFlags, PositionalAndDoubleDash) {
  absl::StatusOr<ParsedArgs> p = Parse({"a.txt", "--test_count=1", "-", "--", "--test_name", "b"});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->positional, (std::vector<std::string>{"a.txt", "-", "--test_name", "b"}));
  EXPECT_EQ(absl::GetFlag(FLAGS_test_name), "default name");
  EXPECT_EQ(Error({"--test_count=1", "x"}, false), "unexpected argument 'x' (see --help)");
  EXPECT_EQ(Error({"--", "--x"}, false), "unexpected argument '--x' (see --help)");
}

TEST(ParseFlags, HelpSpellings) {
  for (const char* h : {"-h", "--help", "-help", "--helpfull"}) {
    absl::StatusOr<ParsedArgs> p = Parse({"--test_count=2", h});
    ASSERT_TRUE(p.ok()) << h;
    EXPECT_TRUE(p->help) << h;
  }
  EXPECT_FALSE(Parse({}).value().help);
}

TEST(ParseFlags, GivenListsEachFlagOnceByItsName) {
  absl::StatusOr<ParsedArgs> p =
      Parse({"--test-count=1", "--notest_verbose", "--test_count", "2", "x"});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->given, (std::vector<std::string>{"test_count", "test_verbose"}));
  EXPECT_TRUE(Parse({"x"}).value().given.empty());
}

TEST(ParseFlags, UsageErrorsAreOneLine) {
  EXPECT_EQ(Error({"--frobnicate"}), "unknown flag '--frobnicate' (see --help)");
  EXPECT_EQ(Error({"--frobnicate=3"}), "unknown flag '--frobnicate' (see --help)");
  // Defined in the binary but not one of this tool's flags.
  EXPECT_EQ(Error({"--test_not_listed=1"}), "unknown flag '--test_not_listed' (see --help)");
  // --no only negates bool flags, and never with a value.
  EXPECT_EQ(Error({"--notest_count"}), "unknown flag '--notest_count' (see --help)");
  EXPECT_EQ(Error({"--notest_verbose=true"}), "unknown flag '--notest_verbose' (see --help)");
  EXPECT_EQ(Error({"--test_name"}), "flag '--test_name' needs a value");
  const std::string bad = Error({"--test-count=abc"});
  EXPECT_EQ(bad.rfind("flag '--test-count': ", 0), 0u) << bad;
  EXPECT_GT(bad.size(), std::string("flag '--test-count': ").size());
  EXPECT_EQ(Error({"--test_verbose=maybe"}).rfind("flag '--test_verbose': ", 0), 0u);
}

TEST(FlagsHelp, OneLinePerFlagInOrder) {
  EXPECT_EQ(FlagsHelp(kNames),
            "  --test_name    a string flag (default: default name)\n"
            "  --test-count   an int flag (default: 3)\n"
            "  --test_verbose a bool flag (default: false)\n"
            "  --test_empty   a flag without a default (default: none)\n");
}

}  // namespace
}  // namespace mlperf::base
