// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum that
// frames TFRecord files, and TFRecord's "masked" variant of it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace mlperf::datasets {

// CRC-32C of `data`, continuing from a previous value `crc` (0 to start).
uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t size);

inline uint32_t Crc32c(std::string_view data) { return Crc32cExtend(0, data.data(), data.size()); }

// TFRecord stores checksums rotated and offset so that a CRC computed over data
// that itself contains CRCs does not degenerate.
inline uint32_t MaskCrc32c(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xA282EAD8u; }

}  // namespace mlperf::datasets
