#include "reference/models/upload_staging.h"

#include "base/check.h"
#include "reference/kernels/dispatch.h"

namespace mlperf::models {

UploadStaging::UploadStaging(size_t bytes)
    : staging_(static_cast<char*>(ops::AllocateHostPinned(bytes))),
      bytes_(bytes),
      copied_(ops::CreateEvent()) {}

UploadStaging::~UploadStaging() {
  ops::WaitForEvent(copied_);  // no copy may still read the staging
  ops::DestroyEvent(copied_);
  ops::FreeHostPinned(staging_);
}

void UploadStaging::Upload(core::Device device, std::span<const Part> parts) {
  ops::WaitForEvent(copied_);
  size_t at = 0;
  for (const Part& p : parts) {
    MLPERF_CHECK_MSG(at + p.bytes <= bytes_, "an upload larger than its staging");
    ops::ParallelHostCopy(staging_ + at, p.host_src, p.bytes);
    ops::CopyBytes(p.device_dst, device, staging_ + at, core::Device::kCpu, p.bytes);
    at += p.bytes;
  }
  ops::RecordEvent(copied_);
}

}  // namespace mlperf::models
