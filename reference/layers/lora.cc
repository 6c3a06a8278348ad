#include "reference/layers/lora.h"

#include "base/check.h"
#include "reference/kernels/dispatch.h"
#include "reference/kernels/ops/elementwise.h"

namespace mlperf::layers {
namespace {

// C (m x n) = alpha op(A) op(B) + beta C, contiguous row-major operands.
void Gemm(const core::Tensor& like, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
          float alpha, const float* a, const float* b, float beta, float* c) {
  ops::GemmStridedBatched(like.device(), trans_a, trans_b, m, n, k, alpha, a, 0, b, 0, beta, c, 0,
                          1);
}

}  // namespace

void LoraAdapter::Allocate(int64_t rows, int64_t in, int64_t out, const LoraParams& p,
                           const std::string& name, const ModelArenas& arenas,
                           ParameterRegistry* registry) {
  MLPERF_CHECK(p.rank > 0 && p.dropout >= 0.0f && p.dropout < 1.0f && in > 0 && out > 0);
  p_ = p;
  scale_ = static_cast<float>(p.alpha / static_cast<double>(p.rank));
  in_ = in;
  out_ = out;
  ModelArenas trained = arenas;
  trained.freeze.reset();
  const Parameter a =
      AddParameter(trained, registry, {p.rank, in}, {.name = name + ".lora_A.weight"});
  const Parameter b =
      AddParameter(trained, registry, {out, p.rank}, {.name = name + ".lora_B.weight"});
  a_ = a.value;
  da_ = a.grad;
  b_ = b.value;
  db_ = b.grad;
  core::Arena& acts = *arenas.activations;
  if (p.dropout > 0.0f) xd_ = acts.Allocate({rows, in});
  t_ = acts.Allocate({rows, p.rank});
  dt_ = acts.Allocate({rows, p.rank});
  dx_part_ = acts.Allocate({rows, in});
}

core::Tensor LoraAdapter::Rows(const core::Tensor& t) const {
  return core::Tensor(t.data(), {t.numel() / in_, in_}, t.dtype(), t.device());
}

void LoraAdapter::Forward(const core::Tensor& x, std::span<const core::Tensor> outputs, bool train,
                          bool replay) {
  const int64_t rows = x.numel() / in_, r = p_.rank;
  dropped_ = train && p_.dropout > 0.0f;
  const core::Tensor& input = dropped_ ? xd_ : x;
  if (dropped_) {
    MLPERF_CHECK(!replay || forwards_ > 0);
    const uint64_t stream = replay ? forwards_ - 1 : forwards_++;
    ops::DropoutWindow(p_.dropout, p_.seed, stream, Rows(x), Rows(xd_), p_.first_row,
                       p_.full_in > 0 ? p_.full_in : in_, p_.first_col);
  }
  Gemm(x, false, true, rows, r, in_, 1.0f, input.f32(), a_.f32(), 0.0f, t_.f32());
  int64_t row = 0;  // of B
  for (const core::Tensor& y : outputs) {
    const int64_t width = y.numel() / rows;
    Gemm(x, false, true, rows, width, r, scale_, t_.f32(), b_.f32() + row * r, 1.0f, y.f32());
    row += width;
  }
  MLPERF_CHECK_MSG(row == out_, "the adapted outputs' widths do not add up to B's rows");
}

void LoraAdapter::Backward(const core::Tensor& x, std::span<const core::Tensor> doutputs,
                           const core::Tensor& dx) {
  const int64_t rows = x.numel() / in_, r = p_.rank;
  const core::Tensor& input = dropped_ ? xd_ : x;
  int64_t row = 0;
  for (const core::Tensor& dy : doutputs) {
    const int64_t width = dy.numel() / rows;
    // dB_i = scale dY_i^T t; dt += scale dY_i B_i.
    Gemm(x, true, false, width, r, rows, scale_, dy.f32(), t_.f32(), 0.0f, db_.f32() + row * r);
    Gemm(x, false, false, rows, r, width, scale_, dy.f32(), b_.f32() + row * r,
         row > 0 ? 1.0f : 0.0f, dt_.f32());
    row += width;
  }
  // dA = dt^T dropout(x); the input's gradient dt A, through the dropout.
  Gemm(x, true, false, r, in_, rows, 1.0f, dt_.f32(), input.f32(), 0.0f, da_.f32());
  if (dx.empty()) return;
  Gemm(x, false, false, rows, in_, r, 1.0f, dt_.f32(), a_.f32(), 0.0f, dx_part_.f32());
  if (dropped_)
    ops::DropoutWindow(p_.dropout, p_.seed, forwards_ - 1, Rows(dx_part_), Rows(dx_part_),
                       p_.first_row, p_.full_in > 0 ? p_.full_in : in_, p_.first_col);
  ops::Accumulate(dx_part_, dx);
}

}  // namespace mlperf::layers
