// Collective bandwidth the way nccl-tests measures it (all-reduce,
// all-gather, reduce-scatter, all-to-all over a sweep of message sizes;
// algorithm and bus bandwidth), and a pairwise probe of every rank's links
// that finds a rank far slower than the others. Used by run_benchmark --comm
// and run_closed --preflight. Every function here is collective: all ranks
// call it with the same arguments.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/process_setup.h"

namespace mlperf::runtime {

enum class Collective { kAllReduce, kAllGather, kReduceScatter, kAllToAll };
inline constexpr Collective kAllCollectives[] = {Collective::kAllReduce, Collective::kAllGather,
                                                 Collective::kReduceScatter, Collective::kAllToAll};

// all_reduce, all_gather, reduce_scatter, all_to_all.
std::string_view CollectiveName(Collective c);
// A comma-separated list of those names; "all" = every one.
absl::StatusOr<std::vector<Collective>> ParseCollectives(std::string_view list);

// nccl-tests' factor from algorithm to bus bandwidth on `ranks` ranks:
// 2(n-1)/n for all-reduce, (n-1)/n for the other three.
double BusFactor(Collective c, int ranks);

// min, min * factor, ... up to max (inclusive); factor >= 2.
std::vector<int64_t> MessageSizes(int64_t min_bytes, int64_t max_bytes, int64_t factor);

struct SweepOptions {
  std::vector<Collective> collectives{std::begin(kAllCollectives), std::end(kAllCollectives)};
  int64_t min_bytes = 8, max_bytes = int64_t{1} << 30, factor = 2;
  int warmup = 5, iters = 20;
};

// One collective at one size. `bytes` is nccl-tests' size: the whole
// result a rank holds (all-reduce: the buffer; all-gather: every rank's
// block; reduce-scatter: what each rank sends; all-to-all: a rank's blocks
// for all ranks), rounded down to whole floats per rank; count = floats in
// it. seconds = per call, averaged over the ranks; bandwidths in bytes/s.
struct CollectiveResult {
  Collective collective = Collective::kAllReduce;
  int64_t bytes = 0, count = 0;
  double seconds = 0, algbw = 0, busbw = 0;
  // Elements that differ from the expected result in one checked call.
  int64_t wrong = 0;
};

// Buffers on the device the communicators work on (NCCL: the GPU; MPI: host
// memory), 2 x max_bytes of them. Sizes too small for one float per rank are
// skipped.
std::vector<CollectiveResult> MeasureCollectives(const RunComms& comms,
                                                 const SweepOptions& options);

// A rank's links: each pair of ranks exchanges `bytes` each way, `iters`
// times, in rounds where every rank has at most one partner (a round-robin
// schedule). bytes_per_second is the median over the partners on other
// nodes (over all partners when every rank shares one node).
struct RankLink {
  int rank = 0;
  std::string node;  // host name
  double bytes_per_second = 0;
  int partners = 0;
};
std::vector<RankLink> ProbeLinks(const RunComms& comms, int64_t bytes, int iters);

// The round-robin schedule ProbeLinks follows (the circle method): over
// RoundRobinRounds(ranks) rounds every pair of ranks meets exactly once;
// the partner of `rank` in `round`, or -1 when it sits the round out (odd
// counts).
int RoundRobinRounds(int ranks);
int RoundRobinPartner(int round, int rank, int ranks);

// The median bandwidth over the ranks that have partners (0 for none).
double MedianBandwidth(std::span<const RankLink> links);
// The ranks whose bandwidth is below `min_fraction` x that median (none for
// a world of one or min_fraction 0).
std::vector<RankLink> SlowRanks(std::span<const RankLink> links, double min_fraction);

// Host name of this process (gethostname), at most 63 bytes.
std::string NodeName();
// Every rank's host name, in rank order (collective over `control`).
std::vector<std::string> NodesOfRanks(dist::Communicator& control);

// "1.50 GB/s", "120 MB/s", "8 B", "4 MiB": numbers for reports.
std::string Rate(double bytes_per_second);
std::string Size(int64_t bytes);

}  // namespace mlperf::runtime
