// The CPU's 3x3 convolutions of RetinaNet's heads, Winograd's F(4x4, 3x3)
// (cpu/conv_winograd.h) against im2col in the same run, pass by pass:
//
//   core_conv_winograd_bench [filters] [size] [batch]
//       256 channels in, `filters` out (256: the heads' convolutions; 2376:
//       the class logits of 264 classes), size x size pixels (48: P3 of a
//       384 x 384 image), the best of 5 calls (defaults 256 48 2).
//
// GFLOPS count a direct convolution's multiply-adds for both.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "reference/kernels/cpu/conv.h"
#include "reference/kernels/cpu/conv_winograd.h"

using namespace mlperf;

int main(int argc, char** argv) {
  const int64_t k = argc > 1 ? std::stoll(argv[1]) : 256, h = argc > 2 ? std::stoll(argv[2]) : 48,
                n = argc > 3 ? std::stoll(argv[3]) : 2, c = 256;
  ConvGeometry g = Conv2d(n, c, h, h, k, 3, 3, 1, 1);
  g.winograd = true;
  std::vector<float> x(n * c * h * h), w(k * c * 9), y(n * k * h * h),
      ws(cpu::ConvWorkspaceElements(g, core::Layout::kNCHW));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 17) / 17.0f - 0.5f;
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 13) / 130.0f - 0.05f;
  const core::Tensor tx(x.data(), core::Shape{n, c, h, h}, core::DType::kF32),
      tw(w.data(), core::Shape{k, c, 3, 3}, core::DType::kF32),
      ty(y.data(), core::Shape{n, k, h, h}, core::DType::kF32),
      tws(ws.data(), core::Shape{static_cast<int64_t>(ws.size())}, core::DType::kF32);
  std::printf("3x3 convolution %ld -> %ld channels, %ld x %ld, batch %ld, %d threads\n", c, k, h, h,
              n, omp_get_max_threads());
  const char* passes[] = {"forward", "backward data", "backward weight"};
  double seconds[2][3];
  for (int path = 0; path < 2; ++path) {
    cpu::winograd::SetEnabled(path == 0);
    for (int pass = 0; pass < 3; ++pass) {
      double best = 1e30;
      for (int r = 0; r < 5; ++r) {
        const auto start = std::chrono::steady_clock::now();
        if (pass == 0) cpu::ConvForward(g, tx, tw, ty, tws);
        if (pass == 1) cpu::ConvBackwardData(g, ty, tw, tx, tws);
        if (pass == 2) cpu::ConvBackwardWeight(g, tx, ty, tw, tws);
        best = std::min(
            best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      }
      seconds[path][pass] = best;
    }
  }
  cpu::winograd::SetEnabled(true);
  const double flops = 2.0 * n * k * c * 9 * h * h;
  for (int pass = 0; pass < 3; ++pass)
    std::printf("%-16s Winograd %8.2f ms (%4.0f GFLOPS)  im2col %8.2f ms (%4.0f GFLOPS)  %.2fx\n",
                passes[pass], seconds[0][pass] * 1e3, flops / seconds[0][pass] / 1e9,
                seconds[1][pass] * 1e3, flops / seconds[1][pass] / 1e9,
                seconds[1][pass] / seconds[0][pass]);
  return 0;
}
