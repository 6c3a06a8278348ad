#include "runtime/interrupt.h"

#include <csignal>

namespace mlperf::runtime {
namespace {

volatile std::sig_atomic_t g_signal = 0;

void OnSignal(int signal) { g_signal = signal; }

}  // namespace

void InstallInterruptHandlers() {
  struct sigaction action {};
  action.sa_handler = OnSignal;
  sigemptyset(&action.sa_mask);
  // One-shot: the second Ctrl-C gets the default action and ends the process.
  action.sa_flags = SA_RESETHAND;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGHUP, &action, nullptr);  // the terminal or the ssh session closed
}

int InterruptSignal() { return g_signal; }

}  // namespace mlperf::runtime
