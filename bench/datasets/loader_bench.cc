// Images per second of the ResNet-50 training input pipeline (read, decode,
// distorted crop, flip, resize, mean subtraction, batching) on a generated JPEG
// set, at 224 px from 400x400 sources (about ImageNet's mean size) and from
// 800x800 ones (where scaled decoding pays), and at the
// small configuration (56 px from 64x64). Peers in the same run: the same
// pipeline with scaled decoding off (full-size decode as the reference does),
// and a bare single-thread full-size libjpeg decode of the same files. With
// --device (a GPU and nvJPEG): the GPU data path too, the loader's threads
// reading and drawing crops and datasets/cuda decoding and resampling on the
// device, in the same run. The "read + crops only" column is the host's share
// of that path alone (the loader handing out encoded images).
//
//   build-data/bin/datasets_loader_bench [--threads N] [--batches N] [--dir PATH] [--device]
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "datasets/image_loader.h"
#include "datasets/jpeg.h"
#include "datasets/synthetic_image_set.h"
#ifdef MLPERF_HAVE_NVJPEG
#include "datasets/cuda/device_batch_queue.h"
#endif

namespace mlperf::datasets {
namespace {

using Clock = std::chrono::steady_clock;

// Process CPU seconds (all threads): robust against other load on the machine.
double CpuSeconds() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

struct Rate {
  double wall = 0, cpu = 0;  // images per wall second, per CPU second
};

ImageLoaderOptions BenchOptions(const std::string& root, int image_size, int threads) {
  ImageLoaderOptions o;
  o.root = root;
  o.image_size = image_size;
  o.batch_size = 32;
  o.threads = threads;
  o.prefetch_batches = 3;
  return o;
}

[[noreturn]] void Fail(const absl::Status& s) {
  std::fprintf(stderr, "%s\n", std::string(s.message()).c_str());
  std::exit(1);
}

// Times `batches` calls of next() after 2 untimed ones (threads, buffers).
// Prefetching keeps running a little past the last batch; the bias is at most
// the prefetched batches in the CPU figure.
template <typename Next>
Rate TimeBatches(int batches, Next next) {
  double cpu_start = 0;
  Clock::time_point start;
  for (int i = -2; i < batches; ++i) {
    if (i == 0) {
      start = Clock::now();
      cpu_start = CpuSeconds();
    }
    if (absl::StatusOr<bool> got = next(); !got.ok()) Fail(got.status());
  }
  const double s = std::chrono::duration<double>(Clock::now() - start).count();
  return {batches * 32.0 / s, batches * 32.0 / (CpuSeconds() - cpu_start)};
}

// kEncoded: what is left to the host with --gpu_decode (reading, headers,
// crop draws).
Rate PipelineRate(const std::string& root, int image_size, int threads, int batches,
                  bool scaled_decode, ImageOutput output = ImageOutput::kPixels) {
  ImageLoaderOptions o = BenchOptions(root, image_size, threads);
  o.scaled_decode = scaled_decode;
  o.output = output;
  absl::StatusOr<std::unique_ptr<ImageLoader>> loader = ImageLoader::Open(o);
  if (!loader.ok()) Fail(loader.status());
  ImageBatch batch;
  return TimeBatches(batches, [&] { return (*loader)->Next(&batch); });
}

#ifdef MLPERF_HAVE_NVJPEG
// The GPU data path as training takes it: encoded batches from the loader,
// decoded on the device by the queue's thread, two batches ahead.
Rate DeviceRate(const std::string& root, int image_size, int threads, int batches,
                std::string* backend) {
  ImageLoaderOptions o = BenchOptions(root, image_size, threads);
  o.output = ImageOutput::kEncoded;
  o.layout = core::Layout::kNHWC;
  absl::StatusOr<std::unique_ptr<ImageLoader>> loader = ImageLoader::Open(o);
  if (!loader.ok()) Fail(loader.status());
  absl::StatusOr<std::unique_ptr<cuda::DeviceBatchQueue>> queue = cuda::DeviceBatchQueue::Create(
      *std::move(loader), Split::kTrain, {.image_size = image_size, .layout = o.layout});
  if (!queue.ok()) Fail(queue.status());
  cuda::DeviceBatch batch;
  const Rate rate = TimeBatches(batches, [&] { return (*queue)->Next(&batch); });
  *backend = (*queue)->decoder().backend_name();
  if ((*queue)->decoder().host_decoded() > 0) *backend += "+host";
  return rate;
}
#endif

Rate BareDecodeRate(const std::string& root) {
  std::vector<std::string> blobs;
  for (const auto& e : std::filesystem::recursive_directory_iterator(root + "/train")) {
    if (!e.is_regular_file()) continue;
    std::ifstream in(e.path(), std::ios::binary);
    blobs.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  RgbImage img;
  const auto start = Clock::now();
  const double cpu_start = CpuSeconds();
  for (const std::string& b : blobs) (void)DecodeJpeg(b, "bench", {}, &img);
  const double s = std::chrono::duration<double>(Clock::now() - start).count();
  return {blobs.size() / s, blobs.size() / (CpuSeconds() - cpu_start)};
}

int Main(int argc, char** argv) {
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int batches = 40;
  std::string dir = (std::filesystem::temp_directory_path() / "mlperf_loader_bench").string();
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // each row as it is measured, even if killed
  bool device = false;
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (!std::strcmp(argv[i], "--device")) {
      device = true;
    } else if (has_value && !std::strcmp(argv[i], "--threads")) {
      threads = std::atoi(argv[++i]);
    } else if (has_value && !std::strcmp(argv[i], "--batches")) {
      batches = std::atoi(argv[++i]);
    } else if (has_value && !std::strcmp(argv[i], "--dir")) {
      dir = argv[++i];
    } else {
      std::fprintf(stderr, "usage: %s [--threads N] [--batches N] [--dir PATH] [--device]\n",
                   argv[0]);
      return 2;
    }
  }
#ifndef MLPERF_HAVE_NVJPEG
  if (device) {
    std::fprintf(stderr, "--device: this build has no GPU data path (CUDA with nvJPEG)\n");
    return 2;
  }
#endif
  struct Config {
    const char* name;
    int source, out;
  };
  std::printf("threads %d, batch 32, %d timed batches\n", threads, batches);
  std::printf("images/s (wall, best of 3) and images per CPU-second [in brackets]\n");
  std::printf("%-6s %-9s %22s %22s %22s %8s %22s%s\n", "config", "source", "pipeline",
              "pipeline, no scaling", "bare full decode, 1T", "cpu gain", "read + crops only",
              device ? "   device decode [host CPU], backend" : "");
  for (const Config& c : {Config{"224", 400, 224}, Config{"224", 800, 224}, Config{"56", 64, 56}}) {
    const std::string root = dir + "/" + std::to_string(c.source);
    SyntheticImageSetOptions s;
    s.num_classes = 8;
    s.train_per_class = 60;
    s.val_per_class = 1;
    s.image_size = c.source;
    if (absl::Status st = WriteSyntheticImageSet(root, s); !st.ok()) Fail(st);
    // Best of 3 alternating runs: the shared machine's load only ever slows a run down.
    Rate scaled, full, bare, host_share, on_device;
    std::string backend;
    auto best = [](Rate* b, Rate r) {
      b->wall = std::max(b->wall, r.wall);
      b->cpu = std::max(b->cpu, r.cpu);
    };
    for (int r = 0; r < 3; ++r) {
      best(&scaled, PipelineRate(root, c.out, threads, batches, true));
      best(&full, PipelineRate(root, c.out, threads, batches, false));
      best(&bare, BareDecodeRate(root));
      best(&host_share, PipelineRate(root, c.out, threads, batches, false, ImageOutput::kEncoded));
#ifdef MLPERF_HAVE_NVJPEG
      if (device) best(&on_device, DeviceRate(root, c.out, threads, batches, &backend));
#endif
    }
    std::printf("%-6s %4dx%-4d %10.0f [%9.0f] %10.0f [%9.0f] %10.0f [%9.0f] %7.2fx %10.0f [%9.0f]",
                c.name, c.source, c.source, scaled.wall, scaled.cpu, full.wall, full.cpu, bare.wall,
                bare.cpu, scaled.cpu / full.cpu, host_share.wall, host_share.cpu);
    if (device) std::printf(" %10.0f [%9.0f] %s", on_device.wall, on_device.cpu, backend.c_str());
    std::printf("\n");
  }
  return 0;
}

}  // namespace
}  // namespace mlperf::datasets

int main(int argc, char** argv) { return mlperf::datasets::Main(argc, argv); }
