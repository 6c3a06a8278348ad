// LoRA (Hu et al., 2021) as peft applies it to frozen linear layers: the
// projections that read one input x gain scale * B A dropout(x), scale =
// alpha / rank, with A [rank, in] and B [out, rank] trained and the
// projections' weights frozen. One adapter may serve several projections
// side by side (the MLPerf reference's fused qkv_proj: one A, and B's rows
// split over the query, key and value outputs). Names as peft's state dict
// without its prefix: name.lora_A.weight, name.lora_B.weight.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "reference/core/tensor.h"
#include "reference/layers/parameters.h"

namespace mlperf::layers {

struct LoraParams {
  int64_t rank = 0;  // 0: no adapter
  double alpha = 32.0;
  // On the adapter's input (peft's lora_dropout), drawn from Philox
  // (seed, the forward's count); 0 in evaluation.
  float dropout = 0.0f;
  uint64_t seed = 0;
  // Where this rank's input lies in one process's: its first row (a data
  // shard's, samples x tokens) and its first column of full_in (a
  // tensor-parallel slice's; 0: the input is whole), so that every layout
  // draws one process's dropout masks.
  int64_t first_row = 0, first_col = 0, full_in = 0;
};

class LoraAdapter {
 public:
  // rows x in inputs; `out`: the adapted outputs' widths together. The
  // adapter's parameters are trainable whatever `arenas` freezes.
  void Allocate(int64_t rows, int64_t in, int64_t out, const LoraParams& p, const std::string& name,
                const ModelArenas& arenas, ParameterRegistry* registry);
  // Adds the adapter's term to `outputs` (rows x their widths, which sum to
  // out, in B's row order). `train`: with dropout; `replay`: the last
  // forward's mask again (recomputation).
  void Forward(const core::Tensor& x, std::span<const core::Tensor> outputs, bool train,
               bool replay = false);
  // From the outputs' gradients: A's and B's gradients, and the input
  // gradient through the adapter added to dx.
  void Backward(const core::Tensor& x, std::span<const core::Tensor> doutputs,
                const core::Tensor& dx);

  float scale() const { return scale_; }
  const core::Tensor& a_grad() const { return da_; }
  const core::Tensor& b_grad() const { return db_; }

 private:
  // t as [rows, in], the dropout's window.
  core::Tensor Rows(const core::Tensor& t) const;

  LoraParams p_;
  float scale_ = 1.0f;
  int64_t in_ = 0, out_ = 0;
  uint64_t forwards_ = 0;  // dropout streams: the forward's count
  bool dropped_ = false;   // the last forward dropped
  core::Tensor a_, b_, da_, db_;
  // dropout(x), x A^T [rows, rank], its gradient, the input gradient's term.
  core::Tensor xd_, t_, dt_, dx_part_;
};

}  // namespace mlperf::layers
