// The fp32 <-> bf16/fp16 conversions of the Cast op against PyTorch's
// (tests/core/dtype_torch.py), bit for bit: every 16-bit pattern widened,
// and narrowing over every exponent and mantissa prefix with the low bits at
// the rounding boundaries (exact ties, one ulp either side, all ones), plus
// random patterns. NaN inputs must give NaN; their payloads are not compared
// (PyTorch makes them canonical, the GPU's intrinsics differently again).
// Skips where PyTorch is not installed.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "reference/core/dtype.h"
#include "reference/core/philox.h"
#include "reference/core/tensor.h"
#include "reference/kernels/dispatch.h"

#ifndef MLPERF_SOURCE_DIR
#error "MLPERF_SOURCE_DIR must point at the repository root"
#endif

namespace mlperf {
namespace {

using core::DType;
using core::Shape;
using core::Tensor;

// Patterns whose rounding is decided at bit 16 (bf16) or bit 13 (fp16 normals;
// fp16 subnormals round higher up, which the enumerated prefixes include).
std::vector<uint32_t> Patterns() {
  std::vector<uint32_t> out;
  for (uint32_t hi = 0; hi < (1u << 16); ++hi)
    for (uint32_t lo : {0x0000u, 0x0001u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu})
      out.push_back(hi << 16 | lo);
  for (uint32_t hi = 0; hi < (1u << 19); ++hi)
    for (uint32_t lo : {0x0001u, 0x0fffu, 0x1000u, 0x1001u}) out.push_back(hi << 13 | lo);
  for (uint64_t i = 0; i < (1u << 20); ++i)
    out.push_back(static_cast<uint32_t>(core::PhiloxBits(7, 0, i)));
  return out;
}

std::vector<uint16_t> CastFrom(const std::vector<float>& x, DType to) {
  std::vector<uint16_t> out(x.size());
  const Shape shape{static_cast<int64_t>(x.size())};
  ops::Cast(Tensor(const_cast<float*>(x.data()), shape, DType::kF32),
            Tensor(out.data(), shape, to));
  return out;
}

std::vector<float> Widen(DType from) {
  std::vector<uint16_t> in(65536);
  for (uint32_t i = 0; i < 65536; ++i) in[i] = static_cast<uint16_t>(i);
  std::vector<float> out(in.size());
  const Shape shape{65536};
  ops::Cast(Tensor(in.data(), shape, from), Tensor(out.data(), shape, DType::kF32));
  return out;
}

TEST(DTypeTorchTest, CastRoundsAndWidensLikePyTorchBitForBit) {
  if (std::system("/usr/bin/python3 -c 'import torch' > /dev/null 2>&1") != 0)
    GTEST_SKIP() << "PyTorch is not installed for /usr/bin/python3 (apt-get install python3-torch)";
  const std::vector<uint32_t> bits = Patterns();
  std::vector<float> x(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) x[i] = core::BitsToFloat(bits[i]);

  const auto dir = std::filesystem::temp_directory_path();
  const std::string pid = std::to_string(::getpid());
  const std::string in_path = (dir / ("dtype_torch_in_" + pid + ".f32")).string();
  const std::string out_path = (dir / ("dtype_torch_out_" + pid + ".bin")).string();
  std::ofstream(in_path, std::ios::binary)
      .write(reinterpret_cast<const char*>(x.data()), static_cast<std::streamsize>(4 * x.size()));
  const std::string cmd = "/usr/bin/python3 " MLPERF_SOURCE_DIR "/tests/core/dtype_torch.py " +
                          in_path + " " + out_path;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::vector<uint16_t> torch_bf16(x.size()), torch_fp16(x.size());
  std::vector<uint32_t> torch_from_bf16(65536), torch_from_fp16(65536);
  std::ifstream in(out_path, std::ios::binary);
  for (auto* v : {&torch_bf16, &torch_fp16})
    in.read(reinterpret_cast<char*>(v->data()), static_cast<std::streamsize>(2 * v->size()));
  for (auto* v : {&torch_from_bf16, &torch_from_fp16})
    in.read(reinterpret_cast<char*>(v->data()), static_cast<std::streamsize>(4 * v->size()));
  ASSERT_TRUE(in.good()) << out_path << " is shorter than expected";
  std::remove(in_path.c_str());
  std::remove(out_path.c_str());

  for (const DType to : {DType::kBF16, DType::kF16}) {
    const bool bf16 = to == DType::kBF16;
    const std::vector<uint16_t> ours = CastFrom(x, to);
    const std::vector<uint16_t>& theirs = bf16 ? torch_bf16 : torch_fp16;
    auto is_nan = [&](uint16_t h) {
      return std::isnan(bf16 ? core::Bf16ToFloat(h) : core::HalfToFloat(h));
    };
    int64_t bad = 0, nans = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const bool ok =
          std::isnan(x[i]) ? (++nans, is_nan(ours[i]) && is_nan(theirs[i])) : ours[i] == theirs[i];
      if (!ok && ++bad <= 5)
        ADD_FAILURE() << (bf16 ? "bf16" : "fp16") << " of 0x" << std::hex << bits[i] << ": ours 0x"
                      << ours[i] << ", torch 0x" << theirs[i];
    }
    EXPECT_EQ(bad, 0) << (bf16 ? "bf16" : "fp16") << ": of " << x.size() << " values";
    EXPECT_GT(nans, 0);  // the patterns do reach the NaN encodings

    const std::vector<float> wide = Widen(to);
    const std::vector<uint32_t>& torch_wide = bf16 ? torch_from_bf16 : torch_from_fp16;
    int64_t wide_bad = 0;
    for (uint32_t h = 0; h < 65536; ++h) {
      const float t = core::BitsToFloat(torch_wide[h]);
      const bool ok =
          std::isnan(t) ? std::isnan(wide[h]) : core::FloatBits(wide[h]) == torch_wide[h];
      if (!ok && ++wide_bad <= 5)
        ADD_FAILURE() << (bf16 ? "bf16" : "fp16") << " pattern 0x" << std::hex << h << " widened";
    }
    EXPECT_EQ(wide_bad, 0);
  }
}

}  // namespace
}  // namespace mlperf
