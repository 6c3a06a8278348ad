// Label `dist`: under `mpirun -np 2`, two ranks with half the batch each and
// bucketed gradient averaging end with the same parameters as one process
// trained on the whole batch; all-to-all with blocks of different sizes,
// all-gather and reduce-scatter.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "reference/core/arena.h"
#include "reference/core/init.h"
#include "reference/core/philox.h"
#include "reference/dist/communicator.h"
#include "reference/dist/mpi_communicator.h"
#include "reference/kernels/cpu/elementwise.h"
#include "reference/kernels/cpu/linear.h"
#include "reference/kernels/cpu/loss.h"
#include "reference/kernels/dispatch.h"
#include "reference/kernels/ops/optimizer.h"
#include "tests/dist/mpi_gtest.h"

namespace mlperf {
namespace {

using core::Tensor;

dist::Communicator* g_comm = nullptr;

constexpr int64_t kIn = 6, kHidden = 10, kClasses = 3, kSteps = 6;

// Linear -> ReLU -> Linear -> softmax cross-entropy, parameters and gradients
// in flat arenas so that the optimizer and the all-reduce see one buffer.
class TinyMlp {
 public:
  TinyMlp() : params_(Layout(&param_view_)), grads_(Layout(&grad_view_)) {
    momentum_.assign(params_.used() / sizeof(float), 0.0f);
    core::TorchDefaultUniform(param_view_[0], kIn, {.seed = 9, .offset = 0});
    core::TorchDefaultUniform(param_view_[1], kIn, {.seed = 9, .offset = 1});
    core::TorchDefaultUniform(param_view_[2], kHidden, {.seed = 9, .offset = 2});
    core::TorchDefaultUniform(param_view_[3], kHidden, {.seed = 9, .offset = 3});
    const float* base = param_view_[0].f32();
    for (int i = 0; i < 4; ++i)
      slices_.push_back(
          {param_view_[i].f32() - base, param_view_[i].numel(), i % 2 == 1, i % 2 == 1});
  }

  // One step on samples [first, first + count) of the step's global batch.
  void Step(int64_t step, int64_t first, int64_t count, dist::Communicator& comm) {
    std::vector<float> x(count * kIn), h(count * kHidden), logits(count * kClasses);
    std::vector<float> dlogits(count * kClasses), dh(count * kHidden), loss(1);
    std::vector<int32_t> labels(count);
    for (int64_t i = 0; i < count; ++i) {
      const uint64_t sample = static_cast<uint64_t>(first + i);
      for (int64_t f = 0; f < kIn; ++f)
        x[i * kIn + f] = 2.0f * core::PhiloxUniform(100 + step, sample, f) - 1.0f;
      labels[i] = static_cast<int32_t>(core::PhiloxBits(200 + step, sample, 0) % kClasses);
    }
    const Tensor tx(x.data(), {count, kIn}, core::DType::kF32);
    const Tensor th(h.data(), {count, kHidden}, core::DType::kF32);
    const Tensor tlogits(logits.data(), {count, kClasses}, core::DType::kF32);
    cpu::LinearForward(tx, param_view_[0], param_view_[1], th);
    ops::ReluForward(th, th);
    cpu::LinearForward(th, param_view_[2], param_view_[3], tlogits);
    const Tensor tdlogits(dlogits.data(), {count, kClasses}, core::DType::kF32);
    ops::SoftmaxCrossEntropy(0.1f, static_cast<float>(count), tlogits,
                             Tensor(labels.data(), {count}, core::DType::kI32),
                             Tensor(loss.data(), {1}, core::DType::kF32), tdlogits);
    const Tensor tdh(dh.data(), {count, kHidden}, core::DType::kF32);
    cpu::LinearBackward(th, param_view_[2], tdlogits, tdh, grad_view_[2], grad_view_[3]);
    ops::ReluBackward(th, tdh, tdh);
    cpu::LinearBackward(tx, param_view_[0], tdh, Tensor(), grad_view_[0], grad_view_[1]);
    // Small buckets so that the gradient crosses several of them.
    const int64_t total = grads_.used() / sizeof(float);
    dist::AllReduceGradients(comm, grad_view_[0].f32(), dist::PlanBuckets(total, 37));
    ops::LarsStep(core::Device::kCpu, {.lr = 0.5f, .momentum = 0.9f, .weight_decay = 1e-4f},
                  slices_, param_view_[0].f32(), grad_view_[0].f32(), momentum_.data(), nullptr);
  }

  std::vector<float> Parameters() const {
    const float* p = param_view_[0].f32();
    return std::vector<float>(p, p + params_.used() / sizeof(float));
  }

 private:
  // Lays out W1, b1, W2, b2 back to back (alignment padding is part of the
  // flat buffer and stays zero).
  static core::Arena Layout(std::vector<Tensor>* view) {
    core::Arena measure = core::Arena::Measuring();
    const core::Shape shapes[] = {{kHidden, kIn}, {kHidden}, {kClasses, kHidden}, {kClasses}};
    for (const core::Shape& s : shapes) measure.Allocate(s);
    core::Arena arena(core::Device::kCpu, measure.used());
    // Zeroed whole: the padding too, which Parameters() compares.
    std::memset(arena.base(), 0, measure.used());
    for (const core::Shape& s : shapes) view->push_back(arena.Allocate(s));
    return arena;
  }

  std::vector<Tensor> param_view_, grad_view_;
  core::Arena params_, grads_;
  std::vector<float> momentum_;
  std::vector<TensorSlice> slices_;
};

TEST(DistTest, TwoRanksMatchOneProcessWithTheDoubledBatch) {
  dist::Communicator& comm = *g_comm;
  ASSERT_EQ(comm.world_size(), 2) << "run under mpirun -np 2";
  const int64_t local_batch = 8;
  TinyMlp parallel, serial;
  auto single = dist::MakeSingleProcessCommunicator();
  for (int64_t step = 0; step < kSteps; ++step) {
    parallel.Step(step, comm.rank() * local_batch, local_batch, comm);
    serial.Step(step, 0, 2 * local_batch, *single);
  }
  const std::vector<float> a = parallel.Parameters(), b = serial.Parameters();
  ASSERT_EQ(a.size(), b.size());
  double max_diff = 0.0, max_moved = 0.0;
  TinyMlp fresh;
  const std::vector<float> init = fresh.Parameters();
  for (size_t i = 0; i < a.size(); ++i) {
    max_diff = std::max(max_diff, static_cast<double>(std::fabs(a[i] - b[i])));
    max_moved = std::max(max_moved, static_cast<double>(std::fabs(a[i] - init[i])));
  }
  EXPECT_LT(max_diff, 1e-5);
  EXPECT_GT(max_moved, 1e-2);  // training moved the parameters
  // Every rank holds the same parameters.
  std::vector<float> summed = a;
  comm.AllReduceSum(summed.data(), static_cast<int64_t>(summed.size()));
  for (size_t i = 0; i < a.size(); ++i) ASSERT_FLOAT_EQ(summed[i], 2.0f * a[i]);
}

// Blocks of different sizes each way: rank r sends rank d (r + 2d + 1)
// ints that say where they came from; every block arrives whole, in place.
TEST(DistTest, AllToAllDeliversBlocksOfEverySize) {
  dist::Communicator& comm = *g_comm;
  const int r = comm.rank(), w = comm.world_size();
  auto value = [](int from, int to, int64_t i) {
    return from * 1000000 + to * 1000 + static_cast<int32_t>(i);
  };
  std::vector<int64_t> send_bytes, recv_bytes;
  std::vector<int32_t> send;
  for (int d = 0; d < w; ++d) {
    const int64_t n = r + 2 * d + 1;
    for (int64_t i = 0; i < n; ++i) send.push_back(value(r, d, i));
    send_bytes.push_back(n * 4);
    recv_bytes.push_back((d + 2 * r + 1) * 4);
  }
  int64_t total = 0;
  for (const int64_t b : recv_bytes) total += b / 4;
  std::vector<int32_t> recv(static_cast<size_t>(total), -1);
  comm.AllToAll(send.data(), send_bytes, recv.data(), recv_bytes);
  size_t at = 0;
  for (int s = 0; s < w; ++s)
    for (int64_t i = 0; i < s + 2 * r + 1; ++i)
      ASSERT_EQ(recv[at++], value(s, r, i)) << s << " " << i;
}

// Rank r's bytes say where they came from; every rank holds all blocks in
// rank order.
TEST(DistTest, AllGatherPutsEachRanksBlockInItsPlace) {
  dist::Communicator& comm = *g_comm;
  const int r = comm.rank(), w = comm.world_size();
  const int64_t n = 1001;  // bytes, not a multiple of 4
  std::vector<uint8_t> send(n), recv(static_cast<size_t>(n * w), 0);
  for (int64_t i = 0; i < n; ++i) send[i] = static_cast<uint8_t>(31 * r + i);
  comm.AllGather(send.data(), recv.data(), n);
  for (int s = 0; s < w; ++s)
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(recv[s * n + i], static_cast<uint8_t>(31 * s + i)) << s << " " << i;
}

// Block b of rank r holds r + 10 b + i / count: rank r receives the sum of
// block r over the ranks.
TEST(DistTest, ReduceScatterSumsTheRanksBlock) {
  dist::Communicator& comm = *g_comm;
  const int r = comm.rank(), w = comm.world_size();
  const int64_t count = 257;
  std::vector<float> send(static_cast<size_t>(count * w)), recv(count, -1.0f);
  for (int b = 0; b < w; ++b)
    for (int64_t i = 0; i < count; ++i)
      send[b * count + i] = static_cast<float>(r + 10 * b) + static_cast<float>(i) / count;
  comm.ReduceScatterSum(send.data(), recv.data(), count);
  const float ranks = w * (w - 1) / 2.0f;
  for (int64_t i = 0; i < count; ++i)
    ASSERT_FLOAT_EQ(recv[i], ranks + w * (10.0f * r + static_cast<float>(i) / count)) << i;
}

}  // namespace
}  // namespace mlperf

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  std::unique_ptr<mlperf::dist::Communicator> comm = mlperf::dist::MakeMpiCommunicator();
  mlperf::g_comm = comm.get();
  return mlperf::test::RunTestsOnEveryRank(*comm);
}
