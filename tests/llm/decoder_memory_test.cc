// The decoder's memory plan (reference/models/decoder_memory): the measured
// arenas equal what a model allocates, on one rank and as one of two
// tensor-parallel ranks; recomputation and the distributed optimizer shrink
// what they should; Llama 3.1 8B at sequence 8192 on 8 ranks of 80 GiB
// finds a layout (tensor parallel, recomputing, as the plan prints), and is
// refused on one with the smallest need named.
#include "reference/models/decoder_memory.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "reference/dist/communicator.h"
#include "reference/models/decoder.h"

namespace mlperf::models {
namespace {

DecoderConfig Small() {
  return {.vocab_size = 64,
          .hidden = 64,
          .layers = 3,
          .heads = 8,
          .kv_heads = 4,
          .intermediate = 96,
          .seq_len = 16};
}

TEST(DecoderMemory, MeasuredArenasAreWhatAModelAllocates) {
  const DecoderConfig c = Small();
  Decoder whole(c, 2, 1);
  const Model::ArenaBytes one = Decoder::Measure(c, 2, 1);
  EXPECT_EQ(one.params, static_cast<int64_t>(whole.parameters().size() * sizeof(float)));
  EXPECT_EQ(one.grads, static_cast<int64_t>(whole.gradients().size() * sizeof(float)));
  // One of two tensor-parallel ranks (the communicator is never used here).
  std::unique_ptr<dist::Communicator> comm = dist::MakeSingleProcessCommunicator();
  Decoder half(c, 2, Placement{.rank = 1, .world_size = 2, .comm = comm.get()}, 1);
  const Model::ArenaBytes two = Decoder::Measure(c, 2, 2);
  EXPECT_EQ(two.params, static_cast<int64_t>(half.parameters().size() * sizeof(float)));
  EXPECT_LT(two.params, one.params);
  EXPECT_LT(two.activations, one.activations);
}

TEST(DecoderMemory, RecomputationAndTheDistributedOptimizerShrinkTheirParts) {
  const DecoderConfig c = Small();
  const DecoderMemory plain = PlanDecoderMemory(c, {.dp = 4, .distributed_optimizer = false});
  const DecoderMemory sharded = PlanDecoderMemory(c, {.dp = 4});
  const DecoderMemory recomputed = PlanDecoderMemory(c, {.dp = 4, .recompute = true});
  EXPECT_EQ(plain.optimizer, 2 * plain.weights);
  EXPECT_EQ(sharded.optimizer, (2 * plain.weights + 3) / 4);
  EXPECT_EQ(recomputed.weights, plain.weights);
  EXPECT_LT(recomputed.activations, plain.activations);
  // Recomputation keeps one layer's activations and every layer's output:
  // adding a layer adds one output (fp32 [seq, hidden]) and nothing else.
  DecoderConfig more = c;
  more.layers = c.layers + 1;
  const DecoderMemory r1 = PlanDecoderMemory(more, {.dp = 4, .recompute = true});
  EXPECT_EQ(r1.activations, recomputed.activations + c.seq_len * c.hidden * 4);
  // Without it a layer adds all of its activations.
  const DecoderMemory p1 = PlanDecoderMemory(more, {.dp = 4});
  EXPECT_GT(p1.activations - plain.activations, 4 * (r1.activations - recomputed.activations));
}

TEST(DecoderMemory, Llama31_8BOnEightRanksOf80GiB) {
  constexpr int64_t k80GiB = int64_t{80} << 30;
  std::vector<DecoderPlan> tried;
  absl::StatusOr<DecoderPlan> plan = ChooseDecoderLayout(Llama31_8B(), 8, 1, k80GiB, &tried);
  for (const DecoderPlan& p : tried)
    std::printf("%s%s\n", DescribeDecoderPlan(p).c_str(), p.fits ? "  fits" : "");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(plan->fits);
  EXPECT_LE(plan->memory.total(), k80GiB);
  // This implementation keeps fp32 weights and activations: one rank
  // holding all the heads does not fit.
  ASSERT_FALSE(tried.empty());
  EXPECT_EQ(tried.front().layout.tp, 1);
  EXPECT_FALSE(tried.front().fits);
  // One rank holds every weight, gradient and moment: 120 GiB before any
  // activation.
  absl::StatusOr<DecoderPlan> one = ChooseDecoderLayout(Llama31_8B(), 1, 1, k80GiB);
  ASSERT_FALSE(one.ok());
  EXPECT_TRUE(absl::IsResourceExhausted(one.status()));
  EXPECT_NE(std::string(one.status().message()).find("no layout of 1 rank fits 80.0 GiB"),
            std::string::npos)
      << one.status();
}

// Llama 2 70B LoRA on one node of 8 x 80 GiB (printed): the frozen bf16
// base (129 GiB) fits no single rank; split over tensor-parallel ranks, the
// adapters' state next to nothing, the first layout that fits is tp 4 with
// recomputation (this implementation's activations are fp32).
TEST(DecoderMemory, Llama2_70BLoraOnEightRanksOf80GiB) {
  constexpr int64_t k80GiB = int64_t{80} << 30;
  const DecoderConfig c = Llama2_70B_Lora();
  std::vector<DecoderPlan> tried;
  absl::StatusOr<DecoderPlan> plan = ChooseDecoderLayout(c, 8, 1, k80GiB, &tried);
  for (const DecoderPlan& p : tried)
    std::printf("%s%s\n", DescribeDecoderPlan(p).c_str(), p.fits ? "  fits" : "");
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_FALSE(tried.empty());
  // tp 1: the whole base, 2 bytes a parameter in bf16 (69.0e9 of them, the
  // adapters apart), 4 for the embedding and the norm scales kept in fp32.
  const DecoderPlan& whole = tried.front();
  EXPECT_EQ(whole.layout.tp, 1);
  EXPECT_FALSE(whole.fits);
  DecoderConfig base = c;
  base.lora.rank = 0;
  const int64_t fp32_parts = c.vocab_size * c.hidden + (2 * c.layers + 1) * c.hidden;
  EXPECT_EQ(whole.memory.frozen, 2 * Decoder::ParameterCount(base) + 2 * fp32_parts);
  // The adapters: 16 x (8192 + 10240) + 16 x (8192 + 8192) per layer, fp32,
  // with their gradients and AdamW's two moments.
  const int64_t adapters = 80 * (16 * (8192 + 10240) + 16 * (8192 + 8192));
  EXPECT_EQ(Decoder::ParameterCount(c) - Decoder::ParameterCount(base), adapters);
  EXPECT_EQ(whole.memory.weights, 4 * adapters);
  EXPECT_EQ(whole.memory.gradients, 4 * adapters);
  EXPECT_EQ(plan->layout.tp, 4);
  EXPECT_TRUE(plan->layout.recompute);
  EXPECT_LE(plan->memory.total(), k80GiB);
}

}  // namespace
}  // namespace mlperf::models
