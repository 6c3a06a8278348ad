#include "throughput/options.h"

namespace mlperf::throughput {

const char* ModeName(Mode mode) { return mode == Mode::kTrain ? "train" : "infer"; }

const char* DataModeName(DataMode data) {
  switch (data) {
    case DataMode::kSynthetic:
      return "synthetic";
    case DataMode::kData:
      return "data";
    case DataMode::kGenerated:
      return "generated";
  }
  return "";
}

}  // namespace mlperf::throughput
