// The FP8 conversions (reference/core/fp8.h) against ml_dtypes'
// float8_e4m3fn and float8_e5m2 (tests/core/fp8_oracle.py), bit for bit:
// narrowing over every exponent and mantissa prefix with the low bits at the
// rounding boundaries, plus random patterns; widening of all 256 patterns.
// NaN inputs must give NaN (payloads are not compared). Then the saturating
// casts and the delayed scaling. Skips where ml_dtypes is not installed.
#include "reference/core/fp8.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "reference/core/dtype.h"
#include "reference/core/philox.h"

#ifndef MLPERF_SOURCE_DIR
#error "MLPERF_SOURCE_DIR must point at the repository root"
#endif

namespace mlperf {
namespace {

// Every FP8 rounding (normal or subnormal, both formats) is decided at bit
// 16 or above: the high halves with the low bits at the boundaries.
std::vector<uint32_t> Patterns() {
  std::vector<uint32_t> out;
  for (uint32_t hi = 0; hi < (1u << 16); ++hi)
    for (uint32_t lo : {0x0000u, 0x0001u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu})
      out.push_back(hi << 16 | lo);
  for (uint64_t i = 0; i < (1u << 18); ++i)
    out.push_back(static_cast<uint32_t>(core::PhiloxBits(11, 0, i)));
  return out;
}

TEST(Fp8Test, ConversionsMatchMlDtypesBitForBit) {
  if (std::system("/usr/bin/python3 -c 'import ml_dtypes' > /dev/null 2>&1") != 0)
    GTEST_SKIP() << "ml_dtypes is not installed for /usr/bin/python3 (install_deps.sh --test)";
  const std::vector<uint32_t> bits = Patterns();
  std::vector<float> x(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) x[i] = core::BitsToFloat(bits[i]);
  const auto dir = std::filesystem::temp_directory_path();
  const std::string pid = std::to_string(::getpid());
  const std::string in_path = (dir / ("fp8_in_" + pid + ".f32")).string();
  const std::string out_path = (dir / ("fp8_out_" + pid + ".bin")).string();
  std::ofstream(in_path, std::ios::binary)
      .write(reinterpret_cast<const char*>(x.data()), static_cast<std::streamsize>(4 * x.size()));
  const std::string cmd =
      "/usr/bin/python3 " MLPERF_SOURCE_DIR "/tests/core/fp8_oracle.py " + in_path + " " + out_path;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::vector<uint8_t> e4m3(x.size()), e5m2(x.size());
  std::vector<uint32_t> wide_e4m3(256), wide_e5m2(256);
  std::ifstream in(out_path, std::ios::binary);
  for (auto* v : {&e4m3, &e5m2})
    in.read(reinterpret_cast<char*>(v->data()), static_cast<std::streamsize>(v->size()));
  for (auto* v : {&wide_e4m3, &wide_e5m2})
    in.read(reinterpret_cast<char*>(v->data()), static_cast<std::streamsize>(4 * v->size()));
  ASSERT_TRUE(in.good()) << out_path << " is shorter than expected";
  std::remove(in_path.c_str());
  std::remove(out_path.c_str());

  struct Format {
    const char* name;
    uint8_t (*narrow)(float, bool);
    float (*widen)(uint8_t);
    const std::vector<uint8_t>& theirs;
    const std::vector<uint32_t>& wide;
  };
  for (const Format& f : {Format{"e4m3", core::FloatToE4m3, core::E4m3ToFloat, e4m3, wide_e4m3},
                          Format{"e5m2", core::FloatToE5m2, core::E5m2ToFloat, e5m2, wide_e5m2}}) {
    int64_t bad = 0, nans = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const uint8_t ours = f.narrow(x[i], false);
      const bool ok = std::isnan(x[i])
                          ? (++nans, std::isnan(f.widen(ours)) && std::isnan(f.widen(f.theirs[i])))
                          : ours == f.theirs[i];
      if (!ok && ++bad <= 5)
        ADD_FAILURE() << f.name << " of 0x" << std::hex << bits[i] << ": ours 0x" << int{ours}
                      << ", ml_dtypes 0x" << int{f.theirs[i]};
    }
    EXPECT_EQ(bad, 0) << f.name << ": of " << x.size() << " values";
    EXPECT_GT(nans, 0);
    for (int p = 0; p < 256; ++p) {
      const float ours = f.widen(static_cast<uint8_t>(p)), theirs = core::BitsToFloat(f.wide[p]);
      if (std::isnan(theirs)) {
        EXPECT_TRUE(std::isnan(ours)) << f.name << " pattern " << p;
      } else {
        EXPECT_EQ(core::FloatBits(ours), f.wide[p]) << f.name << " pattern " << p;
      }
    }
  }
}

TEST(Fp8Test, SaturatingCastsStopAtTheLargestFiniteValue) {
  for (const float big : {465.0f, 1e30f, INFINITY}) {
    EXPECT_EQ(core::FloatToE4m3(big), 0x7f);  // NaN: E4M3 has no infinity
    EXPECT_EQ(core::FloatToE4m3(big, true), 0x7e);
    EXPECT_EQ(core::FloatToE4m3(-big, true), 0xfe);
  }
  EXPECT_EQ(core::FloatToE4m3(464.0f), 0x7e);  // the tie rounds to even, 448
  EXPECT_EQ(core::E4m3ToFloat(0x7e), core::kE4m3Max);
  for (const float big : {61440.0f, 1e30f, INFINITY}) {
    EXPECT_EQ(core::FloatToE5m2(big), 0x7c);  // infinity
    EXPECT_EQ(core::FloatToE5m2(big, true), 0x7b);
    EXPECT_EQ(core::FloatToE5m2(-big, true), 0xfb);
  }
  EXPECT_EQ(core::E5m2ToFloat(0x7b), core::kE5m2Max);
  EXPECT_TRUE(std::isnan(core::E4m3ToFloat(core::FloatToE4m3(NAN, true))));
  EXPECT_TRUE(std::isnan(core::E5m2ToFloat(core::FloatToE5m2(NAN, true))));
}

// Transformer Engine's default recipe: the largest amax of the history,
// the format's largest value over it, halved per unit of margin; a zero or
// non-finite amax keeps the scale.
TEST(Fp8Test, DelayedScalingFollowsTheAmaxHistory) {
  core::DelayedScaling s(core::kE4m3Max, 3, 1);
  EXPECT_EQ(s.scale(), 1.0f);
  s.Record(0.0f);
  EXPECT_EQ(s.scale(), 1.0f);
  s.Record(4.0f);
  EXPECT_EQ(s.scale(), 448.0f / 4.0f / 2.0f);
  s.Record(2.0f);
  EXPECT_EQ(s.scale(), 448.0f / 4.0f / 2.0f);  // 4 is still in the history
  s.Record(1.0f);
  EXPECT_EQ(s.scale(), 448.0f / 4.0f / 2.0f);  // history 4, 2, 1
  s.Record(1.0f);
  EXPECT_EQ(s.scale(), 448.0f / 2.0f / 2.0f);  // 4 has left it
  s.Record(INFINITY);
  EXPECT_EQ(s.scale(), 448.0f / 2.0f / 2.0f);
}

}  // namespace
}  // namespace mlperf
