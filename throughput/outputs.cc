#include "throughput/outputs.h"

#include <filesystem>

#include "base/files.h"
#include "base/output.h"
#include "fmt/format.h"
#include "throughput/charts.h"
#include "throughput/dllogger.h"

namespace mlperf::throughput {
namespace {

namespace fs = std::filesystem;

absl::Status Write(const std::string& flag, const fs::path& path, std::string_view text) {
  absl::Status s = base::WriteOutput(path, text);
  if (s.ok()) return s;
  return absl::Status(s.code(),
                      fmt::format("--{}={}: {}", flag, path.string(), std::string(s.message())));
}

}  // namespace

absl::Status WriteOutputs(const Job& job) {
  const BenchOptions& o = job.options;
  if (!o.json_path.empty()) {
    if (absl::Status s = Write("json", o.json_path, json::DumpIndented(JsonReport(job), 4) + "\n");
        !s.ok())
      return s;
  }
  if (!o.dllogger_path.empty()) {
    if (absl::Status s = Write("dllogger", o.dllogger_path, DlloggerLines(job)); !s.ok()) return s;
  }
  if (!o.markdown_path.empty()) {
    if (absl::Status s = Write("markdown", o.markdown_path, MarkdownReport(job)); !s.ok()) return s;
  }
  if (!o.plot_dir.empty()) {
    for (const auto& [name, svg] : Charts(job)) {
      if (absl::Status s = Write("plot", fs::path(o.plot_dir) / name, svg); !s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

absl::Status CheckOutputs(const BenchOptions& o, base::OutputGuard& guard) {
  if (o.data == DataMode::kData) guard.AddInput(o.data_dir);
  if (!o.cache_dir.empty()) guard.AddInput(o.cache_dir);
  for (const auto& [flag, path] : {std::pair<const char*, const std::string&>{"json", o.json_path},
                                   {"dllogger", o.dllogger_path},
                                   {"markdown", o.markdown_path}}) {
    if (path.empty()) continue;
    if (absl::Status s = guard.Claim(flag, path); !s.ok()) return s;
  }
  if (!o.plot_dir.empty()) {
    for (const std::string& input : {o.data == DataMode::kData ? o.data_dir : "", o.cache_dir}) {
      if (!input.empty() && base::IsWithin(o.plot_dir, input)) {
        return absl::InvalidArgumentError(fmt::format(
            "--plot={}: lies inside the input {}; write it elsewhere", o.plot_dir, input));
      }
    }
    std::error_code ec;
    fs::create_directories(o.plot_dir, ec);
    if (ec || !fs::is_directory(o.plot_dir, ec)) {
      return absl::InvalidArgumentError(fmt::format(
          "--plot={}: {}", o.plot_dir, ec ? ec.message() : std::string("not a folder")));
    }
  }
  return absl::OkStatus();
}

}  // namespace mlperf::throughput
