// The decoder tensor parallel over MPI ranks against one process (run under
// mpirun -np 1, 2 or 4): heads, key/value heads, the SwiGLU width and the
// vocabulary split over the ranks as Megatron splits them. On the same
// batches, every rank's logits columns, the loss, and every parameter
// gradient's slice equal one process's within summation-order rounding, for
// four plain SGD steps taken on both, untied and tied output layers; the
// evaluation sums too.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "reference/core/philox.h"
#include "reference/dist/communicator.h"
#include "reference/dist/mpi_communicator.h"
#include "reference/models/decoder.h"
#include "tests/dist/mpi_gtest.h"

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

OwnedBatch MakeBatch(const DecoderConfig& c, int64_t batch, uint64_t step) {
  OwnedBatch owned;
  int32_t* tokens = owned.Add({batch, c.seq_len}, core::DType::kI32).as<int32_t>();
  int32_t* labels = owned.Add({batch, c.seq_len}, core::DType::kI32).as<int32_t>();
  for (int64_t i = 0; i < batch * c.seq_len; ++i) {
    tokens[i] = static_cast<int32_t>(core::PhiloxBits(step, 0, i) % c.vocab_size);
    labels[i] = static_cast<int32_t>(core::PhiloxBits(step, 1, i) % c.vocab_size);
  }
  owned.batch.count = batch;
  return owned;
}

// Element (r, col) of the slice of a [rows, columns] tensor whole.
float WholeAt(const std::vector<float>& whole, const Decoder::Slice& s, const core::Shape& local,
              int64_t r, int64_t col) {
  const int64_t full_columns = s.dim == 1 ? s.full : local[1];
  if (s.dim == 0) return whole[(s.first + r) * full_columns + col];
  if (s.dim == 1) return whole[r * full_columns + s.first + col];
  return whole[r * full_columns + col];
}

// Every parameter's (or gradient's) slice on this rank against the whole
// tensor of one process: the largest difference relative to the largest
// entry.
double WorstSliceError(const Decoder& parallel, const std::vector<float>& local,
                       const Decoder& single, const std::vector<float>& whole) {
  double worst = 0.0;
  const std::vector<TensorSlice> ls = parallel.slices(), ws = single.slices();
  for (size_t i = 0; i < ls.size(); ++i) {
    const Decoder::Slice& s = parallel.parameter_slices()[i];
    const core::Shape shape = parallel.parameter_tensors()[i].value.shape();
    const std::vector<float> w(whole.begin() + ws[i].offset,
                               whole.begin() + ws[i].offset + ws[i].numel);
    const int64_t rows = shape[0], columns = shape.rank() > 1 ? shape[1] : 1;
    double scale = 1e-12, diff = 0.0;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t col = 0; col < columns; ++col) {
        const double theirs =
            WholeAt(w, s, shape.rank() > 1 ? shape : core::Shape{rows, 1}, r, col);
        const double ours = local[ls[i].offset + r * columns + col];
        scale = std::max(scale, std::fabs(theirs));
        diff = std::max(diff, std::fabs(ours - theirs));
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
    const OwnedBatch owned = MakeBatch(c, batch, 100 + step);
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
  const OwnedBatch eval = MakeBatch(c, batch, 999);
  const MetricSums a = single.EvaluateBatch(eval.batch), b = parallel.EvaluateBatch(eval.batch);
  EXPECT_EQ(a.denominator, b.denominator);
  EXPECT_NEAR(a.numerator, b.numerator, 1e-5 * a.numerator);
}

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
