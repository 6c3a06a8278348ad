#include "runtime/collective_watchdog.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>

#include "base/exit_codes.h"
#include "fmt/format.h"
#include "reference/dist/launch_env.h"
#include "runtime/collective_bench.h"

namespace mlperf::runtime {
namespace {

using Clock = std::chrono::steady_clock;

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

// A fixed-size record per rank for the all-gather.
constexpr size_t kName = 64, kAddress = 16, kAddresses = 4;
constexpr size_t kRecord = kName + kAddress * kAddresses + 2;

std::vector<std::string> Ipv4Addresses() {
  std::vector<std::string> out, loopback;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) == 0) {
    for (const ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
      if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
      char text[INET_ADDRSTRLEN] = {};
      inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(a->ifa_addr)->sin_addr, text,
                sizeof(text));
      (std::string_view(text).starts_with("127.") ? loopback : out).push_back(text);
    }
    freeifaddrs(list);
  }
  if (out.empty()) out = loopback.empty() ? std::vector<std::string>{"127.0.0.1"} : loopback;
  out.resize(std::min(out.size(), kAddresses));
  return out;
}

}  // namespace

// Marks the watchdog's clock around every call of the communicator it wraps.
class WatchedCommunicator final : public dist::Communicator {
 public:
  WatchedCommunicator(dist::Communicator& inner, CollectiveWatchdog& dog)
      : inner_(inner), dog_(dog) {}
  int rank() const override { return inner_.rank(); }
  int world_size() const override { return inner_.world_size(); }
  void AllReduceSum(float* data, int64_t count) override {
    Watched("all-reduce", [&] { inner_.AllReduceSum(data, count); });
  }
  void AllReduceAverage(float* data, int64_t count) override {
    Watched("all-reduce", [&] { inner_.AllReduceAverage(data, count); });
  }
  void Broadcast(float* data, int64_t count, int root) override {
    Watched("broadcast", [&] { inner_.Broadcast(data, count, root); });
  }
  void AllToAll(const void* send, std::span<const int64_t> send_bytes, void* recv,
                std::span<const int64_t> recv_bytes) override {
    Watched("all-to-all", [&] { inner_.AllToAll(send, send_bytes, recv, recv_bytes); });
  }
  void AllGather(const void* send, void* recv, int64_t bytes) override {
    Watched("all-gather", [&] { inner_.AllGather(send, recv, bytes); });
  }
  void ReduceScatterSum(const float* send, float* recv, int64_t count) override {
    Watched("reduce-scatter", [&] { inner_.ReduceScatterSum(send, recv, count); });
  }
  void Barrier() override {
    Watched("barrier", [&] { inner_.Barrier(); });
  }
  bool CollectivesCapturable() const override { return inner_.CollectivesCapturable(); }
  // The part is watched too (by the same watchdog, which probes every rank).
  std::unique_ptr<dist::Communicator> Split(int colour, int key) override {
    std::unique_ptr<dist::Communicator> part;
    Watched("split", [&] { part = inner_.Split(colour, key); });
    if (part == nullptr) return nullptr;
    auto watched = std::make_unique<WatchedCommunicator>(*part, dog_);
    watched->owned_ = std::move(part);
    return watched;
  }

 private:
  template <typename Call>
  void Watched(const char* what, Call call) {
    dog_.Enter(what);
    call();
    dog_.Leave();
  }
  dist::Communicator& inner_;
  CollectiveWatchdog& dog_;
  std::unique_ptr<dist::Communicator> owned_;  // inner_, for a split part
};

absl::StatusOr<std::unique_ptr<CollectiveWatchdog>> CollectiveWatchdog::Start(
    dist::Communicator& control, std::chrono::milliseconds timeout, std::string tool) {
  // Failures to open the port are agreed on: every rank goes on, or none.
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  socklen_t len = sizeof(addr);
  const bool ok = fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
                  listen(fd, SOMAXCONN) == 0 &&
                  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  const std::string error = ok ? "" : std::strerror(errno);
  float failed = ok ? 0.0f : 1.0f;
  control.AllReduceSum(&failed, 1);
  if (failed != 0.0f) {
    if (fd >= 0) close(fd);
    return absl::UnavailableError(
        fmt::format("collective watchdog: a rank could not open its liveness port{}",
                    error.empty() ? "" : fmt::format(" ({})", error)));
  }
  std::unique_ptr<CollectiveWatchdog> dog(new CollectiveWatchdog(fd, timeout, std::move(tool)));
  dog->rank_ = control.rank();
  dog->node_ = NodeName();
  std::string mine(kRecord, '\0');
  dog->node_.copy(mine.data(), kName - 1);
  const std::vector<std::string> addresses = Ipv4Addresses();
  for (size_t i = 0; i < addresses.size(); ++i)
    addresses[i].copy(mine.data() + kName + i * kAddress, kAddress - 1);
  const uint16_t port = ntohs(addr.sin_port);
  std::memcpy(mine.data() + kRecord - 2, &port, 2);
  std::string all(kRecord * static_cast<size_t>(control.world_size()), '\0');
  control.AllGather(mine.data(), all.data(), static_cast<int64_t>(kRecord));
  for (int r = 0; r < control.world_size(); ++r) {
    if (r == dog->rank_) continue;
    const char* record = all.data() + kRecord * static_cast<size_t>(r);
    PeerAddress p{.rank = r, .node = std::string(record)};
    for (size_t i = 0; i < kAddresses; ++i) {
      const char* a = record + kName + i * kAddress;
      if (*a != '\0') p.addresses.emplace_back(a);
    }
    std::memcpy(&p.port, record + kRecord - 2, 2);
    dog->peers_.push_back(std::move(p));
  }
  dog->server_ = std::thread([d = dog.get()] { d->Serve(); });
  dog->watcher_ = std::thread([d = dog.get()] { d->WatchLoop(); });
  return dog;
}

CollectiveWatchdog::CollectiveWatchdog(int listener, std::chrono::milliseconds timeout,
                                       std::string tool)
    : listener_(listener), timeout_(timeout), tool_(std::move(tool)) {}

CollectiveWatchdog::~CollectiveWatchdog() {
  {
    const std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (watcher_.joinable()) watcher_.join();
  if (server_.joinable()) server_.join();
  if (listener_ >= 0) close(listener_);
}

std::unique_ptr<dist::Communicator> CollectiveWatchdog::Watch(dist::Communicator& inner) {
  return std::make_unique<WatchedCommunicator>(inner, *this);
}

void CollectiveWatchdog::Enter(const char* what) {
  waiting_in_.store(what);
  waiting_since_ns_.store(NowNs());
}

void CollectiveWatchdog::Leave() { waiting_since_ns_.store(0); }

// Accepts and closes: a connection that opens is the answer.
void CollectiveWatchdog::Serve() {
  for (;;) {
    {
      const std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return;
    }
    pollfd p{listener_, POLLIN, 0};
    if (poll(&p, 1, 200) > 0) {
      const int c = accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c >= 0) close(c);
    }
  }
}

std::vector<std::pair<PeerAddress, std::string>> CollectiveWatchdog::SilentPeers(
    std::chrono::milliseconds probe) const {
  // One attempt per peer at a time, at most 64 at once.
  constexpr size_t kParallel = 64;
  std::vector<std::pair<PeerAddress, std::string>> silent;
  for (size_t first = 0; first < peers_.size(); first += kParallel) {
    std::vector<std::future<std::string>> answers;
    const size_t last = std::min(peers_.size(), first + kParallel);
    for (size_t i = first; i < last; ++i) {
      answers.push_back(std::async(std::launch::async, [&p = peers_[i], probe] {
        std::string error = "no address";
        for (const std::string& a : p.addresses) {
          const int err = dist::ConnectWithin(a, p.port, probe);
          if (err == 0) return std::string();
          error = fmt::format("{}: {}", a, std::strerror(err));
        }
        return error;
      }));
    }
    for (size_t i = first; i < last; ++i) {
      std::string error = answers[i - first].get();
      if (!error.empty()) silent.emplace_back(peers_[i], std::move(error));
    }
  }
  return silent;
}

void CollectiveWatchdog::WatchLoop() {
  int64_t checked_call = 0;  // the call last found waiting on live peers
  Clock::time_point checked_at;
  std::unique_lock<std::mutex> lock(mu_);
  while (!wake_.wait_for(lock, std::chrono::milliseconds(250), [&] { return stop_; })) {
    const int64_t since = waiting_since_ns_.load();
    if (since == 0) continue;
    const auto waited = std::chrono::nanoseconds(NowNs() - since);
    if (waited < timeout_) continue;
    if (since == checked_call && Clock::now() - checked_at < timeout_) continue;
    lock.unlock();
    const auto silent = SilentPeers(std::chrono::milliseconds(3000));
    lock.lock();
    if (waiting_since_ns_.load() != since) continue;  // the call ended meanwhile
    if (silent.empty()) {
      checked_call = since;
      checked_at = Clock::now();
      continue;
    }
    std::string named;
    for (const auto& [peer, error] : silent)
      named += fmt::format("{}rank {} on {} ({})", named.empty() ? "" : ", ", peer.rank, peer.node,
                           error);
    std::fprintf(
        stderr,
        "%s: rank %d on %s waited %lld s in a collective (%s) for peers that do not "
        "answer: %s; ending this rank\n",
        tool_.c_str(), rank_, node_.c_str(),
        static_cast<long long>(std::chrono::duration_cast<std::chrono::seconds>(waited).count()),
        waiting_in_.load(), named.c_str());
    std::fflush(stderr);
    // The main thread is blocked inside MPI: nothing can unwind it.
    std::_Exit(kExitFailed);
  }
}

}  // namespace mlperf::runtime
