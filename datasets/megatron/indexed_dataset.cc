#include "datasets/megatron/indexed_dataset.h"

#include <cstring>
#include <limits>

#include "fmt/format.h"

namespace mlperf::megatron {
namespace fs = std::filesystem;

namespace {

constexpr char kMagic[9] = {'M', 'M', 'I', 'D', 'I', 'D', 'X', '\0', '\0'};
constexpr uint64_t kHeaderBytes = 9 + 8 + 1 + 8 + 8;

template <typename T>
T Load(const char* p) {
  T value;
  std::memcpy(&value, p, sizeof(T));
  return value;
}

template <typename T>
void Append(std::string* out, T value) {
  out->append(reinterpret_cast<const char*>(&value), sizeof(T));
}

bool KnownType(uint8_t code) { return (code >= 1 && code <= 5) || code == 8; }

// The id at `p` of `type`, widened.
int64_t LoadToken(TokenType type, const char* p) {
  switch (type) {
    case TokenType::kUint8:
      return Load<uint8_t>(p);
    case TokenType::kInt8:
      return Load<int8_t>(p);
    case TokenType::kInt16:
      return Load<int16_t>(p);
    case TokenType::kInt32:
      return Load<int32_t>(p);
    case TokenType::kInt64:
      return Load<int64_t>(p);
    case TokenType::kUint16:
      return Load<uint16_t>(p);
  }
  return 0;
}

std::pair<int64_t, int64_t> TokenRange(TokenType type) {
  switch (type) {
    case TokenType::kUint8:
      return {0, 255};
    case TokenType::kInt8:
      return {-128, 127};
    case TokenType::kInt16:
      return {-32768, 32767};
    case TokenType::kInt32:
      return {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
    case TokenType::kInt64:
      return {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
    case TokenType::kUint16:
      return {0, 65535};
  }
  return {0, 0};
}

}  // namespace

int TokenBytes(TokenType type) {
  switch (type) {
    case TokenType::kUint8:
    case TokenType::kInt8:
      return 1;
    case TokenType::kInt16:
    case TokenType::kUint16:
      return 2;
    case TokenType::kInt32:
      return 4;
    case TokenType::kInt64:
      return 8;
  }
  return 0;
}

TokenType TokenTypeForVocabulary(int64_t vocab_size) {
  return vocab_size <= 65536 ? TokenType::kUint16 : TokenType::kInt32;
}

absl::StatusOr<std::unique_ptr<IndexedDataset>> IndexedDataset::Open(const fs::path& prefix) {
  const std::string idx_path = prefix.string() + ".idx";
  auto idx = datasets::MappedFile::Open(idx_path);
  if (!idx.ok()) return idx.status();
  const char* p = (*idx)->data();
  const uint64_t size = (*idx)->size();
  auto bad = [&](const std::string& why) {
    return absl::DataLossError(fmt::format("{}: not a Megatron index: {}", idx_path, why));
  };
  if (size < kHeaderBytes || std::memcmp(p, kMagic, sizeof(kMagic)) != 0)
    return bad("no MMIDIDX header");
  if (const uint64_t version = Load<uint64_t>(p + 9); version != 1)
    return bad(fmt::format("version {} (this reader knows 1)", version));
  const uint8_t code = Load<uint8_t>(p + 17);
  if (!KnownType(code))
    return bad(fmt::format("token type code {} (integer codes 1-5 and 8 are read)", code));
  const uint64_t n = Load<uint64_t>(p + 18), d = Load<uint64_t>(p + 26);
  // The arrays' bytes, computed without overflow for any counts.
  const uint64_t room = size - kHeaderBytes;
  if (n > room / 12 || d > (room - n * 12) / 8)
    return bad(
        fmt::format("{} sequences and {} documents need more than its {} bytes", n, d, size));
  const uint64_t expected = kHeaderBytes + n * 12 + d * 8;
  // Multimodal indices carry one mode byte per sequence after the arrays.
  if (size != expected && size != expected + n)
    return bad(
        fmt::format("{} bytes where {} sequences and {} documents take {}", size, n, d, expected));
  if (d < 1) return bad("no document boundaries");

  auto set = std::unique_ptr<IndexedDataset>(new IndexedDataset());
  set->type_ = static_cast<TokenType>(code);
  set->bin_path_ = prefix.string() + ".bin";
  set->lengths_.resize(n);
  set->pointers_.resize(n);
  set->boundaries_.resize(d);
  const char* at = p + kHeaderBytes;
  if (n > 0) {
    std::memcpy(set->lengths_.data(), at, n * 4);
    std::memcpy(set->pointers_.data(), at + n * 4, n * 8);
  }
  std::memcpy(set->boundaries_.data(), at + n * 12, d * 8);

  // An empty .bin (no tokens at all) cannot be mapped; its size says so.
  std::error_code error;
  if (fs::file_size(set->bin_path_, error) != 0 || error) {
    auto bin = datasets::MappedFile::Open(set->bin_path_);
    if (!bin.ok()) return bin.status();
    set->bin_ = std::move(*bin);
  }
  const uint64_t bin_size = set->bin_ ? set->bin_->size() : 0;
  const int width = TokenBytes(set->type_);
  for (uint64_t i = 0; i < n; ++i) {
    const int64_t length = set->lengths_[i], pointer = set->pointers_[i];
    if (length < 0 || pointer < 0 || pointer % width != 0 ||
        static_cast<uint64_t>(pointer) > bin_size ||
        static_cast<uint64_t>(length) > (bin_size - pointer) / width)
      return bad(fmt::format("sequence {} ({} tokens at byte {}) lies outside {} ({} bytes)", i,
                             length, pointer, set->bin_path_, bin_size));
    set->total_tokens_ += length;
  }
  if (set->boundaries_.front() != 0) return bad("the first document boundary is not 0");
  for (uint64_t i = 1; i < d; ++i)
    if (set->boundaries_[i] < set->boundaries_[i - 1])
      return bad(fmt::format("document boundary {} goes backwards", i));
  if (set->boundaries_.back() != static_cast<int64_t>(n))
    return bad(fmt::format("the last document boundary is {}, not the sequence count {}",
                           set->boundaries_.back(), n));
  return set;
}

absl::Status IndexedDataset::Read(int64_t sequence, int64_t offset, int64_t count, int64_t* out,
                                  int64_t vocab_size) const {
  if (sequence < 0 || sequence >= sequences() || offset < 0 || count < 0 ||
      offset > lengths_[sequence] || count > lengths_[sequence] - offset)
    return absl::OutOfRangeError(fmt::format("{}: tokens [{}, {}) of sequence {} are not in it",
                                             bin_path_, offset, offset + count, sequence));
  if (count == 0) return absl::OkStatus();
  const int width = TokenBytes(type_);
  const char* p = bin_->data() + pointers_[sequence] + offset * width;
  for (int64_t i = 0; i < count; ++i) {
    out[i] = LoadToken(type_, p + i * width);
    if (out[i] < 0 || (vocab_size > 0 && out[i] >= vocab_size))
      return absl::DataLossError(fmt::format("{}: sequence {} token {} is {}, outside [0, {})",
                                             bin_path_, sequence, offset + i, out[i], vocab_size));
  }
  return absl::OkStatus();
}

IndexedDatasetWriter::IndexedDatasetWriter(fs::path prefix, TokenType type)
    : prefix_(std::move(prefix)),
      type_(type),
      bin_(std::make_unique<base::AtomicFileWriter>(prefix_.string() + ".bin")) {}

IndexedDatasetWriter::~IndexedDatasetWriter() = default;

absl::Status IndexedDatasetWriter::AddDocument(std::span<const int64_t> tokens) {
  if (!bin_) return absl::FailedPreconditionError("the dataset is already finished");
  const auto [low, high] = TokenRange(type_);
  const int width = TokenBytes(type_);
  std::string bytes(tokens.size() * width, '\0');
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < low || tokens[i] > high)
      return absl::InvalidArgumentError(
          fmt::format("{}.bin: token {} does not fit the token type ({} to {})", prefix_.string(),
                      tokens[i], low, high));
    // Little-endian: the low bytes of the two's complement value.
    const int64_t v = tokens[i];
    std::memcpy(bytes.data() + i * width, &v, width);
  }
  bin_->Write(bytes);
  lengths_.push_back(static_cast<int32_t>(tokens.size()));
  return absl::OkStatus();
}

absl::Status IndexedDatasetWriter::Finish() {
  if (!bin_) return absl::FailedPreconditionError("the dataset is already finished");
  if (absl::Status s = bin_->Commit(); !s.ok()) return s;
  bin_.reset();
  const uint64_t n = lengths_.size();
  std::string idx(kMagic, sizeof(kMagic));
  Append<uint64_t>(&idx, 1);
  Append<uint8_t>(&idx, static_cast<uint8_t>(type_));
  Append<uint64_t>(&idx, n);
  Append<uint64_t>(&idx, n + 1);
  idx.append(reinterpret_cast<const char*>(lengths_.data()), n * 4);
  int64_t pointer = 0;
  for (int32_t length : lengths_) {
    Append<int64_t>(&idx, pointer);
    pointer += int64_t{length} * TokenBytes(type_);
  }
  for (uint64_t i = 0; i <= n; ++i) Append<int64_t>(&idx, static_cast<int64_t>(i));
  return base::WriteFileAtomically(prefix_.string() + ".idx", idx);
}

}  // namespace mlperf::megatron
