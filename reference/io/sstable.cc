#include "reference/io/sstable.h"

#include <cstdint>
#include <cstring>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "base/crc32c.h"

namespace mlperf::io {

using base::Crc32c;
using base::Crc32cExtend;
using base::MaskCrc32c;
using base::UnmaskCrc32c;
namespace {

constexpr uint64_t kTableMagic = 0xdb4775248b80fb57ull;  // LevelDB's, kept by TensorFlow
constexpr size_t kMaxHandleBytes = 20;                   // two varint64s
constexpr size_t kFooterBytes = 2 * kMaxHandleBytes + 8;
constexpr size_t kTrailerBytes = 5;  // compression type + masked CRC-32C
constexpr size_t kBlockBytes = 256 * 1024;
constexpr int kRestartInterval = 16;

// Debian's Abseil has its own string_view, so messages are built as std::string.
absl::Status Corrupt(const std::string& path, const std::string& what) {
  return absl::DataLossError(absl::StrCat(path, ": ", what));
}

uint32_t LoadFixed32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

uint64_t LoadFixed64(const char* p) {
  return LoadFixed32(p) | (static_cast<uint64_t>(LoadFixed32(p + 4)) << 32);
}

void PutFixed32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
}

void PutVarint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

// Bounds-checked reads over one block or handle; every read reports whether
// the bytes were there.
class Cursor {
 public:
  explicit Cursor(std::string_view bytes) : bytes_(bytes) {}
  bool done() const { return pos_ == bytes_.size(); }

  bool Varint(uint64_t* v, int max_bytes = 10) {
    *v = 0;
    for (int i = 0; i < max_bytes && pos_ < bytes_.size(); ++i) {
      const auto byte = static_cast<unsigned char>(bytes_[pos_++]);
      *v |= static_cast<uint64_t>(byte & 0x7f) << (7 * i);
      if ((byte & 0x80) == 0) return true;
    }
    return false;
  }
  bool Varint32(uint32_t* v) {
    uint64_t wide = 0;
    if (!Varint(&wide, 5) || wide > UINT32_MAX) return false;
    *v = static_cast<uint32_t>(wide);
    return true;
  }
  bool Bytes(size_t n, std::string_view* out) {
    if (n > bytes_.size() - pos_) return false;
    *out = bytes_.substr(pos_, n);
    pos_ += n;
    return true;
  }

 private:
  std::string_view bytes_;
  size_t pos_ = 0;
};

struct BlockHandle {
  uint64_t offset = 0;
  uint64_t size = 0;
};

bool DecodeHandle(std::string_view bytes, BlockHandle* h) {
  Cursor c(bytes);
  return c.Varint(&h->offset) && c.Varint(&h->size);
}

void PutHandle(std::string& out, const BlockHandle& h) {
  PutVarint(out, h.offset);
  PutVarint(out, h.size);
}

// The contents of the block at `h` after checking its trailer. Blocks lie
// before the footer.
absl::StatusOr<std::string_view> ReadBlock(const std::string& path, std::string_view file,
                                           const BlockHandle& h, const std::string& what) {
  const uint64_t limit = file.size() - kFooterBytes;
  if (h.offset > limit || h.size > limit - h.offset || kTrailerBytes > limit - h.offset - h.size)
    return Corrupt(path, absl::StrCat(what, " [", h.offset, ", +", h.size,
                                      ") lies past the end of the table (", file.size(),
                                      " bytes): truncated file?"));
  const std::string_view block = file.substr(h.offset, h.size);
  const char* trailer = file.data() + h.offset + h.size;
  const auto type = static_cast<unsigned char>(trailer[0]);
  const uint32_t crc = Crc32cExtend(Crc32c(block.data(), block.size()), trailer, 1);
  if (UnmaskCrc32c(LoadFixed32(trailer + 1)) != crc)
    return Corrupt(path, absl::StrCat(what, " at offset ", h.offset, ": checksum mismatch"));
  if (type != 0)
    return absl::UnimplementedError(absl::StrCat(
        path, ": ", what, " at offset ", h.offset, " is compressed (type ", type,
        type == 1 ? ", snappy" : "", "); only TensorFlow's uncompressed tables are supported"));
  return block;
}

// Appends the entries of `block` to `out`, continuing the key order check.
absl::Status ParseBlock(const std::string& path, std::string_view block, const std::string& what,
                        std::vector<SstableEntry>& out) {
  auto bad = [&](const std::string& why) { return Corrupt(path, absl::StrCat(what, ": ", why)); };
  if (block.size() < 4) return bad("shorter than its restart count");
  const uint32_t restarts = LoadFixed32(block.data() + block.size() - 4);
  if (restarts == 0 || restarts > (block.size() - 4) / 4) return bad("bad restart count");
  Cursor c(block.substr(0, block.size() - 4 - 4 * static_cast<size_t>(restarts)));
  std::string key;
  while (!c.done()) {
    uint32_t shared = 0, unshared = 0, value_size = 0;
    std::string_view delta, value;
    if (!c.Varint32(&shared) || !c.Varint32(&unshared) || !c.Varint32(&value_size) ||
        shared > key.size() || !c.Bytes(unshared, &delta) || !c.Bytes(value_size, &value))
      return bad("malformed entry");
    key.resize(shared);
    key.append(delta.data(), delta.size());
    if (!out.empty() && !(out.back().key < key))
      return bad(absl::StrCat("keys out of order at \"", absl::CHexEscape(key), "\""));
    out.push_back({key, std::string(value)});
  }
  return absl::OkStatus();
}

// Accumulates one block's entries with prefix compression and restart points.
class BlockBuilder {
 public:
  explicit BlockBuilder(int restart_interval) : interval_(restart_interval) {}
  bool empty() const { return count_ == 0; }
  size_t size() const { return bytes_.size() + 4 * (restarts_.size() + 1); }

  void Add(const std::string& key, const std::string& value) {
    size_t shared = 0;
    if (count_ % interval_ == 0) {
      restarts_.push_back(static_cast<uint32_t>(bytes_.size()));
    } else {
      while (shared < key.size() && shared < last_.size() && key[shared] == last_[shared]) ++shared;
    }
    PutVarint(bytes_, shared);
    PutVarint(bytes_, key.size() - shared);
    PutVarint(bytes_, value.size());
    bytes_.append(key, shared);
    bytes_ += value;
    last_ = key;
    ++count_;
  }

  // The block's bytes; the builder starts over.
  std::string Finish() {
    if (restarts_.empty()) restarts_.push_back(0);  // an empty block still has one
    for (uint32_t r : restarts_) PutFixed32(bytes_, r);
    PutFixed32(bytes_, static_cast<uint32_t>(restarts_.size()));
    std::string block = std::move(bytes_);
    *this = BlockBuilder(interval_);
    return block;
  }

 private:
  int interval_;
  std::string bytes_, last_;
  std::vector<uint32_t> restarts_;
  int64_t count_ = 0;
};

// Appends `block` and its trailer to `file` and returns its handle.
BlockHandle AppendBlock(std::string& file, const std::string& block) {
  const BlockHandle h{file.size(), block.size()};
  file += block;
  const char type = 0;  // uncompressed
  file.push_back(type);
  PutFixed32(file, MaskCrc32c(Crc32cExtend(Crc32c(block.data(), block.size()), &type, 1)));
  return h;
}

}  // namespace

absl::StatusOr<std::vector<SstableEntry>> ReadSstable(const std::string& path,
                                                      std::string_view bytes) {
  if (bytes.size() < kFooterBytes)
    return Corrupt(path, absl::StrCat("shorter (", bytes.size(), " bytes) than the ", kFooterBytes,
                                      "-byte table footer: truncated file?"));
  const std::string_view footer = bytes.substr(bytes.size() - kFooterBytes);
  if (LoadFixed64(footer.data() + 2 * kMaxHandleBytes) != kTableMagic)
    return Corrupt(path, "no table magic number at the end: not a TensorFlow .index file?");
  BlockHandle metaindex, index;
  Cursor handles(footer.substr(0, 2 * kMaxHandleBytes));
  if (!handles.Varint(&metaindex.offset) || !handles.Varint(&metaindex.size) ||
      !handles.Varint(&index.offset) || !handles.Varint(&index.size))
    return Corrupt(path, "malformed block handles in the footer");
  if (absl::StatusOr<std::string_view> meta = ReadBlock(path, bytes, metaindex, "metaindex block");
      !meta.ok())
    return meta.status();
  absl::StatusOr<std::string_view> index_block = ReadBlock(path, bytes, index, "index block");
  if (!index_block.ok()) return index_block.status();
  std::vector<SstableEntry> handles_by_key;
  if (absl::Status s = ParseBlock(path, *index_block, "index block", handles_by_key); !s.ok())
    return s;
  std::vector<SstableEntry> entries;
  for (const SstableEntry& e : handles_by_key) {
    BlockHandle h;
    if (!DecodeHandle(e.value, &h)) return Corrupt(path, "malformed block handle in the index");
    const std::string what = absl::StrCat("data block at offset ", h.offset);
    absl::StatusOr<std::string_view> block = ReadBlock(path, bytes, h, "data block");
    if (!block.ok()) return block.status();
    if (absl::Status s = ParseBlock(path, *block, what, entries); !s.ok()) return s;
  }
  return entries;
}

std::string BuildSstable(std::span<const SstableEntry> entries) {
  std::string file;
  BlockBuilder data(kRestartInterval), index(1);  // index keys are looked up one by one
  std::string last_key;
  auto flush = [&] {
    if (data.empty()) return;
    std::string handle;
    PutHandle(handle, AppendBlock(file, data.Finish()));
    // The block's last key separates it from the next: >= all its keys, < the next's.
    index.Add(last_key, handle);
  };
  for (const SstableEntry& e : entries) {
    data.Add(e.key, e.value);
    last_key = e.key;
    if (data.size() >= kBlockBytes) flush();
  }
  flush();
  const BlockHandle metaindex = AppendBlock(file, BlockBuilder(1).Finish());
  const BlockHandle index_handle = AppendBlock(file, index.Finish());
  std::string footer;
  PutHandle(footer, metaindex);
  PutHandle(footer, index_handle);
  footer.resize(2 * kMaxHandleBytes, '\0');
  PutFixed32(footer, static_cast<uint32_t>(kTableMagic));
  PutFixed32(footer, static_cast<uint32_t>(kTableMagic >> 32));
  return file + footer;
}

}  // namespace mlperf::io
