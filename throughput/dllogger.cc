#include "throughput/dllogger.h"

#include <cmath>
#include <ctime>

#include "fmt/format.h"

namespace mlperf::throughput {
namespace {

// Python's str(datetime.fromtimestamp(t)): local time with microseconds.
std::string DateTime(double unix_seconds) {
  const std::time_t whole = static_cast<std::time_t>(std::floor(unix_seconds));
  const int micros = static_cast<int>(std::lround((unix_seconds - std::floor(unix_seconds)) * 1e6));
  std::tm local{};
  localtime_r(&whole, &local);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &local);
  return fmt::format("{}.{:06d}", text, std::min(micros, 999999));
}

class Writer {
 public:
  explicit Writer(double start) : start_(start) {}

  void Metadata(const std::string& metric, const std::string& unit, const std::string& format) {
    Line(start_,
         json::Object{{"type", "METADATA"},
                      {"metric", metric},
                      {"metadata", json::Value(json::Object{{"unit", unit}, {"format", format}})}},
         /*metadata=*/true);
  }
  void Log(double at, json::Value step, json::Object data) {
    Line(at,
         json::Object{
             {"type", "LOG"}, {"step", std::move(step)}, {"data", json::Value(std::move(data))}},
         false);
  }
  std::string text() && { return std::move(out_); }

 private:
  // dllogger's JSONStreamBackend key order: timestamp, then datetime and
  // elapsedtime (LOG) or elapsedtime and datetime (METADATA); times as strings.
  void Line(double at, json::Object rest, bool metadata) {
    json::Object o{{"timestamp", json::PythonFloatRepr(at)}};
    const std::string elapsed = json::PythonFloatRepr(std::max(0.0, at - start_));
    if (metadata) {
      o.emplace_back("elapsedtime", elapsed);
      o.emplace_back("datetime", DateTime(at));
    } else {
      o.emplace_back("datetime", DateTime(at));
      o.emplace_back("elapsedtime", elapsed);
    }
    for (json::Member& m : rest) o.push_back(std::move(m));
    out_ += "DLLL " + json::Dump(json::Value(std::move(o))) + "\n";
  }

  double start_;
  std::string out_;
};

json::Value Step(std::initializer_list<int64_t> parts) {
  json::Array a;
  for (int64_t p : parts) a.emplace_back(p);
  return json::Value(std::move(a));
}

// benchmark.py's latency metrics (seconds).
void AddLatency(const Latency& l, json::Object& data) {
  for (const auto& [name, v] : {std::pair{"val.latency_avg", l.mean},
                                {"val.latency_50", l.p50},
                                {"val.latency_90", l.p90},
                                {"val.latency_95", l.p95},
                                {"val.latency_99", l.p99},
                                {"val.latency_100", l.max}})
    data.emplace_back(name, v);
}

}  // namespace

std::string DlloggerLines(const Job& job) {
  const BenchOptions& o = job.options;
  const bool train = o.mode == Mode::kTrain;
  const std::string prefix = train ? "train." : "val.";
  Writer w(job.start_unix);
  w.Metadata(prefix + "ips", "samples/s", ":.2f");
  if (train) {
    w.Metadata("train.iteration_time", "s", ":.6f");
  } else {
    for (const char* m : {"val.latency", "val.latency_avg", "val.latency_50", "val.latency_90",
                          "val.latency_95", "val.latency_99", "val.latency_100"})
      w.Metadata(m, "s", ":.6f");
  }
  for (const ConfigResult& r : job.results) {
    const Config& c = r.config;
    const auto config_fields = [&] {
      return json::Object{{"ngpus", c.devices}, {"bs", c.batch}, {"dtype", c.dtype}};
    };
    const double first = r.window_start_unix.empty() ? job.start_unix : r.window_start_unix[0];
    json::Object parameters{{"model", job.model},
                            {"benchmark", o.benchmark},
                            {"mode", ModeName(o.mode)},
                            {"ngpus", c.devices},
                            {"bs", c.batch},
                            {"dtype", c.dtype},
                            {"data", DataModeName(o.data)},
                            {"warmup_steps", o.warmup},
                            {"measured_steps", o.iters},
                            {"repeats", o.repeats}};
    w.Log(first, json::Value("PARAMETER"), std::move(parameters));
    if (!r.ok) {
      json::Object failed = config_fields();
      failed.emplace_back("error", r.error);
      w.Log(first, Step({}), std::move(failed));
      continue;
    }
    const int64_t global_batch = c.batch * c.devices;
    const std::vector<double>& steps = r.step_seconds.front();  // rank 0's
    const std::vector<double> throughputs = r.Throughputs();
    for (size_t rep = 0; rep < r.window_seconds.size(); ++rep) {
      double at = r.window_start_unix[rep];
      std::vector<double> window_steps;
      for (int i = 0; i < o.iters; ++i) {
        const double t = steps[rep * o.iters + i];
        window_steps.push_back(t);
        at += t;
        json::Object data = config_fields();
        data.emplace_back(prefix + "ips", static_cast<double>(global_batch) / t);
        data.emplace_back(train ? "train.iteration_time" : "val.latency", t);
        w.Log(at, Step({static_cast<int64_t>(rep), i}), std::move(data));
      }
      json::Object data = config_fields();
      data.emplace_back(prefix + "ips", throughputs[rep]);
      if (!train) AddLatency(SummarizeLatency(window_steps), data);
      w.Log(r.window_start_unix[rep] + r.window_seconds[rep], Step({static_cast<int64_t>(rep)}),
            std::move(data));
    }
    json::Object summary = config_fields();
    const Spread s = r.ThroughputSpread();
    summary.emplace_back(prefix + "ips", s.median);
    summary.emplace_back(prefix + "ips_mean", s.mean);
    summary.emplace_back(prefix + "ips_min", s.min);
    summary.emplace_back(prefix + "ips_max", s.max);
    if (!train) AddLatency(SummarizeLatency(r.AllSteps()), summary);
    w.Log(r.window_start_unix.back() + r.window_seconds.back(), Step({}), std::move(summary));
  }
  return std::move(w).text();
}

}  // namespace mlperf::throughput
