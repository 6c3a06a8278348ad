// The 3D U-Net input pipeline: the prepared KiTS19 cases (case_XXXXX_x.npy /
// _y.npy, prepare.h) of one split held in memory, training samples cut and
// augmented on a pool of threads (augment.h) into a bounded prefetch queue,
// evaluation cases handed out whole.
//
// Sampling as the reference's DistributedSampler with drop_last and its
// DataLoader with drop_last: every epoch a new permutation of the training
// cases (seed, epoch), cut to a multiple of the world size; rank r takes
// positions r, r + W, ...; its batches drop a short remainder. So an epoch is
// world * floor(floor(N / world) / batch) * batch samples, and no case
// appears twice in an epoch over all ranks. Evaluation: rank r gets cases r,
// r + W, ... of the sorted list, one per batch, so each of the 42 is scored
// exactly once. Crops, flips and noise are pure functions of (seed, epoch,
// case), so batches do not depend on the thread count.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "datasets/kits19/augment.h"

namespace mlperf::kits19 {

struct VolumeLoaderOptions {
  std::filesystem::path root;  // prepared cases, all 210 (split by eval_cases.h)
  bool train = true;
  int batch_size = 1;  // training samples per rank and batch
  int rank = 0, world_size = 1;
  uint64_t seed = 0;
  int threads = 1;  // loading and augmentation threads
  int prefetch_batches = 2;
  AugmentOptions augment;
  // Bytes the loaded cases may take (0 = not checked): the cases are held in
  // memory, so their files' sizes are summed against it before any is read.
  int64_t memory_budget = 0;
};

struct VolumeBatch {
  // Training: batch_size patches [batch, patch...] and their labels widened
  // to int32 (what the loss reads). Evaluation: one case, pointing into the
  // loader's memory (valid until the next call), labels uint8.
  std::array<int64_t, 3> shape{};  // of one sample
  const float* image = nullptr;
  const void* labels = nullptr;
  bool labels_u8 = false;
  int count = 0;      // samples in the batch
  int64_t epoch = 0;  // training: 0-based epoch of the batch
  // Which cases the samples are: positions in the split's sorted case list.
  std::vector<int64_t> cases;
};

class VolumeLoader {
 public:
  // Reads the split's cases (this rank's share only for evaluation); an error
  // names the bad or missing file.
  static absl::StatusOr<std::unique_ptr<VolumeLoader>> Open(const VolumeLoaderOptions& options);
  ~VolumeLoader();
  VolumeLoader(const VolumeLoader&) = delete;
  VolumeLoader& operator=(const VolumeLoader&) = delete;

  int64_t size() const;                                // cases in the split, all ranks together
  const std::vector<std::string>& case_names() const;  // the split's, sorted
  int64_t batches_per_epoch() const;
  // Evaluation: the pass starts again with this rank's first case.
  void StartEval();
  // Training never runs out; evaluation returns false after this rank's cases.
  absl::StatusOr<bool> Next(VolumeBatch* batch);

  class Impl;

 private:
  explicit VolumeLoader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Samples per epoch over all ranks under the sampling above.
int64_t SamplesPerEpoch(int64_t cases, int world_size, int batch_size);

}  // namespace mlperf::kits19
