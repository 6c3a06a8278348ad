#include "checker/package/layout.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <regex>

#include "fmt/format.h"

namespace mlperf::package {
namespace {

namespace fs = std::filesystem;

bool IsDir(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}

// Valid UTF-8 (no overlongs, no surrogates) of `s` starting at `i`; the
// sequence length, or 0.
size_t Utf8Length(const std::string& s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) return 1;
  size_t n = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c < 0xE0 ? 2 : 0;
  if (n == 0 || (c >= 0xF0 && n != 4) || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
  }
  if (n == 3 && c == 0xE0 && b(i + 1) < 0xA0) return 0;
  if (n == 3 && c == 0xED && b(i + 1) >= 0xA0) return 0;
  if (n == 4 && c == 0xF0 && b(i + 1) < 0x90) return 0;
  if (n == 4 && c == 0xF4 && b(i + 1) >= 0x90) return 0;
  return n;
}

}  // namespace

std::string DisplayName(const std::string& raw) {
  std::string out;
  for (size_t i = 0; i < raw.size();) {
    const size_t n = Utf8Length(raw, i);
    if (n == 0) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(raw[i]));
      ++i;
    } else {
      out.append(raw, i, n);
      i += n;
    }
  }
  return out;
}

std::string DisplayPath(const fs::path& path) { return DisplayName(path.string()); }

bool IsResultLogName(const std::string& name) {
  return name.size() >= 11 && name.starts_with("result_") && name.ends_with(".txt");
}

bool IsOrganization(const fs::path& dir) {
  return IsDir(dir / "systems") && IsDir(dir / "results");
}

absl::StatusOr<std::vector<DirEntry>> ListDir(const fs::path& dir) {
  std::vector<DirEntry> out;
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec)
    return absl::NotFoundError(fmt::format("{}: cannot list: {}", DisplayPath(dir), ec.message()));
  for (fs::directory_iterator end; it != end; it.increment(ec)) {
    if (ec)
      return absl::InternalError(
          fmt::format("{}: listing failed: {}", DisplayPath(dir), ec.message()));
    DirEntry e;
    e.name = it->path().filename().string();
    std::error_code sec;
    e.is_symlink = it->is_symlink(sec);
    fs::file_status st = fs::status(it->path(), sec);
    if (sec) {
      e.error = sec.message();
    } else {
      e.is_dir = fs::is_directory(st);
      e.is_regular = fs::is_regular_file(st);
    }
    out.push_back(std::move(e));
  }
  std::sort(out.begin(), out.end(),
            [](const DirEntry& a, const DirEntry& b) { return a.name < b.name; });
  return out;
}

absl::Status CheckFileLimited(const fs::path& path, uint64_t max_bytes) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec) return absl::NotFoundError(fmt::format("{}: {}", DisplayPath(path), ec.message()));
  if (!fs::is_regular_file(st))
    return absl::InvalidArgumentError(fmt::format("{}: not a regular file", DisplayPath(path)));
  const uint64_t size = fs::file_size(path, ec);
  if (ec) return absl::InternalError(fmt::format("{}: {}", DisplayPath(path), ec.message()));
  if (size > max_bytes) {
    return absl::InvalidArgumentError(
        fmt::format("{}: {} bytes, more than the {} bytes allowed for this file", DisplayPath(path),
                    size, max_bytes));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadFileLimited(const fs::path& path, uint64_t max_bytes) {
  if (absl::Status s = CheckFileLimited(path, max_bytes); !s.ok()) return s;
  std::error_code ec;
  const uint64_t size = fs::file_size(path, ec);
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return absl::PermissionDeniedError(
        fmt::format("{}: cannot open for reading", DisplayPath(path)));
  std::string text(size, '\0');
  in.read(text.data(), static_cast<std::streamsize>(size));
  text.resize(static_cast<size_t>(in.gcount()));
  if (in.bad()) return absl::InternalError(fmt::format("{}: read error", DisplayPath(path)));
  return text;
}

absl::StatusOr<mllog::ParsedLog> ParseResultLog(const fs::path& path) {
  if (absl::Status s = CheckFileLimited(path, kMaxResultLogBytes); !s.ok()) return s;
  return mllog::ParseFile(path.string());
}

std::optional<std::string> RulesetFromPath(const fs::path& path) {
  static const std::regex kRound(R"((?:.*_)?v(\d+)\.(\d+))");
  std::error_code ec;
  fs::path abs = fs::absolute(path, ec).lexically_normal();
  if (ec) abs = path;
  for (fs::path p = abs; !p.empty(); p = p.parent_path()) {
    std::smatch m;
    const std::string name = p.filename().string();
    if (std::regex_match(name, m, kRound)) return fmt::format("{}.{}.0", m[1].str(), m[2].str());
    if (p == p.parent_path()) break;
  }
  return std::nullopt;
}

absl::StatusOr<PathTarget> ClassifyPath(const fs::path& path) {
  PathTarget t;
  t.path = path;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) {
    return absl::NotFoundError(
        fmt::format("{}: {}", DisplayPath(path), ec ? ec.message() : "no such file"));
  }
  if (!fs::is_directory(st)) {
    t.kind = PathKind::kLogFile;
    return t;
  }
  if (IsOrganization(path)) {
    t.kind = PathKind::kOrganization;
    t.organizations = {path};
    return t;
  }
  // results/<system>[/<benchmark>] inside an organisation folder.
  const fs::path abs = fs::absolute(path, ec).lexically_normal();
  const fs::path clean = abs.filename().empty() ? abs.parent_path() : abs;
  const fs::path parent = clean.parent_path();
  if (parent.filename() == "results" && IsOrganization(parent.parent_path())) {
    t.kind = PathKind::kSystemDir;
    t.organizations = {parent.parent_path()};
    t.only_system = clean.filename().string();
    return t;
  }
  if (parent.parent_path().filename() == "results" &&
      IsOrganization(parent.parent_path().parent_path())) {
    t.kind = PathKind::kBenchmarkDir;
    t.organizations = {parent.parent_path().parent_path()};
    t.only_system = parent.filename().string();
    t.only_benchmark = clean.filename().string();
    return t;
  }
  // A root: organisation folders one level down, or two through a round
  // folder. A folder with only one of systems/ and results/ is a submission
  // that cannot be checked: named, never skipped.
  const auto take = [&t](const fs::path& dir) {
    if (IsOrganization(dir)) {
      t.organizations.push_back(dir);
      return true;
    }
    std::error_code ec;
    const bool systems = fs::exists(fs::symlink_status(dir / "systems", ec));
    const bool results = fs::exists(fs::symlink_status(dir / "results", ec));
    if (!systems && !results) return false;
    t.unchecked.emplace_back(
        dir, fmt::format("{}: a submission needs both systems/ and results/ folders; {} not "
                         "checked",
                         DisplayPath(dir),
                         IsDir(dir / "results")   ? "no systems/ folder, so its results are"
                         : IsDir(dir / "systems") ? "no results/ folder, so nothing is"
                                                  : "neither is a folder, so nothing is"));
    return true;
  };
  absl::StatusOr<std::vector<DirEntry>> entries = ListDir(path);
  if (!entries.ok()) return entries.status();
  for (const DirEntry& e : *entries) {
    if (!e.is_dir || take(path / e.name)) continue;
    // Two levels down only through a round folder ("v3.0/NVIDIA"), so that
    // an unrelated folder is not mistaken for a root.
    static const std::regex kRoundFolder(R"((?:.*_)?v\d+\.\d+)");
    if (!std::regex_match(e.name, kRoundFolder)) continue;
    absl::StatusOr<std::vector<DirEntry>> inner = ListDir(path / e.name);
    if (!inner.ok()) {
      t.unchecked.emplace_back(path / e.name, std::string(inner.status().message()));
      continue;
    }
    for (const DirEntry& f : *inner) {
      if (f.is_dir) take(path / e.name / f.name);
    }
  }
  if (t.organizations.empty() && t.unchecked.empty()) {
    return absl::InvalidArgumentError(fmt::format(
        "{}: is a directory but not a submission: expected an organisation folder (with systems/ "
        "and "
        "results/), a results/<system>[/<benchmark>] folder inside one, or a folder holding "
        "organisation folders",
        DisplayPath(path)));
  }
  t.kind = PathKind::kSubmissionRoot;
  return t;
}

}  // namespace mlperf::package
