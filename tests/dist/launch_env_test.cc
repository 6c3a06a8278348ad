// Launcher environment parsing (OpenMPI, PMI, Slurm, torchrun, and mixtures)
// and the TCP rendezvous that carries rank 0's NCCL id, on the CPU.
#include "reference/dist/launch_env.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <string>
#include <thread>

namespace mlperf::dist {
namespace {

using Env = std::map<std::string, std::string>;

absl::StatusOr<LaunchEnv> Read(const Env& env) {
  return ReadLaunchEnv([&](const char* var) -> const char* {
    auto it = env.find(var);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

TEST(LaunchEnvTest, NoLauncherIsASingleProcess) {
  absl::StatusOr<LaunchEnv> env = Read({});
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_EQ(env->rank, 0);
  EXPECT_EQ(env->world_size, 1);
  EXPECT_EQ(env->local_rank, 0);
  EXPECT_EQ(env->source, "none");
}

TEST(LaunchEnvTest, EachLauncherAlone) {
  struct Case {
    Env env;
    int rank, size, local;
    const char* source;
  };
  const Case cases[] = {
      {{{"OMPI_COMM_WORLD_RANK", "3"},
        {"OMPI_COMM_WORLD_SIZE", "8"},
        {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}},
       3,
       8,
       1,
       "OpenMPI"},
      {{{"PMI_RANK", "5"}, {"PMI_SIZE", "6"}, {"MPI_LOCALRANKID", "2"}}, 5, 6, 2, "PMI"},
      {{{"SLURM_PROCID", "7"}, {"SLURM_NTASKS", "16"}, {"SLURM_LOCALID", "3"}}, 7, 16, 3, "Slurm"},
      {{{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "1"}}, 1, 2, 1, "torchrun"},
      // No local rank: assume one node.
      {{{"RANK", "1"}, {"WORLD_SIZE", "4"}}, 1, 4, 1, "torchrun"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<LaunchEnv> env = Read(c.env);
    ASSERT_TRUE(env.ok()) << c.source << ": " << env.status();
    EXPECT_EQ(env->rank, c.rank) << c.source;
    EXPECT_EQ(env->world_size, c.size) << c.source;
    EXPECT_EQ(env->local_rank, c.local) << c.source;
    EXPECT_EQ(env->source, c.source);
  }
}

TEST(LaunchEnvTest, AgreeingLaunchersCombine) {
  absl::StatusOr<LaunchEnv> env = Read({{"SLURM_PROCID", "2"},
                                        {"SLURM_NTASKS", "4"},
                                        {"SLURM_LOCALID", "0"},
                                        {"RANK", "2"},
                                        {"WORLD_SIZE", "4"},
                                        {"LOCAL_RANK", "0"}});
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_EQ(env->rank, 2);
  EXPECT_EQ(env->source, "Slurm+torchrun");
}

TEST(LaunchEnvTest, InconsistentOrMalformedValuesAreClearErrors) {
  struct Case {
    Env env;
    const char* expected;  // a piece of the message
  };
  const Case cases[] = {
      {{{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "4"}, {"RANK", "0"}, {"WORLD_SIZE", "4"}},
       "launchers disagree"},
      {{{"OMPI_COMM_WORLD_RANK", "0"},
        {"OMPI_COMM_WORLD_SIZE", "2"},
        {"PMI_RANK", "0"},
        {"PMI_SIZE", "4"}},
       "launchers disagree"},
      {{{"SLURM_PROCID", "1"},
        {"SLURM_NTASKS", "4"},
        {"SLURM_LOCALID", "1"},
        {"RANK", "1"},
        {"WORLD_SIZE", "4"},
        {"LOCAL_RANK", "0"}},
       "launchers disagree"},
      {{{"RANK", "4"}, {"WORLD_SIZE", "4"}}, "is not below"},
      {{{"RANK", "x1"}, {"WORLD_SIZE", "4"}}, "RANK='x1' is not a non-negative integer"},
      {{{"RANK", "-1"}, {"WORLD_SIZE", "4"}}, "not a non-negative integer"},
      {{{"WORLD_SIZE", "4"}}, "WORLD_SIZE is set but RANK is not"},
      {{{"RANK", "0"}, {"WORLD_SIZE", "0"}}, "is not below"},
      {{{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "2"}}, "LOCAL_RANK=2"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<LaunchEnv> env = Read(c.env);
    ASSERT_FALSE(env.ok()) << c.expected;
    EXPECT_EQ(env.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(env.status().message().find(c.expected), std::string::npos) << env.status().message();
  }
}

// The real process environment, set in-process.
TEST(LaunchEnvTest, ReadsTheProcessEnvironment) {
  const char* vars[] = {"OMPI_COMM_WORLD_RANK",
                        "OMPI_COMM_WORLD_SIZE",
                        "OMPI_COMM_WORLD_LOCAL_RANK",
                        "PMI_RANK",
                        "PMI_SIZE",
                        "MPI_LOCALRANKID",
                        "PMI_LOCAL_RANK",
                        "SLURM_PROCID",
                        "SLURM_NTASKS",
                        "SLURM_LOCALID",
                        "RANK",
                        "WORLD_SIZE",
                        "LOCAL_RANK"};
  for (const char* v : vars) unsetenv(v);
  setenv("SLURM_PROCID", "5", 1);
  setenv("SLURM_NTASKS", "8", 1);
  setenv("SLURM_LOCALID", "1", 1);
  absl::StatusOr<LaunchEnv> env = ReadLaunchEnv();
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_EQ(env->rank, 5);
  EXPECT_EQ(env->world_size, 8);
  EXPECT_EQ(env->local_rank, 1);
  setenv("RANK", "4", 1);
  setenv("WORLD_SIZE", "8", 1);
  EXPECT_FALSE(ReadLaunchEnv().ok());
  for (const char* v : vars) unsetenv(v);
}

// A port the kernel says is free right now.
uint16_t FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

std::string Id128() {
  std::string id(128, '\0');
  for (int i = 0; i < 128; ++i) id[i] = static_cast<char>((i * 37 + 11) & 0xff);
  return id;
}

TEST(RendezvousTest, RankZeroHandsItsIdToEveryOtherRank) {
  const uint16_t port = FreePort();
  const std::string id = Id128();
  constexpr int kWorld = 4;
  std::string got[kWorld];
  absl::Status status[kWorld];
  std::thread ranks[kWorld];
  // Clients start first: they must retry until rank 0 listens.
  for (int r = kWorld - 1; r >= 0; --r) {
    ranks[r] = std::thread([&, r] {
      const LaunchEnv env{.rank = r, .world_size = kWorld, .local_rank = r, .source = "test"};
      absl::StatusOr<std::string> s = ShareFromRankZero(
          env, "127.0.0.1", port, r == 0 ? std::string_view(id) : std::string_view(), 128,
          std::chrono::seconds(20));
      status[r] = s.status();
      if (s.ok()) got[r] = *s;
    });
    if (r == kWorld - 1) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  for (std::thread& t : ranks) t.join();
  for (int r = 0; r < kWorld; ++r) {
    ASSERT_TRUE(status[r].ok()) << "rank " << r << ": " << status[r];
    EXPECT_EQ(got[r], id) << "rank " << r;
  }
}

TEST(RendezvousTest, MissingRankZeroTimesOutWithAClearError) {
  const uint16_t port = FreePort();
  absl::StatusOr<std::string> s = FetchBlob("127.0.0.1", port, 128, std::chrono::milliseconds(300));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_NE(s.status().message().find("could not reach rank 0"), std::string::npos);
}

TEST(RendezvousTest, MissingClientsTimeOutOnRankZero) {
  const absl::Status s =
      ServeBlob(FreePort(), Id128(), /*clients=*/1, std::chrono::milliseconds(200));
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
}

TEST(RendezvousTest, UnresolvableHostIsAnInputError) {
  absl::StatusOr<std::string> s =
      FetchBlob("no-such-host.invalid", 1234, 128, std::chrono::milliseconds(200));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << s.status();
}

}  // namespace
}  // namespace mlperf::dist
