// Attention-probability dropout, shared by both backends' attention kernels,
// and the storage of the attention core's GEMM operands.
#pragma once

#include <cstdint>

namespace mlperf {

// Dropout on the attention probabilities; the mask is drawn from Philox
// (seed, offset [+ *offset_base]: ops::DropoutForward), so both backends
// drop the same elements.
struct AttentionParams {
  float dropout = 0.0f;
  uint64_t seed = 0;
  uint64_t offset = 0;
  const int64_t* offset_base = nullptr;
  // A decoder's causal mask (ops::CausalMask) on the scores; the fp32 path
  // only.
  bool causal = false;
  // Packed rows: the mask holds each token's sequence (ops::AddSequenceMask)
  // rather than 0/1 for padding; the fp32 path only.
  bool packed = false;
  // On a CUDA device under bf16/fp16: keep the tensors that feed the batched
  // GEMMs in that type (cuda/attention_typed.h; the same values). Ignored
  // elsewhere.
  bool typed = false;
};

}  // namespace mlperf
