// Exit status of every command-line tool in the suite.
#pragma once

#include <cstdio>
#include <exception>

namespace mlperf {

// 0 ok, 1 a check or a run failed, 2 usage or input error.
inline constexpr int kExitOk = 0, kExitFailed = 1, kExitUsage = 2;

// Runs a tool's main body; an exception that escaped it (a file system error
// on a path nobody checked) ends the tool with one line and exit 2, not an
// abort.
template <typename Body>
int RunTool(const char* tool, Body body) {
  try {
    return body();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", tool, e.what());
    return kExitUsage;
  }
}

}  // namespace mlperf
