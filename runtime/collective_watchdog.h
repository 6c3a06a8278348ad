// A rank whose peer is gone (its process killed, its node's link down)
// waits in MPI's collectives for ever: TCP to a silent host never fails on
// its own. The watchdog bounds that wait. Every rank keeps a TCP port open;
// a collective that has waited `timeout` makes the rank try to connect to
// every peer's port (a few seconds each, in parallel). A peer that does not
// answer ends the rank with one line naming it and its node, exit 1; when
// all answer (a slow peer, e.g. rank 0 preparing data), the wait goes on and
// is checked again after another `timeout`.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "reference/dist/communicator.h"

namespace mlperf::runtime {

// Where a rank answers: its host name, its IPv4 addresses (not loopback,
// unless it has no other) and its liveness port.
struct PeerAddress {
  int rank = 0;
  std::string node;
  std::vector<std::string> addresses;
  uint16_t port = 0;
};

class CollectiveWatchdog {
 public:
  // Collective over `control`: opens this rank's port and learns every
  // other rank's. `tool` prefixes the line (run_closed, run_benchmark).
  static absl::StatusOr<std::unique_ptr<CollectiveWatchdog>> Start(
      dist::Communicator& control, std::chrono::milliseconds timeout, std::string tool);
  ~CollectiveWatchdog();
  CollectiveWatchdog(const CollectiveWatchdog&) = delete;
  CollectiveWatchdog& operator=(const CollectiveWatchdog&) = delete;

  // `inner` (which must outlive the result) with every call watched.
  std::unique_ptr<dist::Communicator> Watch(dist::Communicator& inner);

  // The peers none of whose addresses accept a connection within `probe`,
  // each with the error of its last attempt.
  std::vector<std::pair<PeerAddress, std::string>> SilentPeers(
      std::chrono::milliseconds probe) const;
  const std::vector<PeerAddress>& peers() const { return peers_; }

 private:
  friend class WatchedCommunicator;
  CollectiveWatchdog(int listener, std::chrono::milliseconds timeout, std::string tool);
  void Serve();
  void WatchLoop();
  // Called by the watched communicator around each collective.
  void Enter(const char* what);
  void Leave();

  int listener_ = -1;
  std::chrono::milliseconds timeout_;
  std::string tool_;
  int rank_ = 0;
  std::string node_;
  std::vector<PeerAddress> peers_;  // every rank but this one
  std::atomic<int64_t> waiting_since_ns_{0};
  std::atomic<const char*> waiting_in_{""};
  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread server_, watcher_;
};

}  // namespace mlperf::runtime
