// 3D U-Net (MLPerf reference image_segmentation/pytorch model/unet3d.py):
// an input block of two conv -> instance norm -> ReLU units at full
// resolution, downsampling blocks (a stride-2 unit, then a stride-1 unit)
// through the filter list and once more at its last width (the bottleneck),
// then upsampling blocks (transposed conv 2^3 stride 2 with bias, channel
// concatenation [upsampled, skip], two units), and a 1^3 output conv with
// bias to the classes. Filters {32, 64, 128, 256, 320}, 1 input channel and
// 3 classes give the reference's 31,190,243 parameters; fewer or narrower
// filters and a smaller ROI make the small members of the family.
//
// Loss: the reference's DiceCELoss, (Dice loss + cross-entropy) / 2 with the
// background excluded from the Dice term. Parameters are initialised as
// PyTorch's defaults (U(+-1/sqrt(fan_in)) for weights and biases; the
// transposed conv's fan_in from its weight's second dimension), norms 1 / 0.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "reference/core/tensor.h"
#include "reference/layers/conv_instance_norm.h"
#include "reference/models/model.h"
#include "reference/models/sliding_window.h"
#include "reference/models/upload_staging.h"

namespace mlperf::models {

struct UNet3DConfig {
  std::vector<int64_t> filters = {32, 64, 128, 256, 320};
  int64_t in_channels = 1;
  int64_t num_classes = 3;  // background, kidney, tumour
  // Training ROI: the input volume is roi^3; it must be divisible by
  // 2^filters.size() (the bottleneck's resolution is roi / 2^filters.size()).
  int64_t roi = 128;
  float norm_epsilon = 1e-5f;
  // NCDHW or NDHWC (the CPU's faster one); parameters are the same either way.
  core::Layout layout = core::Layout::kNCDHW;
  core::Device device = core::Device::kCpu;
};

class UNet3D final : public Model {
 public:
  // Inputs of a Batch: images [batch, in_channels, roi, roi, roi] fp32 (in
  // the config's layout; alike in memory for one channel) and labels
  // [batch, roi, roi, roi] int32 in [0, num_classes). logits() is in the
  // config's layout. Starts from Initialize(seed).
  UNet3D(const UNet3DConfig& config, int64_t batch_size, uint64_t seed = 0);
  ~UNet3D() override;

  static int64_t ArenaBytes(const UNet3DConfig& config, int64_t batch_size);

  const UNet3DConfig& config() const { return config_; }
  // The type of the activations it may store reduced (stored_ below).
  core::DType activation_storage() const { return stored_; }
  int64_t voxels() const { return config_.roi * config_.roi * config_.roi; }

  void Initialize(uint64_t seed) override;
  void ForwardTrainAsync(const Batch& batch) override;
  bool CapturableStep() const override { return true; }
  void UploadTrainingBatch(const Batch& batch) override;
  // The hook fires after the output layer and after every block.
  void Backward() override;
  // Whole cases of any size (the first `count` of the batch, all of one
  // shape): inputs images [n, 1, D, H, W] fp32 and labels [n, D, H, W] uint8
  // or int32, each through the reference's sliding window
  // (models/sliding_window.h) with this model's ROI, batch_size windows at a
  // time. Returns the sum of the cases' mean foreground DICE and their
  // number, so that the global ratio weights every case alike however the
  // cases are spread over ranks.
  MetricSums EvaluateBatch(const Batch& batch) override;
  // The same, returning the DICE of every foreground class.
  std::vector<double> EvaluateCase(const core::Tensor& image, const core::Tensor& labels,
                                   const SlidingWindowOptions& options);
  // A volume of noise around a bright cube labelled kidney, with a tumour
  // inside it.
  OwnedBatch SyntheticBatch() const override;

  // Inference forward of up to batch_size ROI volumes; logits() holds the result.
  void ForwardInference(const Batch& batch);
  const core::Tensor& logits() const { return logits_; }

 private:
  struct MeasureOnly {};
  UNet3D(const UNet3DConfig& config, int64_t batch_size, MeasureOnly);
  void Build(const layers::ModelArenas& arenas);
  void Upload(const Batch& batch, bool with_labels);
  void Forward();

  struct Level {  // an input, downsampling or bottleneck block
    layers::ConvInstanceNormRelu conv1, conv2;
    size_t first_parameter = 0;
    int64_t grad_offset = 0;
  };
  struct Up {
    layers::BiasedConv upsample;
    core::Tensor cat;
    layers::ConvInstanceNormRelu conv1, conv2;
    size_t first_parameter = 0;
    int64_t grad_offset = 0;
  };

  UNet3DConfig config_;
  // The type of the activations and activation gradients on a CUDA device
  // under bf16/fp16 (kernels/precision.h): every unit's outputs, the
  // upsampled volumes and concatenations, the skip and scratch gradients;
  // the input, the logits and their gradient stay fp32. Each is a
  // convolution's rounded output, feeds only convolutions, or is rounded
  // where it is stored on the CPU too (a unit's output, a skip gradient's
  // sum), so both backends read the same values.
  core::DType stored_ = core::DType::kF32;
  int64_t measured_bytes_ = 0;
  // levels_[0] input block, [1..L-1] downsampling, [L] bottleneck; the
  // outputs of [0..L-1] are the skips, used by ups_ in reverse order.
  std::vector<Level> levels_;
  std::vector<Up> ups_;
  layers::BiasedConv output_;
  size_t output_parameter_ = 0;
  int64_t output_grad_offset_ = 0;
  core::Tensor input_, labels_, logits_, dlogits_, loss_workspace_;
  // A CUDA model's per-step uploads.
  std::unique_ptr<UploadStaging> staging_;
  // Gradients of the skips arriving from the upsampling path, kept until the
  // downsampling path's backward adds its own; three rotating scratch buffers
  // of the largest activation; the convolutions' shared scratch.
  std::vector<core::Tensor> dskip_;
  std::array<core::Tensor, 3> grad_scratch_;
  core::Tensor workspace_;
};

}  // namespace mlperf::models
