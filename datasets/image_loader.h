// The ImageNet input pipeline of the ResNet-50 benchmark: reads an image
// folder tree or TFRecord shards (dataset_index.h), decodes with
// libjpeg-turbo on a pool of threads, augments as the reference does
// (augment.h) and hands out batches through a bounded prefetch queue.
//
// Determinism: which image lands in which batch slot, its crop and its flip
// are pure functions of (seed, epoch, image index), so batches are identical
// for any thread count or timing. Exactly-once: every training image appears
// once per epoch over all ranks, every validation image once per evaluation.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "datasets/augment.h"
#include "datasets/dataset_index.h"
#include "reference/core/tensor.h"

namespace mlperf::datasets {

// What the loader hands out for each image.
enum class ImageOutput {
  kPixels,   // decoded and augmented on the loader's threads
  kEncoded,  // the JPEG bytes and their augmentation, for a device decoder (datasets/cuda/)
};

// One image left for a device to decode. Decoding `bytes` at full size and
// resampling with ResampleBilinear(x_axis, y_axis, flip) gives exactly the
// pixels that kPixels gives with scaled_decode off.
struct EncodedImage {
  std::string bytes;
  std::string name;  // the file, or the shard and record offset, for errors
  AxisMap x_axis, y_axis;
  bool flip = false;
};

struct ImageLoaderOptions {
  std::string root;  // ImageNet tree: root/train/<class>/*.JPEG, root/val/... ; or TFRecord dir
  DatasetFormat format = DatasetFormat::kAuto;
  Split split = Split::kTrain;
  int image_size = 224;      // output side (training crop / eval centre crop)
  int resize_shorter = 256;  // eval: shorter side before the centre crop
  int batch_size = 32;       // per rank
  int rank = 0, world_size = 1;
  uint64_t seed = 0;  // shuffling + augmentation, Philox-based, deterministic
  int threads = 2;    // decode threads
  int prefetch_batches = 2;
  core::Layout layout = core::Layout::kNCHW;  // of the produced pixels (kNCHW or kNHWC)
  std::array<float, 3> mean = {123.68f, 116.78f, 103.94f};  // RGB, 0-255 scale; no std division
  // TFRecord only: 0 reads every record once at Open to find the number of
  // classes (and check every CRC); > 0 trusts it (1000 for ImageNet) and checks
  // each label as its image loads.
  int num_classes = 0;
  // Decode at 1/8..8/8 scale when the needed source region is still at least as
  // large as the output (much faster on full-size photos). Off = always decode
  // at full size, the exact reference geometry.
  bool scaled_decode = true;
  // kEncoded: the threads only read, parse headers and draw crops (the
  // decode is at full size, so scaled_decode does not apply).
  ImageOutput output = ImageOutput::kPixels;
  // An index file (index_cache.h) that Open reads instead of indexing root
  // when it is current (else it indexes and rewrites it); "" always indexes.
  std::string index_file;
};

struct ImageBatch {
  std::vector<float> pixels;  // batch_size * 3 * image_size^2 in options.layout
  std::vector<int32_t>
      labels;         // batch_size entries, 0-based; -1 marks padding in a short eval batch
  int count = 0;      // valid images (== batch_size in training; last eval batch may be shorter)
  int64_t epoch = 0;  // training: the epoch of the first image of this batch
  std::vector<int64_t> indices;  // position of each image in index().entries; -1 = padding
  // kEncoded instead of pixels: batch_size entries, those past count empty.
  std::vector<EncodedImage> encoded;
};

class ImageLoader {
 public:
  static absl::StatusOr<std::unique_ptr<ImageLoader>> Open(const ImageLoaderOptions& options);
  virtual ~ImageLoader();
  ImageLoader(const ImageLoader&) = delete;
  ImageLoader& operator=(const ImageLoader&) = delete;

  int64_t size() const;  // images in the split, all ranks together
  int num_classes() const;

  // Training: an endless stream of per-epoch permutations (a new permutation
  // per epoch from seed and epoch), cut into global batches of
  // batch_size * world_size; rank r takes positions [r*B, (r+1)*B) of each
  // global batch. Every image appears exactly once per epoch and a batch may
  // straddle two epochs (the rules' mixed-batch exception). Next() always
  // returns a full batch.
  // Validation: StartEval() begins one pass (abandoning any pass in progress);
  // rank r gets the contiguous share [r*N/W, (r+1)*N/W) of the sorted images,
  // so every image is seen exactly once over all ranks. Next() returns false
  // when this rank's share is exhausted (the last batch may be short; padding
  // has label -1 and zero pixels).
  void StartEval();
  // Fills `batch`, swapping buffers with the loader so that steady state
  // allocates nothing. An error names the bad file or record; after one, the
  // loader keeps returning it (a training stream with a hole would not be
  // exactly-once any more).
  absl::StatusOr<bool> Next(ImageBatch* batch);

  // The index behind the loader (tests and tools).
  const DatasetIndex& index() const;

  class Impl;

 private:
  explicit ImageLoader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace mlperf::datasets
