// A toy benchmark that uses every property of the seam a new network
// needs, built only from this folder: a model with a frozen bf16 parameter
// (random features), a trainable head and a category table sharded by rows
// across the ranks; AdamW under a cosine schedule with linear warm-up; a
// lower-is-better metric (the mean log loss over the evaluation set,
// gathered from every rank in sample order); and rules of its own (MLPerf
// defines no toy). Samples are Gaussian clusters with a category that tells
// the class.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "benchmarks/benchmark.h"

namespace mlperf::toy {

inline constexpr int64_t kFeatures = 8, kHidden = 16, kClasses = 4, kCategories = 8;

// Sample `id`: its features, category and class.
void Sample(uint64_t id, float* x, int32_t* category, int32_t* label);

// The model as the toy benchmark builds it, for tests that train it alone.
std::unique_ptr<models::Model> MakeToyModel(const models::Placement& placement, int64_t batch,
                                            uint64_t seed);

// The toy's optimizer (AdamW) and schedule (cosine with warm-up) over
// `total_steps`.
std::unique_ptr<optim::Optimizer> ToyOptimizer(const models::Model& model);
std::unique_ptr<optim::LearningRateSchedule> ToySchedule(int64_t total_steps);

// Batches for one rank of `world`: training cycles through `size` samples
// from `first`, each global batch split among the ranks; an evaluation pass
// gives each rank a contiguous share.
std::unique_ptr<benchmarks::DataPipeline> ToyPipeline(bool eval, uint64_t first, int64_t size,
                                                      int64_t batch, int rank, int world);

std::unique_ptr<benchmarks::Benchmark> MakeToyBenchmark();
// The OpenMP threads the toy's last PrepareData ran with (a demonstration's
// pre-training there must keep to the plan's threads).
int ThreadsWhenPreparing();

}  // namespace mlperf::toy
