#include "runtime/preflight.h"

#include <vector>

#include "fmt/format.h"
#include "runtime/collective_bench.h"

namespace mlperf::runtime {
namespace {

// Short: a latency-bound and a bandwidth-bound size, a few calls each.
constexpr int64_t kSmall = 64 << 10, kLarge = 4 << 20, kProbeBytes = 1 << 20;

}  // namespace

absl::Status RunPreflight(const RunComms& comms, double min_fraction,
                          const std::function<void(const std::string&)>& say) {
  const bool rank0 = comms.control->rank() == 0;
  // The links first: a slow rank stops the job before the sweep waits on it.
  const std::vector<RankLink> links = ProbeLinks(comms, kProbeBytes, 3);
  const RankLink* low = nullptr;
  for (const RankLink& l : links)
    if (l.partners > 0 && (low == nullptr || l.bytes_per_second < low->bytes_per_second)) low = &l;
  if (rank0 && low != nullptr) {
    say(fmt::format("pre-flight: link bandwidth of {} ranks: median {}, lowest {} (rank {} on {})",
                    links.size(), Rate(MedianBandwidth(links)), Rate(low->bytes_per_second),
                    low->rank, low->node));
  }
  if (const std::vector<RankLink> slow = SlowRanks(links, min_fraction); !slow.empty()) {
    std::string named;
    for (const RankLink& l : slow)
      named += fmt::format("{}rank {} on {} ({})", named.empty() ? "" : ", ", l.rank, l.node,
                           Rate(l.bytes_per_second));
    return absl::FailedPreconditionError(fmt::format(
        "pre-flight: {} below {} x the median link bandwidth of the ranks ({}); check that "
        "node's network, or lower --preflight_min (0 turns the comparison off)",
        named, min_fraction, Rate(MedianBandwidth(links))));
  }
  const SweepOptions sweep{
      .min_bytes = kSmall, .max_bytes = kLarge, .factor = kLarge / kSmall, .warmup = 2, .iters = 5};
  std::string line;
  int64_t wrong = 0;
  for (const CollectiveResult& r : MeasureCollectives(comms, sweep)) {
    wrong += r.wrong;
    if (r.bytes >= kLarge)
      line += fmt::format("{}{} {}", line.empty() ? "" : ", ", CollectiveName(r.collective),
                          Rate(r.busbw));
  }
  if (rank0) say(fmt::format("pre-flight: bus bandwidth at {}: {}", Size(kLarge), line));
  if (wrong > 0) {
    return absl::FailedPreconditionError(fmt::format(
        "pre-flight: {} element(s) of the collectives' results were wrong; the communicator "
        "or a device is broken",
        wrong));
  }
  return absl::OkStatus();
}

}  // namespace mlperf::runtime
