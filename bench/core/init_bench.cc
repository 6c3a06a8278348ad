// The parameter initialisers at BERT-Large's size (336 M fp32 values, as a
// run_closed BERT run or a benchmark draws them at start-up): the truncated
// normal of core/init.h against PyTorch's torch.nn.init.trunc_normal_ (its
// own algorithm, the same job) on as many values and threads, in the same
// run. Median of 3 fills after one untimed; the values' first touch is in
// the untimed fill for both.
//
//   core_init_bench [values]
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "reference/core/init.h"

int main(int argc, char** argv) {
  const int64_t n = argc > 1 ? std::atoll(argv[1]) : int64_t{336226108};
  const int threads = omp_get_max_threads();
  std::vector<float> values(static_cast<size_t>(n));
  const mlperf::core::Tensor t(values.data(), {n}, mlperf::core::DType::kF32);
  std::vector<double> s;
  for (int i = 0; i < 4; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    mlperf::core::FillTruncatedNormal(t, 0.02f, {.seed = 1, .offset = static_cast<uint64_t>(i)});
    if (i > 0)
      s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(s.begin(), s.end());
  const double ours = s[1];
  std::printf("FillTruncatedNormal, %lld values, %d threads: %.3f s (%.0f M values/s)\n",
              static_cast<long long>(n), threads, ours, n / ours / 1e6);
  const std::string peer = fmt::format(
      "/usr/bin/python3 -c \"import time, torch\n"
      "torch.set_num_threads({0})\n"
      "x = torch.empty({1})\n"
      "s = []\n"
      "for i in range(4):\n"
      "    t0 = time.perf_counter(); torch.nn.init.trunc_normal_(x, std=0.02, a=-0.04, b=0.04)\n"
      "    s.append(time.perf_counter() - t0)\n"
      "print(sorted(s[1:])[1])\"",
      threads, n);
  FILE* pipe = popen(peer.c_str(), "r");
  double torch_seconds = 0;
  if (pipe == nullptr || std::fscanf(pipe, "%lf", &torch_seconds) != 1 || pclose(pipe) != 0) {
    std::printf("PyTorch peer did not run (Debian's python3-torch under /usr/bin/python3)\n");
    return 0;
  }
  std::printf("torch.nn.init.trunc_normal_, same values and threads: %.3f s; ours %.2fx faster\n",
              torch_seconds, torch_seconds / ours);
}
