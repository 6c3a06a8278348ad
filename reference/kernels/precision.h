// Mixed precision as a runtime choice: the compute precision of the
// GEMM-class ops (convolutions, linear layers, batched GEMMs) on both
// backends. Master weights, optimizer state and everything else stay fp32.
//
// The rounding points, the same on the CPU and the GPU (and the rule of
// PyTorch's autocast for these ops): under bf16 or fp16 each floating input
// of a GEMM-class op (activation, weight, bias, incoming gradient) is rounded
// to the precision (round to nearest even) into a scratch copy, the product
// accumulates in fp32, and the op's outputs (activation, input gradient,
// weight and bias gradients) are rounded in place; a convolution's bias is
// added after it, as PyTorch adds a cuDNN convolution's: the rounded output
// plus the rounded bias, rounded again. Norm statistics, softmax,
// losses, pointwise ops and the optimizers compute in fp32. On a CPU with
// AMX, bf16 GEMMs run on its tiles, which round the operands as they load
// them (cpu/gemm_amx.h): the same products, summed in another order.
//
// The storage points: a model that stores its activations in the precision
// (ResNet: every conv + BN unit's output, the pooled stem, and their
// gradients; 3D U-Net: its units' outputs and skip-gradient sums; BERT only
// tensors its GEMM-class ops round anyway) rounds each one where it is
// written, as PyTorch's autocast does; a batch norm followed by a residual
// add stores the normalised value before the add too. A CUDA device may
// store those tensors in the precision's own type (ActivationStorageType),
// where its kernels round as they store, and so may the CPU under bf16 with
// AMX for ResNet and the 3D U-Net in channels-last; elsewhere the CPU keeps
// fp32 storage and rounds in place (RoundStored). Both read and write the
// same values.
#pragma once

#include <string_view>

#include "reference/core/dtype.h"
#include "reference/core/tensor.h"

namespace mlperf::ops {

// fp32 (the default), bf16 or fp16; set for the process by PrecisionScope.
core::DType ComputePrecision();
// "fp32", "bf16" or "fp16" (the flags' names), for messages.
std::string_view PrecisionName(core::DType precision);

// Whether the models build their transformer blocks' linear layers in FP8
// (ops/fp8.h): --precision fp8, which is bf16 everywhere else (attention's
// products included), as Transformer Engine's FP8 recipe runs.
bool Fp8Linears();

// Sets the compute precision (and FP8 linear layers, with bf16 only) until
// destroyed (then the previous ones come back). Not for concurrent use: one
// training loop per process sets it.
class PrecisionScope {
 public:
  explicit PrecisionScope(core::DType precision, bool fp8_linears = false);
  ~PrecisionScope();
  PrecisionScope(const PrecisionScope&) = delete;
  PrecisionScope& operator=(const PrecisionScope&) = delete;

 private:
  core::DType previous_;
  bool previous_fp8_;
};

// Whether the models store activations in the precision's own type on a
// CUDA device under bf16/fp16 (and ResNet on a CPU with AMX under bf16,
// ActivationStorageType): on unless MLPERF_TYPED_ACTIVATIONS=0 or a
// TypedActivationsScope(false) asks for fp32 storage rounded in place (the
// CPU's way elsewhere; tests and benchmarks compare the two). Every model's typed
// storage passed its GPU tests (ResNet on an H200, BERT and 3D U-Net on an
// H100); BERT's attention heads and context, stored typed since, have not
// run on a GPU yet.
bool TypedActivations();
class TypedActivationsScope {
 public:
  explicit TypedActivationsScope(bool on);
  ~TypedActivationsScope();
  TypedActivationsScope(const TypedActivationsScope&) = delete;
  TypedActivationsScope& operator=(const TypedActivationsScope&) = delete;

 private:
  int previous_;
};

// The type a model allocates its stored activations in on `device`: the
// compute precision on a CUDA device with typed activations on; on the CPU,
// bf16 for a model whose host kernels read and write it (`host_typed`:
// ResNet and the 3D U-Net in channels-last) under bf16 with the GEMMs on AMX tiles
// (cpu/gemm_amx) and typed activations on, which halves the bytes its
// memory-bound passes move; else fp32. Read when the model is built, under
// the precision it trains in.
core::DType ActivationStorageType(core::Device device, bool host_typed = false);

// Rounds a stored activation or activation gradient in place at its storage
// point: nothing under fp32 or when t is already stored in the precision's
// type (its kernel rounded it).
void RoundStored(const core::Tensor& t);
// What RoundStored(t) rounds t to: the compute precision, or kF32 for
// nothing; for the CPU kernels that round their outputs as they write them.
core::DType StoredRounding(const core::Tensor& t);

// dst = src rounded to `precision` (bf16 or fp16, nearest even, Inf beyond
// the range, NaN kept), both fp32 tensors on the same device; in place when
// they are the same tensor.
void RoundToPrecision(core::DType precision, const core::Tensor& src, const core::Tensor& dst);

}  // namespace mlperf::ops
