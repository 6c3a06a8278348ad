#include "throughput/report.h"

#include <cmath>
#include <limits>

#include "fmt/format.h"

namespace mlperf::throughput {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// DeepLearningExamples' metric names; latencies in seconds.
std::vector<std::string> MetricKeys(Mode mode) {
  if (mode == Mode::kTrain) return {"train.ips"};
  return {"val.ips",        "val.latency_avg", "val.latency_50", "val.latency_90",
          "val.latency_95", "val.latency_99",  "val.latency_100"};
}

std::vector<double> MetricValues(const ConfigResult& r, Mode mode) {
  if (!r.ok) return std::vector<double>(MetricKeys(mode).size(), kNaN);
  const double ips = r.ThroughputSpread().median;
  if (mode == Mode::kTrain) return {ips};
  const Latency l = SummarizeLatency(r.AllSteps());
  return {ips, l.mean, l.p50, l.p90, l.p95, l.p99, l.max};
}

json::Value OrNull(std::optional<double> v) { return v ? json::Value(*v) : json::Value(); }

json::Value SpreadJson(const Spread& s) {
  return json::Value(
      json::Object{{"median", s.median}, {"mean", s.mean}, {"min", s.min}, {"max", s.max}});
}

json::Value ConfigJson(const Job& job, const ConfigResult& r) {
  json::Value c(json::Object{{"devices", r.config.devices},
                             {"nodes", r.config.nodes},
                             {"batch_per_device", r.config.batch},
                             {"dtype", r.config.dtype},
                             {"status", r.ok ? "ok" : "failed"}});
  if (!r.ok) {
    c.Set("error", r.error);
    return c;
  }
  json::Array per_repeat;
  for (double t : r.Throughputs()) per_repeat.emplace_back(t);
  json::Value throughput = SpreadJson(r.ThroughputSpread());
  throughput.Set("unit", "samples/s");
  throughput.Set("per_repeat", json::Value(std::move(per_repeat)));
  c.Set("samples_per_repeat", r.samples_per_window);
  c.Set("throughput", std::move(throughput));
  if (job.options.mode == Mode::kInfer) {
    const Latency l = SummarizeLatency(r.AllSteps());
    c.Set("latency_seconds", json::Value(json::Object{{"mean", l.mean},
                                                      {"p50", l.p50},
                                                      {"p90", l.p90},
                                                      {"p95", l.p95},
                                                      {"p99", l.p99},
                                                      {"max", l.max}}));
  } else {
    c.Set("step_seconds", SpreadJson(Summarize(r.AllSteps())));
  }
  const std::optional<double> scaling = WeakScaling(job, r);
  c.Set("weak_scaling", OrNull(scaling));
  c.Set("scaling_efficiency",
        OrNull(scaling ? std::optional<double>(*scaling / r.config.devices) : std::nullopt));
  c.Set("speedup_vs_fp32", OrNull(SpeedupVsFp32(job, r)));
  c.Set("peak_memory_bytes", r.peak_memory_bytes);
  c.Set("memory", r.memory_kind);
  return c;
}

std::string Fixed(double v, int digits) {
  return std::isfinite(v) ? fmt::format("{:.{}f}", v, digits) : "-";
}

std::string Gib(int64_t bytes) {
  return fmt::format("{:.2f} GiB", static_cast<double>(bytes) / (1 << 30));
}

}  // namespace

const ConfigResult* Find(const Job& job, int devices, int64_t batch, const std::string& dtype) {
  for (const ConfigResult& r : job.results) {
    if (r.ok && r.config.devices == devices && r.config.batch == batch && r.config.dtype == dtype)
      return &r;
  }
  return nullptr;
}

std::optional<double> WeakScaling(const Job& job, const ConfigResult& r) {
  const ConfigResult* one = Find(job, 1, r.config.batch, r.config.dtype);
  if (!r.ok || one == nullptr) return std::nullopt;
  return r.ThroughputSpread().median / one->ThroughputSpread().median;
}

std::optional<double> SpeedupVsFp32(const Job& job, const ConfigResult& r) {
  const ConfigResult* fp32 = Find(job, r.config.devices, r.config.batch, "fp32");
  if (!r.ok || fp32 == nullptr || r.config.dtype == "fp32") return std::nullopt;
  return r.ThroughputSpread().median / fp32->ThroughputSpread().median;
}

std::string DataDescription(const BenchOptions& o) {
  switch (o.data) {
    case DataMode::kSynthetic:
      return "synthetic batch: compute only, no data loading";
    case DataMode::kData:
      return fmt::format("{} through the loader: loading and augmentation included", o.data_dir);
    case DataMode::kGenerated:
      return "the generated data set through the loader: loading and augmentation included";
  }
  return "";
}

json::Value JsonReport(const Job& job) {
  const BenchOptions& o = job.options;
  const std::string& headline = o.dtypes.front();
  json::Array ngpus, bs, keys;
  for (int n : o.devices) ngpus.emplace_back(n);
  for (const Config& c : job.planned) {
    if (c.devices == job.planned.front().devices && c.dtype == headline) bs.emplace_back(c.batch);
  }
  for (const std::string& k : MetricKeys(o.mode)) keys.emplace_back(k);
  // benchmark.py's layout: metrics -> "<devices>" -> "<batch>" -> metric; a
  // failed configuration reads NaN there, as in benchmark.py.
  json::Value metrics{json::Object{}};
  for (const ConfigResult& r : job.results) {
    if (r.config.dtype != headline) continue;
    const std::string n = std::to_string(r.config.devices);
    if (metrics.Find(n) == nullptr) metrics.Set(n, json::Value(json::Object{}));
    json::Value row{json::Object{}};
    const std::vector<double> values = MetricValues(r, o.mode);
    const std::vector<std::string> names = MetricKeys(o.mode);
    for (size_t i = 0; i < names.size(); ++i) row.Set(names[i], values[i]);
    json::Value by_batch = *metrics.Find(n);
    by_batch.Set(std::to_string(r.config.batch), std::move(row));
    metrics.Set(n, std::move(by_batch));
  }
  json::Array configs;
  for (const ConfigResult& r : job.results) configs.push_back(ConfigJson(job, r));
  json::Array dtypes;
  for (const std::string& d : o.dtypes) dtypes.emplace_back(d);
  return json::Value(json::Object{
      {"model", job.model},
      {"ngpus", json::Value(std::move(ngpus))},
      {"bs", json::Value(std::move(bs))},
      {"metric_keys", json::Value(std::move(keys))},
      {"metrics", std::move(metrics)},
      {"dtype", headline},
      {"benchmark", o.benchmark},
      {"mode", ModeName(o.mode)},
      {"device", o.gpu ? "gpu" : "cpu"},
      {"cuda_graph", o.cuda_graph},
      {"tensor_parallel", o.tensor_parallel},
      {"dtypes", json::Value(std::move(dtypes))},
      {"data", DataModeName(o.data)},
      {"throughput_covers", DataDescription(o)},
      {"warmup_steps", o.warmup},
      {"measured_steps", o.iters},
      {"repeats", o.repeats},
      {"statistics",
       "throughput per repeat = samples of all devices (a tensor-parallel group's batch once) / "
       "wall time of the repeat's steps (slowest process); headline = median over repeats; latency "
       "= wall time of each batch "
       "of every process, numpy-style percentiles"},
      {"complete", !job.interrupted && job.results.size() == job.planned.size()},
      {"configurations", json::Value(std::move(configs))},
      {"machine", job.machine},
      {"tool", job.tool},
      {"date", job.date},
      {"system", job.system}});
}

std::string FormatRate(double samples_per_second) {
  const double v = samples_per_second;
  if (!std::isfinite(v)) return "-";
  return std::abs(v) >= 100 ? fmt::format("{:.1f}", v) : fmt::format("{:.3g}", v);
}

std::string MarkdownReport(const Job& job) {
  const BenchOptions& o = job.options;
  const bool train = o.mode == Mode::kTrain;
  std::string md = fmt::format(
      "### {} {}: {}\n\n{}; {} on {}; {} warm-up steps, then {} repeats of {} measured steps; "
      "{}.\n\n",
      o.benchmark, train ? "training" : "inference", job.model, DataDescription(o),
      o.gpu ? "GPUs" : "CPU processes", job.machine, o.warmup, o.repeats, o.iters, job.date);
  if (o.tensor_parallel > 1) {
    md += fmt::format(
        "Tensor parallel {0}: each group of {0} processes splits one model and trains one batch "
        "(batch/device is per group).\n\n",
        o.tensor_parallel);
  }
  if (train) {
    md += fmt::format(
        "| devices | batch/device | precision | samples/s (median of {}) | min | max | weak "
        "scaling | efficiency | vs fp32 | peak memory |\n"
        "|---:|---:|:--|---:|---:|---:|---:|---:|---:|---:|\n",
        o.repeats);
  } else {
    md += fmt::format(
        "| devices | batch/device | precision | samples/s (median of {}) | latency mean (ms) | "
        "p50 | p90 | p95 | p99 | max | weak scaling | vs fp32 | peak memory |\n"
        "|---:|---:|:--|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
        o.repeats);
  }
  for (const ConfigResult& r : job.results) {
    const Config& c = r.config;
    // "4 (2 nodes)" where the processes spanned several hosts.
    const std::string devices =
        c.nodes > 1 ? fmt::format("{} ({} nodes)", c.devices, c.nodes) : std::to_string(c.devices);
    if (!r.ok) {
      md += fmt::format("| {} | {} | {} | failed: {} |\n", devices, c.batch, c.dtype, r.error);
      continue;
    }
    const Spread s = r.ThroughputSpread();
    const std::optional<double> scaling = WeakScaling(job, r);
    const std::optional<double> speedup = SpeedupVsFp32(job, r);
    const std::string scaling_text = scaling ? Fixed(*scaling, 2) : "-";
    const std::string speedup_text = speedup ? Fixed(*speedup, 2) : "-";
    if (train) {
      md += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", devices, c.batch,
                        c.dtype, FormatRate(s.median), FormatRate(s.min), FormatRate(s.max),
                        scaling_text,
                        scaling ? fmt::format("{:.0f}%", 100 * *scaling / c.devices) : "-",
                        speedup_text, Gib(r.peak_memory_bytes));
    } else {
      const Latency l = SummarizeLatency(r.AllSteps());
      md += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                        devices, c.batch, c.dtype, FormatRate(s.median), Fixed(l.mean * 1e3, 2),
                        Fixed(l.p50 * 1e3, 2), Fixed(l.p90 * 1e3, 2), Fixed(l.p95 * 1e3, 2),
                        Fixed(l.p99 * 1e3, 2), Fixed(l.max * 1e3, 2), scaling_text, speedup_text,
                        Gib(r.peak_memory_bytes));
    }
  }
  if (job.results.size() < job.planned.size()) {
    md += fmt::format("\n{} of {} configurations measured{}.\n", job.results.size(),
                      job.planned.size(), job.interrupted ? " (interrupted)" : "");
  }
  return md;
}

}  // namespace mlperf::throughput
