#include <utility>

#include "reference/kernels/cuda/conv_graph_ops.h"

namespace mlperf::cuda::graph_ops {
namespace {

// The [1, K, 1, 1(, 1)] fp32 tensor of one statistic per output channel.
std::unique_ptr<Desc> ChannelTensor(int64_t uid, const ConvGraphCall& c) {
  int64_t dims[5], strides[5];
  for (int i = 0; i < c.nb_dims; ++i) dims[i] = strides[i] = 1;
  dims[1] = c.y_dims[1];
  for (int i = 0; i < c.nb_dims; ++i) strides[i] = i == 1 ? 1 : dims[1];
  return TensorDesc(uid, CUDNN_DATA_FLOAT, c.nb_dims, dims, strides, 16);
}

// One fp32 pointwise operation out = mode(in[, b]), appended to `parts` and
// `ops`.
bool Pointwise(cudnnPointwiseMode_t mode, const Desc& in, const Desc* b, const Desc& out,
               Parts& parts, Ops& ops) {
  auto pw = std::make_unique<Desc>(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
  const cudnnDataType_t math = CUDNN_DATA_FLOAT;
  if (!(pw->Set(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode) &&
        pw->Set(CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &math) && pw->Finalize()))
    return false;
  auto op = std::make_unique<Desc>(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
  if (!(op->SetDesc(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, *pw) &&
        op->SetDesc(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, in) &&
        (b == nullptr || op->SetDesc(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, *b)) &&
        op->SetDesc(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, out) && op->Finalize()))
    return false;
  ops.push_back(op->get());
  parts.push_back(std::move(pw));
  parts.push_back(std::move(op));
  return true;
}

}  // namespace

std::unique_ptr<Desc> TensorDesc(int64_t uid, cudnnDataType_t dtype, int nb, const int64_t* dims,
                                 const int64_t* strides, int64_t alignment, bool is_virtual) {
  auto t = std::make_unique<Desc>(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  const bool ok = t->Set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dtype) &&
                  t->Set(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, nb, dims) &&
                  t->Set(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, nb, strides) &&
                  t->Set(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid) &&
                  t->Set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment) &&
                  t->Set(CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &is_virtual) &&
                  t->Finalize();
  return ok ? std::move(t) : nullptr;
}

bool DescribeScaleBiasAct(const ConvGraphCall& c, const Desc& conv, std::unique_ptr<Desc> y,
                          int64_t residual_alignment, Parts& parts, Ops& ops) {
  auto scale = ChannelTensor(kUidScale, c), bias = ChannelTensor(kUidBias, c);
  std::unique_ptr<Desc> residual;
  if (c.residual)
    residual =
        TensorDesc(kUidResidual, c.dtype, c.nb_dims, c.y_dims, c.y_strides, residual_alignment);
  if (!scale || !bias || (c.residual && !residual) || !y) return false;
  struct Step {
    cudnnPointwiseMode_t mode;
    const Desc* b;
  };
  std::vector<Step> steps = {{CUDNN_POINTWISE_MUL, scale.get()}, {CUDNN_POINTWISE_ADD, bias.get()}};
  if (c.residual) steps.push_back({CUDNN_POINTWISE_ADD, residual.get()});
  if (c.relu) steps.push_back({CUDNN_POINTWISE_RELU_FWD, nullptr});
  const Desc* in = &conv;
  for (size_t i = 0; i < steps.size(); ++i) {
    const Desc* out = y.get();
    if (i + 1 < steps.size()) {
      parts.push_back(TensorDesc(kUidVirtual + 1 + static_cast<int64_t>(i), CUDNN_DATA_FLOAT,
                                 c.nb_dims, c.y_dims, c.y_strides, 16, /*is_virtual=*/true));
      if (!parts.back()) return false;
      out = parts.back().get();
    }
    if (!Pointwise(steps[i].mode, *in, steps[i].b, *out, parts, ops)) return false;
    in = out;
  }
  for (auto* part : {&scale, &bias, &residual, &y})
    if (*part) parts.push_back(std::move(*part));
  return true;
}

}  // namespace mlperf::cuda::graph_ops
