// ResNet with its activations stored in bf16/fp16 on a CUDA device (the
// default there; ops::TypedActivationsScope chooses here): the storage
// type, and one training step against the CPU twin, which stores fp32
// rounded at the same points (bf16 on a host with AMX: the same values),
// and against fp32 storage on the device (the tolerances come from two CPU
// layouts, random_batch.h); and one conv + BN unit against the CPU's within
// units of the precision. Label gpu; skips without a device.
#include <gtest/gtest.h>
#ifdef MLPERF_HAVE_CUDA
#include <cuda_runtime.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "reference/core/arena.h"
#include "reference/core/dtype.h"
#include "reference/core/philox.h"
#include "reference/kernels/dispatch.h"
#include "reference/kernels/precision.h"
#include "reference/layers/conv_norm.h"
#include "reference/models/resnet.h"
#include "tests/core/test_util.h"
#include "tests/resnet/random_batch.h"

namespace mlperf::models {
namespace {

#define SKIP_WITHOUT_DEVICE() \
  if (!ops::CudaAvailable()) GTEST_SKIP() << "no CUDA device (or a build without CUDA)"

using testing::RelativeError;

TEST(TypedActivationsTest, StoredInThePrecisionOnlyWhenOn) {
  SKIP_WITHOUT_DEVICE();
  for (core::DType precision : {core::DType::kBF16, core::DType::kF16}) {
    const ops::PrecisionScope scope(precision);
    for (bool typed : {true, false}) {
      const ops::TypedActivationsScope storage(typed);
      ResNet model(test::TwinModel(core::Layout::kNHWC, core::Device::kCuda), 2);
      for (int s = 0; s < 4; ++s)
        EXPECT_EQ(model.stage_output(s).dtype(), typed ? precision : core::DType::kF32);
    }
  }
  const ops::TypedActivationsScope storage(true);  // fp32 training stores fp32
  ResNet model(test::TwinModel(core::Layout::kNHWC, core::Device::kCuda), 2);
  EXPECT_EQ(model.stage_output(3).dtype(), core::DType::kF32);
}

// (precision, typed storage on the device)
class TypedStepTest : public ::testing::TestWithParam<std::tuple<core::DType, bool>> {};

TEST_P(TypedStepTest, OneStepMatchesTheCpu) {
  SKIP_WITHOUT_DEVICE();
  const auto [precision, typed] = GetParam();
  const ops::PrecisionScope scope(precision);
  const test::OneStep cpu = test::RunOneStep(core::Layout::kNHWC, core::Device::kCpu);
  const ops::TypedActivationsScope storage(typed);
  const test::OneStep gpu = test::RunOneStep(core::Layout::kNHWC, core::Device::kCuda);
  ASSERT_EQ(gpu.stored, typed ? precision : core::DType::kF32);
  ASSERT_TRUE(std::isfinite(gpu.loss));
  EXPECT_NEAR(gpu.loss, cpu.loss, 1e-3 * cpu.loss);
  EXPECT_LT(RelativeError(gpu.logits, cpu.logits), test::kReducedLogitsTolerance);
  EXPECT_LT(RelativeError(gpu.gradients, cpu.gradients), test::kReducedGradientTolerance);
}

TEST_P(TypedStepTest, TypedStorageMatchesFp32StorageOnTheDevice) {
  SKIP_WITHOUT_DEVICE();
  const auto [precision, typed] = GetParam();
  if (!typed) GTEST_SKIP() << "the pair is tested once, under typed = true";
  const ops::PrecisionScope scope(precision);
  test::OneStep fp32_storage, typed_storage;
  {
    const ops::TypedActivationsScope storage(false);
    fp32_storage = test::RunOneStep(core::Layout::kNHWC, core::Device::kCuda);
  }
  {
    const ops::TypedActivationsScope storage(true);
    typed_storage = test::RunOneStep(core::Layout::kNHWC, core::Device::kCuda);
  }
  EXPECT_NEAR(typed_storage.loss, fp32_storage.loss, 1e-3 * fp32_storage.loss);
  EXPECT_LT(RelativeError(typed_storage.logits, fp32_storage.logits),
            test::kReducedLogitsTolerance);
  EXPECT_LT(RelativeError(typed_storage.gradients, fp32_storage.gradients),
            test::kReducedGradientTolerance);
}

// One side of ConvBnUnitMatchesTheCpu: a conv + BN unit with a residual
// and ReLU (a bottleneck's last) and its tensors, in arenas on `device`.
struct UnitSide {
  layers::ConvBn unit;
  core::Tensor x, residual, dy, dz, dx, workspace;
  std::vector<core::Arena> arenas;
  layers::ParameterRegistry registry;
};

void BuildUnit(const ConvGeometry& g, core::Device device, UnitSide* s) {
  const core::Layout nhwc = core::Layout::kNHWC;
  const auto build = [&](const layers::ModelArenas& a, layers::ParameterRegistry* r) {
    s->unit.Allocate(g, nhwc, true, "conv", "bn", a, r);
    // The unit's own storage (bf16 on a host with AMX too).
    const core::DType stored = ops::ActivationStorageType(device, /*host_typed=*/true);
    const core::Shape in = layers::ActivationShape(nhwc, g.batch, g.in_channels, g.in[1], g.in[2]);
    const core::Shape out =
        layers::ActivationShape(nhwc, g.batch, g.out_channels, g.out(1), g.out(2));
    s->x = a.activations->Allocate(in, stored, nhwc);
    s->dx = a.activations->Allocate(in, stored, nhwc);
    s->residual = a.activations->Allocate(out, stored, nhwc);
    s->dy = a.activations->Allocate(out, stored, nhwc);
    s->dz = a.activations->Allocate(out, stored, nhwc);
    s->workspace = a.activations->Allocate({std::max<int64_t>(s->unit.workspace_elements(), 1)});
  };
  std::vector<core::Arena> measuring;
  for (int i = 0; i < 4; ++i) measuring.push_back(core::Arena::Measuring(device));
  layers::ParameterRegistry ignored;
  build({&measuring[0], &measuring[1], &measuring[2], &measuring[3]}, &ignored);
  for (const core::Arena& m : measuring)
    s->arenas.emplace_back(device, std::max<size_t>(m.used(), 1));
  build({&s->arenas[0], &s->arenas[1], &s->arenas[2], &s->arenas[3]}, &s->registry);
}

// Host values into t (narrowed to its dtype); ops::ToHostFloats reads back.
void Put(const std::vector<float>& host, const core::Tensor& t) {
  if (t.dtype() == core::DType::kF32) {
    ops::CopyBytes(t.data(), t.device(), host.data(), core::Device::kCpu, t.bytes());
    return;
  }
  if (t.device() == core::Device::kCpu) {
    ASSERT_EQ(t.dtype(), core::DType::kBF16);
    auto* bits = static_cast<uint16_t*>(t.data());
    for (size_t i = 0; i < host.size(); ++i) bits[i] = core::FloatToBf16(host[i]);
    return;
  }
#ifdef MLPERF_HAVE_CUDA
  void* staging = nullptr;
  ASSERT_EQ(cudaMalloc(&staging, host.size() * sizeof(float)), cudaSuccess);
  ops::CopyBytes(staging, t.device(), host.data(), core::Device::kCpu, host.size() * sizeof(float));
  ops::Cast(core::Tensor(staging, t.shape(), core::DType::kF32, t.device()), t);
  ops::Synchronize(t.device());
  cudaFree(staging);
#endif
}

// The unit alone, where the ResNet comparison above is too coarse to see a
// kernel's error: forward output, then the masked dy, dz, dx and every
// parameter gradient, within a few units of the precision (norm-wise: a
// value near a tie may round one unit apart).
TEST_P(TypedStepTest, ConvBnUnitMatchesTheCpu) {
  SKIP_WITHOUT_DEVICE();
  const auto [precision, typed] = GetParam();
  const ops::PrecisionScope scope(precision);
  const ops::TypedActivationsScope storage(typed);
  const ConvGeometry g =
      layers::Conv2dPadded(2, 8, 6, 6, 16, 3, 1, layers::PaddingMode::kSymmetric);
  UnitSide cpu, gpu;
  BuildUnit(g, core::Device::kCpu, &cpu);
  BuildUnit(g, core::Device::kCuda, &gpu);
  ASSERT_EQ(gpu.unit.output().dtype(), typed ? precision : core::DType::kF32);
  // Values of the precision, as every stored input is.
  const auto random = [&](const core::Tensor& like, uint64_t seed, float centre) {
    std::vector<float> v(static_cast<size_t>(like.numel()));
    for (size_t i = 0; i < v.size(); ++i) v[i] = centre + core::PhiloxUniform(seed, 0, i) - 0.5f;
    const core::Tensor t(v.data(), {like.numel()}, core::DType::kF32);
    ops::RoundToPrecision(precision, t, t);
    return v;
  };
  for (size_t k = 0; k < cpu.registry.parameters.size(); ++k) {
    const std::vector<float> v =
        random(cpu.registry.parameters[k].value, 10 + k, k == 1 ? 1.0f : 0.0f);  // gamma ~ 1
    Put(v, cpu.registry.parameters[k].value);
    Put(v, gpu.registry.parameters[k].value);
  }
  const std::tuple<core::Tensor*, core::Tensor*, uint64_t> inputs[] = {
      {&cpu.x, &gpu.x, 1}, {&cpu.residual, &gpu.residual, 2}, {&cpu.dy, &gpu.dy, 3}};
  for (const auto& [cpu_t, gpu_t, seed] : inputs) {
    const std::vector<float> v = random(*cpu_t, seed, 0.0f);
    Put(v, *cpu_t);
    Put(v, *gpu_t);
  }
  const BatchNormParams bn;
  cpu.unit.Forward(cpu.x, true, bn, cpu.workspace, cpu.residual);
  gpu.unit.Forward(gpu.x, true, bn, gpu.workspace, gpu.residual);
  const double unit = precision == core::DType::kBF16 ? 0x1p-7 : 0x1p-10;
  EXPECT_LT(
      RelativeError(ops::ToHostFloats(gpu.unit.output()), ops::ToHostFloats(cpu.unit.output())),
      2 * unit)
      << "y";
  cpu.unit.Backward(cpu.x, cpu.dy, cpu.dz, cpu.dx, cpu.workspace);
  gpu.unit.Backward(gpu.x, gpu.dy, gpu.dz, gpu.dx, gpu.workspace);
  EXPECT_LT(RelativeError(ops::ToHostFloats(gpu.dy), ops::ToHostFloats(cpu.dy)), 2 * unit)
      << "masked dy";
  EXPECT_LT(RelativeError(ops::ToHostFloats(gpu.dz), ops::ToHostFloats(cpu.dz)), 4 * unit) << "dz";
  EXPECT_LT(RelativeError(ops::ToHostFloats(gpu.dx), ops::ToHostFloats(cpu.dx)), 4 * unit) << "dx";
  for (size_t k = 0; k < cpu.registry.parameters.size(); ++k)
    EXPECT_LT(RelativeError(ops::ToHostFloats(gpu.registry.parameters[k].grad),
                            ops::ToHostFloats(cpu.registry.parameters[k].grad)),
              4 * unit)
        << cpu.registry.parameters[k].name;
}

INSTANTIATE_TEST_SUITE_P(
    Precisions, TypedStepTest,
    ::testing::Combine(::testing::Values(core::DType::kBF16, core::DType::kF16), ::testing::Bool()),
    [](const auto& info) {
      return std::string(ops::PrecisionName(std::get<0>(info.param))) +
             (std::get<1>(info.param) ? "Typed" : "Fp32Storage");
    });

}  // namespace
}  // namespace mlperf::models
