#include "reference/kernels/cpu/conv_winograd.h"

#include <omp.h>

#include <algorithm>
#include <cstring>

#include "reference/kernels/cpu/blas_threads.h"
#include "reference/kernels/cpu/gemm.h"
#include "reference/kernels/switches.h"

namespace mlperf::cpu::winograd {
namespace {

// F(4x4, 3x3) from the interpolation points 0, 1, -1, 2, -2 and infinity:
// V = B^T d B (input patch), U = G g G^T (filter), Y = A^T (U . V) A.
constexpr int kAlpha = 6;  // patch side
constexpr int kTile = 4;   // output tile side
constexpr int kElems = kAlpha * kAlpha;
// Tiles transformed side by side (the transforms vectorise across them).
constexpr int kLanes = 16;
// Tiles per GEMM at most: each GEMM packs its filter matrix once per block,
// so the block is wide enough to keep a 2376 x 256 filter (RetinaNet's class
// logits) busy (one block holds P3's 144 tiles at 384 pixels), and bounds the
// transformed patches kept at once.
constexpr int64_t kBlockTiles = 256;

bool enabled = true;

// dst[l] = src[l], l < lanes (a fixed-size copy when all lanes are in use).
inline void CopyLanes(float* dst, const float* src, int lanes) {
  if (lanes == kLanes) {
    std::memcpy(dst, src, sizeof(float) * kLanes);
  } else {
    for (int l = 0; l < lanes; ++l) dst[l] = src[l];
  }
}

// A row of B^T applied down a column of kLanes-wide values:
// r[i * rs] = sum_k B^T[i][k] d[k * ds], i < 6.
inline void InputRows(const float* d, int64_t ds, float* r, int64_t rs) {
  for (int l = 0; l < kLanes; ++l) {
    const float d0 = d[l], d1 = d[ds + l], d2 = d[2 * ds + l], d3 = d[3 * ds + l],
                d4 = d[4 * ds + l], d5 = d[5 * ds + l];
    r[l] = 4.0f * d0 - 5.0f * d2 + d4;
    r[rs + l] = -4.0f * (d1 + d2) + d3 + d4;
    r[2 * rs + l] = 4.0f * (d1 - d2) + d4 - d3;
    r[3 * rs + l] = 2.0f * (d3 - d1) + d4 - d2;
    r[4 * rs + l] = 2.0f * (d1 - d3) + d4 - d2;
    r[5 * rs + l] = 4.0f * d1 - 5.0f * d3 + d5;
  }
}

// r[i * rs] = sum_k A^T[i][k] m[k * ms], i < 4.
inline void OutputRows(const float* m, int64_t ms, float* r, int64_t rs) {
  for (int l = 0; l < kLanes; ++l) {
    const float m0 = m[l], m1 = m[ms + l], m2 = m[2 * ms + l], m3 = m[3 * ms + l],
                m4 = m[4 * ms + l], m5 = m[5 * ms + l];
    const float s12 = m1 + m2, d12 = m1 - m2, s34 = m3 + m4, d34 = m3 - m4;
    r[l] = m0 + s12 + s34;
    r[rs + l] = d12 + 2.0f * d34;
    r[2 * rs + l] = s12 + 4.0f * s34;
    r[3 * rs + l] = d12 + 8.0f * d34 + m5;
  }
}

// The adjoint of OutputRows: r[i * rs] = sum_k A[i][k] y[k * ys], i < 6.
inline void GradientRows(const float* y, int64_t ys, float* r, int64_t rs) {
  for (int l = 0; l < kLanes; ++l) {
    const float y0 = y[l], y1 = y[ys + l], y2 = y[2 * ys + l], y3 = y[3 * ys + l];
    const float even = y0 + y2, odd = y1 + y3;
    r[l] = y0;
    r[rs + l] = even + odd;
    r[2 * rs + l] = even - odd;
    r[3 * rs + l] = y0 + 4.0f * y2 + 2.0f * (y1 + 4.0f * y3);
    r[4 * rs + l] = y0 + 4.0f * y2 - 2.0f * (y1 + 4.0f * y3);
    r[5 * rs + l] = y3;
  }
}

// r[i * rs] = sum_k G[i][k] f[k * fs], i < 6: a filter row to its patch row.
inline void FilterRows(const float* f, int64_t fs, float* r, int64_t rs) {
  for (int l = 0; l < kLanes; ++l) {
    const float f0 = f[l], f1 = f[fs + l], f2 = f[2 * fs + l];
    const float even = f0 + f2;
    r[l] = 0.25f * f0;
    r[rs + l] = -(even + f1) / 6.0f;
    r[2 * rs + l] = -(even - f1) / 6.0f;
    r[3 * rs + l] = (0.25f * f0 + f2) / 6.0f + f1 / 12.0f;
    r[4 * rs + l] = (0.25f * f0 + f2) / 6.0f - f1 / 12.0f;
    r[5 * rs + l] = f2;
  }
}

// The adjoint: r[i * rs] = sum_k G[k][i] d[k * ds], i < 3.
inline void FilterGradientRows(const double* d, int64_t ds, double* r, int64_t rs) {
  for (int l = 0; l < kLanes; ++l) {
    const double d0 = d[l], d1 = d[ds + l], d2 = d[2 * ds + l], d3 = d[3 * ds + l],
                 d4 = d[4 * ds + l], d5 = d[5 * ds + l];
    r[l] = 0.25 * d0 - (d1 + d2) / 6.0 + (d3 + d4) / 24.0;
    r[rs + l] = (d2 - d1) / 6.0 + (d3 - d4) / 12.0;
    r[2 * rs + l] = (d3 + d4 - d1 - d2) / 6.0 + d5;
  }
}

// u[e * stride + l] = (G f_l G^T)[e] for the 3 x 3 filters f_l at
// w + l * step, l < lanes (flipped if asked).
void FilterTransform(const float* w, int64_t step, int lanes, bool flip, float* u, int64_t stride) {
  alignas(64) float f[9 * kLanes], tmp[kAlpha * 3 * kLanes], out[kElems * kLanes];
  if (lanes < kLanes) std::fill(f, f + 9 * kLanes, 0.0f);  // unused lanes
  for (int l = 0; l < lanes; ++l)
    for (int i = 0; i < 9; ++i) f[i * kLanes + l] = w[l * step + (flip ? 8 - i : i)];
  for (int b = 0; b < 3; ++b)  // tmp = G f
    FilterRows(f + b * kLanes, 3 * kLanes, tmp + b * kLanes, 3 * kLanes);
  for (int i = 0; i < kAlpha; ++i)  // out = tmp G^T
    FilterRows(tmp + i * 3 * kLanes, kLanes, out + i * kAlpha * kLanes, kLanes);
  for (int e = 0; e < kElems; ++e) CopyLanes(u + e * stride, out + e * kLanes, lanes);
}

// The adjoint: the 3 x 3 filters at dw + l * step from du[e * stride + l].
void FilterGradient(const double* du, int64_t stride, int lanes, float* dw, int64_t step) {
  alignas(64) double d[kElems * kLanes], tmp[3 * kAlpha * kLanes], out[9 * kLanes];
  if (lanes < kLanes) std::fill(d, d + kElems * kLanes, 0.0);
  for (int e = 0; e < kElems; ++e)
    for (int l = 0; l < lanes; ++l) d[e * kLanes + l] = du[e * stride + l];
  for (int j = 0; j < kAlpha; ++j)  // tmp = G^T d
    FilterGradientRows(d + j * kLanes, kAlpha * kLanes, tmp + j * kLanes, kAlpha * kLanes);
  for (int a = 0; a < 3; ++a)  // out = tmp G
    FilterGradientRows(tmp + a * kAlpha * kLanes, kLanes, out + a * 3 * kLanes, kLanes);
  for (int l = 0; l < lanes; ++l)
    for (int i = 0; i < 9; ++i) dw[l * step + i] = static_cast<float>(out[i * kLanes + l]);
}

int Lanes(int64_t i, int64_t end) { return static_cast<int>(std::min<int64_t>(kLanes, end - i)); }

// The tiling of one pass: images of h x w pixels cut into 4 x 4 output
// tiles, numbered image by image, row by row.
struct Tiling {
  int64_t batch, h, w, tiles_x, per_image;
  explicit Tiling(const ConvGeometry& g)
      : batch(g.batch),
        h(g.in[1]),
        w(g.in[2]),
        tiles_x((w + kTile - 1) / kTile),
        per_image(((h + kTile - 1) / kTile) * tiles_x) {}
  // Tiles per block: blocks never span two images (so a rank's share of a
  // batch is computed as in the whole batch) and are even within one.
  int64_t block() const {
    const int64_t blocks = (per_image + kBlockTiles - 1) / kBlockTiles;
    return (per_image + blocks - 1) / blocks;
  }
  // Image and top-left output pixel of tile t.
  void Locate(int64_t t, int64_t* n, int64_t* y, int64_t* x) const {
    *n = t / per_image;
    const int64_t r = t % per_image;
    *y = (r / tiles_x) * kTile;
    *x = (r % tiles_x) * kTile;
  }
};

// Gathers the size x size windows at (y + off, x + off) of `lanes` tiles
// [t0, t0 + lanes) of channel c of planes [N, C, h, w] into
// buf[row][col][lane], zero outside the image and in unused lanes.
template <int kSize>
void Gather(const Tiling& tl, const float* planes, int64_t channels, int64_t c, int64_t t0,
            int lanes, int64_t off, float* buf) {
  for (int l = 0; l < kLanes; ++l) {
    int64_t n = 0, y = 0, x = 0;
    if (l < lanes) tl.Locate(t0 + l, &n, &y, &x);
    const float* p = planes + (n * channels + c) * tl.h * tl.w;
    y += off;
    x += off;
    if (l < lanes && y >= 0 && x >= 0 && y + kSize <= tl.h && x + kSize <= tl.w) {
      for (int r = 0; r < kSize; ++r)  // inside the image: no checks
        for (int s = 0; s < kSize; ++s)
          buf[(r * kSize + s) * kLanes + l] = p[(y + r) * tl.w + x + s];
      continue;
    }
    for (int r = 0; r < kSize; ++r)
      for (int s = 0; s < kSize; ++s) {
        const int64_t iy = y + r, ix = x + s;
        const bool inside = l < lanes && iy >= 0 && iy < tl.h && ix >= 0 && ix < tl.w;
        buf[(r * kSize + s) * kLanes + l] = inside ? p[iy * tl.w + ix] : 0.0f;
      }
  }
}

// V[e][c][t - t0 of the block] for the input patches of tiles [t, t + lanes).
void InputTiles(const Tiling& tl, const float* x, int64_t channels, int64_t c, int64_t t, int lanes,
                float* v, int64_t block, int64_t first) {
  alignas(64) float d[kElems * kLanes], tmp[kElems * kLanes], out[kElems * kLanes];
  Gather<kAlpha>(tl, x, channels, c, t, lanes, -1, d);
  for (int s = 0; s < kAlpha; ++s)  // down the columns: tmp = B^T d
    InputRows(d + s * kLanes, kAlpha * kLanes, tmp + s * kLanes, kAlpha * kLanes);
  for (int i = 0; i < kAlpha; ++i)  // along the rows: out = tmp B
    InputRows(tmp + i * kAlpha * kLanes, kLanes, out + i * kAlpha * kLanes, kLanes);
  for (int e = 0; e < kElems; ++e)
    CopyLanes(v + (e * channels + c) * block + (t - first), out + e * kLanes, lanes);
}

// Output tiles [t, t + lanes) of channel k from M[e][k][t - first].
void OutputTiles(const Tiling& tl, const float* m, int64_t channels, int64_t k, int64_t t,
                 int lanes, int64_t block, int64_t first, float* y) {
  alignas(64) float d[kElems * kLanes], tmp[kTile * kAlpha * kLanes], out[kTile * kTile * kLanes];
  if (lanes < kLanes) std::fill(d, d + kElems * kLanes, 0.0f);
  for (int e = 0; e < kElems; ++e)
    CopyLanes(d + e * kLanes, m + (e * channels + k) * block + (t - first), lanes);
  for (int s = 0; s < kAlpha; ++s)  // tmp = A^T m
    OutputRows(d + s * kLanes, kAlpha * kLanes, tmp + s * kLanes, kAlpha * kLanes);
  for (int i = 0; i < kTile; ++i)  // out = tmp A
    OutputRows(tmp + i * kAlpha * kLanes, kLanes, out + i * kTile * kLanes, kLanes);
  for (int l = 0; l < lanes; ++l) {
    int64_t n, y0, x0;
    tl.Locate(t + l, &n, &y0, &x0);
    float* p = y + (n * channels + k) * tl.h * tl.w;
    for (int r = 0; r < kTile && y0 + r < tl.h; ++r)
      for (int s = 0; s < kTile && x0 + s < tl.w; ++s)
        p[(y0 + r) * tl.w + x0 + s] = out[(r * kTile + s) * kLanes + l];
  }
}

// dM[e][k][t - first] = (A dy A^T)[e] for the output tiles [t, t + lanes).
void GradientTiles(const Tiling& tl, const float* dy, int64_t channels, int64_t k, int64_t t,
                   int lanes, float* dm, int64_t block, int64_t first) {
  alignas(64) float d[kTile * kTile * kLanes], tmp[kAlpha * kTile * kLanes], out[kElems * kLanes];
  Gather<kTile>(tl, dy, channels, k, t, lanes, 0, d);
  for (int s = 0; s < kTile; ++s)  // tmp = A dy
    GradientRows(d + s * kLanes, kTile * kLanes, tmp + s * kLanes, kTile * kLanes);
  for (int i = 0; i < kAlpha; ++i)  // out = tmp A^T
    GradientRows(tmp + i * kTile * kLanes, kLanes, out + i * kAlpha * kLanes, kLanes);
  for (int e = 0; e < kElems; ++e)
    CopyLanes(dm + (e * channels + k) * block + (t - first), out + e * kLanes, lanes);
}

// y = conv(x) for transformed filters u [36, out, in] (in the calling
// OpenMP team): per block of tiles, input transforms over the channels, one
// GEMM per patch element, output transforms over the filters.
void Pipeline(const Tiling& tl, int64_t in, int64_t out, const float* x, const float* u, float* y,
              float* scratch) {
  const int64_t block = tl.block();
  float* v = scratch;
  float* m = v + kElems * in * block;
  for (int64_t n = 0; n < tl.batch; ++n)
    for (int64_t first = n * tl.per_image; first < (n + 1) * tl.per_image; first += block) {
      const int64_t count = std::min(block, (n + 1) * tl.per_image - first);
#pragma omp for schedule(static)
      for (int64_t c = 0; c < in; ++c)
        for (int64_t t = first; t < first + count; t += kLanes)
          InputTiles(tl, x, in, c, t, Lanes(t, first + count), v, count, first);
#pragma omp for schedule(static)
      for (int e = 0; e < kElems; ++e)
        Gemm(false, false, out, count, in, 1.0f, u + e * out * in, v + e * in * count, 0.0f,
             m + e * out * count);
#pragma omp for schedule(static)
      for (int64_t k = 0; k < out; ++k)
        for (int64_t t = first; t < first + count; t += kLanes)
          OutputTiles(tl, m, out, k, t, Lanes(t, first + count), count, first, y);
    }
}

}  // namespace

bool Applies(const ConvGeometry& g) {
  if (!enabled || !ops::Switches().cpu_winograd || GemmsRoundToBf16()) return false;
  return WorkspaceElements(g) > 0;
}

void SetEnabled(bool on) { enabled = on; }

int64_t WorkspaceElements(const ConvGeometry& g) {
  const bool fits = g.winograd && g.groups == 1 && g.in[0] == 1 && g.kernel[0] == 1 &&
                    g.kernel[1] == 3 && g.kernel[2] == 3 && g.pad_begin[0] == 0 &&
                    g.pad_end[0] == 0 && g.in_channels >= kMinChannels &&
                    g.out_channels >= kMinChannels && g.in[1] * g.in[2] >= kMinPixels;
  if (!fits) return 0;
  for (int i = 1; i < 3; ++i)
    if (g.stride[i] != 1 || g.pad_begin[i] != 1 || g.pad_end[i] != 1) return 0;
  const Tiling tl(g);
  const int64_t in = g.in_channels, out = g.out_channels;
  // The weight gradient's needs cover the other passes' (transformed
  // filters [36, out, in] and a block's patches): its filter sums are double.
  return kElems * (2 * in * out + (in + out) * tl.block()) + omp_get_max_threads() * in * out;
}

void Forward(const ConvGeometry& g, const float* x, const float* w, float* y, float* workspace) {
  const int64_t in = g.in_channels, out = g.out_channels;
  float* u = workspace;  // [36, out, in]
  BlasInCallingThread blas;
#pragma omp parallel
  {
#pragma omp for schedule(static)
    for (int64_t k = 0; k < out; ++k)
      for (int64_t c = 0; c < in; c += kLanes)
        FilterTransform(w + (k * in + c) * 9, 9, Lanes(c, in), false, u + k * in + c, out * in);
    Pipeline(Tiling(g), in, out, x, u, y, u + kElems * in * out);
  }
}

void BackwardData(const ConvGeometry& g, const float* dy, const float* w, float* dx,
                  float* workspace) {
  // The transposed convolution of a 3x3 "same" convolution is the same
  // convolution with each filter flipped and inputs and outputs swapped.
  const int64_t in = g.in_channels, out = g.out_channels;
  float* u = workspace;  // [36, in, out]
  BlasInCallingThread blas;
#pragma omp parallel
  {
#pragma omp for schedule(static)
    for (int64_t c = 0; c < in; ++c)
      for (int64_t k = 0; k < out; k += kLanes)
        FilterTransform(w + (k * in + c) * 9, in * 9, Lanes(k, out), true, u + c * out + k,
                        out * in);
    Pipeline(Tiling(g), out, in, dy, u, dx, u + kElems * in * out);
  }
}

// The filter-domain sums are the ill-conditioned step (G^T dU G cancels
// most of dU), so they are kept in double, summed image by image: a batch
// split over ranks then sums to the same dU up to the final rounding, as
// im2col's does.
void BackwardWeight(const ConvGeometry& g, const float* x, const float* dy, float* dw,
                    float* workspace) {
  const int64_t in = g.in_channels, out = g.out_channels;
  const Tiling tl(g);
  const int64_t block = tl.block();
  // Workspace: dU [36, out, in] in double, V and dM of a block, and each
  // thread's GEMM result for one patch element.
  double* du = reinterpret_cast<double*>(workspace);
  float* v = workspace + 2 * kElems * in * out;
  float* dm = v + kElems * in * block;
  float* partials = dm + kElems * out * block;
  BlasInCallingThread blas;
#pragma omp parallel
  {
#pragma omp for schedule(static)
    for (int e = 0; e < kElems; ++e) std::fill(du + e * out * in, du + (e + 1) * out * in, 0.0);
    float* partial = partials + omp_get_thread_num() * out * in;
    for (int64_t n = 0; n < g.batch; ++n)
      for (int64_t first = n * tl.per_image; first < (n + 1) * tl.per_image; first += block) {
        const int64_t count = std::min(block, (n + 1) * tl.per_image - first);
#pragma omp for schedule(static) nowait
        for (int64_t c = 0; c < in; ++c)
          for (int64_t t = first; t < first + count; t += kLanes)
            InputTiles(tl, x, in, c, t, Lanes(t, first + count), v, count, first);
#pragma omp for schedule(static)
        for (int64_t k = 0; k < out; ++k)
          for (int64_t t = first; t < first + count; t += kLanes)
            GradientTiles(tl, dy, out, k, t, Lanes(t, first + count), dm, count, first);
#pragma omp for schedule(static)
        for (int e = 0; e < kElems; ++e) {
          Gemm(false, true, out, in, count, 1.0f, dm + e * out * count, v + e * in * count, 0.0f,
               partial);
          double* sum = du + e * out * in;
          for (int64_t i = 0; i < out * in; ++i) sum[i] += partial[i];
        }
      }
#pragma omp for schedule(static)
    for (int64_t k = 0; k < out; ++k)
      for (int64_t c = 0; c < in; c += kLanes)
        FilterGradient(du + k * in + c, out * in, Lanes(c, in), dw + (k * in + c) * 9, 9);
  }
}

}  // namespace mlperf::cpu::winograd
