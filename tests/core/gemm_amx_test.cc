// The AMX bf16 GEMM (kernels/cpu/gemm_amx.h) against an fp64 sum of the
// bf16-rounded operands, over shapes with partial tiles in every dimension,
// transposes, strides, alpha and beta. Skips on CPUs without AMX.
#include "reference/kernels/cpu/gemm_amx.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "reference/core/dtype.h"
#include "reference/core/philox.h"
#include "reference/kernels/cpu/gemm.h"

namespace mlperf {
namespace {

float Bf16(float x) { return core::Bf16ToFloat(core::FloatToBf16(x)); }

std::vector<float> Uniform(int64_t size, uint64_t seed) {
  std::vector<float> v(static_cast<size_t>(size));
  for (int64_t i = 0; i < size; ++i) v[i] = 2.0f * core::PhiloxUniform(seed, 0, i) - 1.0f;
  return v;
}

struct Case {
  int64_t m, n, k;
  bool trans_a, trans_b;
  float alpha, beta;
  int64_t pad;  // extra elements per row of every operand
};

// Runs one case and checks every element of C, and that the padding of C's
// rows is untouched.
void Check(const Case& t) {
  SCOPED_TRACE(testing::Message() << t.m << "x" << t.n << "x" << t.k << " trans " << t.trans_a
                                  << t.trans_b << " alpha " << t.alpha << " beta " << t.beta
                                  << " pad " << t.pad);
  const int64_t a_rows = t.trans_a ? t.k : t.m, a_cols = t.trans_a ? t.m : t.k;
  const int64_t b_rows = t.trans_b ? t.n : t.k, b_cols = t.trans_b ? t.k : t.n;
  const int64_t lda = a_cols + t.pad, ldb = b_cols + t.pad, ldc = t.n + t.pad;
  const std::vector<float> a = Uniform(a_rows * lda, 1), b = Uniform(b_rows * ldb, 2);
  std::vector<float> c = Uniform(t.m * ldc, 3);
  const std::vector<float> c0 = c;
  const auto op_a = [&](int64_t i, int64_t p) {
    return Bf16(t.trans_a ? a[p * lda + i] : a[i * lda + p]);
  };
  const auto op_b = [&](int64_t p, int64_t j) {
    return Bf16(t.trans_b ? b[j * ldb + p] : b[p * ldb + j]);
  };
  cpu::GemmBf16Amx(t.trans_a, t.trans_b, t.m, t.n, t.k, t.alpha, a.data(), lda, b.data(), ldb,
                   t.beta, c.data(), ldc);
  int64_t bad = 0;
  for (int64_t i = 0; i < t.m; ++i) {
    for (int64_t j = 0; j < t.n; ++j) {
      double sum = 0, magnitude = 0;
      for (int64_t p = 0; p < t.k; ++p) {
        const double product = double{op_a(i, p)} * op_b(p, j);
        sum += product;
        magnitude += std::fabs(product);
      }
      const double old = t.beta == 0 ? 0.0 : double{t.beta} * c0[i * ldc + j];
      const double want = t.alpha * sum + old;
      // fp32 sums of k exact products: at most k roundings of the running sum.
      const double tolerance =
          (t.k + 2) * std::ldexp(1.0, -24) * (std::fabs(t.alpha) * magnitude + std::fabs(old)) +
          1e-30;
      if (std::fabs(c[i * ldc + j] - want) > tolerance && ++bad <= 5)
        ADD_FAILURE() << "C[" << i << "][" << j << "] = " << c[i * ldc + j] << ", want " << want;
    }
    for (int64_t j = t.n; j < ldc; ++j)
      ASSERT_EQ(c[i * ldc + j], c0[i * ldc + j]) << "padding of row " << i << " written";
  }
  EXPECT_EQ(bad, 0);
}

class GemmAmxTest : public testing::Test {
 protected:
  void SetUp() override {
    if (!cpu::AmxBf16Available()) GTEST_SKIP() << "this CPU (or MLPERF_CPU_AMX=0) has no AMX bf16";
  }
};

TEST_F(GemmAmxTest, EqualsTheSumOfRoundedProductsForEveryLayout) {
  const int64_t shapes[][3] = {{1, 1, 1},    {16, 16, 32}, {32, 32, 64},  {17, 33, 31},
                               {3, 70, 100}, {65, 5, 47},  {100, 90, 33}, {40, 48, 700}};
  for (const auto& s : shapes)
    for (bool ta : {false, true})
      for (bool tb : {false, true}) Check({s[0], s[1], s[2], ta, tb, 1.0f, 0.0f, 0});
}

TEST_F(GemmAmxTest, AlphaBetaAndStridedRows) {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      Check({37, 29, 75, ta, tb, 0.5f, 1.0f, 3});
      Check({20, 50, 40, ta, tb, -2.0f, -0.25f, 16});
      // Whole 32x32 blocks with alpha 1 and beta 0 are stored straight
      // from the accumulators, the edges (and beta 1) through `acc`.
      Check({70, 96, 100, ta, tb, 1.0f, 1.0f, 5});
      Check({64, 70, 64, ta, tb, 1.0f, 0.0f, 3});
    }
}

// A block of more than 512 rows packs A in several blocks against one B.
TEST_F(GemmAmxTest, ManyRowBlocks) {
  Check({1100, 40, 96, false, true, 1.0f, 0.0f, 0});
  Check({530, 18, 64, true, false, 1.0f, 1.0f, 0});
}

// Both paths to C: the general one (20 x 20) and whole blocks (64 x 64).
TEST_F(GemmAmxTest, BetaZeroIgnoresCAndNaNPropagates) {
  for (const int64_t m : {20, 64}) {
    const int64_t n = m, k = 40;
    std::vector<float> a = Uniform(m * k, 4), b = Uniform(k * n, 5);
    std::vector<float> c(m * n, std::numeric_limits<float>::quiet_NaN());
    cpu::GemmBf16Amx(false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, c.data(), n);
    for (float v : c) ASSERT_TRUE(std::isfinite(v));
    a[3 * k + 7] = std::numeric_limits<float>::quiet_NaN();
    cpu::GemmBf16Amx(false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, c.data(), n);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) EXPECT_EQ(std::isnan(c[i * n + j]), i == 3) << i << "," << j;
  }
}

// cpu::Gemm takes the AMX path under bf16 operands (the same bits as a
// direct call in one thread) and OpenBLAS's fp32 one otherwise.
TEST_F(GemmAmxTest, GemmUsesItUnderBf16Operands) {
  const int64_t m = 48, n = 64, k = 80;
  const std::vector<float> a = Uniform(m * k, 6), b = Uniform(k * n, 7);
  std::vector<float> direct(m * n), through(m * n), fp32(m * n);
  cpu::GemmBf16Amx(false, true, m, n, k, 1.0f, a.data(), k, b.data(), k, 0.0f, direct.data(), n);
  cpu::SetBf16Operands(true);
  cpu::Gemm(false, true, m, n, k, 1.0f, a.data(), b.data(), 0.0f, through.data());
  cpu::SetBf16Operands(false);
  cpu::Gemm(false, true, m, n, k, 1.0f, a.data(), b.data(), 0.0f, fp32.data());
  EXPECT_EQ(direct, through);
  // Unrounded fp32 operands: a different product in almost every element.
  int64_t same = 0;
  for (int64_t i = 0; i < m * n; ++i) same += fp32[i] == direct[i];
  EXPECT_LT(same, m * n / 10);
}

// A weight shared by a team's GEMMs (cpu::SharedB): packed once, in shares
// by three threads, it gives each GEMM the bits of cpu::Gemm, both
// transposes of B, with bf16 operands on AMX and with fp32 ones.
TEST_F(GemmAmxTest, SharedBGivesGemmsBits) {
  const int64_t m = 100, n = 72, k = 90;  // partial tiles everywhere
  const std::vector<float> a = Uniform(m * k, 8), b = Uniform(k * n, 9);
  for (const bool bf16 : {true, false}) {
    cpu::SetBf16Operands(bf16);
    for (const bool trans_b : {false, true}) {
      std::vector<float> want(m * n), got(m * n, -1.0f);
      cpu::Gemm(false, trans_b, m, n, k, 1.0f, a.data(), b.data(), 0.0f, want.data());
      cpu::SharedB shared;
      shared.Prepare(trans_b, k, n, b.data());
      for (int t = 0; t < 3; ++t) shared.Pack(t, 3);
      // Two GEMMs over row blocks, as a convolution's chunks.
      shared.Gemm(false, 40, 1.0f, a.data(), 0.0f, got.data());
      shared.Gemm(false, m - 40, 1.0f, a.data() + 40 * k, 0.0f, got.data() + 40 * n);
      EXPECT_EQ(got, want) << "bf16 " << bf16 << " trans_b " << trans_b;
    }
  }
  cpu::SetBf16Operands(false);
}

// Operands given in bf16 (bf16 activation storage) give the bits of their
// fp32 values: A read in place where its rows are whole tile rows (k a
// multiple of 32; 32 rows at a time, a last partial pair packed), or packed,
// A transposed, B in both layouts and a mix of bf16 A with fp32 B.
TEST_F(GemmAmxTest, Bf16OperandsGiveTheBitsOfTheirValues) {
  const auto bits = [](const std::vector<float>& v) {
    std::vector<uint16_t> h(v.size());
    for (size_t i = 0; i < v.size(); ++i) h[i] = core::FloatToBf16(v[i]);
    return h;
  };
  const auto values = [](const std::vector<uint16_t>& h) {
    std::vector<float> v(h.size());
    for (size_t i = 0; i < v.size(); ++i) v[i] = core::Bf16ToFloat(h[i]);
    return v;
  };
  struct Shape {
    int64_t m, n, k;
  };
  for (const Shape sh : {Shape{1056, 40, 64}, Shape{1100, 72, 96}, Shape{70, 48, 90}}) {
    const std::vector<uint16_t> a16 = bits(Uniform(sh.m * sh.k, 11)),
                                b16 = bits(Uniform(sh.k * sh.n, 12));
    const std::vector<float> a = values(a16), b = values(b16);
    for (const bool trans_a : {false, true}) {
      for (const bool trans_b : {false, true}) {
        const int64_t lda = trans_a ? sh.m : sh.k, ldb = trans_b ? sh.k : sh.n;
        std::vector<float> want(sh.m * sh.n), got(sh.m * sh.n, -1.0f), mixed(sh.m * sh.n, -1.0f);
        cpu::GemmBf16Amx(trans_a, trans_b, sh.m, sh.n, sh.k, 1.0f, a.data(), lda, b.data(), ldb,
                         0.0f, want.data(), sh.n);
        cpu::GemmBf16Amx(trans_a, trans_b, sh.m, sh.n, sh.k, 1.0f, a16.data(), lda, b16.data(), ldb,
                         0.0f, got.data(), sh.n);
        cpu::GemmBf16Amx(trans_a, trans_b, sh.m, sh.n, sh.k, 1.0f, a16.data(), lda, b.data(), ldb,
                         0.0f, mixed.data(), sh.n);
        EXPECT_EQ(got, want) << sh.m << "x" << sh.n << "x" << sh.k << " trans " << trans_a
                             << trans_b;
        EXPECT_EQ(mixed, want) << sh.m << "x" << sh.n << "x" << sh.k;
      }
    }
    // A shared B with a bf16 A, as a convolution's chunks of rows.
    cpu::SetBf16Operands(true);
    std::vector<float> want(sh.m * sh.n), got(sh.m * sh.n, -1.0f);
    cpu::Gemm(false, true, sh.m, sh.n, sh.k, 1.0f, a.data(), b.data(), 0.0f, want.data());
    cpu::SharedB shared;
    shared.Prepare(true, sh.k, sh.n, b.data());
    shared.Pack(0, 1);
    shared.Gemm(false, 64, 1.0f, a16.data(), 0.0f, got.data());
    shared.Gemm(false, sh.m - 64, 1.0f, a16.data() + 64 * sh.k, 0.0f, got.data() + 64 * sh.n);
    EXPECT_EQ(got, want) << "shared B, " << sh.m << "x" << sh.n << "x" << sh.k;
    cpu::SetBf16Operands(false);
  }
}

// B written in the pair layout (AmxPairRows, two rows at a time, zero rows
// up to a multiple of 32) gives GemmBf16Amx's bits on the same B: A in fp32
// and bf16, transposed or not, beta 0 and 1, partial tiles in every
// dimension, n from one column to several pairs of tiles; the layout's
// padding columns are written as zeros.
TEST_F(GemmAmxTest, PairLayoutBGivesTheGemmsBits) {
  struct Shape {
    int64_t m, n, k;
  };
  for (const Shape sh : {Shape{70, 1, 33}, Shape{100, 27, 64}, Shape{40, 72, 90},
                         Shape{1100, 40, 31}, Shape{33, 864, 512}}) {
    std::vector<uint16_t> b16(sh.k * sh.n), a16(sh.m * sh.k);
    const std::vector<float> b_values = Uniform(sh.k * sh.n, 21),
                             a_values = Uniform(sh.m * sh.k, 22);
    for (size_t i = 0; i < b16.size(); ++i) b16[i] = core::FloatToBf16(b_values[i]);
    for (size_t i = 0; i < a16.size(); ++i) a16[i] = core::FloatToBf16(a_values[i]);
    const int64_t columns = cpu::AmxPairColumns(sh.n), k32 = (sh.k + 31) / 32 * 32;
    ASSERT_GE(columns, sh.n);
    ASSERT_EQ(columns % 32, 0);
    std::vector<uint16_t> pairs(k32 / 2 * 2 * columns, 0xffff);
    for (int64_t r = 0; r < k32; r += 2) {
      const uint16_t* row0 = r < sh.k ? b16.data() + r * sh.n : nullptr;
      const uint16_t* row1 = r + 1 < sh.k ? b16.data() + (r + 1) * sh.n : nullptr;
      const std::vector<uint16_t> zeros(sh.n, 0);
      cpu::AmxPairRows(row0 != nullptr ? row0 : zeros.data(), row1, sh.n,
                       pairs.data() + r / 2 * 2 * columns);
    }
    for (int64_t p = 0; p < k32 / 2; ++p)
      for (int64_t j = sh.n; j < columns; ++j)
        ASSERT_EQ(pairs[p * 2 * columns + 2 * j], 0) << "padding column " << j;
    for (const bool trans_a : {false, true}) {
      for (const float beta : {0.0f, 1.0f}) {
        const int64_t lda = trans_a ? sh.m : sh.k;
        const std::vector<float> c0 = Uniform(sh.m * sh.n, 23);
        std::vector<float> want = c0, got = c0, want16 = c0, got16 = c0;
        cpu::GemmBf16Amx(trans_a, false, sh.m, sh.n, sh.k, 1.0f, a_values.data(), lda, b16.data(),
                         sh.n, beta, want.data(), sh.n);
        cpu::GemmBf16AmxPairB(trans_a, sh.m, sh.n, sh.k, 1.0f, a_values.data(), lda, pairs.data(),
                              beta, got.data(), sh.n);
        cpu::GemmBf16Amx(trans_a, false, sh.m, sh.n, sh.k, 1.0f, a16.data(), lda, b16.data(), sh.n,
                         beta, want16.data(), sh.n);
        cpu::GemmBf16AmxPairB(trans_a, sh.m, sh.n, sh.k, 1.0f, a16.data(), lda, pairs.data(), beta,
                              got16.data(), sh.n);
        EXPECT_EQ(got, want) << sh.m << "x" << sh.n << "x" << sh.k << " trans_a " << trans_a
                             << " beta " << beta;
        EXPECT_EQ(got16, want16) << sh.m << "x" << sh.n << "x" << sh.k << " bf16 A, trans_a "
                                 << trans_a << " beta " << beta;
      }
    }
  }
}

// fp32 operands converted with PackedBf16 (a convolution's bf16 col) give
// the bits of the fp32 operands, denormals (which the packing reads as
// zero), NaN and lengths off a multiple of 32 included; and it writes no
// further than its n.
TEST_F(GemmAmxTest, PackedBf16GivesThePackingsBits) {
  const int64_t m = 70, n = 48, k = 90;
  std::vector<float> a = Uniform(m * k, 13), b = Uniform(k * n, 14);
  for (int64_t i = 0; i < m * k; i += 37) a[i] *= 1e-39f;  // denormal
  a[5] = std::numeric_limits<float>::quiet_NaN();
  b[k * n - 3] = std::numeric_limits<float>::denorm_min();
  std::vector<uint16_t> a16(m * k + 1, 0xabcd), b16(k * n + 1, 0xabcd);
  cpu::PackedBf16(a.data(), m * k, a16.data());
  cpu::PackedBf16(b.data(), k * n, b16.data());
  EXPECT_EQ(a16.back(), 0xabcd);
  EXPECT_EQ(b16.back(), 0xabcd);
  EXPECT_EQ(a16[37] & 0x7fff, 0);  // a denormal reads as zero, where a conversion keeps it
  std::vector<float> want(m * n), from_a(m * n, -1.0f), from_b(m * n, -1.0f);
  cpu::GemmBf16Amx(false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, want.data(), n);
  cpu::GemmBf16Amx(false, false, m, n, k, 1.0f, a16.data(), k, b.data(), n, 0.0f, from_a.data(), n);
  cpu::GemmBf16Amx(false, false, m, n, k, 1.0f, a.data(), k, b16.data(), n, 0.0f, from_b.data(), n);
  const auto same_bits = [](const std::vector<float>& x, const std::vector<float>& y) {
    for (size_t i = 0; i < x.size(); ++i)
      if (core::FloatBits(x[i]) != core::FloatBits(y[i])) return false;
    return true;
  };
  EXPECT_TRUE(same_bits(from_a, want));
  EXPECT_TRUE(same_bits(from_b, want));
  // A short row, and each length up to 33.
  for (int64_t len = 1; len <= 33; ++len) {
    std::vector<uint16_t> out(34, 0xabcd);
    cpu::PackedBf16(b.data(), len, out.data());
    for (int64_t i = 0; i < 34; ++i)
      ASSERT_EQ(out[i], i < len ? core::FloatToBf16(b[i]) : 0xabcd) << len << " " << i;
  }
}

// round_c rounds C to bf16 as RoundToPrecision does after the GEMM: whole
// blocks stored from the accumulators, edge blocks, alpha and beta.
TEST_F(GemmAmxTest, RoundedCIsTheGemmRoundedAfter) {
  const int64_t m = 70, n = 72, k = 50;
  const std::vector<float> a = Uniform(m * k, 17), b = Uniform(k * n, 18), c0 = Uniform(m * n, 19);
  for (const float beta : {0.0f, 1.0f}) {
    std::vector<float> want = c0, got = c0;
    cpu::GemmBf16Amx(false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, beta, want.data(), n);
    cpu::GemmBf16Amx(false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, beta, got.data(), n,
                     /*round_c=*/true);
    int64_t changed = 0;
    for (int64_t i = 0; i < m * n; ++i) {
      changed += Bf16(want[i]) != want[i];
      ASSERT_EQ(core::FloatBits(got[i]), core::FloatBits(Bf16(want[i]))) << beta << " " << i;
    }
    EXPECT_GT(changed, m * n / 2);  // so the check could fail
  }
}

}  // namespace
}  // namespace mlperf
