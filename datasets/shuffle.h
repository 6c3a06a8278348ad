// The per-epoch shuffle every loader uses: a Philox-driven Fisher-Yates
// permutation, a pure function of (size, seed, epoch), so every rank and
// every thread count sees the same order.
#pragma once

#include <cstdint>
#include <vector>

namespace mlperf::datasets {

// Shuffle streams set the top counter bit; augmentation streams
// (epoch * size + sample) never reach it.
inline constexpr uint64_t kShuffleStream = uint64_t{1} << 63;

// 0..n-1 permuted for `epoch` of the run seeded `seed`.
std::vector<int64_t> EpochPermutation(int64_t n, uint64_t seed, int64_t epoch);

}  // namespace mlperf::datasets
