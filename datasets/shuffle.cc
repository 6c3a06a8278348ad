#include "datasets/shuffle.h"

#include <cstddef>
#include <utility>

#include "reference/core/philox.h"

namespace mlperf::datasets {

// Each swap index is a 64-bit Philox draw mapped to [0, i] by multiply-shift
// (bias below 2^-32 for any real dataset size).
std::vector<int64_t> EpochPermutation(int64_t n, uint64_t seed, int64_t epoch) {
  std::vector<int64_t> perm(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) perm[static_cast<size_t>(i)] = i;
  const uint64_t stream = kShuffleStream | static_cast<uint64_t>(epoch);
  for (int64_t i = n - 1; i > 0; --i) {
    const core::Philox4x32 r = core::PhiloxBlock(seed, stream, static_cast<uint64_t>(i));
    const uint64_t bits = (static_cast<uint64_t>(r.v[0]) << 32) | r.v[1];
    const auto j = static_cast<int64_t>(
        (static_cast<unsigned __int128>(bits) * static_cast<uint64_t>(i + 1)) >> 64);
    std::swap(perm[static_cast<size_t>(i)], perm[static_cast<size_t>(j)]);
  }
  return perm;
}

}  // namespace mlperf::datasets
