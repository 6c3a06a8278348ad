#include "closed_division/page_cache.h"

#include <unistd.h>

#include <fstream>

namespace mlperf::closed {

bool DropPageCache() {
  ::sync();
  std::ofstream drop("/proc/sys/vm/drop_caches");
  if (!drop) return false;
  drop << "3\n";
  drop.flush();
  return static_cast<bool>(drop);
}

}  // namespace mlperf::closed
