// The BERT-Large (Wikipedia) registry entry: closed-division LAMB recipes
// per scale from the RCP references of ruleset 4.0.0, the run starting from
// the reference's TensorFlow checkpoint (model.ckpt-28252), evaluations
// every FLOOR(0.05 * (230.23 * GBS + 3,000,000), 25000) samples, the
// closed_bert hyperparameter keys, and the embedded demonstration (a small
// member of the family on a generated language written as TFRecords in the
// reference's schema, starting from a generated TensorFlow checkpoint).
#pragma once

#include <cstdint>
#include <memory>

#include "closed_division/benchmark.h"

namespace mlperf::closed {

std::unique_ptr<Benchmark> MakeBertBenchmark();

// Samples between evaluations for a global batch size (the rules' formula).
int64_t BertEvalIntervalSamples(int64_t global_batch_size);

}  // namespace mlperf::closed
