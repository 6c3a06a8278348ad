// The kernel switches: environment variables that choose among kernels (for
// comparing them, or going back while one is fixed). They are read here
// only, once, and every package's system description records the ones set
// away from their defaults (sw_notes), so a reviewer sees how a result was
// produced.
#pragma once

#include <span>
#include <string>

namespace mlperf::ops {

struct KernelSwitches {
  bool cudnn_graph = true;        // MLPERF_CUDNN_GRAPH=0: cuDNN's legacy API only
  bool cudnn_find = false;        // MLPERF_CUDNN_FIND=1: algorithms picked by timing
  bool cudnn_batchnorm = false;   // MLPERF_CUDNN_BATCHNORM=1: cuDNN's channels-last batch norm
  bool norm_wide = true;          // MLPERF_NORM_WIDE=0: 4 bytes of channels a thread
  bool cudnn_epilogue = true;     // MLPERF_CUDNN_EPILOGUE=0: inference norms apart
  bool typed_activations = true;  // MLPERF_TYPED_ACTIVATIONS=0: fp32 activation storage
  bool gemm_epilogues = true;     // MLPERF_GEMM_EPILOGUES=0: no cuBLASLt bias epilogues
  bool cudnn_log = false;         // MLPERF_CUDNN_LOG=1: algorithm choices on stderr
  bool cpu_amx = true;            // MLPERF_CPU_AMX=0: no AMX tiles for bf16 GEMMs
  bool cpu_winograd = true;       // MLPERF_CPU_WINOGRAD=0: 3x3 convolutions through im2col
};

// Read from the environment on first use.
const KernelSwitches& Switches();

struct SwitchInfo {
  const char* variable;  // "MLPERF_CUDNN_GRAPH"
  const char* effect;    // what setting it away from its default does
  bool set;              // whether this process has it away from its default
};
std::span<const SwitchInfo> SwitchList();

// "MLPERF_CUDNN_GRAPH=0, MLPERF_CPU_AMX=0": the switches this process has away
// from their defaults, as they were set; "" when none.
std::string SwitchNotes();

}  // namespace mlperf::ops
