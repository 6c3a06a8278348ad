#include "base/environment.h"

#include <cstdlib>

namespace mlperf::base {

const char* GetEnv(const char* name) { return std::getenv(name); }

}  // namespace mlperf::base
