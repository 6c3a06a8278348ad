// Label `gpu`: the NCCL communicator on device buffers. One rank always (the
// collectives are then identities, but every call must go through NCCL on the
// stream); two ranks in two threads, one device each, when two devices exist,
// bootstrapped through the TCP rendezvous. Skips without a CUDA device.
#include "reference/dist/nccl_communicator.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>
#include <utility>
#include <vector>

namespace mlperf::dist {
namespace {

int DeviceCount() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}

uint16_t FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

// Runs sum, average and broadcast on `count` floats where rank r holds
// r + 1 + i/count, then an all-to-all; checks the results on the host.
void RunCollectives(Communicator& comm, cudaStream_t stream) {
  const int64_t count = 1 << 16;
  const int r = comm.rank(), w = comm.world_size();
  std::vector<float> host(count);
  for (int64_t i = 0; i < count; ++i) host[i] = static_cast<float>(r + 1) + i / float(count);
  float* dev = nullptr;
  ASSERT_EQ(cudaMalloc(&dev, count * sizeof(float)), cudaSuccess);
  auto upload = [&] {
    ASSERT_EQ(cudaMemcpyAsync(dev, host.data(), count * 4, cudaMemcpyHostToDevice, stream),
              cudaSuccess);
  };
  auto download = [&] {
    std::vector<float> out(count);
    EXPECT_EQ(cudaMemcpyAsync(out.data(), dev, count * 4, cudaMemcpyDeviceToHost, stream),
              cudaSuccess);
    EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    return out;
  };
  const float rank_sum = w * (w + 1) / 2.0f;
  upload();
  comm.AllReduceSum(dev, count);
  std::vector<float> out = download();
  for (int64_t i = 0; i < count; i += 997)
    ASSERT_FLOAT_EQ(out[i], rank_sum + w * (i / float(count))) << "sum at " << i;
  upload();
  comm.AllReduceAverage(dev, count);
  out = download();
  for (int64_t i = 0; i < count; i += 997)
    ASSERT_NEAR(out[i], rank_sum / w + i / float(count), 1e-5) << "average at " << i;
  upload();
  comm.Broadcast(dev, count, w - 1);
  out = download();
  for (int64_t i = 0; i < count; i += 997)
    ASSERT_FLOAT_EQ(out[i], static_cast<float>(w) + i / float(count)) << "broadcast at " << i;
  // All-to-all: rank r's block d holds r * w + d + i / count, for rank d.
  for (int d = 0; d < w; ++d)
    for (int64_t i = 0; i < count / w; ++i)
      host[d * (count / w) + i] = r * w + d + i / float(count);
  upload();
  float* recv = nullptr;
  ASSERT_EQ(cudaMalloc(&recv, count * sizeof(float)), cudaSuccess);
  const std::vector<int64_t> bytes(static_cast<size_t>(w), count / w * 4);
  comm.AllToAll(dev, bytes, recv, bytes);
  std::swap(dev, recv);
  out = download();
  for (int s = 0; s < w; ++s)
    for (int64_t i = 0; i < count / w; i += 997)
      ASSERT_FLOAT_EQ(out[s * (count / w) + i], s * w + r + i / float(count)) << "all-to-all";
  // All-gather of each rank's first count / w floats (now r + i / count):
  // block s is rank s's.
  for (int64_t i = 0; i < count; ++i) host[i] = r + i / float(count);
  upload();
  comm.AllGather(dev, recv, count / w * 4);
  std::swap(dev, recv);
  out = download();
  for (int s = 0; s < w; ++s)
    for (int64_t i = 0; i < count / w; i += 997)
      ASSERT_FLOAT_EQ(out[s * (count / w) + i], s + i / float(count)) << "all-gather";
  // Reduce-scatter: every rank sends r + i / count, block r comes back summed.
  upload();
  comm.ReduceScatterSum(dev, recv, count / w);
  std::swap(dev, recv);
  out = download();
  for (int64_t i = 0; i < count / w; i += 997)
    ASSERT_NEAR(out[i], w * (w - 1) / 2.0f + w * ((r * (count / w) + i) / float(count)), 1e-5)
        << "reduce-scatter";
  cudaFree(recv);
  comm.Barrier();
  cudaFree(dev);
}

TEST(NcclCommunicatorTest, OneRank) {
  if (DeviceCount() < 1) GTEST_SKIP() << "no CUDA device";
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  const LaunchEnv env{.rank = 0, .world_size = 1, .local_rank = 0, .source = "test"};
  absl::StatusOr<std::unique_ptr<Communicator>> comm =
      MakeNcclCommunicator(env, "127.0.0.1", FreePort(), {.stream = stream});
  ASSERT_TRUE(comm.ok()) << comm.status();
  EXPECT_EQ((*comm)->world_size(), 1);
  RunCollectives(**comm, stream);
  comm->reset();
  cudaStreamDestroy(stream);
}

TEST(NcclCommunicatorTest, TwoRanksOverTheTcpRendezvous) {
  if (DeviceCount() < 2) GTEST_SKIP() << "needs two CUDA devices";
  const uint16_t port = FreePort();
  std::thread ranks[2];
  for (int r = 0; r < 2; ++r) {
    ranks[r] = std::thread([r, port] {
      // Each thread selects its own device inside MakeNcclCommunicator.
      const LaunchEnv env{.rank = r, .world_size = 2, .local_rank = r, .source = "test"};
      ASSERT_EQ(cudaSetDevice(r), cudaSuccess);
      cudaStream_t stream;
      ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
      absl::StatusOr<std::unique_ptr<Communicator>> comm = MakeNcclCommunicator(
          env, "127.0.0.1", port, {.stream = stream, .timeout = std::chrono::seconds(60)});
      ASSERT_TRUE(comm.ok()) << comm.status();
      RunCollectives(**comm, stream);
      comm->reset();
      cudaStreamDestroy(stream);
    });
  }
  for (std::thread& t : ranks) t.join();
}

}  // namespace
}  // namespace mlperf::dist
