#include "datasets/index_cache.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <istream>
#include <set>
#include <system_error>
#include <vector>

#include "base/crc32c.h"
#include "base/files.h"
#include "base/parallel_for.h"

namespace mlperf::datasets {
namespace fs = std::filesystem;
namespace {

constexpr std::string_view kMagic = "MLPERF-INDEX 1\n";

// What an index was built from, as it was then: a missing path has
// exists = false (a labels file that may appear later).
struct Stamp {
  std::string path;
  bool exists = false;
  uint64_t size = 0;  // regular files only
  int64_t mtime = 0;  // the file clock's ticks
  bool operator==(const Stamp&) const = default;
};

Stamp StampOf(const std::string& path) {
  Stamp s{.path = path};
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) return s;
  s.exists = true;
  if (fs::is_regular_file(st)) s.size = fs::file_size(path, ec);
  s.mtime = fs::last_write_time(path, ec).time_since_epoch().count();
  return s;
}

// The paths an index of `root` depends on: the listed directories and the
// labels files (an image folder), or the root and every shard (TFRecord).
std::vector<std::string> Inputs(const DatasetIndex& index, const std::string& root, Split split) {
  std::set<std::string> paths{root};
  if (index.format == DatasetFormat::kTfRecord) {
    paths.insert(index.files.begin(), index.files.end());
  } else {
    paths.insert((fs::path(root) / (split == Split::kTrain ? "train" : "val")).string());
    for (const std::string& f : index.files) paths.insert(fs::path(f).parent_path().string());
    if (split == Split::kVal) {
      paths.insert((fs::path(root) / "val_labels.txt").string());
      paths.insert((fs::path(root) / "LOC_val_solution.csv").string());
    }
  }
  return {paths.begin(), paths.end()};
}

void Put(std::string* out, uint64_t v) {
  char b[8];
  for (int i = 0; i < 8; ++i) b[i] = static_cast<char>(v >> (8 * i));
  out->append(b, 8);
}
void Put(std::string* out, std::string_view s) {
  Put(out, s.size());
  out->append(s);
}

// An index may be gigabytes (BERT's training set), so it is read through
// a buffer, never whole: the first `limit` bytes of `in`, bounds-checked (a
// read past them sets `bad`).
constexpr size_t kChunk = size_t{1} << 20;

class Cursor {
 public:
  Cursor(std::istream& in, uint64_t limit) : in_(in), left_(limit) {}
  bool bad = false;
  uint64_t remaining() const { return left_ + (buf_.size() - at_); }
  void Read(char* out, uint64_t n) {
    while (n > 0 && !bad) {
      if (at_ == buf_.size() && !Refill()) {
        bad = true;
        return;
      }
      const size_t k = static_cast<size_t>(std::min<uint64_t>(n, buf_.size() - at_));
      std::memcpy(out, buf_.data() + at_, k);
      at_ += k;
      out += k;
      n -= k;
    }
  }
  uint64_t U64() {
    unsigned char b[8] = {};
    Read(reinterpret_cast<char*>(b), 8);
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= uint64_t{b[i]} << (8 * i);
    return v;
  }
  std::string Str() {
    const uint64_t n = U64();
    if (bad || n > remaining()) {
      bad = true;
      return {};
    }
    std::string s(static_cast<size_t>(n), '\0');
    Read(s.data(), n);
    return s;
  }

 private:
  bool Refill() {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(left_, kChunk));
    if (n == 0) return false;
    buf_.resize(n);
    in_.read(buf_.data(), static_cast<std::streamsize>(n));
    if (in_.gcount() != static_cast<std::streamsize>(n)) return false;
    left_ -= n;
    at_ = 0;
    return true;
  }
  std::istream& in_;
  uint64_t left_;
  std::string buf_;
  size_t at_ = 0;
};

// Whether the CRC-32C of the first `size - 8` bytes is the one stored in
// the last 8, read in chunks.
bool CrcMatches(std::istream& in, uint64_t size) {
  Cursor c(in, size);
  uint32_t crc = 0;
  std::string chunk;
  for (uint64_t left = size - 8; left > 0;) {
    chunk.resize(static_cast<size_t>(std::min<uint64_t>(left, kChunk)));
    c.Read(chunk.data(), chunk.size());
    if (c.bad) return false;
    crc = base::Crc32cExtend(crc, chunk.data(), chunk.size());
    left -= chunk.size();
  }
  return c.U64() == crc && !c.bad;
}

std::string Canonical(const std::string& root) {
  std::error_code ec;
  const fs::path p = fs::weakly_canonical(root, ec);
  return ec ? root : p.string();
}

}  // namespace

absl::Status WriteIndexFile(const DatasetIndex& index, const std::string& root, Split split,
                            const std::string& path) {
  std::string out(kMagic);
  Put(&out, Canonical(root));
  Put(&out, static_cast<uint64_t>(split));
  Put(&out, static_cast<uint64_t>(index.format));
  Put(&out, static_cast<uint64_t>(index.num_classes));
  const std::vector<std::string> inputs = Inputs(index, root, split);
  Put(&out, inputs.size());
  for (const std::string& p : inputs) {
    const Stamp s = StampOf(p);
    Put(&out, s.path);
    Put(&out, s.exists ? 1 : 0);
    Put(&out, s.size);
    Put(&out, static_cast<uint64_t>(s.mtime));
  }
  Put(&out, index.files.size());
  for (const std::string& f : index.files) Put(&out, f);
  Put(&out, index.class_names.size());
  for (const std::string& c : index.class_names) Put(&out, c);
  Put(&out, index.entries.size());
  for (const IndexEntry& e : index.entries) {
    Put(&out, static_cast<uint64_t>(static_cast<uint32_t>(e.file)) |
                  static_cast<uint64_t>(static_cast<uint32_t>(e.label)) << 32);
    Put(&out, e.offset);
    Put(&out, e.length);
  }
  Put(&out, base::Crc32c(out));
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  return base::WriteFileAtomically(path, out);
}

absl::StatusOr<DatasetIndex> ReadIndexFile(const std::string& path, const std::string& root,
                                           Split split) {
  std::ifstream in(path, std::ios::binary);
  std::error_code ec;
  const uint64_t size = fs::file_size(path, ec);
  if (!in || ec) return absl::NotFoundError(fmt::format("{}: no index file", path));
  const auto corrupt = [&] {
    return absl::DataLossError(fmt::format("{}: corrupt index file", path));
  };
  // The checksum first, so that damage is never read as a stale index.
  if (size < kMagic.size() + 8 || !CrcMatches(in, size)) return corrupt();
  in.clear();
  in.seekg(0);
  Cursor c(in, size - 8);
  std::string magic(kMagic.size(), '\0');
  c.Read(magic.data(), magic.size());
  if (magic != kMagic) return corrupt();
  const std::string built_for = c.Str();
  const uint64_t built_split = c.U64();
  DatasetIndex index;
  index.format = static_cast<DatasetFormat>(c.U64());
  index.num_classes = static_cast<int>(c.U64());
  if (c.bad) return corrupt();
  if (built_for != Canonical(root) || built_split != static_cast<uint64_t>(split)) {
    return absl::FailedPreconditionError(
        fmt::format("{}: the index of another data set or split ({})", path, built_for));
  }
  for (uint64_t n = c.U64(); n > 0 && !c.bad; --n) {
    Stamp s{.path = c.Str()};
    s.exists = c.U64() != 0;
    s.size = c.U64();
    s.mtime = static_cast<int64_t>(c.U64());
    if (!c.bad && !(StampOf(s.path) == s)) {
      return absl::FailedPreconditionError(
          fmt::format("{}: stale, {} changed since it was indexed", path, s.path));
    }
  }
  for (uint64_t n = c.U64(); n > 0 && !c.bad; --n) index.files.push_back(c.Str());
  for (uint64_t n = c.U64(); n > 0 && !c.bad; --n) index.class_names.push_back(c.Str());
  const uint64_t entries = c.U64();
  if (c.bad || entries > c.remaining() / 24) return corrupt();
  index.entries.resize(entries);
  for (IndexEntry& e : index.entries) {
    const uint64_t packed = c.U64();
    e.file = static_cast<int32_t>(static_cast<uint32_t>(packed));
    e.label = static_cast<int32_t>(static_cast<uint32_t>(packed >> 32));
    e.offset = c.U64();
    e.length = c.U64();
    if (e.file < 0 || static_cast<size_t>(e.file) >= index.files.size()) return corrupt();
  }
  if (c.bad || c.remaining() != 0) return corrupt();
  return index;
}

absl::StatusOr<DatasetIndex> CachedIndex(const std::string& root, DatasetFormat format, Split split,
                                         int num_classes, const std::string& path) {
  absl::StatusOr<DatasetIndex> cached = ReadIndexFile(path, root, split);
  if (cached.ok() && (format == DatasetFormat::kAuto || cached->format == format) &&
      (num_classes <= 0 || cached->num_classes == num_classes))
    return cached;
  if (format == DatasetFormat::kAuto) {
    absl::StatusOr<DatasetFormat> detected = DetectFormat(root);
    if (!detected.ok()) return detected.status();
    format = *detected;
  }
  absl::StatusOr<DatasetIndex> fresh = format == DatasetFormat::kImageFolder
                                           ? IndexImageFolder(root, split)
                                           : IndexTfRecords(root, split, num_classes);
  if (fresh.ok()) WriteIndexFile(*fresh, root, split, path).IgnoreError();
  return fresh;
}

absl::StatusOr<DatasetIndex> IndexRecordFiles(const std::vector<std::string>& files,
                                              const RecordWalker& walk, int threads) {
  std::vector<absl::StatusOr<std::vector<TfRecordLocation>>> walked(
      files.size(), absl::UnknownError("not walked"));
  base::ParallelFor(files.size(), threads, [&](size_t i) { walked[i] = walk(files[i]); });
  DatasetIndex index;
  index.format = DatasetFormat::kTfRecord;
  index.files = files;
  for (size_t f = 0; f < files.size(); ++f) {
    if (!walked[f].ok()) return walked[f].status();
    for (const TfRecordLocation& loc : *walked[f])
      index.entries.push_back({static_cast<int32_t>(f), -1, loc.offset, loc.length});
    walked[f]->clear();
    walked[f]->shrink_to_fit();
  }
  return index;
}

absl::StatusOr<DatasetIndex> CachedRecordIndex(const std::string& root, Split split,
                                               const std::vector<std::string>& files,
                                               const RecordWalker& walk, int threads,
                                               const std::string& path) {
  absl::StatusOr<DatasetIndex> cached = ReadIndexFile(path, root, split);
  if (cached.ok() && cached->files == files) return cached;
  absl::StatusOr<DatasetIndex> fresh = IndexRecordFiles(files, walk, threads);
  if (fresh.ok()) WriteIndexFile(*fresh, root, split, path).IgnoreError();
  return fresh;
}

}  // namespace mlperf::datasets
