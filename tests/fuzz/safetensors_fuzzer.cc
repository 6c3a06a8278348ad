// libFuzzer target: arbitrary bytes as a safetensors checkpoint (the format
// the models load and save) through the reader, then every tensor it lists
// copied out. Every input must end in tensors or an error, never a crash or
// sanitizer report.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "reference/io/safetensors.h"
#include "tests/fuzz/fuzz_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mlperf;
  static const std::string path = fuzz::ScratchPath(".safetensors");
  fuzz::MustWriteFile(path, data, size);
  const auto file = io::SafetensorsFile::Read(path);
  if (!file.ok()) return 0;
  std::vector<std::byte> buffer;
  for (const auto& [name, t] : file->tensors()) {
    // A listed tensor lies inside the file and is exactly as large as its shape.
    const size_t bytes = static_cast<size_t>(t.shape.numel()) * core::DTypeSize(t.dtype);
    if (t.end < t.begin || t.end - t.begin > size || t.end - t.begin != bytes) __builtin_trap();
    buffer.resize(bytes);
    (void)file->CopyTo(name, core::Tensor(buffer.data(), t.shape, t.dtype));
  }
  return 0;
}
