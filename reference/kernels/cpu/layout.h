// Which memory layout an activation tensor uses, for the ops that accept both
// channels-first (NC[D]HW; kRowMajor counts as that) and channels-last
// (N[D]HWC, shape in memory order, channels the last dimension).
#pragma once

#include <cstdint>

#include "reference/core/tensor.h"

namespace mlperf::cpu {

inline bool IsChannelsLast(core::Layout layout) {
  return layout == core::Layout::kNHWC || layout == core::Layout::kNDHWC;
}
inline bool IsChannelsLast(const core::Tensor& t) { return IsChannelsLast(t.layout()); }

// Channels-last activations stored in bf16 (ResNet's storage under bf16 on
// AMX, ops::ActivationStorageType), and their data as bits.
inline bool IsBf16(const core::Tensor& t) { return t.dtype() == core::DType::kBF16; }
inline uint16_t* Bf16Data(const core::Tensor& t) { return static_cast<uint16_t*>(t.data()); }

// Channels of a channels-last tensor: its last dimension.
inline int64_t LastDim(const core::Tensor& t) { return t.dim(t.shape().rank() - 1); }

// Checks that all tensors of one op agree on channels-first vs channels-last,
// and returns which.
inline bool SameLayoutFamily(const core::Tensor& a, const core::Tensor& b) {
  MLPERF_CHECK_MSG(IsChannelsLast(a) == IsChannelsLast(b),
                   "tensors of one op must all be channels-first or all channels-last");
  return IsChannelsLast(a);
}

// [outer, channels, inner] view of a tensor whose channel axis is dim 1
// (channels-first) or last (channels-last: inner == 1).
struct ChannelView {
  int64_t outer, channels, inner;
};

inline ChannelView ViewChannels(const core::Tensor& t) {
  if (IsChannelsLast(t)) return {t.numel() / LastDim(t), LastDim(t), 1};
  return {t.dim(0), t.dim(1), t.numel() / (t.dim(0) * t.dim(1))};
}

}  // namespace mlperf::cpu
