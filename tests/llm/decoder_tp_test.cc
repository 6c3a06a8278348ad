// The decoder tensor parallel over MPI ranks against one process (run under
// mpirun -np 1, 2 or 4): heads, key/value heads, the SwiGLU width and the
// vocabulary split over the ranks as Megatron splits them. On the same
// batches, every rank's logits columns, the loss, and every parameter
// gradient's slice equal one process's within summation-order rounding, for
// four plain SGD steps taken on both, untied and tied output layers; the
// evaluation sums too. AdamW clipped by the global gradient norm steps like
// one process when the distributed optimizer sums the norm over the
// tensor-parallel ranks (the replicated norm scales once), and not without.
// LoRA adapters over the split base (fused q/k/v and separate) step as one
// process's, and their files gathered from the ranks load into either.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "reference/core/philox.h"
#include "reference/dist/communicator.h"
#include "reference/dist/mpi_communicator.h"
#include "reference/models/decoder.h"
#include "reference/optim/adam.h"
#include "reference/optim/distributed_optimizer.h"
#include "reference/optim/schedules.h"
#include "reference/trainer/trainer.h"
#include "tests/dist/mpi_gtest.h"
#include "tests/llm/token_batch.h"

namespace mlperf::models {

dist::Communicator* g_comm = nullptr;

namespace {

DecoderConfig Small(bool tied) {
  return {.vocab_size = 64,
          .hidden = 64,
          .layers = 2,
          .heads = 8,
          .kv_heads = 4,
          .intermediate = 96,
          .seq_len = 8,
          .rope_theta = 10000.0,
          .rope_scaling = {.factor = 8.0, .original_max_positions = 64},
          .tie_embeddings = tied};
}

// One process's trainable values (or gradients) `whole`, cut into this
// rank's parts in the layout of the parallel model's arena.
std::vector<float> ThisRanksParts(const Decoder& parallel, const Decoder& single,
                                  const std::vector<float>& whole) {
  std::vector<float> parts(parallel.ParametersToHost().size(), 0.0f);
  const std::vector<TensorSlice> ls = parallel.slices(), ws = single.slices();
  size_t t = 0;  // the trainable parameters, in the same order on both
  for (size_t i = 0; i < parallel.parameter_tensors().size(); ++i) {
    const layers::Parameter& p = parallel.parameter_tensors()[i];
    if (!p.trainable) continue;
    const layers::Parameter& q = single.parameter_tensors()[i];
    EXPECT_EQ(p.name, q.name);
    const std::vector<float> w(whole.begin() + ws[t].offset,
                               whole.begin() + ws[t].offset + ws[t].numel);
    Decoder::TakeSlice(
        w, q.value.shape(), parallel.parameter_slices()[i],
        core::Tensor(parts.data() + ls[t].offset, p.value.shape(), core::DType::kF32));
    ++t;
  }
  return parts;
}

// Every trainable parameter's (or gradient's) slice on this rank against
// the whole tensor of one process: the largest difference relative to the
// largest entry.
double WorstSliceError(const Decoder& parallel, const std::vector<float>& local,
                       const Decoder& single, const std::vector<float>& whole) {
  const std::vector<float> want = ThisRanksParts(parallel, single, whole);
  double worst = 0.0;
  for (const TensorSlice& s : parallel.slices()) {
    double scale = 1e-12, diff = 0.0;
    for (int64_t j = s.offset; j < s.offset + s.numel; ++j) {
      scale = std::max(scale, std::fabs(static_cast<double>(want[j])));
      diff = std::max(diff, std::fabs(static_cast<double>(local[j]) - want[j]));
    }
    worst = std::max(worst, diff / scale);
  }
  return worst;
}

void Step(Decoder& model, float lr) {
  std::vector<float> p = model.ParametersToHost();
  const std::vector<float> g = model.GradientsToHost();
  for (size_t i = 0; i < p.size(); ++i) p[i] -= lr * g[i];
  model.ParametersFromHost(p);
}

void RunTensorParallel(bool tied) {
  dist::Communicator& comm = *g_comm;
  const DecoderConfig c = Small(tied);
  const int64_t batch = 2;
  Decoder single(c, batch, 7);
  Decoder parallel(
      c, batch, Placement{.rank = comm.rank(), .world_size = comm.world_size(), .comm = &comm}, 7);
  // The same starting weights, sliced.
  EXPECT_EQ(
      WorstSliceError(parallel, parallel.ParametersToHost(), single, single.ParametersToHost()),
      0.0);
  const int64_t vocab = c.vocab_size / comm.world_size(), first = comm.rank() * vocab;
  for (uint64_t step = 0; step < 4; ++step) {
    SCOPED_TRACE(testing::Message() << "step " << step << " on rank " << comm.rank());
    const OwnedBatch owned = RandomTokenBatch(c, batch, 100 + step);
    const float want = single.ForwardTrain(owned.batch);
    const float got = parallel.ForwardTrain(owned.batch);
    EXPECT_NEAR(got, want, 2e-6 * std::fabs(want));
    const std::vector<float> whole = single.ToHost(single.logits());
    const std::vector<float> mine = parallel.ToHost(parallel.logits());
    double worst = 0.0;
    for (int64_t r = 0; r < batch * c.seq_len; ++r)
      for (int64_t j = 0; j < vocab; ++j)
        worst = std::max<double>(
            worst, std::fabs(mine[r * vocab + j] - whole[r * c.vocab_size + first + j]));
    EXPECT_LT(worst, 1e-5) << "logits";
    single.Backward();
    parallel.Backward();
    EXPECT_LT(
        WorstSliceError(parallel, parallel.GradientsToHost(), single, single.GradientsToHost()),
        1e-4)
        << "gradients";
    Step(single, 0.5f);
    Step(parallel, 0.5f);
  }
  EXPECT_LT(
      WorstSliceError(parallel, parallel.ParametersToHost(), single, single.ParametersToHost()),
      1e-5)
      << "parameters after four steps";
  const OwnedBatch eval = RandomTokenBatch(c, batch, 999);
  const MetricSums a = single.EvaluateBatch(eval.batch), b = parallel.EvaluateBatch(eval.batch);
  EXPECT_EQ(a.denominator, b.denominator);
  EXPECT_NEAR(a.numerator, b.numerator, 1e-5 * a.numerator);
}

// A bound the first steps' gradients exceed (checked), so every step clips.
constexpr float kClip = 0.05f;

optim::AdamOptions AdamW(float clip) {
  return {.beta1 = 0.9f,
          .beta2 = 0.95f,
          .epsilon = 1e-5f,
          .weight_decay = 0.1f,
          .decoupled = true,
          .max_grad_norm = clip};
}

// Three clipped AdamW steps on the tensor-parallel decoder through the
// trainer (a data-parallel group of one); the worst slice error against
// the one process's parameters.
double ClippedStepsError(bool sum_over_tensor_ranks) {
  dist::Communicator& comm = *g_comm;
  const DecoderConfig c = Small(false);
  const int64_t batch = 2;
  const std::unique_ptr<dist::Communicator> one = dist::MakeSingleProcessCommunicator();
  Decoder single(c, batch, 7);
  Decoder parallel(
      c, batch, Placement{.rank = comm.rank(), .world_size = comm.world_size(), .comm = &comm}, 7);
  train::Trainer whole(single, std::make_unique<optim::Adam>(AdamW(kClip), single.slices()),
                       std::make_unique<optim::ConstantRate>(1e-3), {}, *one);
  optim::TensorParallelNorm tensor;
  if (sum_over_tensor_ranks) {
    tensor.comm = &comm;
    tensor.replicated = parallel.ReplicatedSlices();
    EXPECT_FALSE(tensor.replicated.empty());
  }
  train::Trainer split(parallel,
                       std::make_unique<optim::DistributedOptimizer>(
                           *one, parallel.slices(), kClip,
                           [](std::vector<TensorSlice> shard) {
                             return std::make_unique<optim::Adam>(AdamW(0.0f), std::move(shard));
                           },
                           std::move(tensor)),
                       std::make_unique<optim::ConstantRate>(1e-3), {}, *one);
  for (uint64_t step = 0; step < 3; ++step) {
    const OwnedBatch owned = RandomTokenBatch(c, batch, 200 + step);
    whole.TrainStep(owned.batch);
    split.TrainStep(owned.batch);
  }
  return WorstSliceError(parallel, parallel.ParametersToHost(), single, single.ParametersToHost());
}

TEST(DecoderTensorParallel, ClipsByTheGlobalNormOverTheTensorRanks) {
  {
    // The clip binds: the whole model's first gradient norm is above it.
    const DecoderConfig c = Small(false);
    Decoder model(c, 2, 7);
    model.ForwardTrain(RandomTokenBatch(c, 2, 200).batch);
    model.Backward();
    double squares = 0.0;
    for (const float g : model.GradientsToHost()) squares += static_cast<double>(g) * g;
    ASSERT_GT(std::sqrt(squares), 4.0 * kClip);
  }
  EXPECT_LT(ClippedStepsError(true), 2e-5);
  // Each rank's own norm steps differently: the comparison can fail.
  if (g_comm->world_size() > 1) {
    EXPECT_GT(ClippedStepsError(false), 1e-3);
  }
}

// LoRA over a tensor-parallel base (fp32 so that both start from the same
// weights), as the LoRA benchmark trains it (adapter dropout, each sample's
// mean loss): the adapters' parts, the loss and their gradients as one
// process's, for three SGD steps (the split o_proj input dropping what the
// whole one drops).
void RunLoraTensorParallel(bool fused) {
  dist::Communicator& comm = *g_comm;
  DecoderConfig c = Small(false);
  c.lora = {.rank = 4, .alpha = 8.0, .dropout = 0.1f, .seed = 5};
  c.sample_mean_loss = true;
  c.lora_fused_qkv = fused;
  c.frozen_dtype = core::DType::kF32;
  const int64_t batch = 2;
  Decoder single(c, batch, 7);
  Decoder parallel(
      c, batch, Placement{.rank = comm.rank(), .world_size = comm.world_size(), .comm = &comm}, 7);
  EXPECT_EQ(
      WorstSliceError(parallel, parallel.ParametersToHost(), single, single.ParametersToHost()),
      0.0);
  // B away from zero (and A moved), then each rank takes its part.
  std::vector<float> whole = single.ParametersToHost();
  for (size_t i = 0; i < whole.size(); ++i)
    whole[i] += 0.1f * (core::PhiloxUniform(17, 0, i) - 0.5f);
  single.ParametersFromHost(whole);
  parallel.ParametersFromHost(ThisRanksParts(parallel, single, whole));
  for (uint64_t step = 0; step < 3; ++step) {
    SCOPED_TRACE(testing::Message() << "step " << step << " on rank " << comm.rank());
    const OwnedBatch owned = RandomTokenBatch(c, batch, 300 + step);
    const float want = single.ForwardTrain(owned.batch);
    EXPECT_NEAR(parallel.ForwardTrain(owned.batch), want, 2e-6 * std::fabs(want));
    single.Backward();
    parallel.Backward();
    EXPECT_LT(
        WorstSliceError(parallel, parallel.GradientsToHost(), single, single.GradientsToHost()),
        1e-4)
        << "adapter gradients";
    Step(single, 0.5f);
    Step(parallel, 0.5f);
  }
  EXPECT_LT(
      WorstSliceError(parallel, parallel.ParametersToHost(), single, single.ParametersToHost()),
      1e-5)
      << "adapters after three steps";
  // Saved whole from the split model (the parts gathered, rank 0 writing),
  // the adapters load into one process's model and back into a split one.
  float pid = static_cast<float>(::getpid());  // rank 0's names the folder
  comm.Broadcast(&pid, 1, 0);
  const std::string dir =
      (std::filesystem::temp_directory_path() /
       ("lora_tp_" + std::to_string(fused) + "_" + std::to_string(static_cast<int64_t>(pid))))
          .string();
  ASSERT_TRUE(parallel.SaveLoraAdapters(dir).ok());
  comm.Barrier();
  Decoder one(c, batch, 9);
  ASSERT_TRUE(one.LoadLoraAdapters(dir).ok());
  EXPECT_EQ(WorstSliceError(parallel, parallel.ParametersToHost(), one, one.ParametersToHost()),
            0.0);
  Decoder again(c, batch,
                Placement{.rank = comm.rank(), .world_size = comm.world_size(), .comm = &comm}, 9);
  ASSERT_TRUE(again.LoadLoraAdapters(dir).ok());
  EXPECT_EQ(again.ParametersToHost(), parallel.ParametersToHost());
  // Saving again refuses the folder on every rank.
  EXPECT_EQ(parallel.SaveLoraAdapters(dir).code(), absl::StatusCode::kAlreadyExists);
  comm.Barrier();
  std::error_code ec;
  if (comm.rank() == 0) std::filesystem::remove_all(dir, ec);
}

// The LoRA benchmark's start: a base checkpoint in Hugging Face shards
// (bf16) read into a frozen bf16 base, whole and split: the same loss.
TEST(DecoderTensorParallel, ABf16BaseCheckpointLoadsIntoTheSplitFrozenBase) {
  dist::Communicator& comm = *g_comm;
  const DecoderConfig base = Small(false);
  float pid = static_cast<float>(::getpid());
  comm.Broadcast(&pid, 1, 0);
  const std::string dir = (std::filesystem::temp_directory_path() /
                           ("lora_base_" + std::to_string(static_cast<int64_t>(pid))))
                              .string();
  if (comm.rank() == 0) {
    Decoder pretrained(base, 1, 11);
    ASSERT_TRUE(pretrained.SaveHuggingFace(dir, core::DType::kBF16, 4 << 10).ok());
  }
  comm.Barrier();
  DecoderConfig c = base;
  c.lora = {.rank = 4, .alpha = 8.0};
  Decoder single(c, 2, 7);
  Decoder parallel(
      c, 2, Placement{.rank = comm.rank(), .world_size = comm.world_size(), .comm = &comm}, 7);
  ASSERT_TRUE(single.LoadHuggingFace(dir).ok());
  ASSERT_TRUE(parallel.LoadHuggingFace(dir).ok());
  const OwnedBatch owned = RandomTokenBatch(c, 2, 400);
  const float want = single.ForwardTrain(owned.batch);
  EXPECT_NEAR(parallel.ForwardTrain(owned.batch), want, 2e-6 * std::fabs(want));
  comm.Barrier();
  std::error_code ec;
  if (comm.rank() == 0) std::filesystem::remove_all(dir, ec);
}

TEST(DecoderTensorParallel, FusedLoraMatchesOneProcess) { RunLoraTensorParallel(true); }

TEST(DecoderTensorParallel, SeparateLoraMatchesOneProcess) { RunLoraTensorParallel(false); }

TEST(DecoderTensorParallel, MatchesOneProcess) { RunTensorParallel(false); }

TEST(DecoderTensorParallel, TiedOutputLayerMatchesOneProcess) { RunTensorParallel(true); }

}  // namespace
}  // namespace mlperf::models

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  std::unique_ptr<mlperf::dist::Communicator> comm = mlperf::dist::MakeMpiCommunicator();
  mlperf::models::g_comm = comm.get();
  return mlperf::test::RunTestsOnEveryRank(*comm);
}
