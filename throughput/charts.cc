#include "throughput/charts.h"

#include <algorithm>

#include "base/svg_chart.h"
#include "fmt/format.h"

namespace mlperf::throughput {
namespace {

std::string Document(const base::LineChart& chart) {
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" + base::RenderSvg(chart);
}

std::string DeviceWord(const Job& job, int n) {
  if (job.options.gpu) return fmt::format("{} GPU{}", n, n == 1 ? "" : "s");
  return fmt::format("{} process{}", n, n == 1 ? "" : "es");
}

}  // namespace

std::vector<std::pair<std::string, std::string>> Charts(const Job& job) {
  const BenchOptions& o = job.options;
  const bool train = o.mode == Mode::kTrain;
  std::vector<std::pair<std::string, std::string>> files;

  base::LineChart throughput{
      .id = "throughput",
      .title = fmt::format("{} {} throughput, {}", o.benchmark, train ? "training" : "inference",
                           o.size == "small" ? std::string("small member")
                                             : job.model.substr(0, job.model.find(','))),
      .x_label = "batch size per device",
      .y_label = "samples/s (median)",
      .log2_x = true,
      .y_from_zero = true};
  for (const std::string& dtype : o.dtypes) {
    for (int n : o.devices) {
      base::ChartSeries s{.name = fmt::format("{}, {}", dtype, DeviceWord(job, n))};
      for (const ConfigResult& r : job.results) {
        if (r.ok && r.config.dtype == dtype && r.config.devices == n)
          s.points.emplace_back(static_cast<double>(r.config.batch), r.ThroughputSpread().median);
      }
      std::sort(s.points.begin(), s.points.end());
      if (!s.points.empty()) throughput.series.push_back(std::move(s));
    }
  }
  files.emplace_back("throughput.svg", Document(throughput));

  if (o.devices.size() > 1) {
    base::LineChart scaling{
        .id = "scaling",
        .title = fmt::format("{} weak scaling: median(n) / median(1)", o.benchmark),
        .x_label = o.gpu ? "GPUs" : "processes",
        .y_label = "weak scaling",
        .log2_x = true,
        .y_from_zero = true};
    base::ChartSeries ideal{.name = "ideal (n)", .dashed = true};
    for (int n : o.devices) ideal.points.emplace_back(n, n);
    std::sort(ideal.points.begin(), ideal.points.end());
    scaling.series.push_back(std::move(ideal));
    for (const std::string& dtype : o.dtypes) {
      for (const ConfigResult& one : job.results) {
        if (!one.ok || one.config.devices != 1 || one.config.dtype != dtype) continue;
        base::ChartSeries s{.name = fmt::format("{}, batch {}", dtype, one.config.batch)};
        for (const ConfigResult& r : job.results) {
          if (r.config.dtype != dtype || r.config.batch != one.config.batch) continue;
          if (std::optional<double> w = WeakScaling(job, r))
            s.points.emplace_back(r.config.devices, *w);
        }
        std::sort(s.points.begin(), s.points.end());
        scaling.series.push_back(std::move(s));
      }
    }
    files.emplace_back("scaling.svg", Document(scaling));
  }

  if (!train) {
    const int n = o.devices.front();
    base::LineChart latency{
        .id = "latency",
        .title = fmt::format("{} inference latency per batch, {}", o.benchmark, DeviceWord(job, n)),
        .x_label = "batch size per device",
        .y_label = "ms per batch",
        .log2_x = true,
        .y_from_zero = true};
    for (const std::string& dtype : o.dtypes) {
      for (const auto& [name, pick] : std::vector<std::pair<const char*, double Latency::*>>{
               {"p50", &Latency::p50}, {"p90", &Latency::p90}, {"p99", &Latency::p99}}) {
        base::ChartSeries s{.name = fmt::format("{} {}", dtype, name)};
        for (const ConfigResult& r : job.results) {
          if (!r.ok || r.config.dtype != dtype || r.config.devices != n) continue;
          s.points.emplace_back(static_cast<double>(r.config.batch),
                                SummarizeLatency(r.AllSteps()).*pick * 1e3);
        }
        std::sort(s.points.begin(), s.points.end());
        if (!s.points.empty()) latency.series.push_back(std::move(s));
      }
    }
    files.emplace_back("latency.svg", Document(latency));
  }
  return files;
}

}  // namespace mlperf::throughput
