// The layout of a training submission (spec 7.1): organisation folders with
// systems/<system>.json and results/<system>/<benchmark>/result_*.txt, and
// what a command-line path names within it. Reading is defensive: listings
// never follow a path deeper than the layout needs (symlink loops cannot
// hang us), files have size limits, and names are shown even when they are
// not UTF-8.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "logging/mllog_parser.h"

namespace mlperf::package {

enum class PathKind {
  kLogFile,         // anything that is not a directory
  kBenchmarkDir,    // <org>/results/<system>/<benchmark>
  kSystemDir,       // <org>/results/<system>
  kOrganization,    // has systems/ and results/
  kSubmissionRoot,  // holds organisation folders (directly, or in vN.M round folders)
};

struct PathTarget {
  PathKind kind = PathKind::kLogFile;
  std::filesystem::path path;  // as given
  // For directory kinds: the organisation folders it covers, and for a
  // benchmark or system directory the part of the organisation to check.
  std::vector<std::filesystem::path> organizations;
  std::optional<std::string> only_system;
  std::optional<std::string> only_benchmark;
  // For a root: folders that look like submissions but cannot be checked
  // (results/ without systems/, a round folder that cannot be listed), each
  // as "<path>: why". They fail the check instead of being skipped.
  std::vector<std::pair<std::filesystem::path, std::string>> unchecked;
};

// What `path` names; an error for a path that does not exist or a directory
// that is none of the above (the message says what was expected).
absl::StatusOr<PathTarget> ClassifyPath(const std::filesystem::path& path);

bool IsOrganization(const std::filesystem::path& dir);

struct DirEntry {
  std::string name;  // raw bytes
  bool is_dir = false;
  bool is_regular = false;
  bool is_symlink = false;
  std::string error;  // why the entry could not be examined (a symlink loop, permissions)
};

// The entries of `dir` sorted by name (bytes), or why it cannot be listed.
absl::StatusOr<std::vector<DirEntry>> ListDir(const std::filesystem::path& dir);

// Whether `path` is a regular file of at most `max_bytes` (a sparse multi-GB
// file is refused from its size, without reading it); the error says why not.
absl::Status CheckFileLimited(const std::filesystem::path& path, uint64_t max_bytes);

// Reads a whole file that passes CheckFileLimited.
absl::StatusOr<std::string> ReadFileLimited(const std::filesystem::path& path, uint64_t max_bytes);

// Params files, scaling.json and privateid.json: real ones are a few bytes;
// a far larger one is refused from its size, never read.
inline constexpr uint64_t kMaxSmallFileBytes = 16ull << 20;
// The largest result log read (the biggest published ones are a few MB).
inline constexpr uint64_t kMaxResultLogBytes = 512ull << 20;
// Real system descriptions are about 2 KB; a parsed JSON tree takes up to
// ~100 bytes per element, so a larger cap would let one file take gigabytes.
inline constexpr uint64_t kMaxSystemDescBytes = 1ull << 20;

// A result log parsed as every package reader takes it: a regular file of at
// most kMaxResultLogBytes (never a FIFO or device waited on), streamed.
absl::StatusOr<mllog::ParsedLog> ParseResultLog(const std::filesystem::path& path);

// The name for messages and JSON: valid UTF-8 as is; other bytes as \xNN.
std::string DisplayName(const std::string& raw);
std::string DisplayPath(const std::filesystem::path& path);

// Result logs are result_*.txt, as the official glob has it.
bool IsResultLogName(const std::string& name);

// The ruleset a path implies through a round folder such as "v3.0" or
// "training_results_v5.0" (an ancestor or the folder itself): "3.0.0".
std::optional<std::string> RulesetFromPath(const std::filesystem::path& path);

}  // namespace mlperf::package
