#include "closed_division/package.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/status/statusor.h"
#include "base/files.h"
#include "base/output.h"
#include "fmt/format.h"

namespace mlperf::closed {
namespace fs = std::filesystem;

namespace {

// The package's own small files (system description, README).
absl::StatusOr<std::string> ReadFile(const fs::path& path) {
  return base::ReadSmallFile(path, 16 << 20);
}

// A different system in the package is refused before anything is written.
absl::Status CheckSameSystem(const PackagePaths& paths, const std::string& system_json) {
  std::error_code ec;
  if (!fs::exists(paths.system_json, ec)) return absl::OkStatus();
  absl::StatusOr<std::string> old = ReadFile(paths.system_json);
  if (!old.ok()) return old.status();
  if (*old == system_json) return absl::OkStatus();
  return absl::FailedPreconditionError(fmt::format(
      "{} exists and describes a different system; refusing to overwrite it: choose another "
      "--system or --out",
      paths.system_json.string()));
}

}  // namespace

fs::path PackagePaths::Result(int run) const {
  return result_dir / fmt::format("result_{}.txt", run);
}

fs::path PackagePaths::Incomplete(int run) const {
  return result_dir / fmt::format("result_{}.txt.incomplete", run);
}

PackagePaths MakePackagePaths(const std::string& out_dir, const std::string& submitter,
                              const std::string& system, const std::string& benchmark) {
  PackagePaths p;
  p.org = fs::path(out_dir) / submitter;
  p.result_dir = p.org / "results" / system / benchmark;
  p.system_json = p.org / "systems" / (system + ".json");
  p.readme = p.org / "README.md";
  return p;
}

absl::Status CheckNothingToOverwrite(const PackagePaths& paths, const std::string& system_json) {
  if (absl::Status s = CheckSameSystem(paths, system_json); !s.ok()) return s;
  std::error_code ec;
  if (!fs::exists(paths.result_dir, ec)) return absl::OkStatus();
  if (!fs::is_directory(paths.result_dir, ec)) {
    return absl::FailedPreconditionError(
        fmt::format("{}: exists and is not a folder", paths.result_dir.string()));
  }
  std::vector<std::string> found;
  for (fs::directory_iterator it(paths.result_dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.starts_with("result_")) found.push_back(name);
  }
  if (ec) {
    return absl::FailedPreconditionError(
        fmt::format("{}: cannot list: {}", paths.result_dir.string(), ec.message()));
  }
  if (found.empty()) return absl::OkStatus();
  std::sort(found.begin(), found.end());
  return absl::FailedPreconditionError(fmt::format(
      "{} already holds {} ({} file(s)); refusing to overwrite earlier results: choose another "
      "--out or --system",
      paths.result_dir.string(), found.front(), found.size()));
}

absl::Status PreparePackage(const PackagePaths& paths, const std::string& system_json,
                            const std::string& readme_section) {
  std::error_code ec;
  auto make_dir = [&ec](const fs::path& dir) {
    fs::create_directories(dir, ec);
    return ec ? absl::PermissionDeniedError(fmt::format("{}: {}", dir.string(), ec.message()))
              : absl::OkStatus();
  };
  if (absl::Status s = CheckSameSystem(paths, system_json); !s.ok()) return s;
  if (!fs::exists(paths.system_json, ec)) {
    if (absl::Status s = make_dir(paths.system_json.parent_path()); !s.ok()) return s;
    if (absl::Status s = base::WriteOutput(paths.system_json, system_json); !s.ok()) return s;
  }
  if (absl::Status s = make_dir(paths.result_dir); !s.ok()) return s;
  std::string readme;
  if (fs::exists(paths.readme, ec)) {
    absl::StatusOr<std::string> old = ReadFile(paths.readme);
    if (!old.ok()) return old.status();
    if (old->find(readme_section) != std::string::npos) return absl::OkStatus();
    readme = *old + "\n";
  }
  return base::WriteOutput(paths.readme, readme + readme_section);
}

absl::Status CommitResult(const PackagePaths& paths, int run) {
  const fs::path from = paths.Incomplete(run), to = paths.Result(run);
  // link() fails when the target exists, unlike rename(): no overwrite, ever.
  if (::link(from.c_str(), to.c_str()) != 0) {
    return absl::FailedPreconditionError(fmt::format("cannot publish {} as {}: {}", from.string(),
                                                     to.string(), std::strerror(errno)));
  }
  if (::unlink(from.c_str()) != 0) {
    return absl::InternalError(fmt::format("{}: {}", from.string(), std::strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace mlperf::closed
