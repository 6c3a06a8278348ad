// Writes MLPerf log lines that are byte-identical to those of the official
// Python emitter for the same event:
//   :::MLLOG {"namespace": "", "time_ms": 1234567890123, "event_type": "POINT_IN_TIME",
//             "key": "seed", "value": 42, "metadata": {"file": "x.cc", "lineno": 7}}
// Thread-safe; every line is flushed as it is written, so a crash loses
// nothing logged before it.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <source_location>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/statusor.h"
#include "base/json.h"
#include "logging/mllog_keys.h"

namespace mlperf::mllog {

// This process's rank as the usual launchers export it (torchrun's RANK,
// OpenMPI, PMI/PMIx, Slurm), or 0 when none is set.
int RankFromEnvironment();

struct LoggerOptions {
  std::string path;                // append to this file ("" = no file)
  std::ostream* stream = nullptr;  // and/or write to this stream
  std::string default_namespace;
  // Stripped (with the following '/') from source file names in metadata.
  // Defaults to the project's source directory.
  std::optional<std::string> root_dir;
  // In a distributed run only rank 0 writes.
  bool enabled = RankFromEnvironment() == 0;
};

// One event, with everything the line depends on made explicit.
struct Record {
  EventType type = EventType::kPointInTime;
  std::string_view key;
  json::Value value;
  json::Object metadata;                  // merged over {"file", "lineno"}; caller keys win
  std::optional<int64_t> time_ms;         // default: the wall clock, truncated to ms
  std::optional<std::string> name_space;  // default: the logger's namespace
  bool clear_line = false;                // an empty line before this one
  std::source_location where = std::source_location::current();
  // Replaces `where` when set: for replaying events recorded elsewhere.
  std::optional<std::pair<std::string, int64_t>> caller;
};

class Logger {
 public:
  static absl::StatusOr<std::unique_ptr<Logger>> Create(LoggerOptions options);
  ~Logger();
  Logger(const Logger&) = delete;
  Logger& operator=(const Logger&) = delete;

  void Start(std::string_view key, json::Value value = nullptr, json::Object metadata = {},
             std::source_location where = std::source_location::current()) {
    Log(Simple(EventType::kIntervalStart, key, std::move(value), std::move(metadata), where));
  }
  void End(std::string_view key, json::Value value = nullptr, json::Object metadata = {},
           std::source_location where = std::source_location::current()) {
    Log(Simple(EventType::kIntervalEnd, key, std::move(value), std::move(metadata), where));
  }
  void Event(std::string_view key, json::Value value = nullptr, json::Object metadata = {},
             std::source_location where = std::source_location::current()) {
    Log(Simple(EventType::kPointInTime, key, std::move(value), std::move(metadata), where));
  }
  void Log(const Record& record);

  // The line for a record, without the trailing newline.
  std::string FormatLine(const Record& record) const;

  bool enabled() const { return options_.enabled; }
  // Ok, or the first write error (a full disk, say): training code checks it
  // at run_stop so that a log with missing lines is never taken as complete.
  absl::Status status() const;

 private:
  static Record Simple(EventType type, std::string_view key, json::Value value,
                       json::Object metadata, std::source_location where) {
    Record r;
    r.type = type;
    r.key = key;
    r.value = std::move(value);
    r.metadata = std::move(metadata);
    r.where = where;
    return r;
  }
  Logger(LoggerOptions options, int fd);

  LoggerOptions options_;
  int fd_;  // -1 when not writing to a file
  mutable std::mutex mutex_;
  absl::Status status_;
};

// Current wall-clock time as the official emitter stamps it.
int64_t NowMs();

}  // namespace mlperf::mllog
