#include "reference/kernels/cpu/philox_x8.h"

#if defined(__AVX2__)
#include <immintrin.h>
#endif
#include <cstring>

#include "reference/core/philox.h"

namespace mlperf::cpu {

#if defined(__AVX2__)
namespace {

__m256i Broadcast(uint32_t v) { return _mm256_set1_epi32(static_cast<int>(v)); }

// The high and low words of a * m in each of eight lanes: the even lanes'
// products, then the odd lanes' shifted down.
void MulHiLo(__m256i a, __m256i m, __m256i* hi, __m256i* lo) {
  const __m256i even = _mm256_mul_epu32(a, m);
  const __m256i odd = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), m);
  *lo = _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA);
  *hi = _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
}

}  // namespace

void PhiloxBlocks8(uint64_t seed, uint64_t offset, uint64_t block0, uint32_t* out) {
  // Counter words: the block's index (low word, high word, carried where
  // the low one wraps inside the eight), then the offset's.
  const uint32_t low = static_cast<uint32_t>(block0);
  __m256i c0 = _mm256_add_epi32(Broadcast(low), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  const __m256i sign = Broadcast(0x80000000u);
  const __m256i wrapped =  // -1 where the low word wrapped (unsigned c0 < low)
      _mm256_cmpgt_epi32(_mm256_xor_si256(Broadcast(low), sign), _mm256_xor_si256(c0, sign));
  __m256i c1 = _mm256_sub_epi32(Broadcast(static_cast<uint32_t>(block0 >> 32)), wrapped);
  __m256i c2 = Broadcast(static_cast<uint32_t>(offset));
  __m256i c3 = Broadcast(static_cast<uint32_t>(offset >> 32));
  const __m256i m0 = Broadcast(0xD2511F53u), m1 = Broadcast(0xCD9E8D57u);
  uint32_t key0 = static_cast<uint32_t>(seed), key1 = static_cast<uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    __m256i hi0, lo0, hi1, lo1;
    MulHiLo(c0, m0, &hi0, &lo0);
    MulHiLo(c2, m1, &hi1, &lo1);
    c0 = _mm256_xor_si256(_mm256_xor_si256(hi1, c1), Broadcast(key0));
    c1 = lo1;
    c2 = _mm256_xor_si256(_mm256_xor_si256(hi0, c3), Broadcast(key1));
    c3 = lo0;
    key0 += 0x9E3779B9u;
    key1 += 0xBB67AE85u;
  }
  // Four words of eight blocks to eight blocks of four words.
  const __m256i t0 = _mm256_unpacklo_epi32(c0, c1), t1 = _mm256_unpackhi_epi32(c0, c1);
  const __m256i t2 = _mm256_unpacklo_epi32(c2, c3), t3 = _mm256_unpackhi_epi32(c2, c3);
  const __m256i b04 = _mm256_unpacklo_epi64(t0, t2), b15 = _mm256_unpackhi_epi64(t0, t2);
  const __m256i b26 = _mm256_unpacklo_epi64(t1, t3), b37 = _mm256_unpackhi_epi64(t1, t3);
  __m256i* o = reinterpret_cast<__m256i*>(out);
  _mm256_storeu_si256(o, _mm256_permute2x128_si256(b04, b15, 0x20));
  _mm256_storeu_si256(o + 1, _mm256_permute2x128_si256(b26, b37, 0x20));
  _mm256_storeu_si256(o + 2, _mm256_permute2x128_si256(b04, b15, 0x31));
  _mm256_storeu_si256(o + 3, _mm256_permute2x128_si256(b26, b37, 0x31));
}
#else
void PhiloxBlocks8(uint64_t seed, uint64_t offset, uint64_t block0, uint32_t* out) {
  for (uint64_t b = 0; b < 8; ++b) {
    const core::Philox4x32 block = core::PhiloxBlock(seed, offset, block0 + b);
    std::memcpy(out + 4 * b, block.v, sizeof(block.v));
  }
}
#endif

}  // namespace mlperf::cpu
