// Exit status of every command-line tool in the suite.
#pragma once

namespace mlperf {

// 0 ok, 1 a check or a run failed, 2 usage or input error.
inline constexpr int kExitOk = 0, kExitFailed = 1, kExitUsage = 2;

}  // namespace mlperf
