// Records per second of indexing one TFRecord shard (every header read and
// its length checksum checked, the file ending at a record boundary): what
// the BERT and ImageNet-TFRecord loaders do to every shard before training.
// Peer in the same run: the field's usual index writer's loop (DALI's
// tfrecord2idx: read each 8-byte length through a buffered Python file, skip
// the rest) in /usr/bin/python3, on the same file. Then what a run reads
// instead once run_closed has written the index file (datasets/
// index_cache.h): the file read back, its stamps checked. The shard is
// generated (random bytes, records of --record_bytes) and read from the
// page cache (one untimed pass first); median of --repeats.
//
//   datasets_tfrecord_index_bench [--records N] [--record_bytes B] [--repeats R] [--dir PATH]
// defaults: 200000 records of 2000 bytes (about BERT's at sequence 512), 5
// repeats, the system's temporary folder.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "datasets/dataset_index.h"
#include "datasets/index_cache.h"
#include "datasets/tfrecord.h"
#include "fmt/format.h"

namespace mlperf::datasets {
namespace {

using Clock = std::chrono::steady_clock;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The peer: tfrecord2idx's loop, timed inside Python (interpreter start not
// counted); prints seconds.
constexpr char kPeer[] = R"PY(
import struct, sys, time
path = sys.argv[1]
start = time.perf_counter()
count = 0
with open(path, "rb") as f:
    while True:
        head = f.read(8)
        if not head:
            break
        (length,) = struct.unpack("<Q", head)
        f.seek(4 + length + 4, 1)
        count += 1
print(time.perf_counter() - start, count)
)PY";

int Main(int argc, char** argv) {
  int64_t records = 200000, record_bytes = 2000;
  int repeats = 5;
  std::string dir = std::filesystem::temp_directory_path().string();
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--records")) {
      records = std::atoll(argv[i + 1]);
    } else if (!std::strcmp(argv[i], "--record_bytes")) {
      record_bytes = std::atoll(argv[i + 1]);
    } else if (!std::strcmp(argv[i], "--repeats")) {
      repeats = std::atoi(argv[i + 1]);
    } else if (!std::strcmp(argv[i], "--dir")) {
      dir = argv[i + 1];
    } else {
      records = 0;
    }
  }
  if (records <= 0 || record_bytes <= 0 || repeats <= 0 || argc % 2 == 0) {
    std::fprintf(stderr,
                 "usage: datasets_tfrecord_index_bench [--records N] [--record_bytes B] "
                 "[--repeats R] [--dir PATH]\n");
    return 2;
  }
  // A one-shard training split, as the ImageNet TFRecord loader finds it.
  const std::filesystem::path root = std::filesystem::path(dir) / "tfrecord_index_bench";
  std::filesystem::create_directories(root);
  const std::string path = (root / "train-00000-of-00001").string();
  // Outside the data set: a new file in root would make the index stale.
  const std::string index_file = (std::filesystem::path(dir) / "tfrecord_index_bench.idx").string();
  {
    absl::StatusOr<TfRecordWriter> writer = TfRecordWriter::Open(path);
    if (!writer.ok()) {
      std::fprintf(stderr, "%s\n", std::string(writer.status().message()).c_str());
      return 1;
    }
    std::string record(static_cast<size_t>(record_bytes), '\0');
    uint64_t x = 88172645463325252ull;  // xorshift: incompressible, cheap
    for (int64_t r = 0; r < records; ++r) {
      for (char& c : record) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        c = static_cast<char>(x);
      }
      if (absl::Status s = writer->Write(record); !s.ok()) return 1;
    }
    if (absl::Status s = writer->Close(); !s.ok()) return 1;
  }
  const auto index = [&] {
    absl::StatusOr<std::vector<TfRecordLocation>> found = IndexTfRecordFile(path, false);
    if (!found.ok() || static_cast<int64_t>(found->size()) != records) {
      std::fprintf(stderr, "indexing failed\n");
      std::exit(1);
    }
  };
  index();  // into the page cache
  std::vector<double> ours, peer;
  for (int i = 0; i < repeats; ++i) {
    const Clock::time_point start = Clock::now();
    index();
    ours.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  std::vector<double> from_file;
  {
    absl::StatusOr<DatasetIndex> built = IndexTfRecords(root.string(), Split::kTrain, 1000);
    if (!built.ok() || !WriteIndexFile(*built, root.string(), Split::kTrain, index_file).ok()) {
      std::fprintf(stderr, "writing the index file failed\n");
      return 1;
    }
  }
  for (int i = 0; i < repeats; ++i) {
    const Clock::time_point start = Clock::now();
    absl::StatusOr<DatasetIndex> read = ReadIndexFile(index_file, root.string(), Split::kTrain);
    if (!read.ok() || static_cast<int64_t>(read->entries.size()) != records) {
      std::fprintf(stderr, "reading the index file failed\n");
      return 1;
    }
    from_file.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  const std::string script = index_file + ".py";
  if (std::FILE* f = std::fopen(script.c_str(), "w")) {
    std::fputs(kPeer, f);
    std::fclose(f);
  }
  for (int i = 0; i < repeats; ++i) {
    FILE* pipe = popen(fmt::format("/usr/bin/python3 {} {}", script, path).c_str(), "r");
    double seconds = 0;
    long long count = 0;
    if (pipe == nullptr || std::fscanf(pipe, "%lf %lld", &seconds, &count) != 2 ||
        count != records) {
      std::fprintf(stderr, "the Python peer failed\n");
      return 1;
    }
    pclose(pipe);
    peer.push_back(seconds);
  }
  std::filesystem::remove_all(root);
  std::filesystem::remove(index_file);
  std::filesystem::remove(script);
  const double a = Median(ours), b = Median(peer), c = Median(from_file);
  std::printf("index of %lld records of %lld bytes (%.0f MB), page-cached, median of %d:\n",
              static_cast<long long>(records), static_cast<long long>(record_bytes),
              records * (record_bytes + 16) / 1e6, repeats);
  std::printf("  ours (headers checked)      %8.4f s  %12.0f records/s\n", a, records / a);
  std::printf("  tfrecord2idx's loop, Python %8.4f s  %12.0f records/s  ours x%.2f\n", b,
              records / b, b / a);
  std::printf("  index file read (a run)     %8.4f s  %12.0f records/s  x%.1f less than ours\n", c,
              records / c, a / c);
  return 0;
}

}  // namespace
}  // namespace mlperf::datasets

int main(int argc, char** argv) { return mlperf::datasets::Main(argc, argv); }
