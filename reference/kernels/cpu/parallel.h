// When an OpenMP loop is worth its fork/join: below this many elements of
// work a parallel region costs more than it saves (tiny test shapes, biases).
#pragma once

#include <cstdint>

namespace mlperf::cpu {

inline bool WorthParallel(int64_t elements) { return elements >= (int64_t{1} << 15); }

}  // namespace mlperf::cpu
