// The AMX bf16 GEMM: both operands are packed into tiles (A as 16 rows of 32
// bf16, B as 16 rows of 16 bf16 pairs along k, the layout TDPBF16PS reads),
// or read in place where they already lie so (a bf16 A whose rows are whole
// tile rows; a B written in the pair layout), then each 32x32 block of C
// sums its tiles' products in four accumulator tiles. Operands whose k runs down rows of memory are
// packed k-major, so that they are read along rows. The AMX instructions are written as inline
// assembly with memory clobbers (GCC's intrinsics for them do not tell the compiler that they read
// or write memory); the packing uses AVX-512 BF16, which every AMX CPU has, in functions compiled
// for it and called only once AMX is known.
#include "reference/kernels/cpu/gemm_amx.h"

#include "reference/kernels/switches.h"

#if defined(__x86_64__)

#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string_view>
#include <type_traits>
#include <vector>

#include "reference/kernels/cpu/round.h"

namespace mlperf::cpu {
namespace {

constexpr int64_t kTileRows = 16;    // rows of a tile
constexpr int64_t kTileK = 32;       // bf16 per row of an A tile (64 bytes)
constexpr int64_t kTileSize = 512;   // bf16 per tile (1 KiB)
constexpr int64_t kBlockTiles = 32;  // rows of tiles of A packed at a time (512 rows)

// Linux: ask for the AMX tile data state (arch_prctl ARCH_REQ_XCOMP_PERM,
// XFEATURE_XTILEDATA).
constexpr int kArchReqXcompPerm = 0x1023;
constexpr int kXfeatureXtiledata = 18;

bool Detect() {
  if (!ops::Switches().cpu_amx) return false;
  unsigned eax, ebx, ecx, edx;
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) == 0) return false;
  const bool avx512 = (ebx >> 16 & 1) && (ebx >> 30 & 1);  // AVX512F, AVX512BW
  const bool amx = (edx >> 22 & 1) && (edx >> 24 & 1);     // AMX-BF16, AMX-TILE
  if (!avx512 || !amx || __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) == 0) return false;
  if (!(eax >> 5 & 1)) return false;                                                  // AVX512_BF16
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0 || !(ecx >> 27 & 1)) return false;  // OSXSAVE
  // The OS must save the AVX-512 (bits 5-7) and tile (17, 18) state.
  unsigned xcr0_lo, xcr0_hi;
  __asm__("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  const unsigned need = 0xe0u | (3u << 17);
  if ((xcr0_lo & need) != need) return false;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
}

struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t bytes_per_row[16] = {};
  uint8_t rows[16] = {};
};

// Tiles 0-3 accumulate C (16 x 16 fp32), 4-5 hold A, 6-7 hold B: all 16 rows
// of 64 bytes.
void LoadTileConfig() {
  TileConfig config;
  for (int t = 0; t < 8; ++t) {
    config.rows[t] = kTileRows;
    config.bytes_per_row[t] = 64;
  }
  __asm__ volatile("ldtilecfg %0" ::"m"(config) : "memory");
}

void ReleaseTiles() { __asm__ volatile("tilerelease" ::: "memory"); }

#define MLPERF_TILE_ZERO(t) __asm__ volatile("tilezero %%tmm" #t ::: "memory")
#define MLPERF_TILE_LOAD(t, p, stride) \
  __asm__ volatile("tileloadd (%0,%1,1), %%tmm" #t ::"r"(p), "r"(stride) : "memory")
#define MLPERF_TILE_STORE(t, p, stride) \
  __asm__ volatile("tilestored %%tmm" #t ", (%0,%1,1)" ::"r"(p), "r"(stride) : "memory")
// tmm<c> += tmm<a> (A rows) times tmm<b> (B pairs).
#define MLPERF_TILE_DP(c, a, b) \
  __asm__ volatile("tdpbf16ps %%tmm" #b ", %%tmm" #a ", %%tmm" #c ::: "memory")

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512bf16")
// GCC 12's AVX-512 shuffle intrinsics start from an "undefined" vector that
// it then warns about.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

inline __mmask16 FirstLanes(int64_t count) {
  if (count <= 0) return 0;
  return count >= 16 ? __mmask16(0xffff) : __mmask16((1u << count) - 1);
}

// `count` floats at p (0 to 32; zeros after them) as 32 bf16.
inline __m512i Row32(const float* p, int64_t count) {
  const __m512 lo = _mm512_maskz_loadu_ps(FirstLanes(count), p);
  const __m512 hi = _mm512_maskz_loadu_ps(FirstLanes(count - 16), p + 16);
  return reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(hi, lo));
}

// The same from bf16 (their bits): a load.
inline __m512i Row32(const uint16_t* p, int64_t count) {
  const __mmask32 mask = count >= 32 ? ~__mmask32{0} : (__mmask32{1} << count) - 1;
  return _mm512_maskz_loadu_epi16(count > 0 ? mask : 0, p);
}

template <typename T>
inline void PackRow32(const T* p, int64_t count, uint16_t* dst) {
  _mm512_storeu_si512(dst, Row32(p, count));
}

void ConvertToBf16(const float* src, int64_t n, uint16_t* dst) {
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) PackRow32(src + i, 32, dst + i);
  if (i < n) {
    const __mmask32 mask = (__mmask32{1} << (n - i)) - 1;
    _mm512_mask_storeu_epi16(dst + i, mask, Row32(src + i, n - i));
  }
}

// Rows r and r + 1 of `lanes` values at p, as 32 bf16: row r's in the low
// half, row r + 1's in the high half, zeros past `lanes` and from row
// `count` on.
inline __m512i TwoRows(const float* p, int64_t ld, int64_t r, int64_t count, int64_t lanes) {
  const __mmask16 mask = FirstLanes(lanes);
  const __m512 v0 = _mm512_maskz_loadu_ps(r < count ? mask : 0, p + std::min(r, count - 1) * ld);
  const __m512 v1 =
      _mm512_maskz_loadu_ps(r + 1 < count ? mask : 0, p + std::min(r + 1, count - 1) * ld);
  return reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(v1, v0));
}

inline __m512i TwoRows(const uint16_t* p, int64_t ld, int64_t r, int64_t count, int64_t lanes) {
  const __mmask16 mask = FirstLanes(lanes);
  const __m256i v0 =
      _mm256_maskz_loadu_epi16(r < count ? mask : 0, p + std::min(r, count - 1) * ld);
  const __m256i v1 =
      _mm256_maskz_loadu_epi16(r + 1 < count ? mask : 0, p + std::min(r + 1, count - 1) * ld);
  return _mm512_inserti64x4(_mm512_castsi256_si512(v0), v1, 1);
}

// 16 bf16 of one row (low half) and 16 of the next (high half) as 16 pairs.
inline __m512i Interleave(__m512i two_rows) {
  alignas(64) static constexpr uint16_t kInterleave[32] = {
      0, 16, 1, 17, 2,  18, 3,  19, 4,  20, 5,  21, 6,  22, 7,  23,
      8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
  return _mm512_permutexvar_epi16(_mm512_load_si512(kInterleave), two_rows);
}

// Rows r and r + 1 at p (stride ld; zeros from row `count` on) of `lanes`
// values (zeros after them, 16 in all), as 16 bf16 pairs, row r's low.
template <typename T>
inline __m512i PairRows(const T* p, int64_t ld, int64_t r, int64_t count, int64_t lanes) {
  return Interleave(TwoRows(p, ld, r, count, lanes));
}

// Rows x cols of C at c (ldc apart) rounded to bf16 in place.
void RoundBlock(float* c, int64_t ldc, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j) c[r * ldc + j] = RoundToBf16(c[r * ldc + j]);
}

// Stores the transpose of v (16 rows of 16 32-bit pairs) as a tile's rows,
// tile row j holding element j of every v[i]: 64 shuffles in registers
// rather than 16 scatters to memory.
inline void StoreTransposed(__m512i v[16], uint16_t* tile) {
  __m512i t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_epi32(v[i], v[i + 1]);
    t[i + 1] = _mm512_unpackhi_epi32(v[i], v[i + 1]);
  }
  // u[4g + c], 128-bit lane l: column 4l + c of rows 4g to 4g + 3.
  __m512i u[16];
  for (int g = 0; g < 16; g += 4) {
    u[g] = _mm512_unpacklo_epi64(t[g], t[g + 2]);
    u[g + 1] = _mm512_unpackhi_epi64(t[g], t[g + 2]);
    u[g + 2] = _mm512_unpacklo_epi64(t[g + 1], t[g + 3]);
    u[g + 3] = _mm512_unpackhi_epi64(t[g + 1], t[g + 3]);
  }
  // Row 4l + c of the tile: lane l of u[c], u[4 + c], u[8 + c], u[12 + c].
  for (int c = 0; c < 4; ++c) {
    const __m512i v0 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0x44);
    const __m512i v1 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0xee);
    const __m512i v2 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0x44);
    const __m512i v3 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0xee);
    _mm512_storeu_si512(tile + c * 32, _mm512_shuffle_i32x4(v0, v2, 0x88));
    _mm512_storeu_si512(tile + (4 + c) * 32, _mm512_shuffle_i32x4(v0, v2, 0xdd));
    _mm512_storeu_si512(tile + (8 + c) * 32, _mm512_shuffle_i32x4(v1, v3, 0x88));
    _mm512_storeu_si512(tile + (12 + c) * 32, _mm512_shuffle_i32x4(v1, v3, 0xdd));
  }
}

// The tile of op(A) (m x k) at rows [row0, row0 + 16) and k [k0, k0 + 32),
// zeros past `rows` and `kc`; A in fp32 or in bf16 (T = uint16_t).
template <typename T>
inline void PackTileA(bool trans, const T* a, int64_t lda, int64_t row0, int64_t rows, int64_t k0,
                      int64_t kc, uint16_t* tile) {
  if (!trans) {
    for (int64_t r = 0; r < kTileRows; ++r)
      PackRow32(r < rows ? a + (row0 + r) * lda + k0 : a, r < rows ? kc : 0, tile + r * kTileK);
    return;
  }
  // op(A)[i][kk] = a[kk * lda + i]: rows 2p and 2p + 1 of a are the tile's
  // column of pairs p.
  __m512i pairs[16];
  for (int64_t p = 0; p < kTileRows; ++p)
    pairs[p] = PairRows(a + k0 * lda + row0, lda, 2 * p, kc, rows);
  StoreTransposed(pairs, tile);
}

// The tile of op(B) (k x n) at k [k0, k0 + 32) and columns [n0, n0 + 16),
// each of its 16 rows (B[2p][j], B[2p + 1][j]) for j < 16.
template <typename T>
inline void PackTileB(bool trans, const T* b, int64_t ldb, int64_t n0, int64_t cols, int64_t k0,
                      int64_t kc, uint16_t* tile) {
  if (!trans) {
    // op(B)[kk][j] = b[kk * ldb + j]: rows 2p and 2p + 1 of b are row p.
    for (int64_t p = 0; p < kTileRows; ++p)
      _mm512_storeu_si512(tile + p * 32, PairRows(b + k0 * ldb + n0, ldb, 2 * p, kc, cols));
    return;
  }
  // op(B)[kk][j] = b[j * ldb + kk]: row j of b is the tile's column j.
  __m512i rows[16];
  for (int64_t j = 0; j < kTileRows; ++j)
    rows[j] = Row32(j < cols ? b + (n0 + j) * ldb + k0 : b, j < cols ? kc : 0);
  StoreTransposed(rows, tile);
}

// Visits the tiles (outer, inner) of a packed operand in the order that
// reads its source along rows of memory: k outermost where k runs down them.
template <typename F>
inline void ForEachTile(bool k_down_rows, int64_t tiles, int64_t kt, F pack) {
  if (k_down_rows) {
    for (int64_t q = 0; q < kt; ++q)
      for (int64_t t = 0; t < tiles; ++t) pack(t, q);
  } else {
    for (int64_t t = 0; t < tiles; ++t)
      for (int64_t q = 0; q < kt; ++q) pack(t, q);
  }
}

// Rows [i0, i0 + 16 * tiles) of op(A) (m x k), as tiles[tile row][k / 32].
template <typename T>
void PackA(bool trans, const T* a, int64_t lda, int64_t m, int64_t k, int64_t i0, int64_t tiles,
           int64_t kt, uint16_t* dst) {
  ForEachTile(trans, tiles, kt, [&](int64_t it, int64_t q) {
    const int64_t row0 = i0 + it * kTileRows;
    PackTileA(trans, a, lda, row0, std::min(kTileRows, m - row0), q * kTileK,
              std::min(kTileK, k - q * kTileK), dst + (it * kt + q) * kTileSize);
  });
}

// Tile columns [jt0, jt1) of op(B) (k x n), as tiles[n / 16][k / 32].
template <typename T>
void PackB(bool trans, const T* b, int64_t ldb, int64_t k, int64_t n, int64_t jt0, int64_t jt1,
           int64_t kt, uint16_t* dst) {
  ForEachTile(!trans, jt1 - jt0, kt, [&](int64_t t, int64_t q) {
    const int64_t jt = jt0 + t, n0 = jt * kTileRows;
    PackTileB(trans, b, ldb, n0, std::min(kTileRows, n - n0), q * kTileK,
              std::min(kTileK, k - q * kTileK), dst + (jt * kt + q) * kTileSize);
  });
}

// Where the A tiles of a block lie: tile (it, q) at base + it * row_step +
// q * k_step, its rows `stride` bytes apart. Packed tiles, or a bf16 A read
// in place.
struct ATiles {
  const uint16_t* base;
  int64_t row_step, k_step, stride;
};

ATiles Packed(const uint16_t* pa, int64_t kt) {
  return {pa, kt * kTileSize, kTileSize, kTileK * 2};
}

// Where the B tiles lie: tile (jt, q) at base + jt * col_step + q * k_step,
// its rows `stride` bytes apart. Packed tiles, or B in the pair layout
// (AmxPairRows) read in place.
struct BTiles {
  const uint16_t* base;
  int64_t col_step, k_step, stride;
};

BTiles PackedB(const uint16_t* pb, int64_t kt) {
  return {pb, kt * kTileSize, kTileSize, kTileK * 2};
}

// A pair layout with `columns` columns: a tile column is 16 pairs, a tile
// 16 pair rows.
BTiles PairB(const uint16_t* pairs, int64_t columns) {
  return {pairs, 2 * kTileRows, kTileRows * 2 * columns, 2 * columns * 2};
}

// C rows [i0, i0 + 16 * tiles) from the block of A and all of B, each 32x32
// block rounded to bf16 after it is stored with `round_c`.
void MultiplyBlock(const ATiles& pa, const BTiles& pb, int64_t tiles, int64_t nt, int64_t kt,
                   int64_t i0, int64_t m, int64_t n, float alpha, float beta, float* c, int64_t ldc,
                   bool round_c) {
  alignas(64) float acc[32 * 32];
  const int64_t stride = pa.stride, b_stride = pb.stride, acc_stride = 32 * sizeof(float);
  for (int64_t jt = 0; jt < nt; jt += 2) {
    const uint16_t* b0 = pb.base + jt * pb.col_step;
    const uint16_t* b1 = b0 + pb.col_step;
    for (int64_t it = 0; it < tiles; it += 2) {
      const uint16_t* a0 = pa.base + it * pa.row_step;
      const uint16_t* a1 = a0 + pa.row_step;
      const int64_t row0 = i0 + it * kTileRows, col0 = jt * kTileRows;
      const int64_t rows = std::min<int64_t>(32, m - row0), cols = std::min<int64_t>(32, n - col0);
      // A whole block with alpha 1 and beta 0 is stored straight from the
      // accumulators into C: no pass through `acc` (small-k GEMMs spend a
      // fifth of their time there). Beta 1 keeps the pass, which adds C
      // after the products, not before.
      float* direct = rows == 32 && cols == 32 && alpha == 1.0f && beta == 0.0f
                          ? c + row0 * ldc + col0
                          : nullptr;
      const int64_t c_stride = ldc * sizeof(float);
      MLPERF_TILE_ZERO(0);
      MLPERF_TILE_ZERO(1);
      MLPERF_TILE_ZERO(2);
      MLPERF_TILE_ZERO(3);
      for (int64_t q = 0; q < kt; ++q) {
        MLPERF_TILE_LOAD(4, a0 + q * pa.k_step, stride);
        MLPERF_TILE_LOAD(5, a1 + q * pa.k_step, stride);
        MLPERF_TILE_LOAD(6, b0 + q * pb.k_step, b_stride);
        MLPERF_TILE_LOAD(7, b1 + q * pb.k_step, b_stride);
        MLPERF_TILE_DP(0, 4, 6);
        MLPERF_TILE_DP(1, 4, 7);
        MLPERF_TILE_DP(2, 5, 6);
        MLPERF_TILE_DP(3, 5, 7);
      }
      if (direct != nullptr) {
        MLPERF_TILE_STORE(0, direct, c_stride);
        MLPERF_TILE_STORE(1, direct + 16, c_stride);
        MLPERF_TILE_STORE(2, direct + 16 * ldc, c_stride);
        MLPERF_TILE_STORE(3, direct + 16 * ldc + 16, c_stride);
        if (round_c) RoundBlock(direct, ldc, 32, 32);
        continue;
      }
      MLPERF_TILE_STORE(0, acc, acc_stride);
      MLPERF_TILE_STORE(1, acc + 16, acc_stride);
      MLPERF_TILE_STORE(2, acc + 16 * 32, acc_stride);
      MLPERF_TILE_STORE(3, acc + 16 * 32 + 16, acc_stride);
      for (int64_t r = 0; r < rows; ++r) {
        float* out = c + (row0 + r) * ldc + col0;
        const float* sum = acc + r * 32;
        if (beta == 0.0f) {
          for (int64_t j = 0; j < cols; ++j) out[j] = alpha * sum[j];
        } else {
          for (int64_t j = 0; j < cols; ++j) out[j] = alpha * sum[j] + beta * out[j];
        }
      }
      if (round_c) RoundBlock(c + row0 * ldc + col0, ldc, rows, cols);
    }
  }
}

// Rows 2p and 2p + 1 of B (n values each; row1 null: zeros) as pair row p
// of the pair layout, `columns` pairs, zeros past n.
void InterleaveRows(const uint16_t* row0, const uint16_t* row1, int64_t n, int64_t columns,
                    uint16_t* pairs) {
  for (int64_t j = 0; j < columns; j += kTileRows) {
    const __mmask16 mask = FirstLanes(n - j);
    const __m256i v0 = _mm256_maskz_loadu_epi16(mask, row0 + j);
    const __m256i v1 =
        row1 == nullptr ? _mm256_setzero_si256() : _mm256_maskz_loadu_epi16(mask, row1 + j);
    const __m512i two = _mm512_inserti64x4(_mm512_castsi256_si512(v0), v1, 1);
    _mm512_storeu_si512(pairs + 2 * j, Interleave(two));
  }
}

#pragma GCC diagnostic pop
#pragma GCC pop_options

// Tiles are computed in pairs: rows and columns of tiles are padded to even
// counts.
int64_t EvenTiles(int64_t x) { return ((x + kTileRows - 1) / kTileRows + 1) / 2 * 2; }

// Packing buffers of the calling thread, one for each operand whatever
// their types; they only grow.
thread_local std::vector<uint16_t> buffer_a, buffer_b;

uint16_t* Buffer(std::vector<uint16_t>& buffer, int64_t elements) {
  if (static_cast<int64_t>(buffer.size()) < elements) buffer.resize(static_cast<size_t>(elements));
  return buffer.data();
}

}  // namespace

bool AmxBf16Available() {
  static const bool available = Detect();
  return available;
}

int64_t AmxPackedBElements(int64_t k, int64_t n) {
  return EvenTiles(n) * ((k + kTileK - 1) / kTileK) * kTileSize;
}

void PackBf16AmxB(bool trans_b, int64_t k, int64_t n, const float* b, int64_t ldb, int part,
                  int parts, uint16_t* tiles) {
  const int64_t nt = EvenTiles(n), kt = (k + kTileK - 1) / kTileK;
  PackB(trans_b, b, ldb, k, n, nt * part / parts, nt * (part + 1) / parts, kt, tiles);
}

namespace {

template <typename TA>
void GemmTiledB(bool trans_a, int64_t m, int64_t n, int64_t k, float alpha, const TA* a,
                int64_t lda, const BTiles& pb, float beta, float* c, int64_t ldc,
                bool round_c = false) {
  if (m <= 0 || n <= 0) return;
  const int64_t mt = EvenTiles(m), nt = EvenTiles(n), kt = (k + kTileK - 1) / kTileK;
  // A bf16 A whose rows are whole tile rows (k a multiple of 32) is read in
  // place, 32 rows at a time; only a last partial pair of tiles is packed.
  const bool in_place = std::is_same_v<TA, uint16_t> && !trans_a && k % kTileK == 0;
  const int64_t direct_tiles = in_place ? m / (2 * kTileRows) * 2 : 0;
  uint16_t* pa = Buffer(buffer_a, std::min(mt, kBlockTiles) * kt * kTileSize);
  LoadTileConfig();
  for (int64_t it = 0, tiles; it < mt; it += tiles) {
    tiles = std::min(kBlockTiles, mt - it);
    const int64_t i0 = it * kTileRows;
    if (it < direct_tiles) {
      tiles = std::min(tiles, direct_tiles - it);
      const ATiles rows{reinterpret_cast<const uint16_t*>(a) + i0 * lda, kTileRows * lda, kTileK,
                        lda * 2};
      MultiplyBlock(rows, pb, tiles, nt, kt, i0, m, n, alpha, beta, c, ldc, round_c);
      continue;
    }
    PackA(trans_a, a, lda, m, k, i0, tiles, kt, pa);
    MultiplyBlock(Packed(pa, kt), pb, tiles, nt, kt, i0, m, n, alpha, beta, c, ldc, round_c);
  }
  ReleaseTiles();
}

template <typename TA, typename TB>
void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const TA* a,
          int64_t lda, const TB* b, int64_t ldb, float beta, float* c, int64_t ldc,
          bool round_c = false) {
  if (m <= 0 || n <= 0) return;
  uint16_t* pb = Buffer(buffer_b, AmxPackedBElements(k, n));
  const int64_t nt = EvenTiles(n), kt = (k + kTileK - 1) / kTileK;
  PackB(trans_b, b, ldb, k, n, 0, nt, kt, pb);
  GemmTiledB(trans_a, m, n, k, alpha, a, lda, PackedB(pb, kt), beta, c, ldc, round_c);
}

}  // namespace

void GemmBf16Amx(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                 const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                 int64_t ldc, bool round_c) {
  Gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, round_c);
}

void GemmBf16Amx(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                 const uint16_t* a, int64_t lda, const uint16_t* b, int64_t ldb, float beta,
                 float* c, int64_t ldc) {
  Gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void GemmBf16Amx(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                 const uint16_t* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                 int64_t ldc) {
  Gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void GemmBf16Amx(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                 const float* a, int64_t lda, const uint16_t* b, int64_t ldb, float beta, float* c,
                 int64_t ldc) {
  Gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void PackedBf16(const float* src, int64_t n, uint16_t* dst) { ConvertToBf16(src, n, dst); }

void GemmBf16AmxPackedB(bool trans_a, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                        int64_t lda, const uint16_t* tiles, float beta, float* c, int64_t ldc) {
  GemmTiledB(trans_a, m, n, k, alpha, a, lda, PackedB(tiles, (k + kTileK - 1) / kTileK), beta, c,
             ldc);
}

void GemmBf16AmxPackedB(bool trans_a, int64_t m, int64_t n, int64_t k, float alpha,
                        const uint16_t* a, int64_t lda, const uint16_t* tiles, float beta, float* c,
                        int64_t ldc) {
  GemmTiledB(trans_a, m, n, k, alpha, a, lda, PackedB(tiles, (k + kTileK - 1) / kTileK), beta, c,
             ldc);
}

int64_t AmxPairColumns(int64_t n) { return EvenTiles(n) * kTileRows; }

void AmxPairRows(const uint16_t* row0, const uint16_t* row1, int64_t n, uint16_t* pairs) {
  InterleaveRows(row0, row1, n, AmxPairColumns(n), pairs);
}

void GemmBf16AmxPairB(bool trans_a, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                      int64_t lda, const uint16_t* pairs, float beta, float* c, int64_t ldc) {
  GemmTiledB(trans_a, m, n, k, alpha, a, lda, PairB(pairs, AmxPairColumns(n)), beta, c, ldc);
}

void GemmBf16AmxPairB(bool trans_a, int64_t m, int64_t n, int64_t k, float alpha, const uint16_t* a,
                      int64_t lda, const uint16_t* pairs, float beta, float* c, int64_t ldc) {
  GemmTiledB(trans_a, m, n, k, alpha, a, lda, PairB(pairs, AmxPairColumns(n)), beta, c, ldc);
}

}  // namespace mlperf::cpu

#else  // not x86-64: no AMX

#include "base/check.h"

namespace mlperf::cpu {

bool AmxBf16Available() { return false; }

namespace {
void NoAmx() { MLPERF_CHECK_MSG(false, "the AMX GEMMs are x86-64 only"); }
}  // namespace

void GemmBf16Amx(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*,
                 int64_t, float, float*, int64_t, bool) {
  NoAmx();
}
void GemmBf16Amx(bool, bool, int64_t, int64_t, int64_t, float, const uint16_t*, int64_t,
                 const uint16_t*, int64_t, float, float*, int64_t) {
  NoAmx();
}
void GemmBf16Amx(bool, bool, int64_t, int64_t, int64_t, float, const uint16_t*, int64_t,
                 const float*, int64_t, float, float*, int64_t) {
  NoAmx();
}
void GemmBf16Amx(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t,
                 const uint16_t*, int64_t, float, float*, int64_t) {
  NoAmx();
}
void PackedBf16(const float*, int64_t, uint16_t*) { NoAmx(); }

int64_t AmxPackedBElements(int64_t, int64_t) { return 0; }

void PackBf16AmxB(bool, int64_t, int64_t, const float*, int64_t, int, int, uint16_t*) { NoAmx(); }

void GemmBf16AmxPackedB(bool, int64_t, int64_t, int64_t, float, const float*, int64_t,
                        const uint16_t*, float, float*, int64_t) {
  NoAmx();
}
void GemmBf16AmxPackedB(bool, int64_t, int64_t, int64_t, float, const uint16_t*, int64_t,
                        const uint16_t*, float, float*, int64_t) {
  NoAmx();
}

int64_t AmxPairColumns(int64_t) { return 0; }

void AmxPairRows(const uint16_t*, const uint16_t*, int64_t, uint16_t*) { NoAmx(); }

void GemmBf16AmxPairB(bool, int64_t, int64_t, int64_t, float, const float*, int64_t,
                      const uint16_t*, float, float*, int64_t) {
  NoAmx();
}
void GemmBf16AmxPairB(bool, int64_t, int64_t, int64_t, float, const uint16_t*, int64_t,
                      const uint16_t*, float, float*, int64_t) {
  NoAmx();
}

}  // namespace mlperf::cpu

#endif
