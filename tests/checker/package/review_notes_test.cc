// The reviewer notes beside the verdicts: logs against the system
// description, seeds, RCP health and the ruleset guess; on hand-made reports,
// on the real corpus packages and on altered copies of them. A note never
// changes a verdict.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "checker/package/consistency_notes.h"
#include "checker/package/package_check.h"
#include "checker/package/rcp_health.h"
#include "checker/package/rcp_table.h"
#include "checker/package/ruleset_guess.h"
#include "checker/package/seed_notes.h"
#include "fmt/format.h"
#include "gtest/gtest.h"

namespace mlperf::package {
namespace {

namespace fs = std::filesystem;

const checker::RuleLibrary& Rules() {
  static const checker::RuleLibrary* rules =
      new checker::RuleLibrary(*checker::RuleLibrary::Embedded());
  return *rules;
}

bool Has(const std::vector<std::string>& notes, const std::string& part) {
  for (const std::string& n : notes) {
    if (n.find(part) != std::string::npos) return true;
  }
  return false;
}

std::string All(const std::vector<std::string>& notes) {
  std::string out;
  for (const std::string& n : notes) out += n + "\n";
  return out;
}

SystemReport System(const std::string& name, const std::string& system_name,
                    const std::string& nodes, const std::string& per_node) {
  SystemReport s{.name = name, .desc_loaded = true};
  s.desc = json::Value(json::Object{{"submitter", "ORG"},
                                    {"division", "closed"},
                                    {"status", "Available on-premise"},
                                    {"system_name", system_name},
                                    {"number_of_nodes", nodes},
                                    {"accelerators_per_node", per_node}});
  return s;
}

RunDetail LoggedRun(const std::string& org, const std::string& division, const std::string& status,
              const std::string& platform) {
  RunDetail r;
  r.settings = {{"submission_org", json::Value(org)},
                {"submission_division", json::Value(division)},
                {"submission_status", json::Value(status)},
                {"submission_platform", json::Value(platform)}};
  return r;
}

TEST(DescriptionNotes, EachDisagreementOnceWithBothValues) {
  OrgReport org;
  org.systems = {System("nyx", "Nyx (1x NVIDIA DGX B200)", "1", "8"),
                 System("dell", "XE9680", "2", "8")};
  BenchmarkDirReport d{.system = "nyx", .benchmark = "bert"};
  // Agrees: the 3.x short status, the node prefix, the name within system_name.
  d.runs.push_back(LoggedRun("ORG", "closed", "onprem", "1xNVIDIA DGX B200"));
  d.runs.push_back(LoggedRun("ORG", "closed", "onprem", "1xNVIDIA DGX B200"));
  // Saying less or more is not a contradiction: "Habana" for the organisation
  // "ORG-Habana", a 3.x "available" status, "NVIDIA DGX H100" on a folder
  // named "dgxh100_n1".
  d.runs.push_back(LoggedRun("ORG", "closed", "onprem", "1xX86"));
  EXPECT_TRUE(DescriptionNotes(OrgReport{.systems = org.systems, .dirs = {d}}).empty());
  OrgReport lenient{.systems = {System("dgxh100_n1", "dgxh100_n1", "1", "8")},
                    .dirs = {BenchmarkDirReport{.system = "dgxh100_n1", .benchmark = "bert"}}};
  lenient.systems[0].desc.Set("submitter", "ORG-Habana");
  lenient.systems[0].desc.Set("status", "available");
  lenient.dirs[0].runs = {LoggedRun("Habana", "closed", "onprem", "1xNVIDIA DGX H100"),
                          LoggedRun("Habana", "closed", "cloud", "1xNVIDIA DGX H100")};
  EXPECT_TRUE(DescriptionNotes(lenient).empty()) << All(DescriptionNotes(lenient));
  // A letter changed in the product name is (HGX for DGX), and a placeholder.
  lenient.dirs[0].runs = {LoggedRun("SUBMISSION_ORG_PLACEHOLDER", "closed", "onprem",
                                    "1xNVIDIA HGX H100")};
  const std::vector<std::string> changed = DescriptionNotes(lenient);
  EXPECT_EQ(changed.size(), 2u) << All(changed);
  EXPECT_TRUE(Has(changed, "dgxh100_n1: submission_org \"SUBMISSION_ORG_PLACEHOLDER\" in 1 log(s) "
                           "(bert) is still a logging template's placeholder"));
  EXPECT_TRUE(Has(changed, "submission_platform \"1xNVIDIA HGX H100\""));
  d.runs.push_back(LoggedRun("Other", "open", "cloud", "1xNVIDIA HGX B200"));
  d.runs.push_back(LoggedRun("ORG", "closed", "onprem", "2xNVIDIA DGX B200"));
  d.runs.push_back(LoggedRun("ORG", "closed", "onprem", "2xNVIDIA DGX B200"));
  BenchmarkDirReport dell{.system = "dell", .benchmark = "resnet"};
  dell.runs.push_back(LoggedRun("ORG", "closed", "Available on-premise", "2xXE9680x8H100-SXM-80GB"));
  dell.runs.push_back(LoggedRun("ORG", "closed", "onprem", "2xXE9680x4H100-SXM-80GB"));
  org.dirs = {d, dell};
  const std::vector<std::string> notes = DescriptionNotes(org);
  SCOPED_TRACE(All(notes));
  EXPECT_EQ(notes.size(), 6u);  // the "1xX86" run says nothing against the names
  EXPECT_TRUE(Has(notes, "nyx: submission_org \"Other\" in 1 log(s) (bert) disagrees with "
                         "systems/nyx.json: submitter \"ORG\""));
  EXPECT_TRUE(Has(notes, "submission_division \"open\""));
  EXPECT_TRUE(Has(notes, "submission_status \"cloud\" in 1 log(s) (bert) disagrees with "
                         "systems/nyx.json: status \"Available on-premise\""));
  EXPECT_TRUE(Has(notes, "submission_platform \"1xNVIDIA HGX B200\" in 1 log(s) (bert) "
                         "disagrees with systems/nyx.json: system_name \"Nyx (1x NVIDIA DGX "
                         "B200)\""));
  EXPECT_TRUE(Has(notes, "submission_platform \"2xNVIDIA DGX B200\" in 2 log(s) (bert) "
                         "disagrees with systems/nyx.json: number_of_nodes 1"));
  EXPECT_TRUE(Has(notes, "submission_platform \"2xXE9680x4H100-SXM-80GB\" in 1 log(s) (resnet) "
                         "disagrees with systems/dell.json: accelerators_per_node 8"));
}

fs::path Corpus() { return fs::path(MLPERF_CORPUS_DIR); }

class AlteredPackage : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / fmt::format("review_notes_{}", ::getpid());
    fs::remove_all(root_);
    org_ = root_ / "ORG";
    const fs::path src = Corpus() / "v3.0/NVIDIA";
    const std::string system = "dgxh100_ngc23.04_mxnet";
    fs::create_directories(org_ / "systems");
    fs::copy(src / "systems" / (system + ".json"), org_ / "systems");
    fs::create_directories(org_ / "results" / system);
    fs::copy(src / "results" / system / "resnet", resnet_ = org_ / "results" / system / "resnet");
  }
  void TearDown() override { fs::remove_all(root_); }

  // Replaces `pattern` in the log's text.
  void Edit(const std::string& log, const std::string& pattern, const std::string& with) {
    const fs::path p = resnet_ / log;
    std::ifstream in(p);
    const std::string text((std::istreambuf_iterator<char>(in)), {});
    std::ofstream(p) << std::regex_replace(text, std::regex(pattern), with);
  }

  OrgReport Check(const std::string& ruleset = "3.0.0") {
    return CheckOrganization(org_, Rules(), {.ruleset = ruleset});
  }

  fs::path root_, org_, resnet_;
};

TEST_F(AlteredPackage, RealPackageHasNoDescriptionOrSeedNotes) {
  const OrgReport report = Check();
  EXPECT_TRUE(DescriptionNotes(report).empty()) << All(DescriptionNotes(report));
  EXPECT_TRUE(SharedSeedNotes(report).empty());
  ASSERT_EQ(report.dirs.size(), 1u);
  EXPECT_TRUE(DirectorySeedNotes(report.dirs[0], "3.0.0").empty());
  // The compared RCP record at 3264 omits what other records list.
  EXPECT_TRUE(Has(report.dirs[0].review_warnings,
                  "RCP record resnet_ref_3264 does not list epsilon, opt_end_learning_rate, "
                  "opt_learning_rate_decay_poly_power"))
      << All(report.dirs[0].review_warnings);
}

TEST_F(AlteredPackage, ChangedOrganisationAndPlatformAreNotedNotFailed) {
  const OrgReport before = Check();
  Edit("result_2.txt", R"("submission_org", "value": "NVIDIA")",
       R"("submission_org", "value": "NVIDlA")");
  for (const char* log : {"result_0.txt", "result_1.txt"})
    Edit(log, R"("submission_platform", "value": "1xNVIDIA DGX H100")",
         R"("submission_platform", "value": "2xNVIDIA DGX H100")");
  const OrgReport after = Check();
  EXPECT_EQ(after.passed(), before.passed());
  EXPECT_EQ(after.dirs[0].score.score, before.dirs[0].score.score);
  SCOPED_TRACE(All(after.notes));
  EXPECT_TRUE(Has(after.notes, "dgxh100_ngc23.04_mxnet: submission_org \"NVIDlA\" in 1 log(s) "
                               "(resnet) disagrees with systems/dgxh100_ngc23.04_mxnet.json: "
                               "submitter \"NVIDIA\""));
  EXPECT_TRUE(Has(after.notes, "submission_platform \"2xNVIDIA DGX H100\" in 2 log(s) (resnet) "
                               "disagrees with systems/dgxh100_ngc23.04_mxnet.json: "
                               "number_of_nodes 1"));
}

TEST_F(AlteredPackage, DerivedSeedsAreNoted) {
  for (int i = 0; i < 5; ++i) {
    Edit(fmt::format("result_{}.txt", i), R"("key": "seed", "value": \d+)",
         fmt::format(R"("key": "seed", "value": {})", 1000 + 7 * i));
  }
  const OrgReport report = Check();
  EXPECT_TRUE(Has(report.dirs[0].review_warnings,
                  "the 5 runs' seeds (1000, 1007, 1014, 1021, 1028) step by 7"))
      << All(report.dirs[0].review_warnings);
}

TEST_F(AlteredPackage, ConvergenceFasterThanEveryReferenceRunIsNoted) {
  EXPECT_FALSE(Has(Check().dirs[0].review_warnings, "faster than every reference run"));
  // The RCP reader takes the last evaluation's epoch: say 31 instead of 35.
  for (int i = 0; i < 5; ++i) {
    Edit(fmt::format("result_{}.txt", i),
         R"(("eval_accuracy", "value": [0-9.]+, "metadata": \{[^}]*"epoch_num": )35\})",
         "$0131}");
  }
  const OrgReport report = Check();
  EXPECT_TRUE(Has(report.dirs[0].review_warnings,
                  "converges faster than every reference run: olympic mean 31 against"))
      << All(report.dirs[0].review_warnings);
}

TEST_F(AlteredPackage, TwoSystemsWithTheSameSeedsAreNoted) {
  // The same runs filed under a second system: every seed in common.
  const fs::path copy = org_ / "results" / "dgxh100_copy" / "resnet";
  fs::create_directories(copy.parent_path());
  fs::copy(resnet_, copy);
  fs::copy(org_ / "systems" / "dgxh100_ngc23.04_mxnet.json",
           org_ / "systems" / "dgxh100_copy.json");
  const OrgReport report = Check();
  EXPECT_TRUE(Has(report.notes, "resnet: systems dgxh100_copy and dgxh100_ngc23.04_mxnet log 5 "
                                "seed(s) in common"))
      << All(report.notes);
}

TEST_F(AlteredPackage, AnotherRulesetIsNamedWhenItFitsBetter) {
  // resnet is not a 5.1.0 benchmark: 1.0.0 to 4.0.0 allow it, and the
  // description's 3.x "onprem" status narrows it to 1.0.0-3.1.0.
  OrgReport report = Check("5.1.0");
  SCOPED_TRACE(All(report.notes));
  EXPECT_TRUE(Has(report.notes, "rulesets 0.7.0, 1.0.0, 1.1.0, 2.0.0, 2.1.0, 3.0.0, 3.1.0 fit equally "
                                "this package better than 5.1.0: 5.1.0 does not allow resnet "
                                "(skipped)"));
  EXPECT_FALSE(Has(Check().notes, "ruleset"));
  // Without weights_initialization lines the logs break 2.1.0's rules and
  // keep those of 1.0.0 and 3.x (4.0.0 refuses the description's status).
  for (int i = 0; i < 5; ++i)
    Edit(fmt::format("result_{}.txt", i), R"(:::MLLOG [^\n]*"weights_initialization"[^\n]*\n)", "");
  report = Check("2.1.0");
  EXPECT_FALSE(report.passed());
  EXPECT_TRUE(Has(report.notes, "rulesets 0.7.0, 1.0.0, 3.0.0, 3.1.0 may be the package's round: the 1 "
                                "sampled log(s) that fail under 2.1.0 comply under each"))
      << All(report.notes);
  EXPECT_TRUE(Check("3.0.0").passed());
}

// The real v5.0 package (in ../shared's corpus): its logs name an HGX B200,
// its descriptions a DGX B200.
TEST(DescriptionNotes, RealV50PackageNamesAnotherPlatform) {
  const fs::path org = Corpus() / "v5.0/NVIDIA";
  if (!fs::is_directory(org / "systems")) GTEST_SKIP() << "the fixture corpus has no v5.0 systems";
  const OrgReport report = CheckOrganization(org, Rules(), {.ruleset = "5.0.0"});
  EXPECT_TRUE(report.passed());
  int platform_notes = 0;
  for (const std::string& n : report.notes) {
    if (n.find("submission_platform \"1xNVIDIA HGX B200\"") != std::string::npos &&
        n.find("system_name \"Nyx (1x NVIDIA DGX B200)\"") != std::string::npos)
      ++platform_notes;
  }
  EXPECT_EQ(platform_notes, 4) << All(report.notes);
}

BenchmarkDirReport SeedDir(const std::string& system, const std::vector<std::string>& seeds) {
  BenchmarkDirReport d{.system = system, .benchmark = "bert"};
  for (size_t i = 0; i < seeds.size(); ++i) {
    RunDetail r;
    r.stem = fmt::format("result_{}", i);
    if (!seeds[i].empty()) r.seeds = {seeds[i]};
    d.runs.push_back(r);
  }
  return d;
}

TEST(SeedNotes, StepsMissingSeedsAndSharedSeeds) {
  EXPECT_TRUE(DirectorySeedNotes(SeedDir("s", {"5", "17", "3"}), "6.1.0").empty());
  EXPECT_TRUE(DirectorySeedNotes(SeedDir("s", {"5", "6"}), "6.1.0").empty());  // too few
  EXPECT_TRUE(Has(DirectorySeedNotes(SeedDir("s", {"102", "100", "101"}), "6.1.0"), "step by 1"));
  // A missing seed is the seed checker's error; a note only where it did not run.
  BenchmarkDirReport missing = SeedDir("s", {"5", "", "3"});
  EXPECT_TRUE(Has(DirectorySeedNotes(missing, "6.1.0"),
                  "result_1 logs no seed; the 6.1.0 training policies require"));
  EXPECT_TRUE(DirectorySeedNotes(missing, "5.0.0").empty());
  missing.seed_check_ran = true;
  EXPECT_TRUE(DirectorySeedNotes(missing, "6.1.0").empty());

  // Two seeds in common are noted; one (chance, across a round) is not.
  OrgReport org{.dirs = {SeedDir("a", {"1", "42", "7"}), SeedDir("b", {"42", "9", "7"}),
                         SeedDir("c", {"11", "12", "14"}), SeedDir("d", {"1", "5", "6"})}};
  org.dirs[2].benchmark = "resnet";
  org.dirs[2].runs[0].seeds = {"42"};
  const std::vector<std::string> shared = SharedSeedNotes(org);
  ASSERT_EQ(shared.size(), 1u) << All(shared);
  EXPECT_TRUE(Has(shared, "bert: systems a and b log 2 seed(s) in common (42, 7)"));
}

TEST(RcpTable, SaysWhyPruningDropsARecord) {
  absl::StatusOr<RcpTable> t = RcpTable::FromJson(R"({"ruleset": "9.9.9", "benchmark": "bert",
    "records": [
      {"name": "a", "benchmark": "bert", "global_batch_size": 10, "converge": [5, 5, 5, 5]},
      {"name": "b", "benchmark": "bert", "global_batch_size": 20, "converge": [4, 4, 4, 4]},
      {"name": "c", "benchmark": "bert", "global_batch_size": 30, "converge": [9, 9, 9, 9]},
      {"name": "d", "benchmark": "bert", "global_batch_size": 40, "converge": [6, 6, 6, 6]}]})",
                                                  "test");
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->removed().size(), 2u);
  EXPECT_EQ(t->removed()[0].record.global_batch_size, 10);
  EXPECT_TRUE(t->removed()[0].below_fastest);
  EXPECT_EQ(t->removed()[1].record.global_batch_size, 30);
  EXPECT_EQ(t->removed()[1].lo_batch_size, 20);
  EXPECT_EQ(t->removed()[1].hi_batch_size, 40);
  EXPECT_DOUBLE_EQ(t->removed()[1].predicted_mean, 5.0);
  EXPECT_EQ(t->pruned().size(), 2u);
}

// A verdict against the 6.0.0 llama31_8b record at batch size `bs` (its 20
// reference runs converge in 159,744 to 172,032 samples at 16).
RcpVerdict LlamaVerdict(int64_t bs, double mean) {
  absl::StatusOr<RcpTable> t = RcpTable::Embedded("6.0.0", "llama31_8b");
  RcpVerdict v{.benchmark = "llama31_8b"};
  v.global_batch_size = json::Value(bs);
  v.submission_mean = mean;
  const RcpRecord* lo = nullptr;
  const RcpRecord* hi = nullptr;
  for (const RcpRecord& r : t->pruned()) {
    if (r.global_batch_size == bs) v.record = r;
    if (r.global_batch_size == 16) lo = &r;
    if (r.global_batch_size == 32) hi = &r;
  }
  if (!v.record) v.record = t->Interpolate(bs, *lo, *hi);
  return v;
}

TEST(RcpHealth, ConvergenceOutsideTheReferenceBand) {
  std::vector<std::string> notes = RcpHealthNotes(LlamaVerdict(16, 150000), "6.0.0");
  EXPECT_TRUE(Has(notes, "converges faster than every reference run: olympic mean 150000 against "
                         "the fastest reference run's 159744"))
      << All(notes);
  EXPECT_TRUE(Has(notes, "at batch size 16;"));
  // Slower than every reference run costs the submitter time; no note.
  notes = RcpHealthNotes(LlamaVerdict(16, 180000), "6.0.0");
  EXPECT_FALSE(Has(notes, "every reference run")) << All(notes);
  EXPECT_FALSE(Has(RcpHealthNotes(LlamaVerdict(16, 165000), "6.0.0"), "every reference run"));
  // Between 16 and 32 the band is interpolated from both records' runs.
  notes = RcpHealthNotes(LlamaVerdict(24, 150000), "6.0.0");
  EXPECT_TRUE(Has(notes, "faster than every reference run")) << All(notes);
  EXPECT_TRUE(Has(notes, "(interpolated)"));
  EXPECT_FALSE(Has(RcpHealthNotes(LlamaVerdict(24, 175000), "6.0.0"), "every reference run"));
}

TEST(RcpHealth, DroppedNeighboursAndMissingHyperparameters) {
  // 3.0.0 bert at 2048 lies between the kept 448 and 4608; 1536, 3072 and
  // 4096 between them were dropped.
  absl::StatusOr<RcpTable> t = RcpTable::Embedded("3.0.0", "bert");
  RcpVerdict v{.benchmark = "bert"};
  v.global_batch_size = json::Value(2048);
  const std::vector<std::string> notes = RcpHealthNotes(v, "3.0.0");
  EXPECT_TRUE(Has(notes, "drops what this batch size would be compared with: 1536 (mean "))
      << All(notes);
  EXPECT_TRUE(Has(notes, "slower than the line from 448 to 3072"));
  EXPECT_TRUE(Has(notes, "4096 (mean"));
  EXPECT_FALSE(Has(notes, "256 (mean"));  // below 448, not a neighbour
  // resnet's records at 1632 and 3264 leave out three settings others list;
  // llama31_8b's records all list the same ones.
  absl::StatusOr<RcpTable> resnet = RcpTable::Embedded("3.0.0", "resnet");
  for (const RcpRecord& r : resnet->pruned()) {
    if (r.global_batch_size != 1632 && r.global_batch_size != 3264) continue;
    RcpVerdict rv{.record = r, .benchmark = "resnet"};
    rv.global_batch_size = json::Value(r.global_batch_size);
    EXPECT_TRUE(Has(RcpHealthNotes(rv, "3.0.0"),
                    fmt::format("RCP record {} does not list epsilon, opt_end_learning_rate, "
                                "opt_learning_rate_decay_poly_power, which other records",
                                r.name)));
  }
  EXPECT_FALSE(Has(RcpHealthNotes(LlamaVerdict(16, 165000), "6.0.0"), "#142"));
}

}  // namespace
}  // namespace mlperf::package
