#include "throughput/result.h"

#include "fmt/format.h"

namespace mlperf::throughput {
namespace {

json::Value Numbers(const std::vector<double>& v) {
  json::Array a;
  a.reserve(v.size());
  for (double x : v) a.emplace_back(x);
  return json::Value(std::move(a));
}

absl::StatusOr<std::vector<double>> ReadNumbers(const json::Value* v, const char* key) {
  if (v == nullptr || !v->is_array())
    return absl::DataLossError(fmt::format("result: '{}' is not a list", key));
  std::vector<double> out;
  for (const json::Value& x : v->as_array()) {
    if (!x.is_number())
      return absl::DataLossError(fmt::format("result: '{}' holds a non-number", key));
    out.push_back(x.as_float());
  }
  return out;
}

}  // namespace

std::vector<double> ConfigResult::Throughputs() const {
  std::vector<double> out;
  for (double s : window_seconds) out.push_back(static_cast<double>(samples_per_window) / s);
  return out;
}

Spread ConfigResult::ThroughputSpread() const { return Summarize(Throughputs()); }

std::vector<double> ConfigResult::AllSteps() const {
  std::vector<double> out;
  for (const std::vector<double>& rank : step_seconds)
    out.insert(out.end(), rank.begin(), rank.end());
  return out;
}

json::Value ToJson(const ConfigResult& r) {
  json::Array ranks;
  for (const std::vector<double>& steps : r.step_seconds) ranks.push_back(Numbers(steps));
  return json::Value(json::Object{{"devices", r.config.devices},
                                  {"nodes", r.config.nodes},
                                  {"batch", r.config.batch},
                                  {"dtype", r.config.dtype},
                                  {"ok", r.ok},
                                  {"error", r.error},
                                  {"window_seconds", Numbers(r.window_seconds)},
                                  {"window_start_unix", Numbers(r.window_start_unix)},
                                  {"samples_per_window", r.samples_per_window},
                                  {"step_seconds", json::Value(std::move(ranks))},
                                  {"peak_memory_bytes", r.peak_memory_bytes},
                                  {"memory_kind", r.memory_kind}});
}

absl::StatusOr<ConfigResult> ResultFromJson(const json::Value& v) {
  ConfigResult r;
  const auto integer = [&](const char* key) -> absl::StatusOr<int64_t> {
    const json::Value* x = v.Find(key);
    if (x == nullptr || !x->is_int())
      return absl::DataLossError(fmt::format("result: '{}' is not an integer", key));
    return x->as_int();
  };
  const auto text = [&](const char* key) -> std::string {
    const json::Value* x = v.Find(key);
    return x != nullptr && x->is_string() ? x->as_string() : std::string();
  };
  absl::StatusOr<int64_t> devices = integer("devices"), batch = integer("batch"),
                          samples = integer("samples_per_window"),
                          memory = integer("peak_memory_bytes");
  for (const auto* s : {&devices, &batch, &samples, &memory}) {
    if (!s->ok()) return s->status();
  }
  r.config = {static_cast<int>(*devices), *batch, text("dtype")};
  if (absl::StatusOr<int64_t> nodes = integer("nodes"); nodes.ok() && *nodes > 0)
    r.config.nodes = static_cast<int>(*nodes);
  const json::Value* ok = v.Find("ok");
  r.ok = ok != nullptr && ok->is_bool() && ok->as_bool();
  r.error = text("error");
  absl::StatusOr<std::vector<double>> seconds =
      ReadNumbers(v.Find("window_seconds"), "window_seconds");
  if (!seconds.ok()) return seconds.status();
  absl::StatusOr<std::vector<double>> starts =
      ReadNumbers(v.Find("window_start_unix"), "window_start_unix");
  if (!starts.ok()) return starts.status();
  r.window_seconds = *seconds;
  r.window_start_unix = *starts;
  r.samples_per_window = *samples;
  const json::Value* ranks = v.Find("step_seconds");
  if (ranks == nullptr || !ranks->is_array())
    return absl::DataLossError("result: 'step_seconds' is not a list");
  for (const json::Value& rank : ranks->as_array()) {
    absl::StatusOr<std::vector<double>> steps = ReadNumbers(&rank, "step_seconds");
    if (!steps.ok()) return steps.status();
    r.step_seconds.push_back(*steps);
  }
  r.peak_memory_bytes = *memory;
  r.memory_kind = text("memory_kind");
  return r;
}

}  // namespace mlperf::throughput
