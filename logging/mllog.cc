#include "logging/mllog.h"

#include <cerrno>
#include <chrono>
#include <cstring>

#include "fmt/format.h"

namespace mlperf::mllog {
namespace {

std::string_view EventTypeName(EventType type) {
  switch (type) {
    case EventType::kIntervalStart:
      return "INTERVAL_START";
    case EventType::kIntervalEnd:
      return "INTERVAL_END";
    case EventType::kPointInTime:
      return "POINT_IN_TIME";
  }
  return "POINT_IN_TIME";
}

std::string_view StripRoot(std::string_view file, const std::string& root) {
  if (root.empty() || file.substr(0, root.size()) != root) return file;
  file.remove_prefix(root.size());
  if (!file.empty() && file.front() == '/') file.remove_prefix(1);
  return file;
}

}  // namespace

int64_t NowMs() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

absl::StatusOr<std::unique_ptr<Logger>> Logger::Create(LoggerOptions options) {
  if (!options.root_dir) options.root_dir = MLPERF_SOURCE_ROOT;
  std::FILE* file = nullptr;
  if (options.enabled && !options.path.empty()) {
    // Append, never truncate: an earlier run's lines are never lost.
    file = std::fopen(options.path.c_str(), "a");
    if (file == nullptr) {
      return absl::UnavailableError(
          fmt::format("{}: cannot open log file: {}", options.path, std::strerror(errno)));
    }
  }
  return std::unique_ptr<Logger>(new Logger(std::move(options), file));
}

Logger::Logger(LoggerOptions options, std::FILE* file) : options_(std::move(options)), file_(file) {}

Logger::~Logger() {
  if (file_ != nullptr) std::fclose(file_);
}

std::string Logger::FormatLine(const Record& record) const {
  json::Value metadata(
      record.caller
          ? json::Object{{"file", record.caller->first}, {"lineno", record.caller->second}}
          : json::Object{
                {"file", std::string(StripRoot(record.where.file_name(), *options_.root_dir))},
                {"lineno", static_cast<int64_t>(record.where.line())},
            });
  for (const auto& [k, v] : record.metadata) metadata.Set(k, v);

  std::string line;
  line.reserve(160);
  line += ":::MLLOG {\"namespace\": ";
  json::DumpTo(json::Value(record.name_space.value_or(options_.default_namespace)), line);
  fmt::format_to(std::back_inserter(line), ", \"time_ms\": {}, \"event_type\": \"{}\", \"key\": ",
                 record.time_ms.value_or(NowMs()), EventTypeName(record.type));
  json::DumpTo(json::Value(record.key), line);
  line += ", \"value\": ";
  json::DumpTo(record.value, line);
  line += ", \"metadata\": ";
  json::DumpTo(metadata, line);
  line += '}';
  return line;
}

void Logger::Log(const Record& record) {
  if (!options_.enabled) return;
  std::string line = FormatLine(record);
  if (record.clear_line) line.insert(0, "\n");
  line += '\n';
  std::lock_guard<std::mutex> lock(mutex_);
  if (file_ != nullptr) {
    const bool written = std::fwrite(line.data(), 1, line.size(), file_) == line.size() &&
                         std::fflush(file_) == 0;
    if (!written && status_.ok()) {
      status_ = absl::DataLossError(
          fmt::format("{}: cannot write log line: {}", options_.path, std::strerror(errno)));
    }
  }
  if (options_.stream != nullptr) {
    options_.stream->write(line.data(), static_cast<std::streamsize>(line.size()));
    options_.stream->flush();
  }
}

absl::Status Logger::status() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return status_;
}

}  // namespace mlperf::mllog
