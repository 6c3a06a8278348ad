// A batch's copy into pinned staging, the host side of every per-step
// upload to a GPU: ops::ParallelHostCopy (the host threads) against one
// std::memcpy, the peer, on the same buffers in the same run. Median of 7
// copies after one untimed, for ImageNet batches of 32 and 256 fp32 crops
// (19 and 154 MB); threads as OMP_NUM_THREADS says (default: every core).
//
//   core_host_copy_bench
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include "reference/kernels/dispatch.h"

namespace {

template <typename Copy>
double MedianSeconds(Copy copy) {
  copy();
  std::vector<double> s;
  for (int i = 0; i < 7; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    copy();
    s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(s.begin(), s.end());
  return s[s.size() / 2];
}

}  // namespace

int main() {
  const int threads = omp_get_max_threads();
  mlperf::ops::SetHostThreads(threads);
  for (const size_t images : {size_t{32}, size_t{256}}) {
    const size_t bytes = images * 3 * 224 * 224 * sizeof(float);
    std::vector<char> src(bytes, 1), dst(bytes, 2);
    const double one = MedianSeconds([&] { std::memcpy(dst.data(), src.data(), bytes); });
    const double ours =
        MedianSeconds([&] { mlperf::ops::ParallelHostCopy(dst.data(), src.data(), bytes); });
    std::printf(
        "batch %3zu (%5.1f MB): memcpy %6.2f ms (%5.1f GB/s), ParallelHostCopy on %d threads "
        "%6.2f ms (%5.1f GB/s), %.2fx\n",
        images, bytes / 1e6, one * 1e3, bytes / one / 1e9, threads, ours * 1e3, bytes / ours / 1e9,
        one / ours);
  }
}
