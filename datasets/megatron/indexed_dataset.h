// Megatron's indexed dataset, the tokenized form of C4 the LLM references
// read (Megatron-LM and NeMo write it with the same builder): a .bin file of
// token ids, sequence after sequence, and a .idx file describing it:
//
//   "MMIDIDX\0\0", version (uint64 1), token type code (uint8: 1 uint8,
//   2 int8, 3 int16, 4 int32, 5 int64, 6 float64, 7 float32, 8 uint16),
//   sequence count n (uint64), document count d (uint64),
//   n sequence lengths (int32, in tokens), n byte offsets into .bin (int64),
//   d document boundaries (int64: 0, then the sequence index after each
//   document), all little-endian and unaligned.
//
// Both files are mapped, never read whole; every count, offset and boundary
// is checked against the files' sizes when they are opened.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/files.h"
#include "datasets/mapped_file.h"

namespace mlperf::megatron {

// The integer token types; the float codes (6, 7) are refused.
enum class TokenType : uint8_t {
  kUint8 = 1,
  kInt8 = 2,
  kInt16 = 3,
  kInt32 = 4,
  kInt64 = 5,
  kUint16 = 8
};

int TokenBytes(TokenType type);
// The smallest type Megatron's preprocessing picks for a vocabulary: uint16
// up to 65,536 ids, int32 above.
TokenType TokenTypeForVocabulary(int64_t vocab_size);

class IndexedDataset {
 public:
  // `prefix` names both files without their extensions (as the references'
  // data paths do: .../c4-train.en_6_text_document).
  static absl::StatusOr<std::unique_ptr<IndexedDataset>> Open(const std::filesystem::path& prefix);

  TokenType token_type() const { return type_; }
  int64_t sequences() const { return static_cast<int64_t>(lengths_.size()); }
  // Documents: boundaries minus one.
  int64_t documents() const { return static_cast<int64_t>(boundaries_.size()) - 1; }
  std::span<const int32_t> sequence_lengths() const { return lengths_; }
  const std::vector<int64_t>& document_boundaries() const { return boundaries_; }
  int64_t total_tokens() const { return total_tokens_; }

  // Tokens [offset, offset + count) of `sequence`, widened to int64. An id
  // below 0 or at least `vocab_size` (when positive) is an error naming the
  // file, the sequence and the position.
  absl::Status Read(int64_t sequence, int64_t offset, int64_t count, int64_t* out,
                    int64_t vocab_size = 0) const;

 private:
  IndexedDataset() = default;

  std::string bin_path_;
  TokenType type_ = TokenType::kUint16;
  std::unique_ptr<datasets::MappedFile> bin_;
  std::vector<int32_t> lengths_;
  std::vector<int64_t> pointers_, boundaries_;
  int64_t total_tokens_ = 0;
};

// Writes prefix.bin and prefix.idx as Megatron's builder does (one sequence
// per document, the layout above, byte for byte): the tokens stream to a
// temporary file, both files are renamed into place on Finish (.bin first;
// an .idx that does not match its .bin is refused on opening).
class IndexedDatasetWriter {
 public:
  IndexedDatasetWriter(std::filesystem::path prefix, TokenType type);
  ~IndexedDatasetWriter();

  // One document of one sequence; an id that does not fit the type is an
  // error.
  absl::Status AddDocument(std::span<const int64_t> tokens);
  absl::Status Finish();

 private:
  std::filesystem::path prefix_;
  TokenType type_;
  std::vector<int32_t> lengths_;
  std::unique_ptr<base::AtomicFileWriter> bin_;
};

}  // namespace mlperf::megatron
