// The TCP rendezvous (dist::ShareFromRankZero) as one process of a launch,
// for the multi-node tests: rank 0 serves a fixed blob, the others fetch it.
//
// usage: rendezvous_probe RANK WORLD HOST PORT TIMEOUT_MS
// Prints "got BLOB in N ms" (exit 0) or the error with the time it took
// (exit 1).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "reference/dist/launch_env.h"

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: rendezvous_probe RANK WORLD HOST PORT TIMEOUT_MS\n");
    return 2;
  }
  const mlperf::dist::LaunchEnv env{.rank = std::atoi(argv[1]),
                                    .world_size = std::atoi(argv[2]),
                                    .local_rank = 0,
                                    .source = "probe"};
  const std::string blob = "rendezvous-probe-blob";
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<std::string> got =
      mlperf::dist::ShareFromRankZero(env, argv[3], static_cast<uint16_t>(std::atoi(argv[4])), blob,
                                      blob.size(), std::chrono::milliseconds(std::atoi(argv[5])));
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - start)
                      .count();
  if (!got.ok()) {
    std::fprintf(stderr, "rendezvous_probe: %s (after %lld ms)\n",
                 std::string(got.status().message()).c_str(), static_cast<long long>(ms));
    return 1;
  }
  std::printf("got %s in %lld ms\n", got->c_str(), static_cast<long long>(ms));
  return 0;
}
