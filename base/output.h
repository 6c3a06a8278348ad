// Where every tool's reports go. An output is declared before any work
// (OutputGuard::Claim) and written whole at the end (WriteOutput), and it
// never destroys what its path names:
//  - a regular file (or a new one) is replaced through a temporary file and a
//    rename of the file a symbolic link resolves to, so the link stays;
//  - a character device or a FIFO is written in place, /dev/stdout,
//    /dev/stderr and /dev/fd/N through the descriptor itself;
//  - a folder, a block device or a socket is refused;
//  - a failed write or close is an error, never a silent success.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"

namespace mlperf::base {

// Writes `text` to `path` as described above; the error names the path.
absl::Status WriteOutput(const std::filesystem::path& path, std::string_view text);

// The outputs of one invocation, checked against its inputs and each other
// before anything runs. A claimed regular file is also locked against other
// processes until the guard is destroyed, so two tools writing one report
// refuse instead of losing one silently.
class OutputGuard {
 public:
  OutputGuard();
  ~OutputGuard();
  OutputGuard(const OutputGuard&) = delete;
  OutputGuard& operator=(const OutputGuard&) = delete;

  // A file or folder this invocation reads. With `walk`, the files a folder
  // reaches through symbolic links count too (bounded: 1,000,000 entries).
  void AddInput(const std::filesystem::path& path, bool walk = false);

  // Refuses (InvalidArgument, "--<flag>=<path>: why") an output that is a
  // folder, lies in a missing folder, is or lies inside an input, is a file an
  // input folder reaches, is another output or the standard output, or is
  // being written by another process.
  absl::Status Claim(std::string_view flag, const std::filesystem::path& path);

 private:
  struct Identity {
    dev_t dev = 0;
    ino_t ino = 0;
    bool operator==(const Identity&) const = default;
  };
  struct Input {
    std::filesystem::path resolved;
    std::string given;
    bool walk = false;
    bool walked = false;
    std::vector<Identity> reached;  // files inside, when walked
  };
  std::vector<Input> inputs_;
  std::vector<std::pair<std::filesystem::path, std::string>> outputs_;  // resolved, flag
  std::vector<int> locks_;                                              // sockets held
};

// A tool's main: refuses to run with a closed standard output (a report would
// be lost, or a file opened later would take its descriptor), puts /dev/null
// on a closed standard input or error so that no file takes those, then runs
// `body`; an exception that escapes it (a file system error on a path nobody
// checked) ends the tool with one line and exit 2, not an abort.
int RunTool(const char* tool, absl::FunctionRef<int()> body);

// Writes `text` to stdout and flushes it; an error names what failed.
absl::Status WriteStdout(std::string_view text);

// Flushes stdout; an error when anything written to it was lost (a full disk,
// a closed pipe).
absl::Status FinishStdout();

}  // namespace mlperf::base
