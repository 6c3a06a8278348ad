// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3",
// SC'11), the generator behind cuRAND's and PyTorch's GPU streams. It is a
// pure function of (key, counter), so element i of a stream is computed
// independently on any backend: CPU and GPU give bit-identical uniforms.
//
// Stream convention used by every op here: key = seed, counter = (i / 4 as 64
// bits, offset as 64 bits), and element i takes lane i % 4 of that block.
#pragma once

#include <cmath>
#include <cstdint>

#include "reference/core/host_device.h"

namespace mlperf::core {

struct Philox4x32 {
  uint32_t v[4];
};

MLPERF_HD void MulHiLo(uint32_t a, uint32_t b, uint32_t* hi, uint32_t* lo) {
  const uint64_t p = static_cast<uint64_t>(a) * b;
  *hi = static_cast<uint32_t>(p >> 32);
  *lo = static_cast<uint32_t>(p);
}

MLPERF_HD Philox4x32 Philox4x32_10(Philox4x32 ctr, uint32_t key0, uint32_t key1) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0, lo0, hi1, lo1;
    MulHiLo(kM0, ctr.v[0], &hi0, &lo0);
    MulHiLo(kM1, ctr.v[2], &hi1, &lo1);
    ctr = Philox4x32{{hi1 ^ ctr.v[1] ^ key0, lo1, hi0 ^ ctr.v[3] ^ key1, lo0}};
    key0 += kW0;
    key1 += kW1;
  }
  return ctr;
}

// The 4 words of block `block` in stream (seed, offset).
MLPERF_HD Philox4x32 PhiloxBlock(uint64_t seed, uint64_t offset, uint64_t block) {
  Philox4x32 ctr{{static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32),
                  static_cast<uint32_t>(offset), static_cast<uint32_t>(offset >> 32)}};
  return Philox4x32_10(ctr, static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
}

// 24 random bits to a float in [0, 1); exact in fp32, so identical everywhere.
MLPERF_HD float UniformFromBits(uint32_t x) { return static_cast<float>(x >> 8) * 0x1p-24f; }

MLPERF_HD uint32_t PhiloxBits(uint64_t seed, uint64_t offset, uint64_t i) {
  return PhiloxBlock(seed, offset, i / 4).v[i % 4];
}

MLPERF_HD float PhiloxUniform(uint64_t seed, uint64_t offset, uint64_t i) {
  return UniformFromBits(PhiloxBits(seed, offset, i));
}

// Word `lane` (0-3) of a block by selects: an array indexed at run time
// would be put in local memory on a GPU.
MLPERF_HD uint32_t Word(const Philox4x32& r, int lane) {
  return lane < 2 ? (lane == 0 ? r.v[0] : r.v[1]) : (lane == 2 ? r.v[2] : r.v[3]);
}

// Dropout's keep test on the bits: UniformFromBits(b) >= p exactly when
// (b >> 8) >= ceil(p * 2^24), p * 2^24 being exact in double.
MLPERF_HD uint32_t KeepThreshold(float p) {
  return static_cast<uint32_t>(::ceil(static_cast<double>(p) * 0x1p24));
}
MLPERF_HD bool Kept(uint32_t bits, uint32_t threshold) { return (bits >> 8) >= threshold; }

}  // namespace mlperf::core
