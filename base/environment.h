// The process environment, read in one place: the launchers' variables
// (rank, world size), the tools' settings and the kernel switches
// (reference/kernels/switches.h, which records them in every package).
#pragma once

namespace mlperf::base {

// The variable's value, or nullptr when it is not set. The pointer is the
// environment's own: valid until the variable is set again.
const char* GetEnv(const char* name);

}  // namespace mlperf::base
