#include "reference/kernels/switches.h"

#include <string_view>
#include <vector>

#include "base/environment.h"

namespace mlperf::ops {
namespace {

// A switch is away from its default when its variable holds `away` (or, with
// `away` null, any value but "0").
struct Definition {
  const char* variable;
  const char* away;
  bool KernelSwitches::*field;
  const char* effect;
};

constexpr Definition kDefinitions[] = {
    {"MLPERF_CUDNN_GRAPH", "0", &KernelSwitches::cudnn_graph,
     "convolutions through cuDNN's legacy API only"},
    {"MLPERF_CUDNN_FIND", "1", &KernelSwitches::cudnn_find,
     "convolution algorithms picked by timing on first use"},
    {"MLPERF_CUDNN_BATCHNORM", nullptr, &KernelSwitches::cudnn_batchnorm,
     "channels-last batch norm through cuDNN"},
    {"MLPERF_NORM_WIDE", "0", &KernelSwitches::norm_wide,
     "channels-last norm kernels on 4 bytes of channels a thread"},
    {"MLPERF_CUDNN_EPILOGUE", "0", &KernelSwitches::cudnn_epilogue,
     "inference batch norms as passes of their own"},
    {"MLPERF_TYPED_ACTIVATIONS", "0", &KernelSwitches::typed_activations,
     "fp32 activation storage under bf16/fp16"},
    {"MLPERF_GEMM_EPILOGUES", "0", &KernelSwitches::gemm_epilogues,
     "dense layers without cuBLASLt's bias epilogues"},
    {"MLPERF_CUDNN_LOG", nullptr, &KernelSwitches::cudnn_log, "cuDNN algorithm choices on stderr"},
    {"MLPERF_CPU_AMX", "0", &KernelSwitches::cpu_amx, "bf16 GEMMs without AMX tiles"},
    {"MLPERF_CPU_WINOGRAD", "0", &KernelSwitches::cpu_winograd,
     "CPU 3x3 convolutions through im2col rather than Winograd's F(4x4, 3x3)"},
};

bool Away(const Definition& d) {
  const char* value = base::GetEnv(d.variable);
  if (value == nullptr || *value == '\0') return false;
  return d.away != nullptr ? std::string_view(value) == d.away : std::string_view(value) != "0";
}

struct State {
  KernelSwitches switches;
  std::vector<SwitchInfo> list;
  std::string notes;
};

const State& Read() {
  static const State state = [] {
    State s;
    for (const Definition& d : kDefinitions) {
      const bool away = Away(d);
      if (away) {
        s.switches.*d.field = !(s.switches.*d.field);
        if (!s.notes.empty()) s.notes += ", ";
        s.notes += std::string(d.variable) + "=" + base::GetEnv(d.variable);
      }
      s.list.push_back({d.variable, d.effect, away});
    }
    return s;
  }();
  return state;
}

}  // namespace

const KernelSwitches& Switches() { return Read().switches; }
std::span<const SwitchInfo> SwitchList() { return Read().list; }
std::string SwitchNotes() { return Read().notes; }

}  // namespace mlperf::ops
