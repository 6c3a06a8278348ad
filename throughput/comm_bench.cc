#include "throughput/comm_bench.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <set>
#include <string>

#include "base/exit_codes.h"
#include "base/json.h"
#include "base/output.h"
#include "fmt/format.h"
#include "reference/kernels/dispatch.h"
#include "runtime/collective_bench.h"
#include "runtime/process_setup.h"

namespace mlperf::throughput {
namespace {

void Say(const std::string& line) { std::fprintf(stderr, "run_benchmark: %s\n", line.c_str()); }

// The link probe's message: 1 MiB, or the sweep's largest when smaller.
constexpr int64_t kProbeBytes = 1 << 20;

struct CommReport {
  int ranks = 1, nodes = 1;
  std::string device, backend;
  std::vector<runtime::CollectiveResult> results;
  std::vector<runtime::RankLink> links;
};

std::string Markdown(const BenchOptions& o, const CommReport& r) {
  std::string out = fmt::format(
      "## Collectives: {} ranks on {} node(s), {} ({}), {} warm-up + {} timed calls per size\n\n"
      "| collective | size | count | type | time (us) | algbw (GB/s) | busbw (GB/s) | wrong |\n"
      "|---|---:|---:|---|---:|---:|---:|---:|\n",
      r.ranks, r.nodes, r.backend, r.device, o.warmup, o.iters);
  for (const runtime::CollectiveResult& c : r.results) {
    out += fmt::format("| {} | {} | {} | float | {:.1f} | {:.3f} | {:.3f} | {} |\n",
                       runtime::CollectiveName(c.collective), c.bytes, c.count, c.seconds * 1e6,
                       c.algbw / 1e9, c.busbw / 1e9, c.wrong);
  }
  // nccl-tests' summary: the bus bandwidth averaged over the sizes.
  out += "\n| collective | average busbw (GB/s) |\n|---|---:|\n";
  for (const runtime::Collective k : runtime::kAllCollectives) {
    double sum = 0;
    int n = 0;
    for (const runtime::CollectiveResult& c : r.results)
      if (c.collective == k) sum += c.busbw, ++n;
    if (n > 0) out += fmt::format("| {} | {:.3f} |\n", runtime::CollectiveName(k), sum / n / 1e9);
  }
  out += fmt::format(
      "\n## Links: each pair of ranks exchanges {} each way; median over partners on other "
      "nodes (all partners on one node)\n\n| rank | node | bandwidth | partners |\n"
      "|---:|---|---:|---:|\n",
      runtime::Size(std::min(kProbeBytes, o.max_bytes)));
  for (const runtime::RankLink& l : r.links) {
    out += fmt::format("| {} | {} | {} | {} |\n", l.rank, l.node,
                       l.partners > 0 ? runtime::Rate(l.bytes_per_second) : "-", l.partners);
  }
  return out;
}

json::Value Json(const BenchOptions& o, const CommReport& r) {
  json::Array results, links;
  for (const runtime::CollectiveResult& c : r.results) {
    results.emplace_back(json::Object{{"collective", runtime::CollectiveName(c.collective)},
                                      {"bytes", c.bytes},
                                      {"count", c.count},
                                      {"type", "float"},
                                      {"time_us", c.seconds * 1e6},
                                      {"algbw_gbps", c.algbw / 1e9},
                                      {"busbw_gbps", c.busbw / 1e9},
                                      {"wrong", c.wrong}});
  }
  for (const runtime::RankLink& l : r.links) {
    links.emplace_back(json::Object{{"rank", l.rank},
                                    {"node", l.node},
                                    {"bytes_per_second", l.bytes_per_second},
                                    {"partners", l.partners}});
  }
  return json::Object{{"tool", "run_benchmark --comm"},
                      {"ranks", r.ranks},
                      {"nodes", r.nodes},
                      {"device", r.device},
                      {"backend", r.backend},
                      {"warmup", o.warmup},
                      {"iters", o.iters},
                      {"results", std::move(results)},
                      {"links", std::move(links)}};
}

}  // namespace

int RunCommBench(const BenchOptions& o, const dist::LaunchEnv& launch) {
  if (launch.world_size == 1 && o.devices != std::vector<int>{1}) {
    Say(fmt::format(
        "--comm measures the processes it was started in: start it under the launcher, e.g. "
        "mpirun -np {} run_benchmark --comm",
        o.devices.back()));
    return kExitUsage;
  }
  absl::StatusOr<std::vector<runtime::Collective>> collectives =
      runtime::ParseCollectives(o.collectives);
  if (!collectives.ok()) {
    Say(std::string(collectives.status().message()));
    return kExitUsage;
  }
  absl::StatusOr<std::unique_ptr<runtime::ProcessComms>> comms =
      runtime::MakeProcessComms(launch, o.gpu);
  if (!comms.ok()) {
    Say(std::string(comms.status().message()));
    return kExitUsage;
  }
  if (absl::Status s = runtime::WatchCollectives(
          **comms, std::chrono::seconds(o.collective_timeout_s), "run_benchmark");
      !s.ok()) {
    Say(std::string(s.message()));
    return kExitFailed;
  }
  // Checked on every rank (each node has its own memory), agreed on by all.
  std::string problem;
  base::OutputGuard guard;
  for (const auto& [flag, path] : {std::pair<const char*, const std::string&>{"json", o.json_path},
                                   {"markdown", o.markdown_path}}) {
    if (launch.rank != 0 || path.empty()) continue;
    if (absl::Status s = guard.Claim(flag, path); !s.ok()) problem = std::string(s.message());
  }
  // Two buffers of the largest message per process, in its memory share
  // or on its GPU.
  const int64_t memory =
      o.gpu ? ops::DeviceMemoryTotalBytes() : runtime::ShareOfThisMachine().memory_bytes;
  if (memory > 0 && 2 * o.max_bytes > memory) {
    problem = fmt::format(
        "--maxbytes={}: two buffers of it exceed the {} of a process on {} ({}); give a smaller "
        "--maxbytes",
        runtime::Size(o.max_bytes), o.gpu ? "GPU memory" : "memory share", runtime::NodeName(),
        runtime::Size(memory));
  }
  if (!problem.empty()) Say(problem);
  float failed = problem.empty() ? 0.0f : 1.0f;
  (*comms)->view().control->AllReduceSum(&failed, 1);
  if (failed != 0.0f) return kExitUsage;
  const runtime::RunComms view = (*comms)->view();
  CommReport report;
  report.ranks = view.control->world_size();
  report.device = o.gpu ? "gpu" : "cpu";
  report.backend = o.gpu ? "NCCL" : report.ranks > 1 ? "MPI" : "single process";
  runtime::SweepOptions sweep{.collectives = *collectives,
                              .min_bytes = o.min_bytes,
                              .max_bytes = o.max_bytes,
                              .factor = o.step_factor,
                              .warmup = o.warmup,
                              .iters = o.iters};
  report.results = runtime::MeasureCollectives(view, sweep);
  report.links = runtime::ProbeLinks(view, std::min(kProbeBytes, o.max_bytes), 5);
  std::set<std::string> nodes;
  for (const runtime::RankLink& l : report.links) nodes.insert(l.node);
  report.nodes = static_cast<int>(nodes.size());
  int64_t wrong = 0;
  for (const runtime::CollectiveResult& c : report.results) wrong += c.wrong;
  if (view.control->rank() != 0) return wrong == 0 ? kExitOk : kExitFailed;

  const std::string markdown = Markdown(o, report);
  std::fputs(markdown.c_str(), stdout);
  std::fflush(stdout);
  int code = kExitOk;
  if (wrong > 0) {
    Say(fmt::format("{} element(s) of the checked results were wrong (column 'wrong')", wrong));
    code = kExitFailed;
  }
  for (const auto& [flag, path, text] :
       {std::tuple<const char*, const std::string&, std::string>{
            "json", o.json_path, json::DumpIndented(Json(o, report), 4) + "\n"},
        {"markdown", o.markdown_path, markdown}}) {
    if (path.empty()) continue;
    if (absl::Status s = base::WriteOutput(path, text); !s.ok()) {
      Say(fmt::format("--{}={}: {}", flag, path, std::string(s.message())));
      code = kExitFailed;
    }
  }
  return code;
}

}  // namespace mlperf::throughput
