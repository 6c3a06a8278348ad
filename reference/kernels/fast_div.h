// Division by a divisor fixed at launch, as a multiply-high, an add and a
// shift (Granlund and Montgomery, "Division by invariant integers using
// multiplication", PLDI'94): a 64-bit division costs a GPU thread dozens of
// instructions, and index arithmetic divides several times per element.
// Exact for dividends below 2^31 and divisors from 1 to 2^31 - 1; kernels
// whose indices may be larger divide as usual (WideDiv).
#pragma once

#include <cstdint>

#include "base/check.h"
#include "reference/core/host_device.h"

namespace mlperf {

class FastDiv {
 public:
  static constexpr int64_t kLimit = int64_t{1} << 31;  // dividends and divisors below it

  FastDiv() = default;
  explicit FastDiv(int64_t divisor) : divisor_(static_cast<uint32_t>(divisor)) {
    MLPERF_CHECK(divisor >= 1 && divisor < kLimit);
    while ((uint64_t{1} << shift_) < divisor_) ++shift_;
    // floor(2^32 (2^shift - divisor) / divisor) + 1, below 2^32 as 2^shift < 2 divisor.
    multiplier_ = static_cast<uint32_t>(
        ((uint64_t{1} << 32) * ((uint64_t{1} << shift_) - divisor_)) / divisor_ + 1);
  }

  MLPERF_HD int64_t Div(int64_t n) const {
    const uint32_t u = static_cast<uint32_t>(n);
#if defined(__CUDA_ARCH__)
    const uint32_t high = __umulhi(u, multiplier_);
#else
    const uint32_t high = static_cast<uint32_t>((static_cast<uint64_t>(u) * multiplier_) >> 32);
#endif
    return (high + u) >> shift_;  // high <= u < 2^31: the sum fits 32 bits
  }
  MLPERF_HD int64_t Mod(int64_t n) const { return n - Div(n) * divisor_; }
  MLPERF_HD int64_t divisor() const { return divisor_; }

 private:
  uint32_t divisor_ = 1, multiplier_ = 1, shift_ = 0;
};

// The same interface with the hardware's division: any non-negative int64.
class WideDiv {
 public:
  WideDiv() = default;
  explicit WideDiv(int64_t divisor) : divisor_(divisor) { MLPERF_CHECK(divisor >= 1); }
  MLPERF_HD int64_t Div(int64_t n) const { return n / divisor_; }
  MLPERF_HD int64_t Mod(int64_t n) const { return n % divisor_; }
  MLPERF_HD int64_t divisor() const { return divisor_; }

 private:
  int64_t divisor_ = 1;
};

// Calls fn(D{}) with the divider a kernel's flat indices allow: FastDiv when
// every index and divisor is below its limit (below `largest`), else WideDiv.
template <typename Fn>
void WithDivider(int64_t largest, Fn&& fn) {
  if (largest < FastDiv::kLimit) return fn(FastDiv());
  fn(WideDiv());
}

}  // namespace mlperf
