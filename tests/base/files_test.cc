// base/files, base/file_lock and base/output: atomic writes (whole or in
// pieces) keep the old file on failure, IsWithin resolves paths, a lock
// refuses a second holder by pid and hands over when released, and a report
// never replaces what its path names.
#include "base/files.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include "base/file_lock.h"
#include "base/output.h"
#include "fmt/format.h"

namespace mlperf::base {
namespace {

namespace fs = std::filesystem;

fs::path TempDir(const char* name) {
  const fs::path dir = fs::temp_directory_path() / fmt::format("base_{}_{}", name, getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string Slurp(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(Files, AtomicWriteReplacesWholeOrNothing) {
  const fs::path dir = TempDir("atomic");
  ASSERT_TRUE(WriteFileAtomically(dir / "a.txt", "first").ok());
  ASSERT_TRUE(WriteFileAtomically(dir / "a.txt", "second").ok());
  EXPECT_EQ(Slurp(dir / "a.txt"), "second");
  const absl::Status missing = WriteFileAtomically(dir / "no/such/folder.txt", "x");
  EXPECT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find("no/such/folder.txt"), std::string::npos) << missing;
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);  // no .tmp
  fs::remove_all(dir);
}

// A file written in pieces appears whole on Commit, and not at all (the old
// one kept, no temporary left) without it.
TEST(Files, AtomicWriterAppearsOnlyOnCommit) {
  const fs::path dir = TempDir("atomic_writer");
  ASSERT_TRUE(WriteFileAtomically(dir / "a.txt", "old").ok());
  {
    AtomicFileWriter out(dir / "a.txt");
    out.Write("new ");
    out.Write("text");
    EXPECT_EQ(Slurp(dir / "a.txt"), "old");
  }  // dropped without Commit
  EXPECT_EQ(Slurp(dir / "a.txt"), "old");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
  AtomicFileWriter out(dir / "a.txt");
  out.Write("new ");
  out.Write("text");
  ASSERT_TRUE(out.Commit().ok());
  EXPECT_EQ(Slurp(dir / "a.txt"), "new text");
  AtomicFileWriter nowhere(dir / "no/such/folder.txt");
  nowhere.Write("x");
  EXPECT_TRUE(absl::IsResourceExhausted(nowhere.Commit()));
  fs::remove_all(dir);
}

TEST(Files, IsWithinResolvesRelativePartsAndLinks) {
  const fs::path dir = TempDir("within");
  fs::create_directories(dir / "tree/sub");
  fs::create_directory_symlink(dir / "tree", dir / "link");
  EXPECT_TRUE(IsWithin(dir / "tree", dir / "tree"));
  EXPECT_TRUE(IsWithin(dir / "tree/sub/new.csv", dir / "tree"));
  EXPECT_TRUE(IsWithin(dir / "link/sub/x.csv", dir / "tree"));
  EXPECT_TRUE(IsWithin(dir / "other/../tree/x.csv", dir / "tree/"));
  EXPECT_FALSE(IsWithin(dir / "tree2/x.csv", dir / "tree"));
  EXPECT_FALSE(IsWithin(dir / "x.csv", dir / "tree"));
  fs::remove_all(dir);
}

TEST(FileLock, SecondHolderIsRefusedByPidAndWaitsForTheFirst) {
  const fs::path dir = TempDir("lock");
  const fs::path path = dir / "x.lock";
  std::optional<FileLock> first;
  {
    absl::StatusOr<FileLock> lock = FileLock::TryAcquire(path);
    ASSERT_TRUE(lock.ok()) << lock.status();
    first.emplace(std::move(*lock));
  }
  absl::StatusOr<FileLock> second = FileLock::TryAcquire(path);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find(fmt::format("held by process {}", getpid())),
            std::string::npos)
      << second.status();
  std::atomic<bool> acquired = false;
  std::thread waiter([&] {
    absl::StatusOr<FileLock> l = FileLock::Acquire(path);
    acquired = l.ok();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(acquired);  // still waiting for the first holder
  first.reset();
  waiter.join();
  EXPECT_TRUE(acquired);
  EXPECT_TRUE(FileLock::TryAcquire(path).ok());
  fs::remove_all(dir);
}

// base/output: a report never replaces what its path names (device nodes
// made in a temporary folder, links, FIFOs, descriptors), a failed write is
// an error, and the guard refuses outputs that are inputs or one another.

bool IsCharDevice(const fs::path& p) {
  struct stat st;
  return lstat(p.c_str(), &st) == 0 && S_ISCHR(st.st_mode);
}

// Nodes like /dev/null (1,3) and /dev/full (1,7), inside the test's folder.
void MakeCharDevice(const fs::path& p, unsigned minor) {
  ASSERT_EQ(mknod(p.c_str(), S_IFCHR | 0666, makedev(1, minor)), 0) << std::strerror(errno);
}

TEST(Output, DeviceNodesAreWrittenInPlaceAndAFullOneIsAnError) {
  if (geteuid() != 0) GTEST_SKIP() << "making device nodes needs root (CI runs as root)";
  const fs::path dir = TempDir("devices");
  MakeCharDevice(dir / "null", 3);
  MakeCharDevice(dir / "full", 7);
  EXPECT_TRUE(WriteOutput(dir / "null", "report\n").ok());
  EXPECT_TRUE(IsCharDevice(dir / "null"));
  const absl::Status full = WriteOutput(dir / "full", "report\n");
  EXPECT_FALSE(full.ok());
  EXPECT_NE(full.message().find("No space left"), std::string::npos) << full.message();
  EXPECT_TRUE(IsCharDevice(dir / "full"));
  // Through a link too: the link and the node both stay.
  fs::create_symlink(dir / "null", dir / "link");
  EXPECT_TRUE(WriteOutput(dir / "link", "report\n").ok());
  EXPECT_TRUE(fs::is_symlink(dir / "link"));
  EXPECT_TRUE(IsCharDevice(dir / "null"));
  ASSERT_EQ(mknod((dir / "disk").c_str(), S_IFBLK | 0600, makedev(7, 200)), 0);
  EXPECT_FALSE(WriteOutput(dir / "disk", "x").ok());
  OutputGuard guard;
  EXPECT_FALSE(guard.Claim("csv", dir / "disk").ok());
  EXPECT_TRUE(guard.Claim("csv", dir / "null").ok());
  EXPECT_TRUE(guard.Claim("html", dir / "null").ok()) << "a device may take any number of reports";
  fs::remove_all(dir);
}

TEST(Output, ALinkKeepsPointingAtTheReplacedFile) {
  const fs::path dir = TempDir("link");
  { std::ofstream(dir / "target.csv") << "old"; }
  fs::permissions(dir / "target.csv", fs::perms(0640));
  fs::create_symlink("target.csv", dir / "report.csv");
  ASSERT_TRUE(WriteOutput(dir / "report.csv", "new").ok());
  EXPECT_TRUE(fs::is_symlink(dir / "report.csv"));
  EXPECT_EQ(Slurp(dir / "target.csv"), "new");
  EXPECT_EQ(fs::status(dir / "target.csv").permissions(), fs::perms(0640));
  fs::create_symlink(dir / "nowhere", dir / "dangling");
  EXPECT_FALSE(WriteOutput(dir / "dangling", "x").ok());
  EXPECT_TRUE(fs::is_symlink(dir / "dangling"));
  EXPECT_FALSE(fs::exists(dir / "nowhere"));
  fs::create_symlink("loop", dir / "loop");
  EXPECT_FALSE(WriteOutput(dir / "loop", "x").ok());
  EXPECT_FALSE(WriteOutput(dir, "x").ok());
  EXPECT_FALSE(WriteOutput(dir / "no/folder.csv", "x").ok());
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 4)
      << "no temporary file left";
  fs::remove_all(dir);
}

TEST(Output, FifosAndDescriptorsAreWrittenThroughWithoutWaiting) {
  const fs::path dir = TempDir("fifo");
  ASSERT_EQ(mkfifo((dir / "pipe").c_str(), 0600), 0);
  const absl::Status unread = WriteOutput(dir / "pipe", "x");
  EXPECT_FALSE(unread.ok()) << "nobody reads: refused, not a wait";
  EXPECT_NE(unread.message().find("no process is reading"), std::string::npos);
  const int reader = open((dir / "pipe").c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0);
  ASSERT_TRUE(WriteOutput(dir / "pipe", "through the fifo").ok());
  char buffer[64] = {};
  EXPECT_EQ(read(reader, buffer, sizeof buffer), 16);
  EXPECT_STREQ(buffer, "through the fifo");
  close(reader);
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  ASSERT_TRUE(WriteOutput(fmt::format("/dev/fd/{}", fds[1]), "via fd").ok());
  ASSERT_TRUE(WriteOutput(fmt::format("/proc/self/fd/{}", fds[1]), "!").ok());
  EXPECT_EQ(read(fds[0], buffer, sizeof buffer), 7);
  EXPECT_EQ(std::string(buffer, 7), "via fd!");
  close(fds[0]);
  close(fds[1]);
  EXPECT_TRUE(fs::is_fifo(dir / "pipe"));
  fs::remove_all(dir);
}

TEST(Output, TheGuardRefusesInputsAndOutputsNamedTwice) {
  const fs::path dir = TempDir("guard");
  fs::create_directories(dir / "tree/results");
  { std::ofstream(dir / "tree/results/result_0.txt") << "log"; }
  { std::ofstream(dir / "outside.txt") << "reached through a link in the tree"; }
  { std::ofstream(dir / "claims.csv") << "claims"; }
  fs::create_symlink(dir / "outside.txt", dir / "tree/results/result_1.txt");
  fs::create_hard_link(dir / "claims.csv", dir / "claims_again.csv");
  fs::create_symlink(dir / "tree/results/result_0.txt", dir / "log_link");

  OutputGuard guard;
  guard.AddInput(dir / "tree", /*walk=*/true);
  guard.AddInput(dir / "claims.csv");
  EXPECT_FALSE(guard.Claim("csv", dir / "tree").ok());
  EXPECT_FALSE(guard.Claim("csv", dir / "tree/new.csv").ok());
  EXPECT_FALSE(guard.Claim("csv", dir / "log_link").ok());
  const absl::Status reached = guard.Claim("csv", dir / "outside.txt");
  EXPECT_FALSE(reached.ok());
  EXPECT_NE(reached.message().find("reaches"), std::string::npos) << reached.message();
  EXPECT_FALSE(guard.Claim("html", dir / "claims.csv").ok());
  EXPECT_FALSE(guard.Claim("html", dir / "claims_again.csv").ok()) << "a hard link to an input";
  EXPECT_FALSE(guard.Claim("csv", dir / "missing/x.csv").ok());

  ASSERT_TRUE(guard.Claim("csv", dir / "report.csv").ok());
  const absl::Status twice = guard.Claim("html", dir / "./report.csv");
  EXPECT_FALSE(twice.ok());
  EXPECT_NE(twice.message().find("--csv"), std::string::npos) << twice.message();
  {
    OutputGuard other;  // another process writing the same report
    const absl::Status busy = other.Claim("json", dir / "report.csv");
    EXPECT_FALSE(busy.ok());
    EXPECT_NE(busy.message().find("another process"), std::string::npos) << busy.message();
  }
  fs::remove_all(dir);
}

TEST(Output, TheLockEndsWithTheGuard) {
  const fs::path dir = TempDir("lock");
  {
    OutputGuard first;
    ASSERT_TRUE(first.Claim("json", dir / "r.json").ok());
  }
  OutputGuard second;
  EXPECT_TRUE(second.Claim("json", dir / "r.json").ok());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace mlperf::base
