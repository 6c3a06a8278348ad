// libFuzzer target: arbitrary bytes as a TFRecord shard through the indexer
// (header and data CRCs), the positional and the sequential readers, and each
// record through the tf.Example parser; the bytes also go to the parser
// directly (most inputs fail the CRCs). Every input must end in records or
// an error, never a crash or sanitizer report.
#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "datasets/tfrecord.h"
#include "tests/fuzz/fuzz_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mlperf::datasets;
  static const std::string path = mlperf::fuzz::ScratchPath(".tfrecord");
  (void)ParseImageExample(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
  mlperf::fuzz::MustWriteFile(path, data, size);
  const auto index = IndexTfRecordFile(path, /*check_data=*/true);
  std::string record;
  if (index.ok()) {
    const int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0) __builtin_trap();
    for (const TfRecordLocation& loc : *index) {
      if (!ReadTfRecordAt(fd, path, loc, &record).ok()) __builtin_trap();  // indexed, so readable
      (void)ParseImageExample(record, "fuzz");
    }
    ::close(fd);
  }
  auto reader = TfRecordReader::Open(path);
  if (reader.ok()) {
    for (int i = 0; i < 1000; ++i) {
      const auto more = reader->Next(&record);
      if (!more.ok() || !*more) break;
    }
  }
  return 0;
}
