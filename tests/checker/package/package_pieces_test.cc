// Unit tests of the package-level pieces: package_checker_params parsing,
// the system description checker, the seed checker, the power checker,
// reviewer warnings and path classification.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "checker/package/layout.h"
#include "checker/package/package_params.h"
#include "checker/package/power_check.h"
#include "checker/package/reviewer_warnings.h"
#include "checker/package/seed_check.h"
#include "checker/package/system_desc.h"
#include "fmt/format.h"
#include "gtest/gtest.h"

namespace mlperf::package {
namespace {

namespace fs = std::filesystem;

std::string Line(const std::string& key, const std::string& value, const std::string& md,
                 int64_t t = 1) {
  return fmt::format(
      ":::MLLOG {{\"namespace\": \"\", \"time_ms\": {}, \"event_type\": \"POINT_IN_TIME\", "
      "\"key\": \"{}\", "
      "\"value\": {}, \"metadata\": {{{}}}}}\n",
      t, key, value, md);
}

TEST(PackageParams, OnlyAnExactLineWithoutNewlineCounts) {
  // readlines() keeps the newline, so "rcp-bypass\n" never equals "rcp-bypass".
  EXPECT_TRUE(ParsePackageParams("rcp-bypass").rcp_bypass);
  PackageParams p = ParsePackageParams("rcp-bypass\n");
  EXPECT_FALSE(p.rcp_bypass);
  ASSERT_EQ(p.ignored_requests.size(), 1u);
  p = ParsePackageParams("rcp-bypass\nseed-checker-bypass");
  EXPECT_FALSE(p.rcp_bypass);
  EXPECT_TRUE(p.seed_checker_bypass);
  EXPECT_FALSE(ParsePackageParams("rcp_bypass").rcp_bypass);
}

TEST(PackageParams, OrganisationFileTakesBothSpellings) {
  EXPECT_TRUE(ParseOrgParams("rcp_bypass\n").rcp_bypass);
  EXPECT_TRUE(ParseOrgParams("--rcp-bypass").rcp_bypass);
  OrgParamsRequest r = ParseOrgParams("seed-checker-bypass\nfoo\n");
  EXPECT_TRUE(r.seed_checker_bypass);
  EXPECT_FALSE(r.rcp_bypass);
  ASSERT_EQ(r.other_lines.size(), 1u);
  EXPECT_EQ(r.other_lines[0], "foo");
}

json::Value FullDesc(const std::string& status) {
  json::Object o;
  for (const std::string& f : RequiredSystemDescFields()) {
    const bool count =
        f == "number_of_nodes" || f == "host_processors_per_node" || f == "accelerators_per_node";
    o.emplace_back(f, json::Value(count ? "1" : f == "division" ? "closed" : ""));
  }
  json::Value v(std::move(o));
  v.Set("status", status);
  return v;
}

TEST(SystemDesc, MissingFieldsAndStatusValues) {
  EXPECT_TRUE(CheckSystemDesc(FullDesc("onprem"), "3.0.0").valid);  // 3.x status is free-form
  EXPECT_FALSE(CheckSystemDesc(FullDesc("onprem"), "4.0.0").valid);
  EXPECT_TRUE(CheckSystemDesc(FullDesc("Available cloud"), "5.0.0").valid);
  json::Value d = FullDesc("Preview");
  json::Object o;
  for (const auto& m : d.as_object()) {
    if (m.first != "cooling") o.push_back(m);
  }
  SystemDescCheck c = CheckSystemDesc(json::Value(std::move(o)), "6.1.0");
  EXPECT_FALSE(c.valid);
  ASSERT_EQ(c.reasons.size(), 1u);
  EXPECT_NE(c.reasons[0].find("cooling"), std::string::npos);
  EXPECT_EQ(RequiredSystemDescFields().size(), 33u);
}

// Values the summarizer cannot use fail the description (the official
// checker looks only for the fields): they would change the score or skip
// the RCP check without a word.
TEST(SystemDesc, WrongTypesAndDivisionsFail) {
  for (const auto& [field, value] :
       std::vector<std::pair<std::string, json::Value>>{{"number_of_nodes", json::Value("many")},
                                                        {"accelerators_per_node", json::Value(-1)},
                                                        {"framework", json::Value(3)},
                                                        {"division", json::Value("closedish")},
                                                        {"division", json::Value(5)}}) {
    json::Value d = FullDesc("available");
    d.Set(field, value);
    const SystemDescCheck c = CheckSystemDesc(d, "3.0.0");
    EXPECT_FALSE(c.valid) << field;
    ASSERT_EQ(c.reasons.size(), 1u) << field;
    EXPECT_NE(c.reasons[0].find(field), std::string::npos) << c.reasons[0];
  }
}

mllog::ParsedLog SeedLog(const std::string& path, const std::vector<std::string>& seed_lines) {
  std::string text;
  for (const std::string& s : seed_lines) text += s;
  text += Line("run_start", "null", "");
  return mllog::ParseText(text, path);
}

TEST(SeedCheck, NoSeedSameLineSameSeedAndBadValues) {
  const std::string a = Line("seed", "1", "\"file\": \"t.py\", \"lineno\": 5");
  const std::string b = Line("seed", "2", "\"file\": \"t.py\", \"lineno\": 5");
  mllog::ParsedLog l0 = SeedLog("r0", {a}), l1 = SeedLog("r1", {b}), l2 = SeedLog("r2", {});
  EXPECT_TRUE(CheckSeeds({&l0, &l1}).errors.empty());
  SeedCheck c = CheckSeeds({&l0, &l1, &l2});
  ASSERT_EQ(c.errors.size(), 1u);
  EXPECT_NE(c.errors[0].find("r2"), std::string::npos);
  mllog::ParsedLog dup =
      SeedLog("r3", {Line("seed", "1.9", "\"file\": \"t.py\", \"lineno\": 5.0")});
  c = CheckSeeds({&l0, &dup});  // int(1.9) == 1, 5.0 == 5
  ASSERT_EQ(c.errors.size(), 1u);
  EXPECT_NE(c.errors[0].find("r0"), std::string::npos);
  mllog::ParsedLog bad =
      SeedLog("r4", {Line("seed", "\"x\"", "\"file\": \"t.py\", \"lineno\": 6")});
  EXPECT_EQ(CheckSeeds({&bad}).errors.size(), 1u);
  mllog::ParsedLog nomd = SeedLog("r5", {Line("seed", "7", "")});
  EXPECT_EQ(CheckSeeds({&nomd}).errors.size(), 1u);
  mllog::ParsedLog two = SeedLog("r6", {a, b});
  c = CheckSeeds({&two});
  EXPECT_EQ(c.warnings.size(), 1u);
  EXPECT_EQ(c.seeds[0], (std::vector<std::string>{"1", "2"}));
}

TEST(ReviewerWarnings, RunOrderAndEvalGaps) {
  std::string text = Line("block_start", "null", "", 10) + Line("run_start", "null", "", 20000) +
                     Line("x", "1", "", 15000) + Line("y", "1", "", 14500);  // 500 ms: rank jitter

  for (int e : {3, 7, 11, 19, 23})
    text += Line("eval_accuracy", "0.5", fmt::format("\"epoch_num\": {}", e), 30000);
  std::vector<std::string> w = RunWarnings(mllog::ParseText(text, "r"));
  ASSERT_EQ(w.size(), 3u);
  EXPECT_NE(w[0].find("goes back by more than 1000 ms 1 time(s)"), std::string::npos);
  EXPECT_NE(w[1].find("run_start"), std::string::npos);
  EXPECT_NE(w[2].find("11 to 19"), std::string::npos);
  std::string regular = Line("run_start", "null", "", 1);
  for (int e : {3, 7, 11, 15})
    regular += Line("eval_accuracy", "0.5", fmt::format("\"epoch_num\": {}", e), 2);
  EXPECT_TRUE(RunWarnings(mllog::ParseText(regular, "r")).empty());
}

TEST(ReviewerWarnings, IdenticalBodiesReusedSeedsAndBenchmarkName) {
  const std::string body =
      Line("submission_benchmark", "\"resnet\"", "") + Line("run_start", "null", "");
  mllog::ParsedLog a = mllog::ParseText(body, "a"), b = mllog::ParseText(body, "b");
  mllog::ParsedLog c = mllog::ParseText(Line("submission_benchmark", "\"bert\"", ""), "c");
  EXPECT_EQ(BodyFingerprint(a), BodyFingerprint(b));
  EXPECT_NE(BodyFingerprint(a), BodyFingerprint(c));
  EXPECT_EQ(BodyFingerprint(mllog::ParseText("", "empty")), 0u);
  const mllog::ParsedLog swapped = mllog::ParseText(
      Line("run_start", "null", "") + Line("submission_benchmark", "\"resnet\"", ""), "s");
  EXPECT_NE(BodyFingerprint(a), BodyFingerprint(swapped));  // the order of lines counts
  std::vector<std::string> w =
      DirectoryWarnings({&a, &b, &c}, {BodyFingerprint(a), BodyFingerprint(b), BodyFingerprint(c)},
                        {{"1"}, {"2"}, {"1"}}, "resnet");
  ASSERT_EQ(w.size(), 3u);
  EXPECT_NE(w[0].find("identical"), std::string::npos);
  EXPECT_NE(w[1].find("reuses seed 1"), std::string::npos);
  EXPECT_NE(w[2].find("bert"), std::string::npos);
}

class TempTree : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / fmt::format("pkg_pieces_{}", ::getpid());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  void Touch(const fs::path& p) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << "x";
  }
  fs::path root_;
};

TEST_F(TempTree, PowerNamingAndCounts) {
  const fs::path power = root_ / "power";
  for (const char* f : {"result_0/node_0.txt", "result_0/sw_0.txt", "result_1/node_0.txt",
                        "result_1/sw_0.txt", "result_2/node_1.txt", "result_2/sw_0.txt",
                        "result_3/node_0.txt", "result_3/node_1.txt", "result_3/sw_0.txt"}) {
    Touch(power / f);
  }
  PowerCheck c = CheckPower(power, {"result_0", "result_1", "result_2", "result_3", "result_4"});
  EXPECT_EQ(c.failed_runs, (std::set<std::string>{"result_2", "result_3", "result_4"}));
  EXPECT_TRUE(c.errors.empty());
}

TEST_F(TempTree, ClassifiesPackagePaths) {
  Touch(root_ / "v3.0" / "ORG" / "systems" / "s.json");
  Touch(root_ / "v3.0" / "ORG" / "results" / "s" / "resnet" / "result_0.txt");
  const fs::path org = root_ / "v3.0" / "ORG";
  EXPECT_EQ(ClassifyPath(org)->kind, PathKind::kOrganization);
  absl::StatusOr<PathTarget> t = ClassifyPath(org / "results" / "s" / "resnet");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->kind, PathKind::kBenchmarkDir);
  EXPECT_EQ(*t->only_benchmark, "resnet");
  EXPECT_EQ(ClassifyPath(org / "results" / "s")->kind, PathKind::kSystemDir);
  EXPECT_EQ(ClassifyPath(root_)->kind, PathKind::kSubmissionRoot);
  EXPECT_EQ(ClassifyPath(root_)->organizations.size(), 1u);
  EXPECT_EQ(ClassifyPath(org / "results" / "s" / "resnet" / "result_0.txt")->kind,
            PathKind::kLogFile);
  fs::create_directories(root_ / "empty");
  EXPECT_FALSE(ClassifyPath(root_ / "empty").ok());
  EXPECT_FALSE(ClassifyPath(root_ / "missing").ok());
  EXPECT_EQ(RulesetFromPath(org), "3.0.0");
  EXPECT_EQ(RulesetFromPath(root_ / "training_results_v5.1" / "X"), "5.1.0");
  EXPECT_FALSE(RulesetFromPath(root_ / "empty").has_value());
}

TEST(Layout, DisplayNameEscapesInvalidUtf8) {
  EXPECT_EQ(DisplayName("abc"), "abc");
  EXPECT_EQ(DisplayName("a\xff"
                        "b"),
            "a\\xffb");
  EXPECT_EQ(DisplayName("\xc3\xa9"), "\xc3\xa9");
  EXPECT_TRUE(IsResultLogName("result_0.txt"));
  EXPECT_FALSE(IsResultLogName("result0.txt"));
}

TEST_F(TempTree, ReadLimitedRefusesLargeSparseFiles) {
  const fs::path big = root_ / "big.txt";
  { std::ofstream(big) << "x"; }
  fs::resize_file(big, 3ull << 30);  // sparse: no disk blocks, no reading
  absl::StatusOr<std::string> r = ReadFileLimited(big, 1 << 20);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("bytes"), std::string::npos);
}

}  // namespace
}  // namespace mlperf::package
