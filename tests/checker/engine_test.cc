// The rule engine, one behaviour of the official checker per test, on small
// hand-written rule files and logs.
#include "checker/engine.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace mlperf::checker {
namespace {

RuleLibrary Library(std::vector<RuleSource> sources) {
  absl::StatusOr<RuleLibrary> lib = RuleLibrary::FromSources(sources);
  EXPECT_TRUE(lib.ok()) << lib.status();
  return lib.ok() ? *std::move(lib) : RuleLibrary();
}

// One rule file as the ruleset's entry point.
RuleLibrary Common(const std::string& text) {
  return Library({{"training/9.0.0/common.rules", text}});
}

std::string Line(const std::string& key, const std::string& value,
                 const std::string& metadata = "{}", double time_ms = 0) {
  return absl::StrCat(":::MLLOG {\"namespace\": \"\", \"time_ms\": ", time_ms, ", \"key\": \"", key,
                      "\", \"value\": ", value, ", \"metadata\": ", metadata, "}\n");
}

LogReport Check(const std::string& log, const RuleLibrary& lib, CheckOptions options = {}) {
  return CheckLog(mllog::ParseText(log, "test.txt"), lib, "9.0.0", options);
}

bool HasError(const LogReport& r, const std::string& needle) {
  for (const Finding& f : r.errors) {
    if (f.message.find(needle) != std::string::npos) return true;
  }
  return false;
}

std::string Dump(const LogReport& r) {
  std::string out;
  for (const Finding& f : r.errors)
    absl::StrAppend(&out, "E ", f.key, " ", f.line, ": ", f.message, "\n");
  for (const Finding& f : r.warnings) absl::StrAppend(&out, "W ", f.key, ": ", f.message, "\n");
  return out;
}

TEST(EngineTest, ExactlyOne) {
  RuleLibrary lib = Common("key a exactly_one\nkey z\n");
  EXPECT_TRUE(Check(Line("a", "1"), lib).compliant());
  LogReport missing = Check(Line("z", "1"), lib);
  EXPECT_FALSE(missing.compliant());
  EXPECT_TRUE(HasError(missing, "found none")) << Dump(missing);
  // Identical duplicates (1 == 1.0 in Python) are only a warning...
  LogReport dup = Check(Line("a", "1") + Line("a", "1.0"), lib);
  EXPECT_TRUE(dup.compliant()) << Dump(dup);
  ASSERT_EQ(dup.warnings.size(), 1u);
  EXPECT_EQ(dup.warnings[0].key, "a");
  // ...unless warnings are errors.
  CheckOptions werror;
  werror.werror = true;
  EXPECT_FALSE(Check(Line("a", "1") + Line("a", "1"), lib, werror).compliant());
  LogReport differ = Check(Line("a", "1") + Line("a", "2"), lib);
  EXPECT_FALSE(differ.compliant());
  EXPECT_TRUE(HasError(differ, "different values: [1, 2]")) << Dump(differ);
}

TEST(EngineTest, AtLeastOneAndAtLeastN) {
  RuleLibrary lib = Common("key a at_least_one\nkey b at_least(2)\n");
  EXPECT_TRUE(
      Check(Line("a", "1") + Line("a", "2") + Line("b", "0") + Line("b", "0"), lib).compliant());
  LogReport r = Check(Line("b", "0"), lib);
  EXPECT_TRUE(HasError(r, "expected at least one line")) << Dump(r);
  EXPECT_TRUE(HasError(r, "expected at least 2 lines with this key, found 1")) << Dump(r);
}

TEST(EngineTest, OneOfGroups) {
  RuleLibrary lib =
      Common("key block_start one_of(epoch_start)\nkey epoch_start one_of(block_start)\nkey z\n");
  EXPECT_TRUE(Check(Line("epoch_start", "1"), lib).compliant());
  EXPECT_TRUE(Check(Line("block_start", "1"), lib).compliant());
  LogReport none = Check(Line("z", "1"), lib);
  ASSERT_EQ(none.errors.size(), 1u) << Dump(none);  // the group is reported once
  EXPECT_TRUE(HasError(none, "'block_start', 'epoch_start'"));
}

TEST(EngineTest, OptionalKeysAreCheckedWhenPresent) {
  RuleLibrary lib = Common("key p optional\n  check is_integer(v)\nkey z\n");
  EXPECT_TRUE(Check(Line("z", "1"), lib).compliant());
  EXPECT_TRUE(Check(Line("p", "4"), lib).compliant());
  EXPECT_FALSE(Check(Line("p", "4.5"), lib).compliant());
}

TEST(EngineTest, LastKeyedMessageWinsAndUnkeyedAccumulate) {
  RuleLibrary lib =
      Common("key a\n  check v < 1\nkey b one_of(c)\nkey c\nkey d one_of(e)\nkey e\n");
  LogReport r = Check(Line("a", "5") + Line("a", "7"), lib);
  ASSERT_EQ(r.errors.size(), 3u) << Dump(r);
  EXPECT_EQ(r.errors[0].key, "a");
  EXPECT_EQ(r.errors[0].line, 1);  // the second failing line replaced the first
  EXPECT_NE(r.errors[0].message.find("v = 7"), std::string::npos);
  EXPECT_TRUE(r.errors[1].key.empty());
  EXPECT_TRUE(r.errors[2].key.empty());
}

TEST(EngineTest, CheckErrorsArePythonExceptions) {
  RuleLibrary lib = Common("key a\n  check v >= 0.5\n");
  LogReport r = Check(Line("a", "\"0.9\""), lib);
  EXPECT_FALSE(r.compliant());
  EXPECT_TRUE(HasError(r, "could not be evaluated")) << Dump(r);
  EXPECT_TRUE(HasError(r, "TypeError")) << Dump(r);
}

TEST(EngineTest, LaterRuleFileSupersedesKeyedErrors) {
  RuleLibrary lib = Library({
      {"training/9.0.0/common.rules",
       "key x\n  check v == 1\nkey y\n  check v == 1\nkey go\n  chain next_{v}\nkey g "
       "one_of(h)\nkey h\n"},
      {"training/9.0.0/next_b.rules", "key x\n  check v == 2\n"},
  });
  // x fails the common rule but the benchmark file redefines x: the error is dropped.
  LogReport r = Check(Line("go", "\"b\"") + Line("x", "2") + Line("y", "1") + Line("h", "0"), lib);
  EXPECT_TRUE(r.compliant()) << Dump(r);
  // Keys the later file does not define keep their errors, and so do unkeyed errors.
  LogReport r2 = Check(Line("go", "\"b\"") + Line("x", "2") + Line("y", "3"), lib);
  EXPECT_FALSE(r2.compliant());
  ASSERT_EQ(r2.errors.size(), 2u) << Dump(r2);
  EXPECT_EQ(r2.errors[0].key, "y");
}

TEST(EngineTest, SubmissionKeysRunChecksAndActionsOnce) {
  RuleLibrary lib =
      Common("key submission_x\n  check v == 1\n  set s.n = 1\nkey other\n  check v == 1\n");
  EXPECT_TRUE(Check(Line("submission_x", "1") + Line("submission_x", "2"), lib).compliant());
  EXPECT_FALSE(Check(Line("other", "1") + Line("other", "2"), lib).compliant());
}

TEST(EngineTest, ActionsRunEvenWhenChecksFail) {
  RuleLibrary lib = Common("key a\n  check False\n  set s.seen = True\nkey b\n  check s.seen\n");
  LogReport r = Check(Line("a", "1") + Line("b", "1"), lib);
  ASSERT_EQ(r.errors.size(), 1u) << Dump(r);
  EXPECT_EQ(r.errors[0].key, "a");
}

TEST(EngineTest, FailingActionStopsTheRestOfTheBlock) {
  RuleLibrary lib = Library({
      {"training/9.0.0/common.rules", "state n = 0\nkey a\n  set s.n = 1 / v\n  chain missing\n"},
  });
  LogReport r = Check(Line("a", "0"), lib);
  ASSERT_EQ(r.errors.size(), 1u) << Dump(r);
  EXPECT_TRUE(HasError(r, "ZeroDivisionError")) << Dump(r);
  EXPECT_FALSE(HasError(r, "no rule file"));
}

TEST(EngineTest, ChainToMissingFileIsTheOfficialCrash) {
  RuleLibrary lib = Library({
      {"training/9.0.0/common.rules", "key d\n  chain {v}_common\nkey after\n  check False\n"},
      {"training/9.0.0/closed_common.rules", "key k\n"},
  });
  EXPECT_TRUE(Check(Line("d", "\"closed\""), lib).compliant());
  LogReport r = Check(Line("d", "\"bogus\""), lib);
  EXPECT_FALSE(r.compliant());
  EXPECT_TRUE(HasError(r, "no rule file 9.0.0/bogus_common")) << Dump(r);
  // A value with a path separator never names a rule file.
  EXPECT_FALSE(Check(Line("d", "\"x/../closed\""), lib).compliant());
}

TEST(EngineTest, ChainToAnotherRuleset) {
  RuleLibrary lib = Library({
      {"training/9.0.0/common.rules", "key opt\n  chain 8.0.0/opt_{v}\n"},
      {"training/8.0.0/opt_lars.rules", "key eps exactly_one\n  check v == 0.0\n"},
  });
  EXPECT_TRUE(Check(Line("opt", "\"lars\"") + Line("eps", "0"), lib).compliant());
  EXPECT_FALSE(Check(Line("opt", "\"lars\"") + Line("eps", "0.5"), lib).compliant());
}

TEST(EngineTest, TargetIsMetByAnyLine) {
  RuleLibrary lib =
      Common("key eval_accuracy at_least_one\n  target v >= 0.759 and v < 1.0\nkey z\n");
  EXPECT_TRUE(Check(Line("eval_accuracy", "0.5") + Line("eval_accuracy", "0.76") +
                        Line("eval_accuracy", "0.1"),
                    lib)
                  .compliant());
  LogReport low = Check(Line("eval_accuracy", "0.5") + Line("eval_accuracy", "0.75894"), lib);
  EXPECT_FALSE(low.compliant());
  ASSERT_EQ(low.errors.size(), 1u) << Dump(low);
  EXPECT_EQ(low.errors[0].key, "eval_accuracy");
  EXPECT_NE(low.errors[0].message.find("quality target not reached"), std::string::npos);
  EXPECT_NE(low.errors[0].message.find("0.75894"), std::string::npos);
  // No evaluation line at all: only the occurrence requirement fails.
  LogReport none = Check(Line("z", "1"), lib);
  ASSERT_EQ(none.errors.size(), 1u) << Dump(none);
  EXPECT_TRUE(HasError(none, "expected at least one line"));
}

TEST(EngineTest, TargetEvaluationErrorIsTheOfficialCrash) {
  RuleLibrary lib = Common("key eval_accuracy\n  target v >= 0.72\nkey z exactly_one\n");
  LogReport r =
      Check(Line("eval_accuracy", "0.8") + Line("eval_accuracy", "\"0.9\"") + Line("z", "1"), lib);
  EXPECT_FALSE(r.compliant());
  EXPECT_TRUE(HasError(r, "official checker crashes")) << Dump(r);
  EXPECT_EQ(r.errors.back().line, 1);
}

TEST(EngineTest, FirstCheckRunsOnTheFirstOccurrenceOnly) {
  RuleLibrary lib = Common("key e\n  first_check md.samples_count == 10\n");
  EXPECT_TRUE(
      Check(Line("e", "1", R"({"samples_count": 10})") + Line("e", "1", R"({"samples_count": 20})"),
            lib)
          .compliant());
  EXPECT_FALSE(
      Check(Line("e", "1", R"({"samples_count": 20})") + Line("e", "1", R"({"samples_count": 10})"),
            lib)
          .compliant());
}

TEST(EngineTest, ConditionalActionTracksCadence) {
  RuleLibrary lib = Common(
      "state next = 100\nkey e\n  check md.samples_count == s.next\n"
      "  set s.next += 50 when md.samples_count == s.next\n");
  auto eval = [](int samples) {
    return Line("e", "0.5", absl::StrCat(R"({"samples_count": )", samples, "}"));
  };
  EXPECT_TRUE(Check(eval(100) + eval(150) + eval(200), lib).compliant());
  LogReport skipped = Check(eval(100) + eval(200), lib);
  EXPECT_FALSE(skipped.compliant());
  EXPECT_NE(Dump(skipped).find("s.next = 150"), std::string::npos) << Dump(skipped);
}

TEST(EngineTest, GroupMetricsSynthesisesOneLinePerEvaluationPoint) {
  RuleLibrary lib = Common(
      "group_metrics eval_accuracy by samples_count into agg\n"
      "key agg at_least(2)\n  check 'FID' in v and 'CLIP' in v\n"
      "  target 0.0 <= v['FID'] <= 90.0 and 0.15 <= v['CLIP'] <= 1.0\n");
  auto metric = [](const char* name, double value, int samples, double ts) {
    return Line("eval_accuracy", absl::StrCat(value),
                absl::StrCat(R"({"metric": ")", name, R"(", "samples_count": )", samples, "}"), ts);
  };
  // FID and CLIP of one evaluation point meet the target together.
  EXPECT_TRUE(Check(metric("FID", 120, 1, 1) + metric("CLIP", 0.1, 1, 2) + metric("FID", 80, 2, 3) +
                        metric("CLIP", 0.2, 2, 4),
                    lib)
                  .compliant());
  // The target is never met by one point: FID at one point, CLIP at another.
  LogReport split = Check(metric("FID", 80, 1, 1) + metric("CLIP", 0.1, 1, 2) +
                              metric("FID", 120, 2.0, 3) + metric("CLIP", 0.2, 2, 4),
                          lib);
  EXPECT_FALSE(split.compliant()) << Dump(split);
  // 1 and 1.0 are the same point; only one group.
  LogReport one =
      Check(metric("FID", 80, 1, 1) +
                Line("eval_accuracy", "0.2", R"({"metric": "CLIP", "samples_count": 1.0})"),
            lib);
  EXPECT_TRUE(HasError(one, "expected at least 2 lines")) << Dump(one);
  // A metadata without the grouping field is the official crash.
  LogReport bad = Check(Line("eval_accuracy", "1", R"({"metric": "FID"})"), lib);
  EXPECT_TRUE(HasError(bad, "official checker crashes")) << Dump(bad);
}

TEST(EngineTest, EndCheck) {
  RuleLibrary lib = Common(
      "state tensors = []\nkey w\n  set s.tensors += [md.tensor]\n"
      "end_check sorted(s.tensors) == sorted(['a', 'b'])\n");
  EXPECT_TRUE(
      Check(Line("w", "null", R"({"tensor": "b"})") + Line("w", "null", R"({"tensor": "a"})"), lib)
          .compliant());
  EXPECT_FALSE(Check(Line("w", "null", R"({"tensor": "b"})"), lib).compliant());
}

TEST(EngineTest, ParserProblems) {
  RuleLibrary lib = Common("key a\n");
  LogReport skipped = Check(Line("a", "1") + ":::MLLOG {\"key\": \"a\", broken\n", lib);
  EXPECT_FALSE(skipped.compliant());
  EXPECT_TRUE(HasError(skipped, "skipped")) << Dump(skipped);
  EXPECT_EQ(skipped.errors[0].file_line, 2);
  LogReport crash = Check(":::MLLOG {\"key\": \"a\", \"value\": 1, \"time_ms\": 0}\n", lib);
  EXPECT_FALSE(crash.compliant());
  EXPECT_TRUE(HasError(crash, "official checker stops")) << Dump(crash);
  LogReport empty = Check("no mllog lines here\n", lib);
  EXPECT_FALSE(empty.compliant());
  EXPECT_TRUE(HasError(empty, "no :::MLLOG lines")) << Dump(empty);
}

TEST(EngineTest, ReportsBenchmarkAndDivision) {
  RuleLibrary lib = Common("key a\n");
  LogReport r = Check(
      Line("submission_benchmark", "\"resnet\"") + Line("submission_division", "\"open\""), lib);
  EXPECT_EQ(r.benchmark, "resnet");
  EXPECT_EQ(r.division, "open");
}

// A rule file that chains back to itself (directly or through another)
// ends with one error naming the loop instead of running for ever.
TEST(EngineTest, AChainLoopIsAnErrorNotAHang) {
  RuleLibrary lib = Library({{"training/9.0.0/common.rules", "key a\n  chain loop_{v}\n"},
                             {"training/9.0.0/loop_1.rules", "key a\n  chain loop_2\n"},
                             {"training/9.0.0/loop_2.rules", "key a\n  chain loop_{v}\n"}});
  LogReport r = Check(Line("a", "1"), lib);
  EXPECT_FALSE(r.compliant());
  EXPECT_TRUE(HasError(r,
                       "rule file 9.0.0/loop_1 chains back to itself through 9.0.0/common -> "
                       "9.0.0/loop_1 -> 9.0.0/loop_2"))
      << Dump(r);
}

}  // namespace
}  // namespace mlperf::checker
