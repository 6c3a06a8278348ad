// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78): the checksum that
// frames TFRecord files and guards LevelDB tables and TensorFlow's tensor
// bundles, and the "masked" form all three store.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace mlperf::base {

// CRC-32C of `size` bytes, continuing from a previous value `crc` (0 to start).
uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t size);

inline uint32_t Crc32c(const void* data, size_t size) { return Crc32cExtend(0, data, size); }
inline uint32_t Crc32c(std::string_view data) { return Crc32cExtend(0, data.data(), data.size()); }

// Stored checksums are rotated and offset, so that a CRC computed over bytes
// that themselves contain CRCs does not degenerate.
constexpr uint32_t kCrc32cMaskDelta = 0xa282ead8u;
inline uint32_t MaskCrc32c(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + kCrc32cMaskDelta; }
inline uint32_t UnmaskCrc32c(uint32_t masked) {
  const uint32_t rot = masked - kCrc32cMaskDelta;
  return (rot >> 17) | (rot << 15);
}

}  // namespace mlperf::base
