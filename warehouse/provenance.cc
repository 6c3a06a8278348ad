#include "warehouse/provenance.h"

#include <openssl/evp.h>

#include <algorithm>
#include <fstream>
#include <memory>
#include <vector>

#include "base/parallel_for.h"
#include "checker/package/layout.h"
#include "fmt/format.h"

namespace mlperf::warehouse {
namespace fs = std::filesystem;
namespace {

// Packages are small trees; a walk past this many files is not one.
constexpr size_t kMaxFiles = 1'000'000;

struct DigestDeleter {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};

std::string Hex(const unsigned char* bytes, unsigned n) {
  std::string out;
  out.reserve(2 * n);
  for (unsigned i = 0; i < n; ++i) out += fmt::format("{:02x}", bytes[i]);
  return out;
}

class Sha256 {
 public:
  Sha256() : ctx_(EVP_MD_CTX_new()) { EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr); }
  void Update(const void* data, size_t n) { EVP_DigestUpdate(ctx_.get(), data, n); }
  std::string HexDigest() {
    unsigned char out[EVP_MAX_MD_SIZE];
    unsigned n = 0;
    EVP_DigestFinal_ex(ctx_.get(), out, &n);
    return Hex(out, n);
  }

 private:
  std::unique_ptr<EVP_MD_CTX, DigestDeleter> ctx_;
};

std::string ReadFirstLine(const fs::path& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
  return line;
}

bool IsCommitId(const std::string& s) {
  return s.size() == 40 && std::all_of(s.begin(), s.end(), [](char c) {
           return std::isxdigit(static_cast<unsigned char>(c));
         });
}

}  // namespace

absl::StatusOr<std::string> FileSha256(const fs::path& path) {
  // The same refusals as the checker's reads: no FIFO waited on, no device.
  if (absl::Status s = package::CheckFileLimited(path, package::kMaxResultLogBytes); !s.ok())
    return s;
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(fmt::format("{}: cannot open", package::DisplayPath(path)));
  Sha256 sha;
  std::vector<char> block(1 << 20);
  while (in) {
    in.read(block.data(), static_cast<std::streamsize>(block.size()));
    sha.Update(block.data(), static_cast<size_t>(in.gcount()));
  }
  if (in.bad())
    return absl::DataLossError(fmt::format("{}: read error", package::DisplayPath(path)));
  return sha.HexDigest();
}

absl::StatusOr<PackageDigest> DigestPackage(const fs::path& org, int threads) {
  std::vector<fs::path> files;
  std::error_code ec;
  fs::recursive_directory_iterator it(org, fs::directory_options::skip_permission_denied, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    // An entry that cannot be examined (a link that loops) is no file to
    // hash; the checker reports it.
    std::error_code entry_ec;
    if (it->is_regular_file(entry_ec)) files.push_back(it->path());
    if (files.size() > kMaxFiles)
      return absl::InvalidArgumentError(
          fmt::format("{}: more than {} files", package::DisplayPath(org), kMaxFiles));
  }
  if (ec)
    return absl::InvalidArgumentError(
        fmt::format("{}: {}", package::DisplayPath(org), ec.message()));
  std::sort(files.begin(), files.end());
  std::vector<absl::StatusOr<std::string>> hashes(files.size(), std::string());
  base::ParallelFor(files.size(), threads, [&](size_t i) { hashes[i] = FileSha256(files[i]); });
  PackageDigest d;
  Sha256 whole;
  for (size_t i = 0; i < files.size(); ++i) {
    if (!hashes[i].ok()) return hashes[i].status();
    const std::string rel = files[i].lexically_relative(org).generic_string();
    whole.Update(rel.data(), rel.size() + 1);  // with its terminating NUL
    whole.Update(hashes[i]->data(), hashes[i]->size());
    d.bytes += static_cast<int64_t>(fs::file_size(files[i], ec));
    d.files.emplace(rel, *std::move(hashes[i]));
  }
  d.sha256 = whole.HexDigest();
  return d;
}

std::optional<std::string> RepoCommit(const fs::path& path) {
  std::error_code ec;
  for (fs::path dir = fs::absolute(path, ec); !dir.empty(); dir = dir.parent_path()) {
    const fs::path git = dir / ".git";
    if (fs::is_directory(git, ec)) {
      const std::string head = ReadFirstLine(git / "HEAD");
      if (IsCommitId(head)) return head;  // a detached HEAD
      if (!head.starts_with("ref: ")) return std::nullopt;
      const std::string ref = head.substr(5);
      if (std::string id = ReadFirstLine(git / ref); IsCommitId(id)) return id;
      std::ifstream packed(git / "packed-refs");
      for (std::string line; std::getline(packed, line);) {
        if (line.size() > 41 && line.substr(41) == ref && IsCommitId(line.substr(0, 40)))
          return line.substr(0, 40);
      }
      return std::nullopt;
    }
    if (dir == dir.root_path()) break;
  }
  return std::nullopt;
}

}  // namespace mlperf::warehouse
