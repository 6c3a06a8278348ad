// ImageLoader end to end on tiny generated sets: exactly-once coverage of
// training epochs and evaluation passes over 1, 2 and 3 simulated ranks,
// determinism across thread counts, layouts, TFRecord vs folder equality, and
// errors that name the bad file or record.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "datasets/augment.h"
#include "datasets/image_loader.h"
#include "datasets/jpeg.h"
#include "datasets/synthetic_image_set.h"
#include "tests/datasets/test_dir.h"

namespace mlperf::datasets {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

// 5 classes x 7 train (35) and x 3 val (15): sizes that no batch divides.
SyntheticImageSetOptions TinySet() {
  return {.num_classes = 5, .train_per_class = 7, .val_per_class = 3, .image_size = 28, .seed = 3};
}

class LoaderTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir("loader");
    ASSERT_TRUE(WriteSyntheticImageSet(*dir_ / "folder", TinySet()).ok());
    SyntheticImageSetOptions tf = TinySet();
    tf.tfrecord_shards = 3;
    ASSERT_TRUE(WriteSyntheticImageSet(*dir_ / "tfrecord", tf).ok());
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }

  static ImageLoaderOptions Options(Split split, const std::string& form = "folder") {
    ImageLoaderOptions o;
    o.root = *dir_ / form;
    o.split = split;
    o.image_size = 16;
    o.resize_shorter = 20;
    o.batch_size = 4;
    o.seed = 42;
    return o;
  }

  static std::unique_ptr<ImageLoader> Open(const ImageLoaderOptions& o) {
    absl::StatusOr<std::unique_ptr<ImageLoader>> loader = ImageLoader::Open(o);
    EXPECT_TRUE(loader.ok()) << loader.status();
    return loader.ok() ? *std::move(loader) : nullptr;
  }

  static TempDir* dir_;
};
TempDir* LoaderTest::dir_ = nullptr;

TEST_F(LoaderTest, SizesAndClasses) {
  auto train = Open(Options(Split::kTrain));
  auto val = Open(Options(Split::kVal));
  ASSERT_TRUE(train && val);
  EXPECT_EQ(train->size(), 35);
  EXPECT_EQ(val->size(), 15);
  EXPECT_EQ(train->num_classes(), 5);
  EXPECT_EQ(val->num_classes(), 5);
  auto tf = Open(Options(Split::kTrain, "tfrecord"));
  ASSERT_TRUE(tf);
  EXPECT_EQ(tf->size(), 35);
  EXPECT_EQ(tf->num_classes(), 5);
}

TEST_F(LoaderTest, EveryTrainImageOncePerEpochAcrossRanks) {
  for (int world : {1, 2, 3}) {
    std::vector<std::unique_ptr<ImageLoader>> ranks;
    for (int r = 0; r < world; ++r) {
      ImageLoaderOptions o = Options(Split::kTrain);
      o.rank = r;
      o.world_size = world;
      o.threads = 1 + r;
      ranks.push_back(Open(o));
      ASSERT_TRUE(ranks.back());
    }
    // Global batches in rank order rebuild the global stream.
    const int64_t n = 35;
    const int global_batches = static_cast<int>(4 * n / (4 * world)) + 1;  // > 4 epochs
    std::vector<int64_t> stream;
    std::vector<int32_t> labels;
    ImageBatch batch;
    for (int g = 0; g < global_batches; ++g) {
      for (int r = 0; r < world; ++r) {
        absl::StatusOr<bool> got = ranks[static_cast<size_t>(r)]->Next(&batch);
        ASSERT_TRUE(got.ok()) << got.status();
        ASSERT_TRUE(*got);
        ASSERT_EQ(batch.count, 4);
        ASSERT_EQ(batch.pixels.size(), 4u * 3 * 16 * 16);
        const int64_t first = static_cast<int64_t>(stream.size());
        EXPECT_EQ(batch.epoch, first / n) << "world " << world << " batch " << g;
        for (int j = 0; j < 4; ++j) {
          stream.push_back(batch.indices[static_cast<size_t>(j)]);
          labels.push_back(batch.labels[static_cast<size_t>(j)]);
        }
      }
    }
    const auto& entries = ranks[0]->index().entries;
    for (size_t i = 0; i < stream.size(); ++i) {
      ASSERT_GE(stream[i], 0);
      EXPECT_EQ(labels[i], entries[static_cast<size_t>(stream[i])].label);
    }
    std::vector<std::vector<int64_t>> epochs;
    for (size_t e = 0; (e + 1) * n <= stream.size(); ++e) {
      std::vector<int64_t> epoch(stream.begin() + static_cast<ptrdiff_t>(e * n),
                                 stream.begin() + static_cast<ptrdiff_t>((e + 1) * n));
      epochs.push_back(epoch);
      std::sort(epoch.begin(), epoch.end());
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_EQ(epoch[static_cast<size_t>(i)], i) << "world " << world << " epoch " << e;
      }
    }
    ASSERT_GE(epochs.size(), 4u);
    EXPECT_NE(epochs[0], epochs[1]) << "each epoch needs its own permutation";
    EXPECT_NE(epochs[1], epochs[2]);
  }
}

TEST_F(LoaderTest, TrainStreamDoesNotDependOnWorldSizeSplit) {
  // Rank 0 of world 1 sees the global stream; ranks of world 2 see interleaved
  // halves of the same stream with batch 2 (global batch 4 both times).
  ImageLoaderOptions single = Options(Split::kTrain);
  auto one = Open(single);
  std::vector<std::unique_ptr<ImageLoader>> two;
  for (int r = 0; r < 2; ++r) {
    ImageLoaderOptions o = single;
    o.batch_size = 2;
    o.rank = r;
    o.world_size = 2;
    two.push_back(Open(o));
  }
  ImageBatch a, b;
  for (int step = 0; step < 20; ++step) {
    ASSERT_TRUE(one->Next(&a).ok());
    for (int r = 0; r < 2; ++r) {
      ASSERT_TRUE(two[static_cast<size_t>(r)]->Next(&b).ok());
      for (int j = 0; j < 2; ++j) {
        EXPECT_EQ(b.indices[static_cast<size_t>(j)], a.indices[static_cast<size_t>(r * 2 + j)]);
      }
      const size_t per_image = 3 * 16 * 16;
      EXPECT_TRUE(std::equal(b.pixels.begin(), b.pixels.begin() + 2 * per_image,
                             a.pixels.begin() + static_cast<ptrdiff_t>(r * 2 * per_image)));
    }
  }
}

TEST_F(LoaderTest, EveryValImageOncePerEvalAcrossRanks) {
  for (int world : {1, 2, 3}) {
    std::vector<int> seen(15, 0);
    for (int r = 0; r < world; ++r) {
      ImageLoaderOptions o = Options(Split::kVal);
      o.rank = r;
      o.world_size = world;
      auto loader = Open(o);
      ASSERT_TRUE(loader);
      ImageBatch batch;
      EXPECT_FALSE(loader->Next(&batch).ok()) << "Next before StartEval must fail";
      for (int pass = 0; pass < 2; ++pass) {
        loader->StartEval();
        int images = 0;
        for (;;) {
          absl::StatusOr<bool> got = loader->Next(&batch);
          ASSERT_TRUE(got.ok()) << got.status();
          if (!*got) break;
          ASSERT_GE(batch.count, 1);
          ASSERT_LE(batch.count, 4);
          for (int j = 0; j < 4; ++j) {
            const auto sj = static_cast<size_t>(j);
            if (j < batch.count) {
              ASSERT_GE(batch.indices[sj], 0);
              EXPECT_EQ(batch.labels[sj], loader->index().entries[batch.indices[sj]].label);
              if (pass == 0) ++seen[static_cast<size_t>(batch.indices[sj])];
            } else {
              EXPECT_EQ(batch.labels[sj], -1);
              EXPECT_EQ(batch.indices[sj], -1);
              const size_t per_image = 3 * 16 * 16;
              for (size_t k = sj * per_image; k < (sj + 1) * per_image; ++k) {
                ASSERT_EQ(batch.pixels[k], 0.0f);
              }
            }
          }
          images += batch.count;
        }
        EXPECT_EQ(images, 15 * (r + 1) / world - 15 * r / world);
        // The pass stays finished until the next StartEval.
        absl::StatusOr<bool> again = loader->Next(&batch);
        ASSERT_TRUE(again.ok());
        EXPECT_FALSE(*again);
      }
    }
    for (int i = 0; i < 15; ++i) EXPECT_EQ(seen[static_cast<size_t>(i)], 1) << "image " << i;
  }
}

TEST_F(LoaderTest, StartEvalMidPassRestarts) {
  auto loader = Open(Options(Split::kVal));
  ImageBatch first, batch;
  loader->StartEval();
  ASSERT_TRUE(*loader->Next(&first));
  ASSERT_TRUE(*loader->Next(&batch));
  loader->StartEval();
  ASSERT_TRUE(*loader->Next(&batch));
  EXPECT_EQ(batch.indices, first.indices);
  EXPECT_EQ(batch.pixels, first.pixels);
}

// Batches of a loader as one vector of floats and labels.
void Collect(ImageLoader* loader, bool eval, int batches, std::vector<float>* pixels,
             std::vector<int32_t>* labels) {
  if (eval) loader->StartEval();
  ImageBatch batch;
  for (int i = 0; i < batches; ++i) {
    absl::StatusOr<bool> got = loader->Next(&batch);
    ASSERT_TRUE(got.ok()) << got.status();
    if (!*got) break;
    pixels->insert(pixels->end(), batch.pixels.begin(), batch.pixels.end());
    labels->insert(labels->end(), batch.labels.begin(), batch.labels.end());
  }
}

TEST_F(LoaderTest, SameBatchesForAnyThreadCountAndPrefetch) {
  for (Split split : {Split::kTrain, Split::kVal}) {
    std::vector<float> ref_pixels;
    std::vector<int32_t> ref_labels;
    for (auto [threads, prefetch] : {std::pair{1, 1}, std::pair{2, 2}, std::pair{4, 3}}) {
      ImageLoaderOptions o = Options(split);
      o.threads = threads;
      o.prefetch_batches = prefetch;
      auto loader = Open(o);
      std::vector<float> pixels;
      std::vector<int32_t> labels;
      Collect(loader.get(), split == Split::kVal, 12, &pixels, &labels);
      if (ref_pixels.empty()) {
        ref_pixels = pixels;
        ref_labels = labels;
        ASSERT_FALSE(ref_pixels.empty());
      } else {
        EXPECT_EQ(pixels, ref_pixels) << threads << " threads";
        EXPECT_EQ(labels, ref_labels) << threads << " threads";
      }
    }
  }
}

TEST_F(LoaderTest, SeedChangesOrderAndCrops) {
  std::vector<float> a, b, c;
  std::vector<int32_t> la, lb, lc;
  ImageLoaderOptions o = Options(Split::kTrain);
  Collect(Open(o).get(), false, 5, &a, &la);
  Collect(Open(o).get(), false, 5, &b, &lb);
  o.seed = 43;
  Collect(Open(o).get(), false, 5, &c, &lc);
  EXPECT_EQ(a, b);
  EXPECT_EQ(la, lb);
  EXPECT_NE(a, c);
}

TEST_F(LoaderTest, NchwAndNhwcAgreeAfterTransposition) {
  for (Split split : {Split::kTrain, Split::kVal}) {
    ImageLoaderOptions o = Options(split);
    std::vector<float> nchw, nhwc;
    std::vector<int32_t> l1, l2;
    Collect(Open(o).get(), split == Split::kVal, 3, &nchw, &l1);
    o.layout = core::Layout::kNHWC;
    Collect(Open(o).get(), split == Split::kVal, 3, &nhwc, &l2);
    ASSERT_EQ(nchw.size(), nhwc.size());
    EXPECT_EQ(l1, l2);
    const size_t s = 16, images = nchw.size() / (3 * s * s);
    for (size_t n = 0; n < images; ++n) {
      for (size_t c = 0; c < 3; ++c) {
        for (size_t y = 0; y < s; ++y) {
          for (size_t x = 0; x < s; ++x) {
            ASSERT_EQ(nchw[((n * 3 + c) * s + y) * s + x], nhwc[((n * s + y) * s + x) * 3 + c]);
          }
        }
      }
    }
  }
}

TEST_F(LoaderTest, TfRecordAndFolderGiveTheSameBatches) {
  for (Split split : {Split::kTrain, Split::kVal}) {
    std::vector<float> a, b;
    std::vector<int32_t> la, lb;
    Collect(Open(Options(split)).get(), split == Split::kVal, 6, &a, &la);
    ImageLoaderOptions o = Options(split, "tfrecord");
    o.num_classes = 5;  // trusted: no scan at Open
    Collect(Open(o).get(), split == Split::kVal, 6, &b, &lb);
    EXPECT_EQ(la, lb);
    EXPECT_EQ(a, b);
  }
}

// The device decoder's contract: an encoded batch, decoded at full size and
// resampled as it says, is the pixel batch of a loader without scaled decode.
TEST_F(LoaderTest, EncodedBatchesDecodeToThePixelBatches) {
  for (Split split : {Split::kTrain, Split::kVal}) {
    for (const char* form : {"folder", "tfrecord"}) {
      ImageLoaderOptions o = Options(split, form);
      o.scaled_decode = false;
      o.layout = core::Layout::kNHWC;
      auto pixels = Open(o);
      o.output = ImageOutput::kEncoded;
      o.threads = 3;
      auto encoded = Open(o);
      ASSERT_TRUE(pixels && encoded);
      if (split == Split::kVal) {
        pixels->StartEval();
        encoded->StartEval();
      }
      ImageBatch want, got;
      RgbImage image;
      const size_t floats = 3 * 16 * 16;
      int batches = 0;
      for (;; ++batches) {
        absl::StatusOr<bool> a = pixels->Next(&want), b = encoded->Next(&got);
        ASSERT_TRUE(a.ok() && b.ok());
        ASSERT_EQ(*a, *b);
        if (!*a || batches == 12) break;
        ASSERT_EQ(got.count, want.count);
        EXPECT_EQ(got.labels, want.labels);
        EXPECT_EQ(got.indices, want.indices);
        EXPECT_TRUE(got.pixels.empty());
        ASSERT_EQ(got.encoded.size(), 4u);
        std::vector<float> decoded(floats);
        for (size_t i = 0; i < 4; ++i) {
          const EncodedImage& e = got.encoded[i];
          if (static_cast<int>(i) >= got.count) {
            EXPECT_TRUE(e.bytes.empty());
            continue;
          }
          ASSERT_TRUE(DecodeJpeg(e.bytes, e.name, {}, &image).ok()) << e.name;
          ResampleBilinear(image, e.x_axis, e.y_axis, 16, 16, e.flip, o.mean, o.layout,
                           decoded.data());
          ASSERT_TRUE(std::equal(decoded.begin(), decoded.end(),
                                 want.pixels.begin() + static_cast<ptrdiff_t>(i * floats)))
              << form << " batch " << batches << " image " << i;
        }
      }
      EXPECT_GE(batches, split == Split::kVal ? 4 : 12);
    }
  }
}

TEST_F(LoaderTest, PixelsAreMeanSubtractedImages) {
  // Eval without scaled decode at the stored size: a centre crop of the decoded
  // JPEG minus the mean; check the value range and that images differ.
  ImageLoaderOptions o = Options(Split::kVal);
  o.image_size = 28;
  o.resize_shorter = 28;
  auto loader = Open(o);
  std::vector<float> pixels;
  std::vector<int32_t> labels;
  Collect(loader.get(), true, 1, &pixels, &labels);
  float lo = 1e9f, hi = -1e9f;
  for (size_t i = 0; i < 28 * 28; ++i) {  // red plane of image 0
    lo = std::min(lo, pixels[i]);
    hi = std::max(hi, pixels[i]);
  }
  EXPECT_GE(lo, -123.68f - 1e-3f);
  EXPECT_LE(hi, 255 - 123.68f + 1e-3f);
  EXPECT_GT(hi - lo, 30.0f);
}

TEST(LoaderErrorTest, MissingRootAndSplit) {
  ImageLoaderOptions o;
  o.root = "/nonexistent/imagenet";
  absl::StatusOr<std::unique_ptr<ImageLoader>> l = ImageLoader::Open(o);
  ASSERT_FALSE(l.ok());
  EXPECT_NE(l.status().message().find("/nonexistent/imagenet"), std::string::npos) << l.status();
  TempDir dir("missing");
  fs::create_directories(dir / "train/c0");
  o.root = dir.path();
  o.split = Split::kVal;
  o.format = DatasetFormat::kImageFolder;
  l = ImageLoader::Open(o);
  ASSERT_FALSE(l.ok());
  EXPECT_NE(l.status().message().find("val"), std::string::npos) << l.status();
  o.split = Split::kTrain;
  l = ImageLoader::Open(o);
  ASSERT_FALSE(l.ok());  // a class directory without images
  o.batch_size = 0;
  EXPECT_FALSE(ImageLoader::Open(o).ok());
}

TEST(LoaderErrorTest, CorruptJpegNamesTheFile) {
  TempDir dir("corrupt");
  ASSERT_TRUE(WriteSyntheticImageSet(dir / "set", TinySet()).ok());
  const std::string bad = dir / "set/train/c0002/train_000004.JPEG";
  ASSERT_TRUE(fs::exists(bad));
  std::ofstream(bad, std::ios::binary | std::ios::trunc) << "this is not a JPEG";
  ImageLoaderOptions o;
  o.root = dir / "set";
  o.image_size = 16;
  o.batch_size = 5;
  auto loader = ImageLoader::Open(o);
  ASSERT_TRUE(loader.ok()) << loader.status();
  ImageBatch batch;
  absl::Status error;
  for (int i = 0; i < 7 && error.ok(); ++i) error = (*loader)->Next(&batch).status();
  ASSERT_FALSE(error.ok()) << "an epoch of 35 images must reach the bad one";
  EXPECT_NE(error.message().find(bad), std::string::npos) << error;
  // The error sticks: no batch with a hole is ever handed out.
  EXPECT_FALSE((*loader)->Next(&batch).ok());
}

TEST(LoaderErrorTest, CorruptRecordNamesFileAndOffset) {
  TempDir dir("badrecord");
  SyntheticImageSetOptions s = TinySet();
  s.tfrecord_shards = 2;
  ASSERT_TRUE(WriteSyntheticImageSet(dir / "set", s).ok());
  const std::string shard = dir / "set/train-00001-of-00002";
  std::string bytes;
  {
    std::ifstream in(shard, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  uint64_t first_length;
  std::memcpy(&first_length, bytes.data(), 8);
  const uint64_t second = 16 + first_length;
  bytes[second + 12 + 100] ^= 0x40;  // inside record 2's data
  std::ofstream(shard, std::ios::binary | std::ios::trunc) << bytes;
  ImageLoaderOptions o;
  o.root = dir / "set";
  o.image_size = 16;
  o.batch_size = 5;
  // Scanning at Open checks every CRC.
  auto scanned = ImageLoader::Open(o);
  ASSERT_FALSE(scanned.ok());
  const std::string where = fmt::format("{}: corrupt record at byte {}", shard, second);
  EXPECT_NE(scanned.status().message().find(where), std::string::npos) << scanned.status();
  // Trusting num_classes defers the check to the read, with the same message.
  o.num_classes = 5;
  auto loader = ImageLoader::Open(o);
  ASSERT_TRUE(loader.ok()) << loader.status();
  ImageBatch batch;
  absl::Status error;
  for (int i = 0; i < 7 && error.ok(); ++i) error = (*loader)->Next(&batch).status();
  ASSERT_FALSE(error.ok());
  EXPECT_NE(error.message().find(where), std::string::npos) << error;
}

TEST(LoaderErrorTest, FlatValWithLabelsFile) {
  TempDir dir("flatval");
  ASSERT_TRUE(WriteSyntheticImageSet(dir / "set", TinySet()).ok());
  // Move val/<class>/x.JPEG to val/<class>_x.JPEG and write val_labels.txt.
  std::ofstream labels(dir / "set/val_labels.txt");
  std::vector<std::pair<std::string, int>> expected;
  for (int c = 0; c < 5; ++c) {
    const std::string cls = fmt::format("c{:04d}", c);
    for (int i = 0; i < 3; ++i) {
      const std::string name = fmt::format("{}_{}.JPEG", cls, i);
      fs::rename(dir / fmt::format("set/val/{}/val_{:06d}.JPEG", cls, i),
                 dir / ("set/val/" + name));
      labels << (i == 1 ? fmt::format("{},{} 1 2 3 4\n", name.substr(0, name.size() - 5), cls)
                        : fmt::format("{} {}\n", name, cls));
      expected.push_back({name, c});
    }
    fs::remove(dir / ("set/val/" + cls));
  }
  labels.close();
  ImageLoaderOptions o;
  o.root = dir / "set";
  o.split = Split::kVal;
  o.image_size = 16;
  o.resize_shorter = 20;
  auto loader = ImageLoader::Open(o);
  ASSERT_TRUE(loader.ok()) << loader.status();
  const DatasetIndex& index = (*loader)->index();
  ASSERT_EQ(index.entries.size(), 15u);
  std::sort(expected.begin(), expected.end());
  for (size_t i = 0; i < 15; ++i) {
    EXPECT_TRUE(
        index.files[static_cast<size_t>(index.entries[i].file)].ends_with(expected[i].first));
    EXPECT_EQ(index.entries[i].label, expected[i].second);
  }
  // An image without a label is an error naming it.
  std::ofstream(dir / "set/val/extra.JPEG") << "x";
  auto bad = ImageLoader::Open(o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("extra.JPEG"), std::string::npos) << bad.status();
}

TEST(SyntheticSetTest, ManifestGuardsTheDirectory) {
  TempDir dir("synthetic");
  SyntheticImageSetOptions o = TinySet();
  o.train_per_class = 2;
  o.val_per_class = 1;
  const std::string root = dir / "set";
  ASSERT_TRUE(WriteSyntheticImageSet(root, o).ok());
  const auto written = fs::last_write_time(root + "/train/c0000/train_000000.JPEG");
  EXPECT_TRUE(WriteSyntheticImageSet(root, o).ok());  // identical: accepted as is
  EXPECT_EQ(fs::last_write_time(root + "/train/c0000/train_000000.JPEG"), written);
  SyntheticImageSetOptions other = o;
  other.seed = 4;
  absl::Status s = WriteSyntheticImageSet(root, other);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find(root), std::string::npos) << s;
  // An interrupted write leaves no manifest: refused, not silently reused.
  fs::remove(root + "/SYNTHETIC_MANIFEST");
  s = WriteSyntheticImageSet(root, o);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("SYNTHETIC_MANIFEST"), std::string::npos) << s;
}

TEST(SyntheticSetTest, DeterministicAndClassDependent) {
  const SyntheticImageSetOptions o = TinySet();
  // A recorded image (its FNV-1a hash and first pixel): the demo's data set
  // must be the same on every machine, or seeded runs differ.
  const std::vector<uint8_t> image = SyntheticImage(o, 1, 5);
  ASSERT_EQ(image.size(), 28u * 28u * 3u);
  uint64_t fnv = 1469598103934665603ull;
  for (uint8_t b : image) fnv = (fnv ^ b) * 1099511628211ull;
  EXPECT_EQ(fnv, 6197039925389877266ull);
  EXPECT_EQ((std::vector<int>{image[0], image[1], image[2]}), (std::vector<int>{193, 172, 200}));
  EXPECT_NE(SyntheticImage(o, 1, 5), SyntheticImage(o, 1, 6));
  SyntheticImageSetOptions other = o;
  other.seed = 9;
  EXPECT_NE(SyntheticImage(o, 1, 5), SyntheticImage(other, 1, 5));
}

}  // namespace
}  // namespace mlperf::datasets
