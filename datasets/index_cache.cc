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
#include <utility>
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
std::vector<std::string> Inputs(DatasetFormat format, const std::vector<std::string>& files,
                                const std::string& root, Split split) {
  std::set<std::string> paths{root};
  if (format == DatasetFormat::kTfRecord) {
    paths.insert(files.begin(), files.end());
  } else {
    paths.insert((fs::path(root) / (split == Split::kTrain ? "train" : "val")).string());
    for (const std::string& f : files) paths.insert(fs::path(f).parent_path().string());
    if (split == Split::kVal) {
      paths.insert((fs::path(root) / "val_labels.txt").string());
      paths.insert((fs::path(root) / "LOC_val_solution.csv").string());
    }
  }
  return {paths.begin(), paths.end()};
}

// An index may be gigabytes (BERT's training set), so it is written and
// read through a buffer, never whole.
constexpr size_t kChunk = size_t{1} << 20;

// Writes an index file through a buffer, with the CRC-32C of everything
// before it as the last 8 bytes.
class Writer {
 public:
  explicit Writer(const std::string& path) : file_(path) {}
  void Raw(std::string_view bytes) {
    buf_.append(bytes);
    if (buf_.size() >= kChunk) Flush();
  }
  void U64(uint64_t v) {
    char b[8];
    for (int i = 0; i < 8; ++i) b[i] = static_cast<char>(v >> (8 * i));
    Raw({b, 8});
  }
  void Str(std::string_view s) {
    U64(s.size());
    Raw(s);
  }
  void Entry(int32_t file, int32_t label, const TfRecordLocation& at) {
    U64(static_cast<uint64_t>(static_cast<uint32_t>(file)) |
        static_cast<uint64_t>(static_cast<uint32_t>(label)) << 32);
    U64(at.offset);
    U64(at.length);
  }
  absl::Status Finish() {
    Flush();
    const uint32_t crc = crc_;
    U64(crc);
    file_.Write(buf_);
    return file_.Commit();
  }

 private:
  void Flush() {
    crc_ = base::Crc32cExtend(crc_, buf_.data(), buf_.size());
    file_.Write(buf_);
    buf_.clear();
  }
  base::AtomicFileWriter file_;
  std::string buf_;
  uint32_t crc_ = 0;
};

// The first `limit` bytes of `in`, read through a buffer and
// bounds-checked (a read past them sets `bad`).

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

// What an index file says before its entries. Writing points at the
// caller's lists; reading fills `read_files` and `read_class_names`, which
// the header callback may take (an image folder lists 1.28M files, so they
// are never copied).
struct Header {
  DatasetFormat format = DatasetFormat::kImageFolder;
  int num_classes = 0;
  const std::vector<std::string>* files = nullptr;
  const std::vector<std::string>* class_names = nullptr;
  uint64_t entries = 0;
  std::vector<std::string> read_files, read_class_names;
};

// Streams an index file of `root`'s split: the header, then `put` writes
// its h.entries entries.
absl::Status WriteIndex(const std::string& path, const std::string& root, Split split,
                        const Header& h, const std::function<void(Writer&)>& put) {
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  Writer w(path);
  w.Raw(kMagic);
  w.Str(Canonical(root));
  w.U64(static_cast<uint64_t>(split));
  w.U64(static_cast<uint64_t>(h.format));
  w.U64(static_cast<uint64_t>(h.num_classes));
  const std::vector<std::string> inputs = Inputs(h.format, *h.files, root, split);
  w.U64(inputs.size());
  for (const std::string& p : inputs) {
    const Stamp s = StampOf(p);
    w.Str(s.path);
    w.U64(s.exists ? 1 : 0);
    w.U64(s.size);
    w.U64(static_cast<uint64_t>(s.mtime));
  }
  w.U64(h.files->size());
  for (const std::string& f : *h.files) w.Str(f);
  w.U64(h.class_names->size());
  for (const std::string& c : *h.class_names) w.Str(c);
  w.U64(h.entries);
  put(w);
  return w.Finish();
}

// Reads an index file of `root`'s split: checks it whole (CRC), then its
// header and stamps; `header` may refuse the file (false: FailedPrecondition)
// before `entry` is called for each entry, in order. Errors as ReadIndexFile.
absl::Status ReadIndex(
    const std::string& path, const std::string& root, Split split,
    const std::function<bool(Header&)>& header,
    const std::function<void(int32_t file, int32_t label, const TfRecordLocation& at)>& entry) {
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
  Header h;
  h.format = static_cast<DatasetFormat>(c.U64());
  h.num_classes = static_cast<int>(c.U64());
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
  for (uint64_t n = c.U64(); n > 0 && !c.bad; --n) h.read_files.push_back(c.Str());
  for (uint64_t n = c.U64(); n > 0 && !c.bad; --n) h.read_class_names.push_back(c.Str());
  h.entries = c.U64();
  if (c.bad || h.entries > c.remaining() / 24) return corrupt();
  const size_t files = h.read_files.size();
  if (!header(h)) {
    return absl::FailedPreconditionError(
        fmt::format("{}: the index of other files than those given", path));
  }
  for (uint64_t n = 0; n < h.entries; ++n) {
    const uint64_t packed = c.U64();
    const auto file = static_cast<int32_t>(static_cast<uint32_t>(packed));
    const auto label = static_cast<int32_t>(static_cast<uint32_t>(packed >> 32));
    TfRecordLocation at;
    at.offset = c.U64();
    at.length = c.U64();
    if (c.bad || file < 0 || static_cast<size_t>(file) >= files) return corrupt();
    entry(file, label, at);
  }
  if (c.bad || c.remaining() != 0) return corrupt();
  return absl::OkStatus();
}

}  // namespace

absl::Status WriteIndexFile(const DatasetIndex& index, const std::string& root, Split split,
                            const std::string& path) {
  const Header h{.format = index.format,
                 .num_classes = index.num_classes,
                 .files = &index.files,
                 .class_names = &index.class_names,
                 .entries = index.entries.size()};
  return WriteIndex(path, root, split, h, [&](Writer& w) {
    for (const IndexEntry& e : index.entries) w.Entry(e.file, e.label, {e.offset, e.length});
  });
}

absl::StatusOr<DatasetIndex> ReadIndexFile(const std::string& path, const std::string& root,
                                           Split split) {
  DatasetIndex index;
  const absl::Status read = ReadIndex(
      path, root, split,
      [&](Header& h) {
        index.format = h.format;
        index.num_classes = h.num_classes;
        index.files = std::move(h.read_files);
        index.class_names = std::move(h.read_class_names);
        index.entries.reserve(h.entries);
        return true;
      },
      [&](int32_t file, int32_t label, const TfRecordLocation& at) {
        index.entries.push_back({file, label, at.offset, at.length});
      });
  if (!read.ok()) return read;
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

int64_t RecordIndex::size() const {
  int64_t n = 0;
  for (const std::vector<TfRecordLocation>& r : records) n += static_cast<int64_t>(r.size());
  return n;
}

absl::StatusOr<RecordIndex> IndexRecordFiles(const std::vector<std::string>& files,
                                             const RecordWalker& walk, int threads) {
  std::vector<absl::StatusOr<std::vector<TfRecordLocation>>> walked(
      files.size(), absl::UnknownError("not walked"));
  base::ParallelFor(files.size(), threads, [&](size_t i) { walked[i] = walk(files[i]); });
  RecordIndex index{.files = files, .records = {}};
  index.records.reserve(files.size());
  for (absl::StatusOr<std::vector<TfRecordLocation>>& w : walked) {
    if (!w.ok()) return w.status();
    index.records.push_back(*std::move(w));
  }
  return index;
}

absl::StatusOr<RecordIndex> CachedRecordIndex(const std::string& root, Split split,
                                              const std::vector<std::string>& files,
                                              const RecordWalker& walk, int threads,
                                              const std::string& path) {
  RecordIndex cached{.files = files,
                     .records = std::vector<std::vector<TfRecordLocation>>(files.size())};
  int32_t last = 0;  // entries come in file order: a file's vector is done when the next begins
  const absl::Status read = ReadIndex(
      path, root, split,
      [&](Header& h) { return h.format == DatasetFormat::kTfRecord && h.read_files == files; },
      [&](int32_t file, int32_t, const TfRecordLocation& at) {
        if (file != last) cached.records[last].shrink_to_fit();
        last = file;
        cached.records[file].push_back(at);
      });
  if (read.ok()) {
    if (!files.empty()) cached.records[last].shrink_to_fit();
    return cached;
  }
  cached = {};
  absl::StatusOr<RecordIndex> fresh = IndexRecordFiles(files, walk, threads);
  if (!fresh.ok()) return fresh;
  const std::vector<std::string> no_classes;
  const Header h{.format = DatasetFormat::kTfRecord,
                 .num_classes = 0,
                 .files = &files,
                 .class_names = &no_classes,
                 .entries = static_cast<uint64_t>(fresh->size())};
  WriteIndex(path, root, split, h, [&](Writer& w) {
    for (size_t f = 0; f < fresh->records.size(); ++f)
      for (const TfRecordLocation& at : fresh->records[f]) w.Entry(static_cast<int32_t>(f), -1, at);
  }).IgnoreError();
  return fresh;
}

}  // namespace mlperf::datasets
