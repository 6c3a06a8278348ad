// SIGINT / SIGTERM / SIGHUP end the current run at the next step instead of killing
// the process, so that every finished run stays in the package and the
// unfinished log is left marked as incomplete. A second signal kills as usual.
#pragma once

namespace mlperf::runtime {

void InstallInterruptHandlers();
// The signal received (SIGINT, SIGTERM or SIGHUP), or 0.
int InterruptSignal();

}  // namespace mlperf::runtime
