// Writes, with our Logger, the complete MLLOG sequence of a closed-division
// ResNet-50 v1.5 run (LARS, 8 GPUs' worth of batch, evaluation every 4 epochs,
// the target reached at epoch 36). A scripted test fixture, not a training
// run: check_resnet_fixture.py feeds it to the official compliance checker.
#include <iostream>

#include "logging/mllog.h"

namespace mllog = mlperf::mllog;
namespace key = mlperf::mllog::key;
namespace meta = mlperf::mllog::meta;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: resnet_run_fixture OUT_LOG\n";
    return 2;
  }
  auto created = mllog::Logger::Create({.path = argv[1]});
  if (!created.ok()) {
    std::cerr << created.status().message() << "\n";
    return 2;
  }
  mllog::Logger& log = **created;

  log.Event(key::kSubmissionBenchmark, mllog::benchmark::kResnet);
  log.Event(key::kSubmissionOrg, "mlperf-suite");
  log.Event(key::kSubmissionDivision, mllog::value::kClosed);
  log.Event(key::kSubmissionStatus, mllog::value::kOnprem);
  log.Event(key::kSubmissionPlatform, "1xCPU-demo");
  log.Event(key::kCacheClear, true);
  log.Start(key::kInitStart);
  log.Event(key::kSeed, 6627);
  const int64_t global_batch_size = 3264;
  log.Event(key::kGlobalBatchSize, global_batch_size);
  log.Event(key::kGradientAccumulationSteps, 1);
  log.Event(key::kOptName, mllog::optimizer::kLars);
  log.Event(key::kLarsEpsilon, 0.0);
  log.Event(key::kLarsOptBaseLearningRate, 11.0);
  log.Event(key::kLarsOptEndLearningRate, 0.0001);
  log.Event(key::kLarsOptLearningRateDecayPolyPower, 2);
  log.Event(key::kLarsOptLearningRateDecaySteps, 13600);
  log.Event(key::kLarsOptLearningRateWarmupEpochs, 2);
  log.Event(key::kLarsOptMomentum, 0.9);
  log.Event(key::kLarsOptWeightDecay, 5e-05);
  log.Event(key::kTrainSamples, 1281167);
  log.Event(key::kEvalSamples, 50000);
  log.End(key::kInitStop);
  log.Start(key::kRunStart);

  // Evaluations after epochs 4, 8, ..., 36 (offset 0); accuracy rises to 0.7601.
  const int kEpochs = 36, kEvalEvery = 4;
  for (int first = 1; first <= kEpochs; first += kEvalEvery) {
    log.Start(key::kBlockStart, nullptr,
              {{meta::kFirstEpochNum, first}, {meta::kEpochCount, kEvalEvery}});
    for (int epoch = first; epoch < first + kEvalEvery; ++epoch) {
      log.Start(key::kEpochStart, nullptr, {{meta::kEpochNum, epoch}});
      log.End(key::kEpochStop, nullptr, {{meta::kEpochNum, epoch}});
    }
    const int last = first + kEvalEvery - 1;
    log.Start(key::kEvalStart, nullptr, {{meta::kEpochNum, last}});
    log.End(key::kEvalStop, nullptr, {{meta::kEpochNum, last}});
    const double accuracy = 0.30 + (0.7601 - 0.30) * last / kEpochs;
    log.Event(key::kEvalAccuracy, accuracy, {{meta::kEpochNum, last}});
    log.End(key::kBlockStop, nullptr, {{meta::kFirstEpochNum, first}});
  }
  log.End(key::kRunStop, nullptr, {{meta::kStatus, mllog::value::kSuccess}});
  if (!log.status().ok()) {
    std::cerr << log.status().message() << "\n";
    return 1;
  }
  return 0;
}
