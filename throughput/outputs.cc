#include "throughput/outputs.h"

#include <filesystem>

#include "base/files.h"
#include "fmt/format.h"
#include "throughput/charts.h"
#include "throughput/dllogger.h"

namespace mlperf::throughput {
namespace {

namespace fs = std::filesystem;

absl::Status Write(const std::string& flag, const fs::path& path, std::string_view text) {
  absl::Status s = base::WriteFileAtomically(path, text);
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

absl::Status CheckOutputs(const BenchOptions& o) {
  for (const auto& [flag, path] : {std::pair<const char*, const std::string&>{"json", o.json_path},
                                   {"dllogger", o.dllogger_path},
                                   {"markdown", o.markdown_path}}) {
    if (path.empty()) continue;
    std::error_code ec;
    if (fs::is_directory(path, ec))
      return absl::InvalidArgumentError(fmt::format("--{}={}: is a folder", flag, path));
    const fs::path parent = fs::absolute(path, ec).parent_path();
    if (!fs::is_directory(parent, ec)) {
      return absl::InvalidArgumentError(
          fmt::format("--{}={}: no folder {}", flag, path, parent.string()));
    }
  }
  if (!o.plot_dir.empty()) {
    std::error_code ec;
    fs::create_directories(o.plot_dir, ec);
    if (ec || !fs::is_directory(o.plot_dir)) {
      return absl::InvalidArgumentError(fmt::format(
          "--plot={}: {}", o.plot_dir, ec ? ec.message() : std::string("not a folder")));
    }
  }
  return absl::OkStatus();
}

}  // namespace mlperf::throughput
