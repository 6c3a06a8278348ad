// What the HTML report is built from (convergence curves, quality targets,
// the olympic selection, the RCP pruning note) and the page itself.
#include <filesystem>
#include <string>
#include <vector>

#include "base/json.h"
#include "base/utf8.h"
#include "checker/package/benchmark_score.h"
#include "checker/package/convergence_curve.h"
#include "checker/package/html_report.h"
#include "checker/package/package_check.h"
#include "fmt/format.h"
#include "gtest/gtest.h"
#include "logging/mllog_parser.h"

namespace mlperf::package {
namespace {

namespace fs = std::filesystem;

const checker::RuleLibrary& Rules() {
  static const checker::RuleLibrary* rules =
      new checker::RuleLibrary(*checker::RuleLibrary::Embedded());
  return *rules;
}

std::string Line(const std::string& key, const std::string& value, const std::string& metadata) {
  return ":::MLLOG {\"namespace\": \"\", \"time_ms\": 1, \"event_type\": \"POINT_IN_TIME\", "
         "\"key\": \"" +
         key + "\", \"value\": " + value + ", \"metadata\": {" + metadata + "}}\n";
}

TEST(ExtractCurves, ReadsEvalPointsOnTheRcpAxis) {
  const std::string text = Line("eval_accuracy", "0.5", "\"epoch_num\": 3") +
                           Line("eval_accuracy", "0.7", "\"epoch_num\": 7") +
                           Line("eval_accuracy", "0.8", "\"samples_count\": 7") +  // no epoch_num
                           Line("train_loss", "2.0", "\"epoch_num\": 8");
  RunCurves r = ExtractCurves(mllog::ParseText(text, "x"), "resnet", "3.0.0");
  EXPECT_EQ(r.x_key, "epoch_num");
  ASSERT_EQ(r.curves.size(), 1u);
  EXPECT_EQ(r.curves[0].metric, "eval_accuracy");
  ASSERT_EQ(r.curves[0].points.size(), 2u);
  EXPECT_EQ(r.curves[0].points[1].x, 7);
  EXPECT_EQ(r.curves[0].points[1].y, 0.7);
  EXPECT_EQ(r.curves[0].points[1].file_line, 2);

  // llama2_70b_lora counts samples; maskrcnn-style object values split by member.
  EXPECT_EQ(ExtractCurves(mllog::ParseText(text, "x"), "llama2_70b_lora", "4.0.0").x_key,
            "samples_count");
  const std::string dict =
      Line("eval_accuracy", "{\"BBOX\": 0.3, \"SEGM\": 0.2}", "\"epoch_num\": 1");
  RunCurves m = ExtractCurves(mllog::ParseText(dict, "x"), "maskrcnn", "2.0.0");
  ASSERT_EQ(m.curves.size(), 2u);
  EXPECT_EQ(m.curves[0].metric, "eval_accuracy[BBOX]");
  EXPECT_EQ(m.curves[1].points[0].y, 0.2);
}

TEST(QualityTargets, ComeFromTheRuleFilesAndTheBenchmarkMetadata) {
  std::vector<QualityTarget> t = QualityTargets(Rules(), "3.0.0", "closed", "resnet");
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].metric, "eval_accuracy");
  EXPECT_EQ(t[0].value, 0.759);
  EXPECT_TRUE(t[0].at_least);

  t = QualityTargets(Rules(), "3.0.0", "closed", "rnnt");  // word error rate: at most
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].value, 0.058);
  EXPECT_FALSE(t[0].at_least);

  t = QualityTargets(Rules(), "2.0.0", "closed", "maskrcnn");
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].metric, "eval_accuracy[BBOX]");
  EXPECT_EQ(t[0].value, 0.377);
  EXPECT_EQ(t[1].metric, "eval_accuracy[SEGM]");
  EXPECT_EQ(t[1].value, 0.339);

  t = QualityTargets(Rules(), "4.0.0", "closed", "stable_diffusion");
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].metric, "FID");
  EXPECT_FALSE(t[0].at_least);
  EXPECT_EQ(t[1].value, 0.15);

  EXPECT_TRUE(QualityTargets(Rules(), "3.0.0", "closed", "no_such_benchmark").empty());
}

TEST(ScoreBenchmark, MarksWhichRunsTheOlympicMeanCounts) {
  // Fastest dropped; one non-compliant run takes the slowest drop.
  BenchmarkScore s = ScoreBenchmark("resnet",
                                    {{.path = "a", .compliant = true, .minutes = 10},
                                     {.path = "b", .compliant = true, .minutes = 8},
                                     {.path = "c", .compliant = false, .minutes = 9},
                                     {.path = "d", .compliant = true, .minutes = 12},
                                     {.path = "e", .compliant = true, .minutes = 11}},
                                    1.0);
  EXPECT_EQ(s.counted, (std::vector<bool>{true, false, false, true, true}));
  EXPECT_EQ(*s.olympic_mean, 11);
}

// The corpus package, checked with the report's extras.
OrgReport CheckV30() {
  return CheckOrganization(fs::path(MLPERF_CORPUS_DIR) / "v3.0/NVIDIA", Rules(),
                           {.ruleset = "3.0.0", .report_details = true});
}

TEST(ReportDetails, CorpusPackageHasCurvesTargetsSeedsAndThePruningNote) {
  const OrgReport org = CheckV30();
  ASSERT_EQ(org.dirs.size(), 3u);
  for (const BenchmarkDirReport& d : org.dirs) {
    SCOPED_TRACE(d.benchmark);
    ASSERT_FALSE(d.runs.empty());
    EXPECT_FALSE(d.targets.empty());
    for (const RunDetail& r : d.runs) {
      ASSERT_FALSE(r.curves.curves.empty()) << r.path;
      EXPECT_FALSE(r.seeds.empty()) << r.path;
      EXPECT_TRUE(r.run_start_ms.has_value()) << r.path;
    }
    if (d.benchmark == "bert") {
      ASSERT_TRUE(d.pruning_note.has_value());
      EXPECT_EQ(d.pruning_note->kept_above_envelope, (std::vector<int64_t>{6144, 6912}));
    }
  }
  // The resnet run that stopped at 0.75894 ends below the target.
  const RunDetail& r3 = org.dirs[0].runs[3];
  EXPECT_EQ(r3.curves.curves[0].points.back().y, 0.75894);
}

TEST(HtmlReport, EscapesEverythingFromTheTreeAndCarriesVerdictsAndScores) {
  OrgReport org = CheckV30();
  org.name = "<script>alert(1)</script>";
  org.dirs[0].system = "sys\xff\"<b>";
  org.dirs[0].runs[0].log.errors.push_back(
      {.file_line = 7, .message = "bad & worse", .quote = "</pre><script>x()</script>"});
  std::vector<OrgReport> orgs = {org};
  const std::string page = HtmlReport({.inputs = {"in"}, .orgs = &orgs, .all_pass = false});
  EXPECT_EQ(page.find("<script"), std::string::npos);
  EXPECT_NE(page.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(page.find("sy\x73\xc3\xbf&quot;&lt;b&gt;"),
            std::string::npos);  // latin-1 0xFF as UTF-8
  EXPECT_TRUE(json::IsValidUtf8(page));
  EXPECT_NE(page.find("data-verdict=\"FAIL\""), std::string::npos);
  EXPECT_NE(
      page.find(fmt::format("data-score=\"{}\"", json::PythonFloatRepr(*org.dirs[0].score.score))),
      std::string::npos);
  EXPECT_NE(page.find("<svg"), std::string::npos);
  EXPECT_NE(page.find("Note on RCP pruning"), std::string::npos);
  // The only URL is the SVG namespace name, which is never fetched.
  size_t urls = 0, namespaces = 0;
  for (size_t p = page.find("://"); p != std::string::npos; p = page.find("://", p + 1)) ++urls;
  for (size_t p = page.find("http://www.w3.org/2000/svg"); p != std::string::npos;
       p = page.find("http://www.w3.org/2000/svg", p + 1))
    ++namespaces;
  EXPECT_GT(namespaces, 0u);
  EXPECT_EQ(urls, namespaces);
}

}  // namespace
}  // namespace mlperf::package
