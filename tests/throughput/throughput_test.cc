// run_benchmark's parts that depend on no model: numpy-defined statistics,
// the timing loop on a recorded timeline, throughput from known answers, the
// derived scaling and speedup, the result hand-over and the report formats.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "base/json.h"
#include "base/svg_chart.h"
#include "throughput/charts.h"
#include "throughput/dllogger.h"
#include "throughput/report.h"
#include "throughput/stats.h"
#include "throughput/timing.h"

namespace mlperf::throughput {
namespace {

TEST(Stats, PercentilesAsNumpy) {
  // numpy.percentile([...], q) with the default linear method.
  const std::vector<double> v = {15, 20, 35, 40, 50};
  EXPECT_DOUBLE_EQ(Percentile(v, 50), 35);
  EXPECT_DOUBLE_EQ(Percentile(v, 90), 46);    // index 3.6: 40 + 0.6 * 10
  EXPECT_DOUBLE_EQ(Percentile(v, 95), 48);    // index 3.8
  EXPECT_DOUBLE_EQ(Percentile(v, 99), 49.6);  // index 3.96
  EXPECT_DOUBLE_EQ(Percentile(v, 0), 15);
  EXPECT_DOUBLE_EQ(Percentile(v, 100), 50);
  const std::vector<double> unsorted = {4, 1, 3, 2};
  EXPECT_DOUBLE_EQ(Percentile(unsorted, 50), 2.5);
  EXPECT_DOUBLE_EQ(Percentile(unsorted, 25), 1.75);
  EXPECT_TRUE(std::isnan(Percentile(std::vector<double>{}, 50)));
}

TEST(Stats, SummaryAndLatencyAreNotTrimmedMeans) {
  const std::vector<double> v = {1, 2, 3, 4, 100};
  const Spread s = Summarize(v);
  EXPECT_DOUBLE_EQ(s.median, 3);
  EXPECT_DOUBLE_EQ(s.mean, 22);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 100);
  // A trimmed "90%" mean would drop the outlier; a percentile interpolates towards it.
  const Latency l = SummarizeLatency(v);
  EXPECT_DOUBLE_EQ(l.p90, 4 + 0.6 * 96);
  EXPECT_DOUBLE_EQ(l.max, 100);
  EXPECT_DOUBLE_EQ(l.mean, 22);
}

// A recorded timeline: step i takes durations[i] seconds; meetings take 0.5 s.
struct Timeline {
  std::vector<double> durations;
  double t = 0;
  size_t next = 0;
  int meetings = 0, starts = 0;
  TimingHooks Hooks() {
    return {.step = [this] { t += durations.at(next++); },
            .meet = [this] { t += 0.5, ++meetings; },
            .now = [this] { return t; },
            .start_window = [this] { ++starts; }};
  }
};

TEST(Timing, WarmUpIsNeverTimedAndWindowsSpanMeetings) {
  Timeline tl;
  // 2 warm-up steps (slow, as first steps are), then 2 windows of 3 steps.
  tl.durations = {9, 9, 1, 2, 3, 1, 1, 1};
  const std::vector<Window> w = TimeWindows(tl.Hooks(), 2, 3, 2);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].step_seconds, (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(w[1].step_seconds, (std::vector<double>{1, 1, 1}));
  // Meeting to meeting: the steps plus the closing meeting.
  EXPECT_DOUBLE_EQ(w[0].seconds, 6.5);
  EXPECT_DOUBLE_EQ(w[1].seconds, 3.5);
  EXPECT_EQ(tl.meetings, 4);
  EXPECT_EQ(tl.starts, 2);  // before the warm-up and before the second window
  EXPECT_EQ(tl.next, tl.durations.size());
}

TEST(Timing, ThroughputIsSamplesOverTimeNotMeanOfRates) {
  // Steps of 1 s and 3 s with 10 samples each: 20 samples in 4 s = 5/s,
  // where the mean of per-step rates (10 and 3.33) would say 6.67/s.
  ConfigResult r;
  r.ok = true;
  r.samples_per_window = 20;
  r.window_seconds = {4.0, 5.0, 2.0};
  r.step_seconds = {{1, 3, 2, 3, 1, 1}};
  EXPECT_EQ(r.Throughputs(), (std::vector<double>{5.0, 4.0, 10.0}));
  EXPECT_DOUBLE_EQ(r.ThroughputSpread().median, 5.0);
  EXPECT_DOUBLE_EQ(r.ThroughputSpread().mean, 19.0 / 3);
}

ConfigResult Measured(int devices, int64_t batch, std::string dtype, double seconds) {
  ConfigResult r;
  r.config = {devices, batch, std::move(dtype)};
  r.ok = true;
  r.samples_per_window = 10 * batch * devices;
  r.window_seconds = {seconds, seconds * 1.1, seconds * 0.9};
  r.window_start_unix = {1.7e9, 1.7e9 + 10, 1.7e9 + 20};
  r.step_seconds.assign(devices, std::vector<double>(30, seconds / 10));
  r.peak_memory_bytes = 1 << 20;
  r.memory_kind = "test";
  return r;
}

Job TwoByTwo(Mode mode) {
  Job job;
  job.options.mode = mode;
  job.options.devices = {1, 2};
  job.options.batch_sizes = {8};
  job.options.dtypes = {"fp32", "bf16"};
  job.options.iters = 10;
  job.options.repeats = 3;
  job.options.size = "small";
  job.model = "toy";
  job.start_unix = 1.7e9;
  for (int n : {1, 2})
    for (const char* d : {"fp32", "bf16"}) job.planned.push_back({n, 8, d});
  job.results = {Measured(1, 8, "fp32", 1.0), Measured(1, 8, "bf16", 0.5),
                 Measured(2, 8, "fp32", 1.25), Measured(2, 8, "bf16", 0.625)};
  return job;
}

TEST(Report, WeakScalingAndSpeedupAreRatiosOfMedians) {
  const Job job = TwoByTwo(Mode::kTrain);
  // Medians: 1 fp32 80/1.0, 2 fp32 160/1.25 -> scaling 1.6; bf16 twice fp32.
  EXPECT_NEAR(*WeakScaling(job, job.results[2]), 1.6, 1e-12);
  EXPECT_NEAR(*WeakScaling(job, job.results[0]), 1.0, 1e-12);
  EXPECT_NEAR(*SpeedupVsFp32(job, job.results[1]), 2.0, 1e-12);
  EXPECT_FALSE(SpeedupVsFp32(job, job.results[0]).has_value());
  Job no_single = job;
  no_single.results.erase(no_single.results.begin(), no_single.results.begin() + 2);
  EXPECT_FALSE(WeakScaling(no_single, no_single.results[0]).has_value());
}

TEST(Report, JsonHasBenchmarkPyLayoutForTheFirstPrecision) {
  Job job = TwoByTwo(Mode::kInfer);
  job.results[3].ok = false;
  job.results[3].error = "out of memory";
  const json::Value rep = JsonReport(job);
  EXPECT_EQ(json::Dump(*rep.Find("ngpus")), "[1, 2]");
  EXPECT_EQ(json::Dump(*rep.Find("bs")), "[8]");
  EXPECT_EQ(rep.Find("dtype")->as_string(), "fp32");
  ASSERT_EQ(rep.Find("metric_keys")->as_array().size(), 7u);
  const json::Value& m = *rep.Find("metrics")->Find("2")->Find("8");
  EXPECT_NEAR(m.Find("val.ips")->as_float(), 160 / 1.25, 1e-9);
  EXPECT_NEAR(m.Find("val.latency_99")->as_float(), 0.125, 1e-12);
  const json::Array& configs = rep.Find("configurations")->as_array();
  ASSERT_EQ(configs.size(), 4u);
  EXPECT_EQ(configs[3].Find("status")->as_string(), "failed");
  EXPECT_EQ(configs[3].Find("error")->as_string(), "out of memory");
  EXPECT_NEAR(configs[1].Find("speedup_vs_fp32")->as_float(), 2.0, 1e-12);
  EXPECT_TRUE(rep.Find("complete")->as_bool());
  // Indented output parses back to the same document.
  EXPECT_EQ(json::Dump(*json::Parse(json::DumpIndented(rep, 4))), json::Dump(rep));
}

TEST(Report, MarkdownHasOneRowPerConfigurationAndSaysWhatIsMissing) {
  Job job = TwoByTwo(Mode::kTrain);
  job.results.pop_back();
  job.interrupted = true;
  const std::string md = MarkdownReport(job);
  EXPECT_NE(md.find("| 2 | 8 | fp32 | 128.0 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 1.60 | 80% |"), std::string::npos) << md;
  EXPECT_NE(md.find("3 of 4 configurations measured (interrupted)"), std::string::npos);
}

// Slow configurations (a full-size model on a CPU) keep their digits.
TEST(Report, RatesBelowOneHundredKeepThreeSignificantDigits) {
  EXPECT_EQ(FormatRate(185.54), "185.5");
  EXPECT_EQ(FormatRate(45.67), "45.7");
  EXPECT_EQ(FormatRate(0.05342), "0.0534");
  EXPECT_EQ(FormatRate(std::nan("")), "-");
}

TEST(Result, JsonRoundTrip) {
  const ConfigResult r = Measured(2, 16, "fp32", 0.75);
  absl::StatusOr<ConfigResult> back = ResultFromJson(*json::Parse(json::Dump(ToJson(r))));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->config.devices, 2);
  EXPECT_EQ(back->config.batch, 16);
  EXPECT_EQ(back->window_seconds, r.window_seconds);
  EXPECT_EQ(back->step_seconds, r.step_seconds);
  EXPECT_EQ(back->samples_per_window, r.samples_per_window);
  EXPECT_FALSE(ResultFromJson(*json::Parse("{\"devices\": 1}")).ok());
}

TEST(Dllogger, EveryLineIsDlllJsonAndMetadataNeverSaysStep) {
  const Job job = TwoByTwo(Mode::kTrain);
  const std::string text = DlloggerLines(job);
  int metadata = 0, iterations = 0, repeats = 0, summaries = 0, parameters = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t end = text.find('\n', pos);
    const std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    ASSERT_EQ(line.rfind("DLLL ", 0), 0u);
    absl::StatusOr<json::Value> v = json::Parse(line.substr(5));
    ASSERT_TRUE(v.ok()) << line;
    ASSERT_TRUE(v->Find("timestamp")->is_string());
    ASSERT_TRUE(v->Find("elapsedtime")->is_string());
    if (v->Find("type")->as_string() == "METADATA") {
      ++metadata;
      // DLE's readers keep the lines that contain "step"; metadata must not.
      EXPECT_EQ(line.find("step"), std::string::npos) << line;
      continue;
    }
    const json::Value& step = *v->Find("step");
    if (step.is_string()) {
      ++parameters;
    } else if (step.as_array().size() == 2) {
      ++iterations;
    } else if (step.as_array().size() == 1) {
      ++repeats;
    } else {
      ++summaries;
    }
  }
  EXPECT_EQ(metadata, 2);
  EXPECT_EQ(parameters, 4);
  EXPECT_EQ(iterations, 4 * 3 * 10);
  EXPECT_EQ(repeats, 4 * 3);
  EXPECT_EQ(summaries, 4);
}

TEST(Charts, ThroughputAndScalingOnLogAxes) {
  const auto charts = Charts(TwoByTwo(Mode::kInfer));
  ASSERT_EQ(charts.size(), 3u);
  EXPECT_EQ(charts[0].first, "throughput.svg");
  EXPECT_EQ(charts[1].first, "scaling.svg");
  EXPECT_EQ(charts[2].first, "latency.svg");
  for (const auto& [name, svg] : charts) {
    EXPECT_EQ(svg.rfind("<?xml", 0), 0u) << name;
    EXPECT_NE(svg.find("<path d=\"M"), std::string::npos) << name;
  }
}

TEST(SvgChart, Log2AxisTicksArePowersOfTwo) {
  base::LineChart c{.id = "t", .title = "t", .log2_x = true, .y_from_zero = true};
  c.series.push_back({.name = "s", .points = {{1, 10}, {8, 20}, {64, 40}, {0, 5}}});
  const std::string svg = base::RenderSvg(c);
  for (const char* tick : {">1<", ">2<", ">4<", ">8<", ">16<", ">32<", ">64<"})
    EXPECT_NE(svg.find(tick), std::string::npos) << tick;
  // x = 0 has no place on a log axis: three points drawn, not four.
  size_t circles = 0;
  for (size_t p = svg.find("<circle"); p != std::string::npos; p = svg.find("<circle", p + 1))
    ++circles;
  EXPECT_EQ(circles, 3u);
  EXPECT_NE(svg.find(">0<"), std::string::npos);  // y from zero
}

}  // namespace
}  // namespace mlperf::throughput
