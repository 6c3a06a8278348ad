// The rules ask for flushed caches before each run (training_rules
// "cache_clear"; NVIDIA runs sync and vm.drop_caches=3, then logs cache_clear).
#pragma once

namespace mlperf::closed {

// sync(), then drops the page cache when allowed (root on a host, not in most
// containers). Returns whether the cache was dropped; the value of the
// cache_clear log line says so.
bool DropPageCache();

}  // namespace mlperf::closed
