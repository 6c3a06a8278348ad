#include "closed_division/seeds.h"

#include <algorithm>
#include <fstream>

#include "absl/status/status.h"

namespace mlperf::closed {
namespace {

absl::StatusOr<uint32_t> UrandomWord() {
  std::ifstream in("/dev/urandom", std::ios::binary);
  uint32_t word = 0;
  if (!in.read(reinterpret_cast<char*>(&word), sizeof(word)))
    return absl::UnavailableError("/dev/urandom: cannot read a seed");
  return word;
}

}  // namespace

absl::StatusOr<uint64_t> NextRunSeed(int64_t fixed, int run, const std::vector<uint64_t>& used,
                                     dist::Communicator& comm) {
  if (fixed >= 0) return static_cast<uint64_t>(fixed + run);
  // The communicator moves floats: send the seed as two 16-bit halves, each
  // exact in a float. A read failure travels as a negative half.
  float halves[2] = {-1.0f, -1.0f};
  if (comm.rank() == 0) {
    for (int attempt = 0; attempt < 64; ++attempt) {
      absl::StatusOr<uint32_t> word = UrandomWord();
      if (!word.ok()) break;
      if (std::find(used.begin(), used.end(), *word) != used.end()) continue;
      halves[0] = static_cast<float>(*word >> 16);
      halves[1] = static_cast<float>(*word & 0xFFFFu);
      break;
    }
  }
  comm.Broadcast(halves, 2, 0);
  if (halves[0] < 0) return absl::UnavailableError("/dev/urandom: cannot read a fresh seed");
  return (static_cast<uint64_t>(halves[0]) << 16) | static_cast<uint64_t>(halves[1]);
}

}  // namespace mlperf::closed
