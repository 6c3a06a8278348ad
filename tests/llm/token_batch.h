// A decoder batch of random tokens and labels (Philox stream `seed`), the
// tests' common input.
#pragma once

#include <cstdint>

#include "reference/core/philox.h"
#include "reference/models/decoder.h"

namespace mlperf::models {

inline OwnedBatch RandomTokenBatch(const DecoderConfig& c, int64_t batch, uint64_t seed) {
  OwnedBatch owned;
  int32_t* tokens = owned.Add({batch, c.seq_len}, core::DType::kI32).as<int32_t>();
  int32_t* labels = owned.Add({batch, c.seq_len}, core::DType::kI32).as<int32_t>();
  for (int64_t i = 0; i < batch * c.seq_len; ++i) {
    tokens[i] = static_cast<int32_t>(core::PhiloxBits(seed, 0, i) % c.vocab_size);
    labels[i] = static_cast<int32_t>(core::PhiloxBits(seed, 1, i) % c.vocab_size);
  }
  owned.batch.count = batch;
  return owned;
}

}  // namespace mlperf::models
