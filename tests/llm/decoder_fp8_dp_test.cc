// The decoder under --precision fp8 over data-parallel MPI ranks (run under
// mpirun -np 1 or 2), each rank on batches of its own: after a step every
// layer's newest amaxes are the largest the ranks' own passes raised (which
// differ between ranks), so every rank holds the same scaling states bit for
// bit after every step and casts alike; and the scales leave 1.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "reference/dist/communicator.h"
#include "reference/dist/mpi_communicator.h"
#include "reference/kernels/ops/fp8.h"
#include "reference/kernels/precision.h"
#include "reference/models/decoder.h"
#include "reference/optim/adam.h"
#include "reference/optim/schedules.h"
#include "reference/trainer/trainer.h"
#include "tests/dist/mpi_gtest.h"
#include "tests/llm/token_batch.h"

namespace mlperf::models {

dist::Communicator* g_comm = nullptr;

namespace {

DecoderConfig Small() {
  return {.vocab_size = 64,
          .hidden = 64,
          .layers = 2,
          .heads = 8,
          .kv_heads = 4,
          .intermediate = 96,
          .seq_len = 8,
          .rope_theta = 10000.0};
}

// Every layer's three step amaxes (or another span of the state), in order.
std::vector<float> StateFloats(const Decoder& model, int64_t at) {
  std::vector<float> out;
  for (const core::Tensor& s : model.fp8_scaling())
    out.insert(out.end(), s.f32() + at, s.f32() + at + ops::kFp8Roles);
  return out;
}

std::vector<float> Gathered(const std::vector<float>& mine) {
  dist::Communicator& comm = *g_comm;
  std::vector<float> all(mine.size() * static_cast<size_t>(comm.world_size()));
  comm.AllGather(mine.data(), all.data(), static_cast<int64_t>(mine.size() * sizeof(float)));
  return all;
}

TEST(DecoderFp8DataParallel, EveryRankScalesByTheLargestAmaxOfAll) {
  dist::Communicator& comm = *g_comm;
  const ops::PrecisionScope precision(core::DType::kBF16, /*fp8_linears=*/true);
  const DecoderConfig c = Small();
  const int64_t batch = 2;
  const auto tokens = [&](uint64_t step) {
    return RandomTokenBatch(c, batch, 100 + 10 * step + static_cast<uint64_t>(comm.rank()));
  };
  // What the first step's passes raise on each rank, from a twin model.
  Decoder probe(c, batch, 7);
  ASSERT_EQ(probe.fp8_scaling().size(), 2u * 7u);  // q, k, v, o, gate, up, down
  probe.ForwardTrain(tokens(0).batch);
  probe.Backward();
  const std::vector<float> own = StateFloats(probe, ops::kFp8AmaxAt);
  const std::vector<float> all = Gathered(own);
  std::vector<float> largest = own;
  for (int r = 0; r < comm.world_size(); ++r)
    for (size_t i = 0; i < own.size(); ++i)
      largest[i] = std::max(largest[i], all[r * own.size() + i]);
  if (comm.world_size() > 1) {
    EXPECT_NE(std::vector<float>(all.begin(), all.begin() + own.size()),
              std::vector<float>(all.begin() + own.size(), all.begin() + 2 * own.size()))
        << "the ranks' own amaxes are equal: the test cannot tell a reduction from none";
  }

  Decoder model(c, batch, 7);
  train::Trainer trainer(
      model,
      std::make_unique<optim::Adam>(
          optim::AdamOptions{.beta2 = 0.95f, .epsilon = 1e-5f, .decoupled = true}, model.slices()),
      std::make_unique<optim::ConstantRate>(1e-3), {}, comm);
  for (uint64_t step = 0; step < 4; ++step) {
    SCOPED_TRACE(testing::Message() << "step " << step << " on rank " << comm.rank());
    trainer.TrainStep(tokens(step).batch);
    if (step == 0) {
      // The newest history entry of each role: kFp8History apart.
      std::vector<float> newest;
      for (const core::Tensor& s : model.fp8_scaling())
        for (int role = 0; role < ops::kFp8Roles; ++role)
          newest.push_back(s.f32()[ops::kFp8HistoryAt + role * ops::kFp8History]);
      EXPECT_EQ(newest, largest);
    }
    const std::vector<float> mine = model.BuffersToHost();
    const std::vector<float> every = Gathered(mine);
    for (int r = 1; r < comm.world_size(); ++r) {
      EXPECT_TRUE(std::equal(mine.begin(), mine.end(), every.begin() + r * mine.size()))
          << "rank " << r << "'s scaling states differ from this rank's";
    }
  }
  for (const float scale : StateFloats(model, ops::kFp8ScaleAt)) EXPECT_NE(scale, 1.0f);
}

}  // namespace
}  // namespace mlperf::models

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  std::unique_ptr<mlperf::dist::Communicator> comm = mlperf::dist::MakeMpiCommunicator();
  mlperf::models::g_comm = comm.get();
  return mlperf::test::RunTestsOnEveryRank(*comm);
}
