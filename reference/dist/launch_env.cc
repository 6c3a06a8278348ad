#include "reference/dist/launch_env.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <thread>

#include "base/environment.h"

namespace mlperf::dist {
namespace {

using Clock = std::chrono::steady_clock;

// The magic prefix keeps a stray connection (a port scanner, another job on
// the same port) from being mistaken for the id.
constexpr char kMagic[8] = {'M', 'L', 'P', 'F', 'R', 'D', 'V', '1'};

struct Launcher {
  const char* name;
  const char* rank;
  const char* size;
  std::vector<const char*> local;  // first one set wins
};

absl::StatusOr<std::optional<int>> ReadInt(const std::function<const char*(const char*)>& lookup,
                                           const char* var) {
  const char* value = lookup(var);
  if (value == nullptr) return std::optional<int>();
  const std::string_view text(value);
  int out = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || out < 0)
    return absl::InvalidArgumentError(
        fmt::format("{}='{}' is not a non-negative integer", var, text));
  return std::optional<int>(out);
}

// RAII socket descriptor.
struct Socket {
  int fd = -1;
  explicit Socket(int f) : fd(f) {}
  ~Socket() {
    if (fd >= 0) close(fd);
  }
  Socket(const Socket&) = delete;
};

int RemainingMs(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() > 0 ? static_cast<int>(left.count()) : 0;
}

// Waits until fd is ready for `events` or the deadline passes.
absl::Status WaitFor(int fd, short events, Clock::time_point deadline, std::string_view what) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int r = poll(&p, 1, RemainingMs(deadline));
    if (r > 0) return absl::OkStatus();
    if (r == 0) return absl::DeadlineExceededError(fmt::format("rendezvous: timed out {}", what));
    if (errno != EINTR)
      return absl::UnavailableError(fmt::format("rendezvous: poll: {}", std::strerror(errno)));
  }
}

// connect() within the deadline: a blocking connect to a peer behind a
// silent link (its SYNs dropped, no refusal) would wait minutes for the
// kernel's retries. 0 or the errno.
int ConnectBy(int fd, const sockaddr_in& addr, Clock::time_point deadline) {
  const int flags = fcntl(fd, F_GETFL);
  fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  int err = 0;
  if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    err = errno;
    if (err == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      const int r = poll(&p, 1, RemainingMs(deadline));
      if (r <= 0) {
        err = r == 0 ? ETIMEDOUT : errno;
      } else {
        socklen_t len = sizeof(err);
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      }
    }
  }
  fcntl(fd, F_SETFL, flags);
  return err;
}

absl::Status SendAll(int fd, const char* data, size_t n, Clock::time_point deadline) {
  while (n > 0) {
    if (absl::Status s = WaitFor(fd, POLLOUT, deadline, "sending"); !s.ok()) return s;
    const ssize_t sent = send(fd, data, n, MSG_NOSIGNAL);
    if (sent < 0) {
      if (errno == EINTR) continue;
      return absl::UnavailableError(fmt::format("rendezvous: send: {}", std::strerror(errno)));
    }
    data += sent;
    n -= static_cast<size_t>(sent);
  }
  return absl::OkStatus();
}

absl::Status RecvAll(int fd, char* data, size_t n, Clock::time_point deadline) {
  while (n > 0) {
    if (absl::Status s = WaitFor(fd, POLLIN, deadline, "receiving"); !s.ok()) return s;
    const ssize_t got = recv(fd, data, n, 0);
    if (got == 0) return absl::UnavailableError("rendezvous: peer closed the connection early");
    if (got < 0) {
      if (errno == EINTR) continue;
      return absl::UnavailableError(fmt::format("rendezvous: recv: {}", std::strerror(errno)));
    }
    data += got;
    n -= static_cast<size_t>(got);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<LaunchEnv> ReadLaunchEnv(const std::function<const char*(const char*)>& lookup) {
  const Launcher launchers[] = {
      {"OpenMPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", {"OMPI_COMM_WORLD_LOCAL_RANK"}},
      {"PMI", "PMI_RANK", "PMI_SIZE", {"MPI_LOCALRANKID", "PMI_LOCAL_RANK"}},
      {"Slurm", "SLURM_PROCID", "SLURM_NTASKS", {"SLURM_LOCALID"}},
      {"torchrun", "RANK", "WORLD_SIZE", {"LOCAL_RANK"}},
  };
  LaunchEnv env;
  std::string first;  // the launcher the others are compared with
  std::optional<int> local;
  std::string local_from;
  for (const Launcher& l : launchers) {
    absl::StatusOr<std::optional<int>> rank = ReadInt(lookup, l.rank);
    if (!rank.ok()) return rank.status();
    absl::StatusOr<std::optional<int>> size = ReadInt(lookup, l.size);
    if (!size.ok()) return size.status();
    if (!rank->has_value() && !size->has_value()) continue;
    if (!rank->has_value() || !size->has_value())
      return absl::InvalidArgumentError(fmt::format("{} is set but {} is not",
                                                    rank->has_value() ? l.rank : l.size,
                                                    rank->has_value() ? l.size : l.rank));
    if (**size < 1 || **rank >= **size)
      return absl::InvalidArgumentError(
          fmt::format("{}={} is not below {}={}", l.rank, **rank, l.size, **size));
    if (first.empty()) {
      env.rank = **rank;
      env.world_size = **size;
      env.source = l.name;
      first = fmt::format("{}={}, {}={}", l.rank, **rank, l.size, **size);
    } else {
      if (**rank != env.rank || **size != env.world_size)
        return absl::InvalidArgumentError(fmt::format("launchers disagree: {} but {}={}, {}={}",
                                                      first, l.rank, **rank, l.size, **size));
      env.source += std::string("+") + l.name;
    }
    for (const char* var : l.local) {
      absl::StatusOr<std::optional<int>> value = ReadInt(lookup, var);
      if (!value.ok()) return value.status();
      if (!value->has_value()) continue;
      if (local.has_value() && **value != *local)
        return absl::InvalidArgumentError(
            fmt::format("launchers disagree: {}={} but {}={}", local_from, *local, var, **value));
      if (**value >= env.world_size)
        return absl::InvalidArgumentError(
            fmt::format("{}={} is not below the world size {}", var, **value, env.world_size));
      local = **value;
      local_from = var;
      break;
    }
  }
  env.local_rank = local.value_or(env.rank);
  return env;
}

absl::StatusOr<LaunchEnv> ReadLaunchEnv() {
  return ReadLaunchEnv([](const char* var) -> const char* { return base::GetEnv(var); });
}

absl::Status ServeBlob(uint16_t port, std::string_view blob, int clients,
                       std::chrono::milliseconds timeout) {
  if (clients == 0) return absl::OkStatus();
  const Clock::time_point deadline = Clock::now() + timeout;
  Socket listener(socket(AF_INET, SOCK_STREAM, 0));
  if (listener.fd < 0)
    return absl::UnavailableError(fmt::format("rendezvous: socket: {}", std::strerror(errno)));
  const int one = 1;
  setsockopt(listener.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = htons(port);
  if (bind(listener.fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0)
    return absl::UnavailableError(
        fmt::format("rendezvous: cannot listen on port {}: {}", port, std::strerror(errno)));
  if (listen(listener.fd, 128) != 0)
    return absl::UnavailableError(fmt::format("rendezvous: listen: {}", std::strerror(errno)));
  std::string message(kMagic, sizeof(kMagic));
  message.append(blob);
  for (int served = 0; served < clients; ++served) {
    if (absl::Status s = WaitFor(
            listener.fd, POLLIN, deadline,
            fmt::format("waiting for rank connections ({} of {} arrived)", served, clients));
        !s.ok())
      return s;
    Socket client(accept(listener.fd, nullptr, nullptr));
    if (client.fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) {
        --served;
        continue;
      }
      return absl::UnavailableError(fmt::format("rendezvous: accept: {}", std::strerror(errno)));
    }
    if (absl::Status s = SendAll(client.fd, message.data(), message.size(), deadline); !s.ok())
      return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> FetchBlob(const std::string& host, uint16_t port, size_t bytes,
                                      std::chrono::milliseconds timeout) {
  const Clock::time_point deadline = Clock::now() + timeout;
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (const int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0)
    return absl::InvalidArgumentError(
        fmt::format("rendezvous: cannot resolve '{}': {}", host, gai_strerror(rc)));
  const sockaddr_in addr = *reinterpret_cast<const sockaddr_in*>(found->ai_addr);
  freeaddrinfo(found);
  std::string last_error = "no attempt";
  // Rank 0 may not be listening yet: retry refused connections until the deadline.
  while (Clock::now() < deadline) {
    Socket s(socket(AF_INET, SOCK_STREAM, 0));
    if (s.fd < 0)
      return absl::UnavailableError(fmt::format("rendezvous: socket: {}", std::strerror(errno)));
    if (const int err = ConnectBy(s.fd, addr, deadline); err != 0) {
      last_error = std::strerror(err);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      continue;
    }
    std::string message(sizeof(kMagic) + bytes, '\0');
    if (absl::Status st = RecvAll(s.fd, message.data(), message.size(), deadline); !st.ok())
      return st;
    if (std::memcmp(message.data(), kMagic, sizeof(kMagic)) != 0)
      return absl::DataLossError(
          fmt::format("rendezvous: {}:{} is not this job's rank 0 (bad magic)", host, port));
    return message.substr(sizeof(kMagic));
  }
  return absl::DeadlineExceededError(
      fmt::format("rendezvous: could not reach rank 0 at {}:{} within {} ms (last error: {})", host,
                  port, timeout.count(), last_error));
}

int ConnectWithin(const std::string& ipv4, uint16_t port, std::chrono::milliseconds timeout) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  if (inet_pton(AF_INET, ipv4.c_str(), &addr.sin_addr) != 1) return EINVAL;
  const Socket s(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (s.fd < 0) return errno;
  return ConnectBy(s.fd, addr, Clock::now() + timeout);
}

absl::StatusOr<std::string> ShareFromRankZero(const LaunchEnv& env, const std::string& host,
                                              uint16_t port, std::string_view blob, size_t bytes,
                                              std::chrono::milliseconds timeout) {
  if (env.rank == 0) {
    if (blob.size() != bytes)
      return absl::InvalidArgumentError(
          fmt::format("rendezvous: blob has {} bytes, expected {}", blob.size(), bytes));
    if (absl::Status s = ServeBlob(port, blob, env.world_size - 1, timeout); !s.ok()) return s;
    return std::string(blob);
  }
  return FetchBlob(host, port, bytes, timeout);
}

absl::StatusOr<std::pair<std::string, uint16_t>> ReadMasterAddress() {
  const char* addr = base::GetEnv("MASTER_ADDR");
  if (addr == nullptr || *addr == '\0')
    return absl::InvalidArgumentError("MASTER_ADDR is not set (rank 0's host name or address)");
  absl::StatusOr<std::optional<int>> port =
      ReadInt([](const char* var) -> const char* { return base::GetEnv(var); }, "MASTER_PORT");
  if (!port.ok()) return port.status();
  if (!port->has_value() || **port < 1 || **port > 65535)
    return absl::InvalidArgumentError("MASTER_PORT must be set to a port in 1..65535");
  return std::make_pair(std::string(addr), static_cast<uint16_t>(**port));
}

}  // namespace mlperf::dist
