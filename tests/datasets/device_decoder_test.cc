// The GPU data path (datasets/cuda) against the CPU pipeline: the device
// resample bit for bit, nvJPEG's batches within the two decoders' rounding,
// the host route (greyscale, CMYK) bit for bit, padding, and the queue that
// decodes ahead giving the same batches as decoding in line. Label gpu; skips
// without a device.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "datasets/augment.h"
#include "datasets/cuda/device_batch_queue.h"
#include "datasets/cuda/device_image_decoder.h"
#include "datasets/cuda/device_resample.h"
#include "datasets/image_loader.h"
#include "datasets/jpeg.h"
#include "datasets/synthetic_image_set.h"
#include "reference/core/philox.h"
#include "tests/datasets/test_dir.h"

namespace mlperf::datasets::cuda {
namespace {

bool HaveDevice() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

#define SKIP_WITHOUT_DEVICE() \
  if (!HaveDevice()) GTEST_SKIP() << "no CUDA device; the CPU pipeline is tested"

// Device memory freed at scope exit.
template <typename T>
struct DeviceBuffer {
  explicit DeviceBuffer(size_t n) : size(n) {
    EXPECT_EQ(cudaMalloc(&data, n * sizeof(T)), cudaSuccess);
  }
  ~DeviceBuffer() { cudaFree(data); }
  std::vector<T> Download() const {
    std::vector<T> host(size);
    EXPECT_EQ(cudaMemcpy(host.data(), data, size * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    return host;
  }
  T* data = nullptr;
  size_t size;
};

bool NextOk(ImageLoader& loader, ImageBatch* batch) {
  absl::StatusOr<bool> got = loader.Next(batch);
  EXPECT_TRUE(got.ok()) << got.status();
  return got.ok() && *got;
}

TEST(DeviceResampleTest, EqualsTheCpuBitForBit) {
  SKIP_WITHOUT_DEVICE();
  const std::array<float, 3> mean = {123.68f, 116.78f, 103.94f};
  const int out = 24;
  for (core::Layout layout : {core::Layout::kNCHW, core::Layout::kNHWC}) {
    std::vector<RgbImage> images;
    std::vector<ResampleJob> jobs;
    std::vector<std::unique_ptr<DeviceBuffer<uint8_t>>> sources;
    for (int i = 0; i < 12; ++i) {
      // Full decodes and regions of scaled ones (x0, y0 > 0), training crops
      // (up- and downsampling) and evaluation centre crops, flipped or not.
      const int full_w = 30 + 17 * i, full_h = 90 - 3 * i;
      const int scale = i % 3 == 0 ? 8 : (i % 3 == 1 ? 4 : 2);
      const int w = ScaledJpegSide(full_w, scale), h = ScaledJpegSide(full_h, scale);
      AxisMap ax, ay;
      if (i % 4 == 3) {
        const EvalGeometry g = EvalResize(full_w, full_h, out + 4);
        ax = CentreCropAxis(g.resized_width, w, out);
        ay = CentreCropAxis(g.resized_height, h, out);
      } else {
        const CropWindow c = SampleDistortedCrop(full_w, full_h, 7, static_cast<uint64_t>(i));
        ax = CropAxis(c.x, c.width, full_w, w, out);
        ay = CropAxis(c.y, c.height, full_h, h, out);
      }
      RgbImage img;
      img.x0 = ax.First();
      img.y0 = ay.First();
      img.width = ax.Last(out) - img.x0 + 1 + i % 2;
      img.height = ay.Last(out) - img.y0 + 1;
      img.pixels.resize(static_cast<size_t>(img.width) * img.height * 3);
      for (size_t p = 0; p < img.pixels.size(); ++p) {
        img.pixels[p] = static_cast<uint8_t>(core::PhiloxBits(11, static_cast<uint64_t>(i), p));
      }
      sources.push_back(std::make_unique<DeviceBuffer<uint8_t>>(img.pixels.size()));
      ASSERT_EQ(cudaMemcpy(sources.back()->data, img.pixels.data(), img.pixels.size(),
                           cudaMemcpyHostToDevice),
                cudaSuccess);
      jobs.push_back(
          {{sources.back()->data, img.width, img.height, img.x0, img.y0}, ax, ay, i % 2 == 1});
      images.push_back(std::move(img));
    }
    const size_t floats = 3 * out * out;
    DeviceBuffer<float> device_out(jobs.size() * floats);
    DeviceResampler resampler;
    resampler.Run(jobs, out, mean, layout, device_out.data, nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const std::vector<float> got = device_out.Download();
    std::vector<float> want(floats);
    for (size_t i = 0; i < jobs.size(); ++i) {
      ResampleBilinear(images[i], jobs[i].x_axis, jobs[i].y_axis, out, out, jobs[i].flip, mean,
                       layout, want.data());
      EXPECT_EQ(std::memcmp(want.data(), got.data() + i * floats, floats * sizeof(float)), 0)
          << "image " << i << " layout " << static_cast<int>(layout);
    }
  }
}

// A generated set's batches through the loader: pixels on the CPU (no
// scaled decode) and encoded + decoded on the device.
class DeviceDecoderTest : public ::testing::Test {
 protected:
  static constexpr int kOut = 48;

  void SetUp() override {
    SKIP_WITHOUT_DEVICE();
    ASSERT_TRUE(WriteSyntheticImageSet(dir_ / "data", {.num_classes = 3,
                                                       .train_per_class = 6,
                                                       .val_per_class = 3,
                                                       .image_size = 80,
                                                       .seed = 12})
                    .ok());
  }

  ImageLoaderOptions Options(Split split, ImageOutput output) const {
    ImageLoaderOptions o;
    o.root = dir_ / "data";
    o.split = split;
    o.image_size = kOut;
    o.resize_shorter = 56;
    o.batch_size = 4;
    o.seed = 5;
    o.scaled_decode = false;
    o.layout = core::Layout::kNHWC;
    o.output = output;
    return o;
  }

  struct Compared {
    double mean_abs = 0, p99_abs = 0, max_abs = 0;
    int batches = 0;
  };

  // Runs `batches` batches (or the evaluation pass) through both and
  // compares them.
  Compared Compare(Split split, JpegBackend backend, int batches, DeviceImageDecoder** used) {
    Compared c;
    auto cpu = ImageLoader::Open(Options(split, ImageOutput::kPixels));
    auto enc = ImageLoader::Open(Options(split, ImageOutput::kEncoded));
    EXPECT_TRUE(cpu.ok() && enc.ok());
    if (!cpu.ok() || !enc.ok()) return c;
    if (split == Split::kVal) {
      (*cpu)->StartEval();
      (*enc)->StartEval();
    }
    absl::StatusOr<std::unique_ptr<DeviceImageDecoder>> decoder = DeviceImageDecoder::Create(
        {.image_size = kOut, .layout = core::Layout::kNHWC, .backend = backend});
    EXPECT_TRUE(decoder.ok()) << decoder.status();
    if (!decoder.ok()) return c;
    decoder_ = *std::move(decoder);
    if (used != nullptr) *used = decoder_.get();
    const size_t floats = 4 * 3 * kOut * kOut;
    DeviceBuffer<float> out(floats);
    ImageBatch want, got;
    std::vector<float> diffs;
    for (; c.batches < batches; ++c.batches) {
      absl::StatusOr<bool> a = (*cpu)->Next(&want), b = (*enc)->Next(&got);
      EXPECT_TRUE(a.ok() && b.ok() && *a == *b);
      if (!a.ok() || !b.ok() || !*a) break;
      EXPECT_EQ(got.labels, want.labels);
      const absl::Status s = decoder_->Decode(got, out.data, nullptr);
      EXPECT_TRUE(s.ok()) << s;
      const std::vector<float> pixels = out.Download();
      for (size_t i = 0; i < floats; ++i) diffs.push_back(std::abs(pixels[i] - want.pixels[i]));
    }
    if (diffs.empty()) return c;
    double sum = 0;
    for (float d : diffs) sum += d;
    c.mean_abs = sum / static_cast<double>(diffs.size());
    std::sort(diffs.begin(), diffs.end());
    c.p99_abs = diffs[diffs.size() * 99 / 100];
    c.max_abs = diffs.back();
    return c;
  }

  testing::TempDir dir_{"device_decoder"};
  std::unique_ptr<DeviceImageDecoder> decoder_;
};

TEST_F(DeviceDecoderTest, NvjpegBatchesMatchTheCpuPipeline) {
  for (JpegBackend backend : {JpegBackend::kCuda, JpegBackend::kHardware}) {
    if (backend == JpegBackend::kHardware &&
        !DeviceImageDecoder::Create({.backend = JpegBackend::kHardware}).ok()) {
      std::printf("no hardware JPEG decoder on this GPU\n");
      continue;
    }
    for (Split split : {Split::kTrain, Split::kVal}) {
      DeviceImageDecoder* used = nullptr;
      const Compared c = Compare(split, backend, 6, &used);
      ASSERT_NE(used, nullptr);
      std::printf(
          "backend %s, %s: %d batches, |device - cpu| mean %.3f p99 %.1f max %.1f (0-255 scale)\n",
          used->backend_name(), split == Split::kTrain ? "train" : "val", c.batches, c.mean_abs,
          c.p99_abs, c.max_abs);
      EXPECT_GE(c.batches, split == Split::kTrain ? 6 : 3);
      // Only the decoders differ, mostly in chroma upsampling: libjpeg-turbo
      // against itself without its "fancy" upsampling differs on such
      // generated JPEGs by 2.0 on average and 74 at most, before the
      // resample averages. A wrong flip or red/blue swap moves the mean by
      // 24-43 here (measured on the CPU); the geometry itself is checked bit
      // for bit by DeviceResampleTest (a crop off by one source pixel would
      // move the mean by only about 4).
      EXPECT_LT(c.mean_abs, 4.0);
      EXPECT_LT(c.max_abs, 128.0);
      EXPECT_EQ(used->host_decoded(), 0) << "every generated JPEG is nvJPEG's";
      EXPECT_GT(used->device_decoded(), 0);
    }
  }
}

TEST_F(DeviceDecoderTest, GreyAndCmykTakeTheHostRouteBitForBit) {
  // Every training image of class 1 becomes greyscale, of class 2 CMYK.
  for (int cls : {1, 2}) {
    for (int i = 0; i < 6; ++i) {
      const std::string file = dir_ / ("data/train/c000" + std::to_string(cls) + "/train_00000" +
                                       std::to_string(i) + ".JPEG");
      const int components = cls == 1 ? 1 : 4;
      std::vector<uint8_t> pixels(80 * 80 * components);
      for (size_t p = 0; p < pixels.size(); ++p) {
        pixels[p] = static_cast<uint8_t>((p * 7 + i * 31 + (p / 240) * 3) & 0xff);
      }
      absl::StatusOr<std::string> jpeg =
          EncodeJpegComponents(pixels.data(), 80, 80, components, 90);
      ASSERT_TRUE(jpeg.ok());
      std::ofstream(file, std::ios::binary | std::ios::trunc) << *jpeg;
    }
  }
  // Class 0's images are nvJPEG's; the host route's are compared bit for bit.
  auto cpu = ImageLoader::Open(Options(Split::kTrain, ImageOutput::kPixels));
  auto enc = ImageLoader::Open(Options(Split::kTrain, ImageOutput::kEncoded));
  ASSERT_TRUE(cpu.ok() && enc.ok());
  auto decoder = DeviceImageDecoder::Create(
      {.image_size = kOut, .layout = core::Layout::kNHWC, .backend = JpegBackend::kCuda});
  ASSERT_TRUE(decoder.ok());
  const size_t image = 3 * kOut * kOut;
  DeviceBuffer<float> out(4 * image);
  ImageBatch want, got;
  int checked = 0;
  for (int b = 0; b < 5; ++b) {
    ASSERT_TRUE(NextOk(**cpu, &want) && NextOk(**enc, &got));
    ASSERT_TRUE((*decoder)->Decode(got, out.data, nullptr).ok());
    const std::vector<float> pixels = out.Download();
    for (size_t i = 0; i < 4; ++i) {
      if (got.labels[i] == 0) continue;
      ++checked;
      EXPECT_EQ(std::memcmp(pixels.data() + i * image, want.pixels.data() + i * image,
                            image * sizeof(float)),
                0)
          << got.encoded[i].name;
    }
  }
  EXPECT_GT(checked, 5);
  EXPECT_EQ((*decoder)->host_decoded(), checked);
  EXPECT_GT((*decoder)->device_decoded(), 0);
}

TEST_F(DeviceDecoderTest, ShortEvalBatchIsPaddedWithZeros) {
  // 9 validation images in batches of 4: the last holds 1.
  auto enc = ImageLoader::Open(Options(Split::kVal, ImageOutput::kEncoded));
  ASSERT_TRUE(enc.ok());
  (*enc)->StartEval();
  auto decoder = DeviceImageDecoder::Create({.image_size = kOut, .layout = core::Layout::kNHWC});
  ASSERT_TRUE(decoder.ok()) << decoder.status();
  const size_t image = 3 * kOut * kOut;
  DeviceBuffer<float> out(4 * image);
  ImageBatch got;
  for (int b = 0; b < 3; ++b) {
    ASSERT_EQ(cudaMemset(out.data, 0x7f, 4 * image * sizeof(float)), cudaSuccess);
    ASSERT_TRUE(NextOk(**enc, &got));
    ASSERT_TRUE((*decoder)->Decode(got, out.data, nullptr).ok());
  }
  ASSERT_EQ(got.count, 1);
  const std::vector<float> pixels = out.Download();
  EXPECT_TRUE(std::all_of(pixels.begin() + image, pixels.end(), [](float v) { return v == 0; }));
  EXPECT_TRUE(std::any_of(pixels.begin(), pixels.begin() + image, [](float v) { return v != 0; }));
}

std::vector<float> ToHost(const float* device, size_t n) {
  std::vector<float> host(n);
  EXPECT_EQ(cudaMemcpy(host.data(), device, n * sizeof(float), cudaMemcpyDeviceToHost),
            cudaSuccess);
  return host;
}

TEST_F(DeviceDecoderTest, QueueGivesTheBatchesOfDecodingInLine) {
  const size_t floats = 4 * 3 * kOut * kOut;
  // In line: a loader and a decoder on the default stream.
  auto loader = ImageLoader::Open(Options(Split::kTrain, ImageOutput::kEncoded));
  auto decoder = DeviceImageDecoder::Create(
      {.image_size = kOut, .layout = core::Layout::kNHWC, .backend = JpegBackend::kCuda});
  ASSERT_TRUE(loader.ok() && decoder.ok());
  DeviceBuffer<float> out(floats);
  std::vector<std::vector<float>> want;
  std::vector<std::vector<int32_t>> want_labels;
  ImageBatch batch;
  for (int b = 0; b < 7; ++b) {
    ASSERT_TRUE(NextOk(**loader, &batch));
    ASSERT_TRUE((*decoder)->Decode(batch, out.data, nullptr).ok());
    want.push_back(out.Download());
    want_labels.push_back(batch.labels);
  }
  for (int depth : {1, 3}) {
    auto other = ImageLoader::Open(Options(Split::kTrain, ImageOutput::kEncoded));
    ASSERT_TRUE(other.ok());
    auto queue = DeviceBatchQueue::Create(
        *std::move(other), Split::kTrain,
        {.image_size = kOut, .layout = core::Layout::kNHWC, .backend = JpegBackend::kCuda}, depth);
    ASSERT_TRUE(queue.ok()) << queue.status();
    DeviceBatch got;
    for (size_t b = 0; b < want.size(); ++b) {
      absl::StatusOr<bool> next = (*queue)->Next(&got);
      ASSERT_TRUE(next.ok() && *next) << next.status();
      EXPECT_EQ(got.count, 4);
      EXPECT_EQ(got.labels, want_labels[b]);
      EXPECT_EQ(ToHost(got.pixels, floats), want[b]) << "depth " << depth << " batch " << b;
    }
  }
}

TEST_F(DeviceDecoderTest, QueueEndsEachEvalPassAndRestarts) {
  auto loader = ImageLoader::Open(Options(Split::kVal, ImageOutput::kEncoded));
  ASSERT_TRUE(loader.ok());
  auto queue = DeviceBatchQueue::Create(*std::move(loader), Split::kVal,
                                        {.image_size = kOut, .layout = core::Layout::kNHWC});
  ASSERT_TRUE(queue.ok()) << queue.status();
  const size_t floats = 4 * 3 * kOut * kOut;
  std::vector<float> first;
  for (int pass = 0; pass < 3; ++pass) {
    (*queue)->StartEval();
    DeviceBatch got;
    int batches = 0, images = 0;
    for (;;) {
      absl::StatusOr<bool> next = (*queue)->Next(&got);
      ASSERT_TRUE(next.ok()) << next.status();
      if (!*next) break;
      if (batches++ == 0) {
        const std::vector<float> pixels = ToHost(got.pixels, floats);
        if (pass == 0) first = pixels;
        EXPECT_EQ(pixels, first) << "pass " << pass;
      }
      images += got.count;
      if (pass == 1 && batches == 1) break;  // abandoned mid-pass: the next one starts over
    }
    if (pass == 1) continue;
    EXPECT_EQ(batches, 3);
    EXPECT_EQ(images, 9);
    absl::StatusOr<bool> after = (*queue)->Next(&got);
    ASSERT_TRUE(after.ok());
    EXPECT_FALSE(*after) << "a finished pass stays finished until StartEval";
  }
}

TEST_F(DeviceDecoderTest, APixelBatchIsRefusedNotDecoded) {
  auto cpu = ImageLoader::Open(Options(Split::kTrain, ImageOutput::kPixels));
  ASSERT_TRUE(cpu.ok());
  ImageBatch batch;
  ASSERT_TRUE(NextOk(**cpu, &batch));
  auto decoder = DeviceImageDecoder::Create({.image_size = kOut});
  ASSERT_TRUE(decoder.ok());
  DeviceBuffer<float> out(4 * 3 * kOut * kOut);
  const absl::Status s = (*decoder)->Decode(batch, out.data, nullptr);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
}

}  // namespace
}  // namespace mlperf::datasets::cuda
