#include "logging/mllog.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "base/environment.h"
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

bool WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

}  // namespace

int RankFromEnvironment() {
  for (const char* name :
       {"RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    if (const char* value = base::GetEnv(name); value != nullptr && *value != '\0') {
      return std::atoi(value);
    }
  }
  return 0;
}

int64_t NowMs() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

absl::StatusOr<std::unique_ptr<Logger>> Logger::Create(LoggerOptions options) {
  if (!options.root_dir) options.root_dir = MLPERF_SOURCE_ROOT;
  int fd = -1;
  if (options.enabled && !options.path.empty()) {
    // Append, never truncate: an earlier run's lines are never lost.
    fd = ::open(options.path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
      return absl::UnavailableError(
          fmt::format("{}: cannot open log file: {}", options.path, std::strerror(errno)));
    }
  }
  return std::unique_ptr<Logger>(new Logger(std::move(options), fd));
}

Logger::Logger(LoggerOptions options, int fd) : options_(std::move(options)), fd_(fd) {}

Logger::~Logger() {
  if (fd_ >= 0) ::close(fd_);
}

std::string Logger::FormatLine(const Record& record) const {
  // Python builds {"file", "lineno"} and then update()s it with the caller's
  // metadata, so caller keys replace those two in place and the rest follow.
  const json::Value* file = nullptr;
  const json::Value* lineno = nullptr;
  for (const auto& [k, v] : record.metadata) {
    if (k == meta::kFile) file = &v;
    if (k == meta::kLineno) lineno = &v;
  }

  std::string line;
  line.reserve(192);
  line += ":::MLLOG {\"namespace\": ";
  json::DumpStringTo(record.name_space ? *record.name_space : options_.default_namespace, line);
  fmt::format_to(std::back_inserter(line), ", \"time_ms\": {}, \"event_type\": \"{}\", \"key\": ",
                 record.time_ms.value_or(NowMs()), EventTypeName(record.type));
  json::DumpStringTo(record.key, line);
  line += ", \"value\": ";
  json::DumpTo(record.value, line);
  line += ", \"metadata\": {\"file\": ";
  if (file != nullptr) {
    json::DumpTo(*file, line);
  } else if (record.caller) {
    json::DumpStringTo(record.caller->first, line);
  } else {
    json::DumpStringTo(StripRoot(record.where.file_name(), *options_.root_dir), line);
  }
  line += ", \"lineno\": ";
  if (lineno != nullptr) {
    json::DumpTo(*lineno, line);
  } else {
    fmt::format_to(std::back_inserter(line), "{}",
                   record.caller ? record.caller->second : record.where.line());
  }
  for (const auto& [k, v] : record.metadata) {
    if (k == meta::kFile || k == meta::kLineno) continue;
    line += ", ";
    json::DumpStringTo(k, line);
    line += ": ";
    json::DumpTo(v, line);
  }
  line += "}}";
  return line;
}

void Logger::Log(const Record& record) {
  if (!options_.enabled) return;
  std::string line = FormatLine(record);
  if (record.clear_line) line.insert(0, "\n");
  line += '\n';
  std::lock_guard<std::mutex> lock(mutex_);
  // One write(2) per line, no user-space buffer: the line is in the kernel's
  // hands before Log returns, so a crash of this process cannot lose it.
  if (fd_ >= 0) {
    const bool written = WriteAll(fd_, line);
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
