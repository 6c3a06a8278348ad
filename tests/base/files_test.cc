// base/files and base/file_lock: atomic writes (whole or in pieces) keep the
// old file on failure, IsWithin resolves paths, and a lock refuses a second
// holder by pid and hands over when released.
#include "base/files.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include "base/file_lock.h"
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

}  // namespace
}  // namespace mlperf::base
