#include "reference/models/upload_staging.h"

#include "base/check.h"
#include "reference/kernels/dispatch.h"

namespace mlperf::models {

UploadStaging::UploadStaging(size_t bytes) : staging_(bytes) {}

UploadStaging::~UploadStaging() {
  copied_.Wait();  // no copy may still read the staging
}

void UploadStaging::Upload(core::Device device, std::span<const Part> parts) {
  copied_.Wait();
  size_t at = 0;
  for (const Part& p : parts) {
    MLPERF_CHECK_MSG(at + p.bytes <= staging_.size(), "an upload larger than its staging");
    ops::ParallelHostCopy(staging_.data() + at, p.host_src, p.bytes);
    ops::CopyBytes(p.device_dst, device, staging_.data() + at, core::Device::kCpu, p.bytes);
    at += p.bytes;
  }
  copied_.Record();
}

}  // namespace mlperf::models
