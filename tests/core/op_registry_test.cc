// The op seam (kernels/op.h): every op declared in kernels/ops/ has its CPU
// kernel registered and, in a CUDA build, its CUDA one (a kernel file left
// out of the whole-archive link would leave an op without its backend);
// arguments left out are value-initialised; a missing backend or tensors on
// two devices stop the call with the op's name.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "reference/kernels/dispatch.h"
#include "reference/kernels/op.h"

namespace mlperf {
namespace {

// Names declared as `Op<...> Name{"Name"}` in kernels/ops/*.h.
std::vector<std::string> DeclaredOps() {
  const std::regex declaration(R"re((\w+)\{\s*"(\w+)"\};)re");
  std::vector<std::string> names;
  for (const auto& entry :
       std::filesystem::directory_iterator(MLPERF_SOURCE_DIR "/reference/kernels/ops")) {
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    const std::string s = text.str();
    for (std::sregex_iterator it(s.begin(), s.end(), declaration), end; it != end; ++it) {
      EXPECT_EQ((*it)[1], (*it)[2]) << entry.path() << ": the op's name is its variable's";
      names.push_back((*it)[1]);
    }
  }
  return names;
}

TEST(OpRegistry, EveryDeclaredOpHasItsKernels) {
  const std::vector<std::string> declared = DeclaredOps();
  ASSERT_GE(declared.size(), 40u);  // the seven families
  const auto registered = ops::RegisteredKernels();
  for (const std::string& name : declared) {
    const auto it = registered.find(name);
    ASSERT_NE(it, registered.end()) << name << " has no kernel registered";
    EXPECT_TRUE(it->second.contains(core::Device::kCpu)) << name << " has no CPU kernel";
#ifdef MLPERF_HAVE_CUDA
    EXPECT_TRUE(it->second.contains(core::Device::kCuda)) << name << " has no CUDA kernel";
#endif
  }
  for (const auto& [name, devices] : registered) {
    EXPECT_NE(std::find(declared.begin(), declared.end(), name), declared.end())
        << name << " registered but not declared in kernels/ops/";
  }
}

// A test op: records what its CPU kernel received.
struct Seen {
  int calls = 0;
  float alpha = -1;
  const float* pointer = reinterpret_cast<const float*>(1);
  bool flag = true;
};
Seen seen;
void ProbeCpu(const core::Tensor& x, float alpha, const float* pointer, bool flag) {
  ++seen.calls;
  seen.alpha = alpha;
  seen.pointer = pointer;
  seen.flag = flag;
  (void)x;
}
ops::Op<void(const core::Tensor&, float, const float*, bool)> Probe{"Probe"};

TEST(Op, TrailingArgumentsLeftOutAreValueInitialised) {
  static const bool registered = Probe.Register(core::Device::kCpu, ProbeCpu);
  ASSERT_TRUE(registered);
  float data[4] = {};
  const core::Tensor x(data, {4}, core::DType::kF32, core::Device::kCpu);
  Probe(x, 2.5f);
  EXPECT_EQ(seen.calls, 1);
  EXPECT_EQ(seen.alpha, 2.5f);
  EXPECT_EQ(seen.pointer, nullptr);
  EXPECT_FALSE(seen.flag);
  Probe(x, 1.f, data, true);
  EXPECT_EQ(seen.calls, 2);
  EXPECT_EQ(seen.pointer, data);
  EXPECT_TRUE(seen.flag);
}

TEST(OpDeathTest, AMissingBackendNamesTheOp) {
  float data[4] = {};
  // Never dereferenced: the missing kernel is found first.
  const core::Tensor on_device(data, {4}, core::DType::kF32, core::Device::kCuda);
  ops::Op<void(const core::Tensor&)> cpu_only{"CpuOnly"};
  EXPECT_DEATH(cpu_only(on_device), "ops::CpuOnly: no CUDA kernel in this build");
}

}  // namespace
}  // namespace mlperf
