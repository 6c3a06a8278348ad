// NumPy's legacy numpy.random.RandomState(seed) for an integer seed: the
// Mersenne Twister MT19937 seeded as RandomState seeds it, and shuffle() of a
// one-dimensional array, draw for draw. Megatron builds its GPT sample
// indices with exactly this generator, so the same seed gives the same
// sample order here as in the reference.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <utility>

namespace mlperf::megatron {

class NumpyRandomState {
 public:
  explicit NumpyRandomState(uint32_t seed);

  uint32_t NextUint32();
  // Two 32-bit draws, the first in the high half (NumPy's 64-bit draw).
  uint64_t NextUint64();
  // A uniform integer in [0, max] by masked rejection, 32-bit draws while
  // max fits 32 bits (NumPy's legacy random_interval).
  uint64_t Interval(uint64_t max);

  // Fisher-Yates from the last element down, as RandomState.shuffle permutes
  // a one-dimensional array.
  template <typename T>
  void Shuffle(std::span<T> values) {
    for (size_t i = values.size(); i-- > 1;) {
      const uint64_t j = Interval(i);
      std::swap(values[i], values[j]);
    }
  }

 private:
  void Refill();

  std::array<uint32_t, 624> key_{};
  int position_ = 624;
};

}  // namespace mlperf::megatron
