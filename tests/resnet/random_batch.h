// A ResNet batch for tests: images uniform in [-1, 1) and labels below the
// model's class count, drawn from Philox streams of `seed`.
#pragma once

#include <cstdint>
#include <vector>

#include "reference/core/philox.h"
#include "reference/models/resnet.h"

namespace mlperf::models::test {

struct HostBatch {
  std::vector<float> images;
  std::vector<int32_t> labels;
};

inline HostBatch RandomBatch(const ResNet& model, uint64_t seed) {
  HostBatch b{std::vector<float>(model.batch_size() * model.image_elements()),
              std::vector<int32_t>(model.batch_size())};
  for (size_t i = 0; i < b.images.size(); ++i)
    b.images[i] = 2.0f * core::PhiloxUniform(seed, 0, i) - 1.0f;
  for (size_t i = 0; i < b.labels.size(); ++i)
    b.labels[i] = static_cast<int32_t>(core::PhiloxBits(seed, 1, i) % model.config().num_classes);
  return b;
}

}  // namespace mlperf::models::test
