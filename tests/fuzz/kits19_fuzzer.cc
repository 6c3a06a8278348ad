// libFuzzer target: arbitrary bytes as a KiTS19 file, the first byte picking
// which: a NIfTI volume (raw or gzip, recognised by its magic bytes; with
// bit 1 set the bytes are gzipped first, so that mutations of a plain volume
// reach the inflate-the-header-first path) or a .npy array (read whole, and
// by its header alone: both must agree). Every input must end in a volume or
// a one-line error, never a crash, sanitizer report or an allocation the
// file cannot back.
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "datasets/kits19/nifti.h"
#include "datasets/npy.h"
#include "tests/fuzz/fuzz_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mlperf::kits19;
  using namespace mlperf::datasets;
  if (size < 1) return 0;
  static const auto nifti = mlperf::fuzz::ScratchPath(".nii.gz");
  static const auto npy = mlperf::fuzz::ScratchPath(".npy");
  if (data[0] & 1) {
    mlperf::fuzz::MustWriteFile(npy, data + 1, size - 1);
    const auto array = ReadNpy(npy);
    if (array.ok() && array->bytes.size() > size) __builtin_trap();  // more data than the file
    // The header-only check agrees with the full read on every file.
    const auto header = ReadNpyHeader(npy);
    if (header.ok() != array.ok() ||
        (array.ok() && (header->dtype != array->dtype || header->shape != array->shape)))
      __builtin_trap();
  } else if (data[0] & 2) {
    gzFile gz = gzopen(nifti.c_str(), "wb1");
    if (gz == nullptr) __builtin_trap();
    if (size > 1 && gzwrite(gz, data + 1, static_cast<unsigned>(size - 1)) <= 0) __builtin_trap();
    if (gzclose(gz) != Z_OK) __builtin_trap();
    const auto volume = ReadNifti(nifti);
    if (volume.ok() && static_cast<int64_t>(volume->voxels.size()) !=
                           volume->shape[0] * volume->shape[1] * volume->shape[2])
      __builtin_trap();
  } else {
    mlperf::fuzz::MustWriteFile(nifti, data + 1, size - 1);
    const auto volume = ReadNifti(nifti);
    if (volume.ok() && static_cast<int64_t>(volume->voxels.size()) !=
                           volume->shape[0] * volume->shape[1] * volume->shape[2])
      __builtin_trap();
  }
  return 0;
}
