#include "runtime/collective_bench.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>

#include "absl/strings/str_split.h"
#include "base/check.h"
#include "fmt/format.h"
#include "reference/core/arena.h"
#include "reference/kernels/dispatch.h"

namespace mlperf::runtime {
namespace {

using core::Device;
using Clock = std::chrono::steady_clock;

// The communicator the payload goes through and where its buffers live.
struct Target {
  dist::Communicator& data;
  dist::Communicator& control;
  Device device;
};

Target TargetOf(const RunComms& comms) {
  MLPERF_CHECK(comms.control != nullptr);
  if (comms.gradients != nullptr) return {*comms.gradients, *comms.control, Device::kCuda};
  return {*comms.control, *comms.control, Device::kCpu};
}

// Seconds per call of `op`, averaged over the ranks. NCCL calls only queue
// work: the closing barrier waits for the stream (one tiny all-reduce more,
// spread over the iterations).
double TimePerCall(const Target& t, int warmup, int iters, const std::function<void()>& op) {
  for (int i = 0; i < warmup; ++i) op();
  t.data.Barrier();
  const Clock::time_point start = Clock::now();
  for (int i = 0; i < iters; ++i) op();
  if (t.device != Device::kCpu) t.data.Barrier();
  float seconds = std::chrono::duration<float>(Clock::now() - start).count() / iters;
  t.control.AllReduceSum(&seconds, 1);
  return seconds / t.control.world_size();
}

// Host values in and out of the target's buffers.
void Upload(const Target& t, void* dst, const void* src, size_t bytes) {
  ops::CopyBytes(dst, t.device, src, Device::kCpu, bytes);
}
template <typename T>
std::vector<T> Download(const Target& t, const void* src, int64_t n) {
  std::vector<T> out(static_cast<size_t>(n));
  ops::CopyBytes(out.data(), Device::kCpu, src, t.device, out.size() * sizeof(T));
  return out;
}

// Small integers (exact in float) that depend on rank and position.
float Pattern(int rank, int64_t block, int64_t i) {
  return static_cast<float>(rank + 3 * block + i % 7);
}
// Pattern(s, block, i) summed over the ranks s < w (exact: below 2^24 for
// any real world size).
float SumOverRanks(int w, int64_t block, int64_t i) {
  return static_cast<float>(int64_t{w} * (w - 1) / 2 + int64_t{w} * (3 * block + i % 7));
}
uint8_t BytePattern(int rank, int64_t block, int64_t i) {
  return static_cast<uint8_t>(31 * rank + 7 * block + i);
}

// One checked call of `c` on `per_rank` floats per block (all-reduce: the
// whole buffer); returns the number of wrong elements on this rank.
int64_t CheckOnce(const Target& t, Collective c, int64_t per_rank, void* send, void* recv) {
  const int r = t.data.rank(), w = t.data.world_size();
  int64_t wrong = 0;
  switch (c) {
    case Collective::kAllReduce: {
      std::vector<float> v(static_cast<size_t>(per_rank));
      for (int64_t i = 0; i < per_rank; ++i) v[i] = Pattern(r, 0, i);
      Upload(t, send, v.data(), v.size() * sizeof(float));
      t.data.AllReduceSum(static_cast<float*>(send), per_rank);
      const std::vector<float> got = Download<float>(t, send, per_rank);
      for (int64_t i = 0; i < per_rank; ++i) wrong += got[i] != SumOverRanks(w, 0, i);
      break;
    }
    case Collective::kReduceScatter: {
      std::vector<float> v(static_cast<size_t>(per_rank * w));
      for (int b = 0; b < w; ++b)
        for (int64_t i = 0; i < per_rank; ++i) v[b * per_rank + i] = Pattern(r, b, i);
      Upload(t, send, v.data(), v.size() * sizeof(float));
      t.data.ReduceScatterSum(static_cast<const float*>(send), static_cast<float*>(recv), per_rank);
      const std::vector<float> got = Download<float>(t, recv, per_rank);
      for (int64_t i = 0; i < per_rank; ++i) wrong += got[i] != SumOverRanks(w, r, i);
      break;
    }
    case Collective::kAllGather: {
      const int64_t n = per_rank * 4;
      std::vector<uint8_t> v(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) v[i] = BytePattern(r, 0, i);
      Upload(t, send, v.data(), v.size());
      t.data.AllGather(send, recv, n);
      const std::vector<uint8_t> got = Download<uint8_t>(t, recv, n * w);
      for (int s = 0; s < w; ++s)
        for (int64_t i = 0; i < n; ++i) wrong += got[s * n + i] != BytePattern(s, 0, i);
      break;
    }
    case Collective::kAllToAll: {
      const int64_t n = per_rank * 4;
      std::vector<uint8_t> v(static_cast<size_t>(n * w));
      for (int d = 0; d < w; ++d)
        for (int64_t i = 0; i < n; ++i) v[d * n + i] = BytePattern(r, d, i);
      Upload(t, send, v.data(), v.size());
      const std::vector<int64_t> blocks(static_cast<size_t>(w), n);
      t.data.AllToAll(send, blocks, recv, blocks);
      const std::vector<uint8_t> got = Download<uint8_t>(t, recv, n * w);
      for (int s = 0; s < w; ++s)
        for (int64_t i = 0; i < n; ++i) wrong += got[s * n + i] != BytePattern(s, r, i);
      break;
    }
  }
  return wrong;
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 == 1 ? v[m] : (v[m - 1] + v[m]) / 2;
}

}  // namespace

std::string_view CollectiveName(Collective c) {
  switch (c) {
    case Collective::kAllReduce:
      return "all_reduce";
    case Collective::kAllGather:
      return "all_gather";
    case Collective::kReduceScatter:
      return "reduce_scatter";
    case Collective::kAllToAll:
      return "all_to_all";
  }
  return "?";
}

absl::StatusOr<std::vector<Collective>> ParseCollectives(std::string_view list) {
  if (list == "all")
    return std::vector<Collective>(std::begin(kAllCollectives), std::end(kAllCollectives));
  std::vector<Collective> out;
  for (absl::string_view name : absl::StrSplit(absl::string_view(list.data(), list.size()), ',')) {
    const Collective* c =
        std::find_if(std::begin(kAllCollectives), std::end(kAllCollectives), [&](Collective k) {
          const std::string_view n = CollectiveName(k);
          return absl::string_view(n.data(), n.size()) == name;
        });
    if (c == std::end(kAllCollectives)) {
      return absl::InvalidArgumentError(fmt::format(
          "--collectives={}: expected all or a comma-separated list of all_reduce, all_gather, "
          "reduce_scatter, all_to_all",
          list));
    }
    if (std::find(out.begin(), out.end(), *c) == out.end()) out.push_back(*c);
  }
  return out;
}

double BusFactor(Collective c, int ranks) {
  const double n = ranks;
  return c == Collective::kAllReduce ? 2 * (n - 1) / n : (n - 1) / n;
}

std::vector<int64_t> MessageSizes(int64_t min_bytes, int64_t max_bytes, int64_t factor) {
  MLPERF_CHECK(min_bytes > 0 && factor >= 2);
  std::vector<int64_t> sizes;
  for (int64_t b = min_bytes; b <= max_bytes; b *= factor) {
    sizes.push_back(b);
    if (b > max_bytes / factor) break;
  }
  return sizes;
}

std::vector<CollectiveResult> MeasureCollectives(const RunComms& comms,
                                                 const SweepOptions& options) {
  const Target t = TargetOf(comms);
  const int w = t.data.world_size();
  const size_t half = static_cast<size_t>(options.max_bytes) + core::Arena::kAlignment;
  core::Arena arena(t.device, 2 * half);
  void* send = arena.AllocateZeroed({options.max_bytes}, core::DType::kU8).data();
  void* recv = arena.AllocateZeroed({options.max_bytes}, core::DType::kU8).data();
  std::vector<CollectiveResult> results;
  for (const Collective c : options.collectives) {
    for (const int64_t size : MessageSizes(options.min_bytes, options.max_bytes, options.factor)) {
      // Floats per rank (per block); all-reduce's buffer is one block.
      const int64_t blocks = c == Collective::kAllReduce ? 1 : w;
      const int64_t per_rank = size / 4 / blocks;
      if (per_rank == 0) continue;
      CollectiveResult r{
          .collective = c, .bytes = per_rank * blocks * 4, .count = per_rank * blocks};
      auto* f_send = static_cast<float*>(send);
      auto* f_recv = static_cast<float*>(recv);
      const std::vector<int64_t> block_bytes(static_cast<size_t>(w), per_rank * 4);
      std::function<void()> op;
      switch (c) {
        case Collective::kAllReduce:
          op = [&] { t.data.AllReduceSum(f_send, per_rank); };
          break;
        case Collective::kAllGather:
          op = [&] { t.data.AllGather(send, recv, per_rank * 4); };
          break;
        case Collective::kReduceScatter:
          op = [&] { t.data.ReduceScatterSum(f_send, f_recv, per_rank); };
          break;
        case Collective::kAllToAll:
          op = [&] { t.data.AllToAll(send, block_bytes, recv, block_bytes); };
          break;
      }
      // Zeros stay zeros under repeated sums (no overflow, no denormals).
      r.seconds = TimePerCall(t, options.warmup, options.iters, op);
      r.algbw = r.seconds > 0 ? static_cast<double>(r.bytes) / r.seconds : 0;
      r.busbw = r.algbw * BusFactor(c, w);
      float wrong = static_cast<float>(CheckOnce(t, c, per_rank, send, recv));
      t.control.AllReduceSum(&wrong, 1);
      r.wrong = static_cast<int64_t>(wrong);
      // The all-reduce sums in place: back to zeros for the next size.
      ops::ZeroBytes(send, t.device, static_cast<size_t>(r.bytes));
      results.push_back(r);
    }
  }
  return results;
}

int RoundRobinRounds(int ranks) { return ranks + ranks % 2 - 1; }

// Positions 0..ring-1 on a circle plus a fixed player `ring` (the idle seat
// for odd counts): in round k, k meets the fixed player and every other
// pair sums to 2k modulo the ring.
int RoundRobinPartner(int round, int rank, int ranks) {
  const int ring = ranks + ranks % 2 - 1;
  int partner;
  if (rank == ring) {
    partner = round;
  } else if (rank == round) {
    partner = ring;
  } else {
    partner = ((2 * round - rank) % ring + ring) % ring;
  }
  return partner < ranks ? partner : -1;
}

std::vector<RankLink> ProbeLinks(const RunComms& comms, int64_t bytes, int iters) {
  MLPERF_CHECK(bytes > 0 && iters > 0);
  const Target t = TargetOf(comms);
  const int w = t.control.world_size(), me = t.control.rank();
  const std::vector<std::string> nodes = NodesOfRanks(t.control);

  core::Arena arena(t.device, 2 * (static_cast<size_t>(bytes) + core::Arena::kAlignment));
  void* send = arena.AllocateZeroed({bytes}, core::DType::kU8).data();
  void* recv = arena.AllocateZeroed({bytes}, core::DType::kU8).data();
  std::vector<double> remote, local;
  for (int round = 0; round < RoundRobinRounds(w); ++round) {
    const int partner = RoundRobinPartner(round, me, w);
    std::vector<int64_t> blocks(static_cast<size_t>(w), 0);
    if (partner >= 0) blocks[partner] = bytes;
    const auto exchange = [&] { t.data.AllToAll(send, blocks, recv, blocks); };
    exchange();  // warm-up: connections made
    t.data.Barrier();
    const Clock::time_point start = Clock::now();
    for (int i = 0; i < iters; ++i) exchange();
    if (t.device != Device::kCpu) t.data.Barrier();
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    if (partner < 0) continue;
    const double rate = seconds > 0 ? static_cast<double>(bytes) * iters / seconds : 0;
    (nodes[partner] == nodes[me] ? local : remote).push_back(rate);
  }
  // Every rank's figure to every rank (floats over the control channel).
  float mine = static_cast<float>(Median(remote.empty() ? local : remote));
  std::vector<float> all(static_cast<size_t>(w));
  t.control.AllGather(&mine, all.data(), sizeof(float));
  const bool one_node =
      std::all_of(nodes.begin(), nodes.end(), [&](const std::string& n) { return n == nodes[0]; });
  std::vector<RankLink> links;
  for (int r = 0; r < w; ++r) {
    int partners = 0;
    for (int q = 0; q < w; ++q) partners += q != r && (one_node || nodes[q] != nodes[r]);
    links.push_back({r, nodes[r], all[r], partners});
  }
  return links;
}

double MedianBandwidth(std::span<const RankLink> links) {
  std::vector<double> rates;
  for (const RankLink& l : links)
    if (l.partners > 0) rates.push_back(l.bytes_per_second);
  return Median(std::move(rates));
}

std::vector<RankLink> SlowRanks(std::span<const RankLink> links, double min_fraction) {
  std::vector<RankLink> slow;
  const int64_t measured =
      std::count_if(links.begin(), links.end(), [](const RankLink& l) { return l.partners > 0; });
  if (measured < 2 || min_fraction <= 0) return slow;
  const double median = MedianBandwidth(links);
  for (const RankLink& l : links)
    if (l.partners > 0 && l.bytes_per_second < min_fraction * median) slow.push_back(l);
  return slow;
}

std::string NodeName() {
  char name[64] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "unknown";
  return name;
}

std::vector<std::string> NodesOfRanks(dist::Communicator& control) {
  constexpr int64_t kName = 64;
  std::string name = NodeName();
  name.resize(kName, '\0');
  std::string names(static_cast<size_t>(kName * control.world_size()), '\0');
  control.AllGather(name.data(), names.data(), kName);
  std::vector<std::string> nodes;
  for (int r = 0; r < control.world_size(); ++r) nodes.emplace_back(names.c_str() + r * kName);
  return nodes;
}

std::string Rate(double bytes_per_second) {
  if (bytes_per_second >= 1e9) return fmt::format("{:.2f} GB/s", bytes_per_second / 1e9);
  if (bytes_per_second >= 1e6) return fmt::format("{:.1f} MB/s", bytes_per_second / 1e6);
  return fmt::format("{:.1f} kB/s", bytes_per_second / 1e3);
}

std::string Size(int64_t bytes) {
  constexpr int64_t kKiB = 1 << 10, kMiB = 1 << 20, kGiB = int64_t{1} << 30;
  for (const auto& [unit, name] : {std::pair{kGiB, "GiB"}, {kMiB, "MiB"}, {kKiB, "KiB"}}) {
    if (bytes >= unit && bytes % unit == 0) return fmt::format("{} {}", bytes / unit, name);
    if (bytes >= unit && unit >= kMiB)
      return fmt::format("{:.1f} {}", static_cast<double>(bytes) / unit, name);
  }
  return fmt::format("{} B", bytes);
}

}  // namespace mlperf::runtime
