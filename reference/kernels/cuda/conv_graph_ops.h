// The cuDNN backend descriptors of cuda/conv_graph's operation graphs: an
// owning wrapper, the tensors, and the operations a forward convolution's
// epilogue can add (the channel sums of its output; an inference batch
// norm's scale and bias, the residual add and the ReLU). Internal to
// cuda/conv_graph.
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "reference/kernels/cuda/conv_graph.h"

namespace mlperf::cuda::graph_ops {

// An owned backend descriptor.
class Desc {
 public:
  explicit Desc(cudnnBackendDescriptorType_t type) {
    if (cudnnBackendCreateDescriptor(type, &d_) != CUDNN_STATUS_SUCCESS) d_ = nullptr;
  }
  ~Desc() {
    if (d_) cudnnBackendDestroyDescriptor(d_);
  }
  Desc(const Desc&) = delete;
  Desc& operator=(const Desc&) = delete;
  cudnnBackendDescriptor_t get() const { return d_; }
  explicit operator bool() const { return d_ != nullptr; }

  template <typename T>
  bool Set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count,
           const T* values) {
    return d_ && cudnnBackendSetAttribute(d_, name, type, count, values) == CUDNN_STATUS_SUCCESS;
  }
  bool SetDesc(cudnnBackendAttributeName_t name, const Desc& other) {
    cudnnBackendDescriptor_t o = other.get();
    return Set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &o);
  }
  bool Finalize() { return d_ && cudnnBackendFinalize(d_) == CUDNN_STATUS_SUCCESS; }

 private:
  cudnnBackendDescriptor_t d_ = nullptr;
};

// The tensors' unique ids; from kUidVirtual on, the epilogue's
// intermediates, which live only inside the fused kernel.
enum Uid : int64_t {
  kUidX = 1,
  kUidW = 2,
  kUidY = 3,
  kUidScale = 6,
  kUidBias = 7,
  kUidResidual = 8,
  kUidVirtual = 100
};

// The descriptors an operation graph refers to, kept alive with it, and its
// operations.
using Parts = std::vector<std::unique_ptr<Desc>>;
using Ops = std::vector<cudnnBackendDescriptor_t>;

// A tensor's descriptor (of a virtual tensor: one that lives only inside
// the fused kernel); null when cuDNN refuses it.
std::unique_ptr<Desc> TensorDesc(int64_t uid, cudnnDataType_t dtype, int nb, const int64_t* dims,
                                 const int64_t* strides, int64_t alignment,
                                 bool is_virtual = false);

// The epilogue y = act(conv * scale + bias (+ residual)) on the
// convolution's fp32 output `conv` (virtual): each step writes a virtual
// fp32 tensor of y's shape, the last one y itself. Appended to `parts` and
// `ops`.
bool DescribeScaleBiasAct(const ConvGraphCall& c, const Desc& conv, std::unique_ptr<Desc> y,
                          int64_t residual_alignment, Parts& parts, Ops& ops);

}  // namespace mlperf::cuda::graph_ops
