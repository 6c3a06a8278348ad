// What every model offers the trainer, the run loop and the benchmark tool:
// parameters, gradients and buffers in flat arenas on one device (named, in
// PyTorch state_dict order, for checkpoints); a training forward that leaves
// the loss on the device, a backward that reports when gradients become final
// (for all-reduce overlapped with the rest of the backward), an evaluation
// that returns the sums of the benchmark's quality metric, and a synthetic
// batch for the untimed warm-up. The arena handling is written once here; a
// model lays out its layers in Build and implements the passes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "reference/core/arena.h"
#include "reference/core/tensor.h"
#include "reference/io/safetensors.h"
#include "reference/kernels/device_runtime.h"
#include "reference/kernels/optimizer_params.h"
#include "reference/layers/parameters.h"

namespace mlperf::dist {
class Communicator;
}

namespace mlperf::models {

// Where a model runs: its device and, for a model with parameters sharded
// across ranks, this process's rank among them, the communicator (on the
// model's device) its passes exchange rows over, and the stream that
// communicator queues on. Under tensor parallelism (the decoder LLMs) the
// group of ranks that split one model among them: this rank's place in it
// and its communicator (dist/parallel_groups.h); a group of one otherwise.
struct Placement {
  core::Device device = core::Device::kCpu;
  int rank = 0;
  int world_size = 1;
  dist::Communicator* comm = nullptr;
  ops::Stream comm_stream;
  int tensor_rank = 0;
  int tensor_size = 1;
  dist::Communicator* tensor_comm = nullptr;
};

// One batch in host memory: the model's inputs in the order it documents
// (ResNet: images, labels). Tensors are views; the caller keeps the memory.
// No inputs at all means "the batch already on the device" (benchmarks).
struct Batch {
  std::vector<core::Tensor> inputs;
  int64_t count = 0;  // real samples; an evaluation batch may be padded
};

// A batch that owns its memory (warm-up data, tests).
struct OwnedBatch {
  std::vector<std::vector<std::byte>> storage;
  Batch batch;
  // Adds a zeroed host tensor of `shape` and returns it.
  core::Tensor Add(core::Shape shape, core::DType dtype);
};

// Copies `from` into `into`'s own memory and returns the copy's batch.
Batch CopyBatch(const Batch& from, OwnedBatch& into);

// Sums of a ratio metric over local samples (top-1: correct and images;
// masked-LM accuracy: correct and masked tokens; DICE: per-case scores and
// cases). The global metric is the ratio of the sums over every rank.
struct MetricSums {
  double numerator = 0;
  double denominator = 0;
};

class Model {
 public:
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;
  virtual ~Model();

  core::Device device() const { return device_; }
  int64_t batch_size() const { return batch_; }

  // Draws every parameter and buffer from `seed` (reproducible on any device).
  virtual void Initialize(uint64_t seed) = 0;
  // Training mode: uploads the batch, runs the forward pass and leaves the
  // mean loss over the local batch in loss_tensor() without reading it back.
  virtual void ForwardTrainAsync(const Batch& batch) = 0;
  // A training step that can be recorded once and replayed
  // (ops::DeviceGraph): its kernels take no argument that changes from step
  // to step. Such a model uploads a training batch alone with
  // UploadTrainingBatch, and ForwardTrainAsync(Batch{}) then trains on it.
  virtual bool CapturableStep() const { return false; }
  virtual void UploadTrainingBatch(const Batch& batch);
  // Gradients of the last forward's loss; overwrites the gradient arena and
  // calls the gradient-ready hook (see below) as it goes.
  virtual void Backward() = 0;
  // Inference mode on the first batch.count samples (the rest is padding).
  virtual MetricSums EvaluateBatch(const Batch& batch) = 0;
  // A full training batch of synthetic data (warm-up before run_start).
  virtual OwnedBatch SyntheticBatch() const = 0;

  const core::Tensor& loss_tensor() const { return loss_; }

  // The bytes of each arena (what MeasureEachArena counts).
  struct ArenaBytes {
    int64_t params = 0, grads = 0, buffers = 0, activations = 0, frozen = 0;
  };
  // ForwardTrainAsync and read the loss back.
  float ForwardTrain(const Batch& batch);

  // Called during Backward with the gradient-arena offset from which every
  // gradient up to the end is final. Parameters are laid out in forward
  // order, so the offset only decreases; it ends at 0.
  using GradientsReadyHook = std::function<void(int64_t ready_from)>;
  void set_gradients_ready_hook(GradientsReadyHook hook) { gradients_ready_ = std::move(hook); }

  // Dynamic loss scaling (fp16): Backward multiplies the loss gradient by
  // *scale, a float on the model's device that the trainer owns and the
  // host never reads; null (the default) for none.
  void set_loss_scale(const float* scale) { loss_scale_ = scale; }

  // Flat arenas of the trainable parameters (fp32 master copies);
  // gradients() has the layout of parameters(). Frozen parameters are apart
  // (FrozenToHost). The spans are over device memory (host-readable only on
  // the CPU); the *ToHost / *FromHost calls copy whole arenas on any device
  // and wait for the copy.
  std::span<float> parameters();
  std::span<float> gradients();
  std::span<float> buffers();
  std::vector<float> ParametersToHost() const;
  std::vector<float> GradientsToHost() const;
  std::vector<float> BuffersToHost() const;
  void ParametersFromHost(std::span<const float> values);
  void BuffersFromHost(std::span<const float> values);
  // The frozen parameters' arena, bytes as stored, and back.
  std::vector<std::byte> FrozenToHost() const;
  void FrozenFromHost(std::span<const std::byte> bytes);
  // Any float tensor of this model copied to the host (bf16/fp16 widened).
  std::vector<float> ToHost(const core::Tensor& t) const;
  // Writes `values` (fp32) into parameter `p`, rounded to its storage type.
  void SetParameter(const layers::Parameter& p, std::span<const float> values);
  // Elements of every parameter this rank holds, frozen ones included.
  int64_t num_parameters() const;
  // One per trainable parameter, in the order of parameter_tensors() with
  // the frozen ones left out: offsets into parameters() and the properties
  // the optimizers read.
  std::vector<TensorSlice> slices() const;
  // The trainable parameters, in the order of slices().
  std::vector<const layers::Parameter*> trainable_parameters() const;
  bool has_sharded_parameters() const;
  // The ranks this model's layers are split over (tensor parallelism): its
  // gradients' global norm is theirs together, not one rank's.
  virtual int tensor_parallel() const { return 1; }
  std::vector<std::string> parameter_names() const;
  const std::vector<layers::Parameter>& parameter_tensors() const { return registry_.parameters; }
  const std::vector<layers::NamedBuffer>& buffer_tensors() const { return registry_.buffers; }
  // The FP8 linear layers' scaling states (kernels/ops/fp8.h), among the buffers.
  const std::vector<core::Tensor>& fp8_scaling() const { return registry_.fp8_scaling; }

  // Training forward passes so far (PyTorch's BN num_batches_tracked).
  int64_t num_batches_tracked() const { return num_batches_tracked_; }
  void set_num_batches_tracked(int64_t n) {
    num_batches_tracked_ = n;
    NumBatchesTrackedSet();
  }

  // Parameters and buffers under their state_dict names and shapes, plus
  // num_batches_tracked per batch norm (int64 scalars) so that a strict
  // PyTorch load_state_dict accepts the file. A failed load changes nothing.
  absl::Status SaveSafetensors(const std::string& path) const;
  absl::Status LoadSafetensors(const std::string& path);
  // The named trainable parameters and buffers over host copies of the two
  // arenas (from ParametersToHost / BuffersToHost), for checkpoint writers;
  // with `frozen` (from FrozenToHost) the frozen parameters too.
  std::vector<io::NamedTensor> NamedHostTensors(std::vector<float>& params,
                                                std::vector<float>& buffers,
                                                std::vector<std::byte>* frozen = nullptr) const;

 protected:
  Model(core::Device device, int64_t batch_size);
  // Runs `build` on measuring arenas, allocates the real ones on the device
  // (padding zeroed, so flat spans compare and checkpoint deterministically)
  // and runs it again.
  void AllocateArenas(const std::function<void(const layers::ModelArenas&)>& build);
  // The bytes AllocateArenas would allocate, allocating nothing: in all, and
  // per arena.
  static size_t MeasureArenas(core::Device device,
                              const std::function<void(const layers::ModelArenas&)>& build);
  static ArenaBytes MeasureEachArena(core::Device device,
                                     const std::function<void(const layers::ModelArenas&)>& build);
  // Host tensor over the place of `t` (a parameter or buffer) inside a host
  // copy of its arena, for initialisers and checkpoints.
  core::Tensor HostParameter(const core::Tensor& t, std::vector<float>& host) const;
  core::Tensor HostBuffer(const core::Tensor& t, std::vector<float>& host) const;
  void NotifyGradientsReady(int64_t ready_from) const {
    if (gradients_ready_) gradients_ready_(ready_from);
  }
  // Offset of a registered parameter's gradient in gradients() (after the
  // real arenas exist).
  int64_t GradientOffset(size_t parameter) const;
  // After set_num_batches_tracked: a model that keeps a copy of the count
  // on its device (BERT's dropout streams) updates it here.
  virtual void NumBatchesTrackedSet() {}
  // The first thing Backward does to each loss gradient it starts from.
  void ScaleLossGradient(const core::Tensor& dloss) const;

  layers::ParameterRegistry registry_;
  core::Tensor loss_;  // 1 element, on the device; the model allocates it
  int64_t num_batches_tracked_ = 0;

 private:
  core::Device device_;
  int64_t batch_;
  std::optional<core::Arena> params_, grads_, buffers_, activations_, frozen_;
  GradientsReadyHook gradients_ready_;
  const float* loss_scale_ = nullptr;
};

}  // namespace mlperf::models
