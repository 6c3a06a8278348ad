#include "base/check.h"
#include "datasets/cuda/device_resample.h"

namespace mlperf::datasets::cuda {
namespace {

struct Tap {
  int i0, i1;
  float w1;
};

// MakeTaps of augment.cc, with every double operation rounded on its own.
__device__ Tap MakeTap(const AxisMap& axis, int i, int origin) {
  double src = __dsub_rn(__dadd_rn(axis.shift, __dmul_rn(axis.scale, i + 0.5)), 0.5);
  src = fmax(src, static_cast<double>(axis.lo));
  const int i0 = min(static_cast<int>(floor(src)), axis.hi);
  const int i1 = min(i0 + 1, axis.hi);
  return {i0 - origin, i1 - origin, __double2float_rn(__dsub_rn(src, i0))};
}

// a + w * (b - a) as ResampleBilinear computes it.
__device__ float Lerp(float a, float b, float w) {
  return __fadd_rn(a, __fmul_rn(w, __fsub_rn(b, a)));
}

__global__ void ResampleKernel(const ResampleJob* jobs, int out_size, float mean_r, float mean_g,
                               float mean_b, bool nchw, float* out) {
  const ResampleJob job = jobs[blockIdx.y];
  const int plane = out_size * out_size;
  const int o = blockIdx.x * blockDim.x + threadIdx.x;
  if (o >= plane) return;
  const int oy = o / out_size, ox = o % out_size;
  const Tap ty = MakeTap(job.y_axis, oy, job.source.y0);
  // A mirrored output column reads the source column of its mirror image.
  const Tap tx = MakeTap(job.x_axis, job.flip ? out_size - 1 - ox : ox, job.source.x0);
  const size_t stride = static_cast<size_t>(job.source.width) * 3;
  const uint8_t* r0 = job.source.pixels + ty.i0 * stride;
  const uint8_t* r1 = job.source.pixels + ty.i1 * stride;
  const int a = tx.i0 * 3, b = tx.i1 * 3;
  const float mean[3] = {mean_r, mean_g, mean_b};
  float* image = out + static_cast<size_t>(blockIdx.y) * 3 * plane;
  for (int c = 0; c < 3; ++c) {
    // The CPU subtracts the bytes as ints; the difference converts exactly.
    const float top =
        __fadd_rn(r0[a + c], __fmul_rn(tx.w1, static_cast<float>(r0[b + c] - r0[a + c])));
    const float bottom =
        __fadd_rn(r1[a + c], __fmul_rn(tx.w1, static_cast<float>(r1[b + c] - r1[a + c])));
    const float v = __fsub_rn(Lerp(top, bottom, ty.w1), mean[c]);
    if (nchw) {
      image[c * plane + o] = v;
    } else {
      image[o * 3 + c] = v;
    }
  }
}

}  // namespace

DeviceResampler::~DeviceResampler() {
  if (device_jobs_ != nullptr) cudaFree(device_jobs_);
}

void DeviceResampler::Run(std::span<const ResampleJob> jobs, int out_size,
                          const std::array<float, 3>& mean, core::Layout layout, float* out,
                          cudaStream_t stream) {
  MLPERF_CHECK(layout == core::Layout::kNCHW || layout == core::Layout::kNHWC);
  if (jobs.empty()) return;
  for (const ResampleJob& j : jobs) {
    const DeviceRgb& s = j.source;
    MLPERF_CHECK(j.x_axis.First() >= s.x0 && j.x_axis.Last(out_size) < s.x0 + s.width);
    MLPERF_CHECK(j.y_axis.First() >= s.y0 && j.y_axis.Last(out_size) < s.y0 + s.height);
  }
  if (jobs.size() > capacity_) {
    // The previous batch's kernel may still read the old array.
    CUDA_CHECK(cudaStreamSynchronize(stream));
    if (device_jobs_ != nullptr) CUDA_CHECK(cudaFree(device_jobs_));
    CUDA_CHECK(cudaMalloc(&device_jobs_, jobs.size() * sizeof(ResampleJob)));
    capacity_ = jobs.size();
  }
  // From pageable memory: the call returns once `jobs` has been read, and the
  // copy is ordered after the previous batch's kernel on the same stream.
  CUDA_CHECK(cudaMemcpyAsync(device_jobs_, jobs.data(), jobs.size() * sizeof(ResampleJob),
                             cudaMemcpyHostToDevice, stream));
  const int plane = out_size * out_size;
  const dim3 grid((plane + 255) / 256, static_cast<unsigned>(jobs.size()));
  ResampleKernel<<<grid, 256, 0, stream>>>(device_jobs_, out_size, mean[0], mean[1], mean[2],
                                           layout == core::Layout::kNCHW, out);
  CUDA_CHECK_LAUNCH();
}

}  // namespace mlperf::datasets::cuda
