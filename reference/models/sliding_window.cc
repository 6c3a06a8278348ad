#include "reference/models/sliding_window.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/check.h"

namespace mlperf::models {
namespace {

constexpr double kDiceSmooth = 1e-6;

struct Axis {
  int64_t crop_begin = 0, cropped = 0, pad_begin = 0, padded = 0, windows = 0;
};

// The reference's edge crop and padding of one axis of size n.
Axis PlanAxis(int64_t n, int64_t roi, int64_t stride) {
  Axis a;
  int64_t cut = n % stride;
  if (cut >= stride / 2) cut = 0;
  a.crop_begin = cut / 2;
  a.cropped = n - cut;
  int64_t pad = (stride - a.cropped % stride) % stride;
  if (a.cropped + pad < roi) pad += stride;
  a.pad_begin = pad / 2;
  a.padded = a.cropped + pad;
  MLPERF_CHECK_MSG(a.padded >= roi, "sliding window: the padded volume is smaller than the ROI");
  a.windows = (a.padded - roi) / stride + 1;
  return a;
}

template <typename Label>
std::vector<double> Dice(const VolumeLogits& v, const Label* labels,
                         const std::array<int64_t, 3>& full) {
  const int64_t c = v.classes;
  const int64_t voxels = v.shape[0] * v.shape[1] * v.shape[2];
  std::vector<int64_t> inter(c, 0), pred(c, 0), truth(c, 0);
  int64_t q = 0;
  for (int64_t d = 0; d < v.shape[0]; ++d) {
    for (int64_t h = 0; h < v.shape[1]; ++h) {
      const Label* row =
          labels + ((d + v.begin[0]) * full[1] + h + v.begin[1]) * full[2] + v.begin[2];
      for (int64_t w = 0; w < v.shape[2]; ++w, ++q) {
        int64_t best = 0;  // the first maximum, as torch.argmax
        for (int64_t k = 1; k < c; ++k)
          if (v.logits[k * voxels + q] > v.logits[best * voxels + q]) best = k;
        const int64_t t = row[w];
        MLPERF_CHECK(t >= 0 && t < c);
        ++pred[best];
        ++truth[t];
        inter[best] += t == best;
      }
    }
  }
  std::vector<double> dice;
  for (int64_t k = 1; k < c; ++k)
    dice.push_back((2.0 * inter[k] + kDiceSmooth) / (truth[k] + pred[k] + kDiceSmooth));
  return dice;
}

}  // namespace

std::vector<float> GaussianImportance(int64_t roi) {
  const double sigma = 0.125 * static_cast<double>(roi), center = (roi - 1) / 2.0;
  std::vector<double> g(roi);
  for (int64_t i = 0; i < roi; ++i) {
    const double x = (static_cast<double>(i) - center) / sigma;
    g[i] = std::exp(-0.5 * x * x);
  }
  std::vector<double> w(roi * roi * roi);
  double largest = 0;
  for (int64_t i = 0; i < roi; ++i)
    for (int64_t j = 0; j < roi; ++j)
      for (int64_t k = 0; k < roi; ++k) {
        const double v = std::cbrt(g[i] * g[j] * g[k]);
        w[(i * roi + j) * roi + k] = v;
        largest = std::max(largest, v);
      }
  std::vector<float> out(w.size());
  for (size_t i = 0; i < w.size(); ++i) out[i] = static_cast<float>(w[i] / largest);
  return out;
}

VolumeLogits SlidingWindowLogits(const SlidingWindowOptions& options, const float* image,
                                 const std::array<int64_t, 3>& shape, int64_t classes,
                                 int64_t batch, const WindowFn& fn) {
  const int64_t roi = options.roi;
  const int64_t stride = static_cast<int64_t>(static_cast<double>(roi) * (1.0 - options.overlap));
  MLPERF_CHECK(roi > 0 && stride > 0 && batch > 0 && classes > 0);
  std::array<Axis, 3> ax;
  for (int i = 0; i < 3; ++i) ax[i] = PlanAxis(shape[i], roi, stride);
  const std::array<int64_t, 3> padded = {ax[0].padded, ax[1].padded, ax[2].padded};
  const int64_t padded_voxels = padded[0] * padded[1] * padded[2];

  // The cropped and padded input.
  std::vector<float> input(padded_voxels, options.padding_value);
  for (int64_t d = 0; d < ax[0].cropped; ++d)
    for (int64_t h = 0; h < ax[1].cropped; ++h)
      std::memcpy(&input[((d + ax[0].pad_begin) * padded[1] + h + ax[1].pad_begin) * padded[2] +
                         ax[2].pad_begin],
                  image + ((d + ax[0].crop_begin) * shape[1] + h + ax[1].crop_begin) * shape[2] +
                      ax[2].crop_begin,
                  sizeof(float) * ax[2].cropped);

  const std::vector<float> importance = GaussianImportance(roi);
  const int64_t window_voxels = roi * roi * roi;
  std::vector<float> result(classes * padded_voxels, 0.0f), norm(padded_voxels, 0.0f);
  std::vector<std::array<int64_t, 3>> corners;
  for (int64_t i = 0; i < ax[0].windows; ++i)
    for (int64_t j = 0; j < ax[1].windows; ++j)
      for (int64_t k = 0; k < ax[2].windows; ++k)
        corners.push_back({i * stride, j * stride, k * stride});

  std::vector<float> windows(batch * window_voxels), logits(batch * classes * window_voxels);
  for (size_t first = 0; first < corners.size(); first += batch) {
    const int64_t count = std::min<int64_t>(batch, corners.size() - first);
    for (int64_t b = 0; b < count; ++b) {
      const auto& o = corners[first + b];
      for (int64_t d = 0; d < roi; ++d)
        for (int64_t h = 0; h < roi; ++h)
          std::memcpy(&windows[b * window_voxels + (d * roi + h) * roi],
                      &input[((o[0] + d) * padded[1] + o[1] + h) * padded[2] + o[2]],
                      sizeof(float) * roi);
    }
    fn(windows.data(), count, logits.data());
    // Windows are added in the reference's order, so the sums round alike.
    for (int64_t b = 0; b < count; ++b) {
      const auto& o = corners[first + b];
      for (int64_t d = 0; d < roi; ++d)
        for (int64_t h = 0; h < roi; ++h) {
          const int64_t in_window = (d * roi + h) * roi;
          const int64_t at = ((o[0] + d) * padded[1] + o[1] + h) * padded[2] + o[2];
          const float* g = &importance[in_window];
          for (int64_t c = 0; c < classes; ++c) {
            const float* z = &logits[(b * classes + c) * window_voxels + in_window];
            float* r = &result[c * padded_voxels + at];
            for (int64_t w = 0; w < roi; ++w) r[w] += z[w] * g[w];
          }
          float* n = &norm[at];
          for (int64_t w = 0; w < roi; ++w) n[w] += g[w];
        }
    }
  }

  VolumeLogits out;
  out.classes = classes;
  for (int i = 0; i < 3; ++i) {
    out.begin[i] = ax[i].crop_begin;
    out.shape[i] = ax[i].cropped;
  }
  const int64_t voxels = out.shape[0] * out.shape[1] * out.shape[2];
  out.logits.resize(classes * voxels);
  for (int64_t c = 0; c < classes; ++c) {
    int64_t q = 0;
    for (int64_t d = 0; d < out.shape[0]; ++d)
      for (int64_t h = 0; h < out.shape[1]; ++h) {
        const int64_t at =
            ((d + ax[0].pad_begin) * padded[1] + h + ax[1].pad_begin) * padded[2] + ax[2].pad_begin;
        for (int64_t w = 0; w < out.shape[2]; ++w, ++q)
          out.logits[c * voxels + q] = result[c * padded_voxels + at + w] / norm[at + w];
      }
  }
  return out;
}

std::vector<double> CaseDice(const VolumeLogits& logits, const core::Tensor& labels) {
  const core::Shape& s = labels.shape();
  MLPERF_CHECK(s.rank() == 3 || (s.rank() == 4 && s[0] == 1));
  const int r = s.rank();
  const std::array<int64_t, 3> full = {s[r - 3], s[r - 2], s[r - 1]};
  for (int i = 0; i < 3; ++i) MLPERF_CHECK(logits.begin[i] + logits.shape[i] <= full[i]);
  if (labels.dtype() == core::DType::kU8) return Dice(logits, labels.as<uint8_t>(), full);
  MLPERF_CHECK(labels.dtype() == core::DType::kI32);
  return Dice(logits, labels.as<int32_t>(), full);
}

}  // namespace mlperf::models
