// Channels-last convolutions as GEMMs over the whole minibatch. The im2col
// matrix has one row per output pixel (n, z, y, x) and one column per
// (kd, kh, kw, c), so building it copies whole channel vectors:
//   forward          y[NP, K]      = col[NP, V*C] * w'[K, V*C]^T
//   backward data    dcol[NP, V*C] = dy[NP, K] * w'[K, V*C], then col2im;
//                    stride 1: dx[NI, C] = dycol[NI, V*K] * w"[V*K, C]
//   backward weight  dw'[K, V*C]   = dy[NP, K]^T * col[NP, V*C]
// where w' is the weight repacked to [K, kD, kH, kW, C] in the workspace
// (V = kernel volume), dycol the im2col matrix of dy under the adjoint
// geometry (conv_nhwc_col.h; one row per input pixel) and w" the weight with
// its taps flipped, repacked to [kD, kH, kW, K, C]. A pointwise conv needs no
// col matrix: x is it. Under bf16 on AMX the weight gradient's col is written
// in the layout the tile loads read (conv_nhwc_col.h's Im2ColPairs), so its
// GEMM reads it in place instead of packing a copy.
//
// Threading: each OpenMP thread takes a share of the output rows and runs
// im2col and a single-threaded GEMM on chunks of them (so a chunk of col
// stays in cache); OpenBLAS's own pool stays asleep (see blas_threads.h).
#include "reference/kernels/cpu/conv_nhwc.h"

#include <omp.h>

#include <algorithm>
#include <type_traits>
#include <vector>

#include "base/check.h"
#include "reference/kernels/cpu/blas_threads.h"
#include "reference/kernels/cpu/conv_nhwc_col.h"
#include "reference/kernels/cpu/gemm.h"
#include "reference/kernels/cpu/gemm_amx.h"
#include "reference/kernels/cpu/parallel.h"
#include "reference/kernels/cpu/round.h"

namespace mlperf::cpu::nhwc {
namespace {

// Floats of col matrix per chunk (1 MiB: it stays in a core's L2 between
// Im2Col writing it and the GEMM packing it; 4 MiB made the stem, whose col
// is 49x its input, twice as slow), but at least kMinChunkRows rows so that
// each GEMM amortises packing the weight.
constexpr int64_t kChunkFloats = int64_t{1} << 18;
constexpr int64_t kMinChunkRows = 512;

int64_t Rows(const ConvGeometry& g) { return g.batch * g.out_spatial(); }

// A pointwise conv reads x in place; its `out_width`-wide output goes a
// chunk at a time, rounded or handed on while the chunk is in cache, and in
// the same chunks when it is neither, so that every path makes the same GEMM
// calls: a BLAS may sum a row differently at the edge of a call (OpenBLAS's
// Haswell kernels do), and the fused paths must keep the plain ones' bits.
// Without an output (out_width 0, the weight gradient) one GEMM per thread
// share.
int64_t ChunkRows(const ConvGeometry& g, int64_t out_width = 0) {
  if (g.is_pointwise() && out_width == 0) return Rows(g);
  const int64_t width = g.is_pointwise() ? out_width : ColWidth(g);
  return std::min(Rows(g), std::max(kMinChunkRows, kChunkFloats / width));
}

// A stride-1 convolution's backward data is itself a convolution, over dy
// with the taps flipped and the padding mirrored; its output rows are dx's
// pixels. Taking it that way writes each dx row once, from a GEMM whose
// reduction is V*K deep, where the col2im form writes V*C floats a row from
// a K-deep one and then adds them up, with neighbouring threads' rows
// overlapping.
bool GathersBackward(const ConvGeometry& g) {
  if (g.is_pointwise()) return false;
  for (int i = 0; i < 3; ++i)
    if (g.stride[i] != 1 || g.pad_begin[i] >= g.kernel[i] || g.pad_end[i] >= g.kernel[i])
      return false;
  return true;
}

// Only kernels larger than 1 need the weight in [K, V, C] order.
int64_t RepackElements(const ConvGeometry& g) {
  return g.kernel_volume() > 1 ? g.out_channels * ColWidth(g) : 0;
}

// Workspace: [repacked weight][per thread: col chunk, weight-gradient partial].
// The first thread's weight gradient goes to the repack area or to dw itself.
// The col chunk's room also holds a chunk of bf16 col in the AMX pair layout
// (Im2ColPairs), whose rows and columns are padded.
int64_t PerThreadElements(const ConvGeometry& g) {
  int64_t col = 0;
  if (!g.is_pointwise()) {
    const int64_t pairs = (ChunkRows(g) + 31) / 32 * 32 * AmxPairColumns(ColWidth(g));
    col = std::max(ChunkRows(g) * ColWidth(g), (pairs + 1) / 2);
  }
  if (GathersBackward(g)) col = std::max(col, ChunkRows(Adjoint(g)) * ColWidth(Adjoint(g)));
  return col + g.out_channels * ColWidth(g);
}

// Threads a call may use: OpenMP's, capped by what the workspace holds.
int Threads(const ConvGeometry& g, int64_t workspace_elements) {
  const int64_t fit = (workspace_elements - RepackElements(g) + g.out_channels * ColWidth(g)) /
                      PerThreadElements(g);
  MLPERF_CHECK_MSG(fit >= 1, "conv workspace smaller than ConvWorkspaceElements(g, layout)");
  return static_cast<int>(std::min<int64_t>(omp_get_max_threads(), fit));
}

// The calling thread's weight operand, packed once per call for the team's
// GEMMs (it only grows).
SharedB& SharedWeight() {
  static thread_local SharedB weight;
  return weight;
}

// Each OpenMP thread's own fp32 scratch of at least n floats, kept for the
// next call (it only grows).
float* ThreadFloats(int64_t n) {
  static thread_local std::vector<float> buffer;
  if (static_cast<int64_t>(buffer.size()) < n) buffer.resize(static_cast<size_t>(n));
  return buffer.data();
}

// Activations stored in bf16 go to the GEMMs as they are, on AMX tiles.
void CheckBf16Gemms() {
  MLPERF_CHECK_MSG(GemmsRoundToBf16(),
                   "bf16 activations need the GEMMs on AMX tiles (bf16 on AMX)");
}

// Whether an fp32 input's col is written in bf16 (the Im2Col above).
template <typename T>
bool Bf16Col(const ConvGeometry& g) {
  return std::is_same_v<T, float> && !g.is_pointwise() && GemmsRoundToBf16();
}

}  // namespace

int64_t ConvWorkspaceElements(const ConvGeometry& g) {
  return RepackElements(g) + omp_get_max_threads() * PerThreadElements(g) -
         g.out_channels * ColWidth(g);
}

namespace {

// The forward over chunks of `chunk` output rows per thread: out(r0, r1)
// names where the GEMM writes rows [r0, r1) (k floats each), which are
// rounded there and then handed to done(r0, r1, rows) on the same thread.
// x in fp32, or in bf16 (T = uint16_t) for GEMMs on AMX tiles.
template <typename T, typename Out, typename Done>
void ForwardChunks(const ConvGeometry& g, const T* x, const float* w, float* workspace,
                   int64_t workspace_elements, core::DType round_to, int64_t chunk, Out out,
                   Done done) {
  const int64_t k = g.out_channels, width = ColWidth(g);
  const int threads = Threads(g, workspace_elements);
  const float* wk = w;
  if (RepackElements(g) > 0) {
    RepackToChannelsLast(g, w, workspace);
    wk = workspace;
  }
  SharedB& weight = SharedWeight();
  weight.Prepare(true, width, k, wk);  // op(B) = wk^T
  BlasInCallingThread blas;
#pragma omp parallel num_threads(threads)
  {
    weight.Pack(omp_get_thread_num(), omp_get_num_threads());
#pragma omp barrier
    int64_t begin, end;
    ThreadShare(Rows(g), &begin, &end);
    float* col = workspace + RepackElements(g) + omp_get_thread_num() * PerThreadElements(g);
    for (int64_t r0 = begin; r0 < end; r0 += chunk) {
      const int64_t r1 = std::min(end, r0 + chunk);
      float* rows = out(r0, r1);
      if (g.is_pointwise()) {
        weight.Gemm(false, r1 - r0, 1.0f, x + r0 * width, 0.0f, rows);
      } else if (Bf16Col<T>(g)) {
        Im2Col(g, x, r0, r1, reinterpret_cast<uint16_t*>(col));
        weight.Gemm(false, r1 - r0, 1.0f, reinterpret_cast<const uint16_t*>(col), 0.0f, rows);
      } else {
        Im2Col(g, x, r0, r1, reinterpret_cast<T*>(col));
        weight.Gemm(false, r1 - r0, 1.0f, reinterpret_cast<const T*>(col), 0.0f, rows);
      }
      RoundSpan(round_to, rows, (r1 - r0) * k);
      done(r0, r1, rows);
    }
  }
}

}  // namespace

namespace {

template <typename T>
void ForwardFp32(const ConvGeometry& g, const T* x, const float* w, float* y, float* workspace,
                 int64_t workspace_elements, core::DType round_to) {
  const int64_t k = g.out_channels;
  ForwardChunks(
      g, x, w, workspace, workspace_elements, round_to, ChunkRows(g, k),
      [&](int64_t r0, int64_t) { return y + r0 * k; }, [](int64_t, int64_t, const float*) {});
}

}  // namespace

void ConvForward(const ConvGeometry& g, const float* x, const float* w, float* y, float* workspace,
                 int64_t workspace_elements, core::DType round_to) {
  ForwardFp32(g, x, w, y, workspace, workspace_elements, round_to);
}

void ConvForward(const ConvGeometry& g, const uint16_t* x, const float* w, float* y,
                 float* workspace, int64_t workspace_elements, core::DType round_to) {
  CheckBf16Gemms();
  ForwardFp32(g, x, w, y, workspace, workspace_elements, round_to);
}

namespace {

template <typename T>
void ForwardRows(const ConvGeometry& g, const T* x, const float* w, const OutputRows& consume,
                 float* workspace, int64_t workspace_elements, core::DType round_to) {
  const int64_t k = g.out_channels, chunk = ChunkRows(g, k);
  ForwardChunks(
      g, x, w, workspace, workspace_elements, round_to, chunk,
      [&](int64_t, int64_t) { return ThreadFloats(chunk * k); },
      [&](int64_t r0, int64_t r1, const float* rows) { consume(r0, r1, rows); });
}

}  // namespace

void ConvForwardRows(const ConvGeometry& g, const float* x, const float* w,
                     const OutputRows& consume, float* workspace, int64_t workspace_elements,
                     core::DType round_to) {
  ForwardRows(g, x, w, consume, workspace, workspace_elements, round_to);
}

void ConvForwardRows(const ConvGeometry& g, const uint16_t* x, const float* w,
                     const OutputRows& consume, float* workspace, int64_t workspace_elements,
                     core::DType round_to) {
  CheckBf16Gemms();
  ForwardRows(g, x, w, consume, workspace, workspace_elements, round_to);
}

namespace {

template <typename T>
void ForwardBf16(const ConvGeometry& g, const T* x, const float* w, uint16_t* y, float* workspace,
                 int64_t workspace_elements) {
  CheckBf16Gemms();
  const int64_t k = g.out_channels;
  ForwardRows(
      g, x, w,
      [&](int64_t r0, int64_t r1, const float* rows) {
        StoreBf16(rows, (r1 - r0) * k, y + r0 * k);
      },
      workspace, workspace_elements, core::DType::kF32);
}

}  // namespace

void ConvForward(const ConvGeometry& g, const float* x, const float* w, uint16_t* y,
                 float* workspace, int64_t workspace_elements) {
  ForwardBf16(g, x, w, y, workspace, workspace_elements);
}

void ConvForward(const ConvGeometry& g, const uint16_t* x, const float* w, uint16_t* y,
                 float* workspace, int64_t workspace_elements) {
  ForwardBf16(g, x, w, y, workspace, workspace_elements);
}

namespace {

// The backward data of a GathersBackward convolution: the forward of its
// adjoint, each thread a share of dx's rows, a chunk at a time. dy and dx in
// fp32 (dx rounded to round_to) or bf16 (uint16_t), each either.
template <typename TDY, typename TDX>
void GatherBackwardData(const ConvGeometry& g, const TDY* dy, const float* w, TDX* dx,
                        float* workspace, int64_t workspace_elements, core::DType round_to) {
  const ConvGeometry a = Adjoint(g);
  const int64_t c = g.in_channels, chunk = ChunkRows(a);
  const int threads = Threads(g, workspace_elements);
  RepackFlipped(g, w, workspace);
  SharedB& weight = SharedWeight();
  weight.Prepare(false, ColWidth(a), c, workspace);
  BlasInCallingThread blas;
#pragma omp parallel num_threads(threads)
  {
    weight.Pack(omp_get_thread_num(), omp_get_num_threads());
#pragma omp barrier
    int64_t begin, end;
    ThreadShare(Rows(a), &begin, &end);
    float* col = workspace + RepackElements(g) + omp_get_thread_num() * PerThreadElements(g);
    for (int64_t r0 = begin; r0 < end; r0 += chunk) {
      const int64_t r1 = std::min(end, r0 + chunk);
      float* rows = nullptr;
      if constexpr (std::is_same_v<TDX, float>) {
        rows = dx + r0 * c;
      } else {
        rows = ThreadFloats(chunk * c);
      }
      if (Bf16Col<TDY>(a)) {
        Im2Col(a, dy, r0, r1, reinterpret_cast<uint16_t*>(col));
        weight.Gemm(false, r1 - r0, 1.0f, reinterpret_cast<const uint16_t*>(col), 0.0f, rows);
      } else {
        Im2Col(a, dy, r0, r1, reinterpret_cast<TDY*>(col));
        weight.Gemm(false, r1 - r0, 1.0f, reinterpret_cast<const TDY*>(col), 0.0f, rows);
      }
      if constexpr (std::is_same_v<TDX, float>) {
        RoundSpan(round_to, rows, (r1 - r0) * c);
      } else {
        StoreBf16(rows, (r1 - r0) * c, dx + r0 * c);
      }
    }
  }
}

// Output rows of neighbouring depths add into shared input planes. With at
// least as many images as threads, a thread owns whole images. With fewer, a
// thread owns a slab of output depths of each image in turn: first all but
// its last `halo` depths, whose windows reach no other slab's first part,
// then, after a barrier, those last depths, which reach no other slab's last
// depths as long as every slab is at least two halos deep.
// dy and dx in fp32 (dx rounded to round_to) or bf16 (uint16_t), each
// either; a bf16 dx's sums are made in fp32 scratch and then stored.
template <typename TDY, typename TDX>
void BackwardData(const ConvGeometry& g, const TDY* dy, const float* w, TDX* dx, float* workspace,
                  int64_t workspace_elements, core::DType round_to) {
  if (GathersBackward(g)) {
    GatherBackwardData(g, dy, w, dx, workspace, workspace_elements, round_to);
    return;
  }
  constexpr bool kBf16 = !std::is_same_v<TDX, float>;
  const int64_t k = g.out_channels, width = ColWidth(g), p = g.out_spatial();
  const int threads = Threads(g, workspace_elements);
  // Depth slabs add into one fp32 copy of the images: dx itself in fp32.
  float* slab_sums = nullptr;
  if constexpr (kBf16) {
    static thread_local std::vector<float> sums;
    if (g.batch < threads) {
      const size_t size = static_cast<size_t>(g.batch * g.in_spatial() * g.in_channels);
      if (sums.size() < size) sums.resize(size);
      slab_sums = sums.data();
    }
  } else {
    slab_sums = dx;
  }
  const float* wk = w;
  if (RepackElements(g) > 0) {
    RepackToChannelsLast(g, w, workspace);
    wk = workspace;
  }
  const int64_t image = g.in_spatial() * g.in_channels, plane = g.out(1) * g.out(2);
  const int64_t depth = g.out(0), halo = (g.kernel[0] - 1) / g.stride[0];
  SharedB& weight = SharedWeight();
  weight.Prepare(false, k, width, wk);
  BlasInCallingThread blas;
#pragma omp parallel num_threads(threads)
  {
    // From the team OpenMP gave, which may be smaller than asked for.
    const int team = omp_get_num_threads();
    weight.Pack(omp_get_thread_num(), team);
#pragma omp barrier
    const int64_t slabs = std::min<int64_t>(team, depth / std::max<int64_t>(1, 2 * halo));
    float* col = workspace + RepackElements(g) + omp_get_thread_num() * PerThreadElements(g);
    // dy rows [r0, r1) through the GEMM into col, then added into dx (a
    // pointwise conv's rows are dx's, rounded as they are written).
    const int64_t chunk = ChunkRows(g, width);
    // dx sums (fp32) from element `origin` on: dx itself in fp32.
    auto add_rows = [&](int64_t r0, int64_t r1, float* sums, int64_t origin) {
      for (int64_t c0 = r0; c0 < r1; c0 += chunk) {
        const int64_t c1 = std::min(r1, c0 + chunk);
        if (g.is_pointwise()) {
          if constexpr (kBf16) {
            float* rows = ThreadFloats((c1 - c0) * width);
            weight.Gemm(false, c1 - c0, 1.0f, dy + c0 * k, 0.0f, rows);
            StoreBf16(rows, (c1 - c0) * width, dx + c0 * width);
          } else {
            weight.Gemm(false, c1 - c0, 1.0f, dy + c0 * k, 0.0f, dx + c0 * width);
            RoundSpan(round_to, dx + c0 * width, (c1 - c0) * width);
          }
          continue;
        }
        weight.Gemm(false, c1 - c0, 1.0f, dy + c0 * k, 0.0f, col);
        Col2ImAdd(g, col, c0, c1, sums, origin);
      }
    };
    if (g.is_pointwise()) {
      int64_t begin, end;
      ThreadShare(Rows(g), &begin, &end);
      add_rows(begin, end, nullptr, 0);
    } else if (g.batch >= team || slabs <= 1) {
      // When rounding, a group of whole images (about a chunk of rows) at a
      // time, each group rounded (or stored in bf16) once all its rows are
      // added; else the whole share, chunked across images.
      int64_t n0, n1;
      ThreadShare(g.batch, &n0, &n1);
      const int64_t group =
          round_to == core::DType::kF32 && !kBf16 ? n1 - n0 : std::max<int64_t>(1, chunk / p);
      for (int64_t n = n0; n < n1; n += group) {
        const int64_t m = std::min(n1, n + group);
        if constexpr (kBf16) {
          float* sums = ThreadFloats((m - n) * image);
          std::fill(sums, sums + (m - n) * image, 0.0f);
          add_rows(n * p, m * p, sums, n * image);
          StoreBf16(sums, (m - n) * image, dx + n * image);
        } else {
          std::fill(dx + n * image, dx + m * image, 0.0f);
          add_rows(n * p, m * p, dx, 0);
          RoundSpan(round_to, dx + n * image, (m - n) * image);
        }
      }
    } else {
      int64_t i0, i1;
      ThreadShare(g.batch * image, &i0, &i1);
      std::fill(slab_sums + i0, slab_sums + i1, 0.0f);
      const int t = omp_get_thread_num();
      const int64_t z0 = depth * t / slabs, z1 = depth * (t + 1) / slabs;
      for (int64_t n = 0; n < g.batch; ++n) {
#pragma omp barrier
        if (t < slabs) add_rows(n * p + z0 * plane, n * p + (z1 - halo) * plane, slab_sums, 0);
#pragma omp barrier
        if (t < slabs) add_rows(n * p + (z1 - halo) * plane, n * p + z1 * plane, slab_sums, 0);
      }
#pragma omp barrier
      if constexpr (kBf16) {
        StoreBf16(slab_sums + i0, i1 - i0, dx + i0);
      } else {
        RoundSpan(round_to, dx + i0, i1 - i0);
      }
    }
  }
}

}  // namespace

void ConvBackwardData(const ConvGeometry& g, const float* dy, const float* w, float* dx,
                      float* workspace, int64_t workspace_elements, core::DType round_to) {
  BackwardData(g, dy, w, dx, workspace, workspace_elements, round_to);
}

void ConvBackwardData(const ConvGeometry& g, const uint16_t* dy, const float* w, uint16_t* dx,
                      float* workspace, int64_t workspace_elements) {
  CheckBf16Gemms();
  BackwardData(g, dy, w, dx, workspace, workspace_elements, core::DType::kF32);
}

void ConvBackwardData(const ConvGeometry& g, const float* dy, const float* w, uint16_t* dx,
                      float* workspace, int64_t workspace_elements) {
  CheckBf16Gemms();
  BackwardData(g, dy, w, dx, workspace, workspace_elements, core::DType::kF32);
}

namespace {

// One chunk's dw partial: C[k, width] (+)= dy^T * b, in the calling thread.
void WeightGemm(int64_t k, int64_t width, int64_t rows, const float* dy, const float* b, float beta,
                float* c) {
  Gemm(true, false, k, width, rows, 1.0f, dy, b, beta, c);
}
// A bf16 operand: on AMX tiles (the other read as the tiles round it).
template <typename TDY, typename TB>
void WeightGemm(int64_t k, int64_t width, int64_t rows, const TDY* dy, const TB* b, float beta,
                float* c) {
  GemmBf16Amx(true, false, k, width, rows, 1.0f, dy, k, b, width, beta, c, width);
}

// Each thread sums its rows' contribution into its own partial gradient;
// the partials are added (and unpacked to [K, C, V]) at the end. x and dy
// in fp32, or dy in bf16 with x in bf16 or fp32 (an image).
template <typename TX, typename TDY>
void BackwardWeight(const ConvGeometry& g, const TX* x, const TDY* dy, float* dw, float* workspace,
                    int64_t workspace_elements) {
  const int64_t k = g.out_channels, width = ColWidth(g), size = k * width;
  const int threads = Threads(g, workspace_elements);
  float* first = RepackElements(g) > 0 ? workspace : dw;
  auto partial = [&](int t) {
    return t == 0 ? first : workspace + RepackElements(g) + t * PerThreadElements(g) - size;
  };
  {
    BlasInCallingThread blas;
#pragma omp parallel num_threads(threads)
    {
      const int t = omp_get_thread_num();
      float* col = workspace + RepackElements(g) + t * PerThreadElements(g);
      float* acc = partial(t);
      int64_t begin, end;
      ThreadShare(Rows(g), &begin, &end);
      if (begin == end) std::fill(acc, acc + size, 0.0f);
      const int64_t chunk = ChunkRows(g);
      for (int64_t r0 = begin; r0 < end; r0 += chunk) {
        const int64_t r1 = std::min(end, r0 + chunk);
        // The first chunk overwrites the partial: no separate zeroing pass.
        const float beta = r0 == begin ? 0.0f : 1.0f;
        const TDY* dy_rows = dy + r0 * k;
        if (g.is_pointwise()) {
          WeightGemm(k, width, r1 - r0, dy_rows, x + r0 * width, beta, acc);
        } else if (std::is_same_v<TX, uint16_t> || Bf16Col<TX>(g)) {
          // The bf16 col straight into the layout the tile loads read.
          uint16_t* pairs = reinterpret_cast<uint16_t*>(col);
          Im2ColPairs(g, x, r0, r1, pairs);
          GemmBf16AmxPairB(true, k, width, r1 - r0, 1.0f, dy_rows, k, pairs, beta, acc, width);
        } else if constexpr (std::is_same_v<TX, float>) {
          Im2Col(g, x, r0, r1, col);
          WeightGemm(k, width, r1 - r0, dy_rows, col, beta, acc);
        }
      }
    }
  }
  // Threads in a fixed order, so the sum does not depend on timing.
#pragma omp parallel for if (WorthParallel(size * threads))
  for (int64_t i0 = 0; i0 < size; i0 += 1024) {
    const int64_t i1 = std::min(size, i0 + 1024);
    for (int t = 1; t < threads; ++t) {
      const float* p = partial(t);
      for (int64_t i = i0; i < i1; ++i) first[i] += p[i];
    }
  }
  if (RepackElements(g) > 0) RepackFromChannelsLast(g, first, dw);
}

}  // namespace

void ConvBackwardWeight(const ConvGeometry& g, const float* x, const float* dy, float* dw,
                        float* workspace, int64_t workspace_elements) {
  BackwardWeight(g, x, dy, dw, workspace, workspace_elements);
}

void ConvBackwardWeight(const ConvGeometry& g, const uint16_t* x, const uint16_t* dy, float* dw,
                        float* workspace, int64_t workspace_elements) {
  CheckBf16Gemms();
  BackwardWeight(g, x, dy, dw, workspace, workspace_elements);
}

void ConvBackwardWeight(const ConvGeometry& g, const float* x, const uint16_t* dy, float* dw,
                        float* workspace, int64_t workspace_elements) {
  CheckBf16Gemms();
  BackwardWeight(g, x, dy, dw, workspace, workspace_elements);
}

void ConvBackwardWeight(const ConvGeometry& g, const uint16_t* x, const float* dy, float* dw,
                        float* workspace, int64_t workspace_elements) {
  CheckBf16Gemms();
  BackwardWeight(g, x, dy, dw, workspace, workspace_elements);
}

}  // namespace mlperf::cpu::nhwc
