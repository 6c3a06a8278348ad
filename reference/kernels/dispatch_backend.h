// How the ops:: files pick a backend (internal to reference/kernels).
#pragma once

#include <initializer_list>

#include "base/check.h"
#include "reference/core/tensor.h"

#ifdef MLPERF_HAVE_CUDA
// One line per op: the CUDA twin in CUDA builds.
#define MLPERF_CUDA_TWIN(call) cuda::call
#else
// Without CUDA a device tensor cannot exist legitimately; name the op.
#define MLPERF_CUDA_TWIN(call) ::mlperf::ops::detail::NoCuda(#call)
#endif

namespace mlperf::ops::detail {

#ifndef MLPERF_HAVE_CUDA
[[noreturn]] void NoCuda(const char* call);
#endif

// The backend of a call: the device of its first tensor, which the others
// must share.
inline bool OnDevice(const core::Tensor& first,
                     std::initializer_list<const core::Tensor*> others = {}) {
  for (const core::Tensor* t : others)
    if (!t->empty())
      MLPERF_CHECK_MSG(t->device() == first.device(), "ops: tensors on different devices");
  return first.device() == core::Device::kCuda;
}

}  // namespace mlperf::ops::detail
