#include "datasets/image_loader.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

#include "datasets/augment.h"
#include "datasets/index_cache.h"
#include "datasets/jpeg.h"
#include "datasets/shuffle.h"
#include "datasets/tfrecord.h"
#include "reference/core/philox.h"

namespace mlperf::datasets {
namespace {

// Smallest scale k/8 at which `needed_w` x `needed_h` source pixels (at full
// scale) still cover at least out_w x out_h pixels, so the IDCT never
// downscales below the resolution the resize samples at. Only 1/8, 2/8 and 4/8:
// libjpeg-turbo has SIMD IDCTs for those, while 3/8, 5/8, 6/8 and 7/8 run plain
// C code that is slower than a full-size SIMD decode.
int ChooseScale(double needed_w, double needed_h, int out_w, int out_h) {
  for (int k : {1, 2, 4}) {
    if (needed_w * k / 8 >= out_w && needed_h * k / 8 >= out_h) return k;
  }
  return 8;
}

absl::Status ReadWholeFile(const std::string& path, std::string* bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::NotFoundError(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  }
  bytes->clear();
  char buf[1 << 16];
  for (;;) {
    const ssize_t got = ::read(fd, buf, sizeof(buf));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      const int e = errno;
      ::close(fd);
      return absl::DataLossError(fmt::format("{}: read error: {}", path, std::strerror(e)));
    }
    if (got == 0) break;
    bytes->append(buf, static_cast<size_t>(got));
  }
  ::close(fd);
  return absl::OkStatus();
}

// Per-thread buffers and open shard descriptors.
struct Scratch {
  std::string bytes;
  RgbImage image;
  std::map<int32_t, int> shard_fds;
  ~Scratch() {
    for (auto& [shard, fd] : shard_fds) {
      if (fd >= 0) ::close(fd);
    }
  }
};

}  // namespace

class ImageLoader::Impl {
 public:
  Impl(const ImageLoaderOptions& options, DatasetIndex index)
      : opt_(options),
        index_(std::move(index)),
        n_(static_cast<int64_t>(index_.entries.size())),
        image_floats_(static_cast<size_t>(3) * options.image_size * options.image_size),
        slots_(static_cast<size_t>(options.prefetch_batches)) {
    if (opt_.split == Split::kVal) {
      eval_begin_ = n_ * opt_.rank / opt_.world_size;
      eval_end_ = n_ * (opt_.rank + 1) / opt_.world_size;
      eval_batches_ = (eval_end_ - eval_begin_ + opt_.batch_size - 1) / opt_.batch_size;
    }
    for (int t = 0; t < opt_.threads; ++t) workers_.emplace_back([this] { WorkerLoop(); });
  }

  ~Impl() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    work_cv_.notify_all();
    for (std::thread& t : workers_) t.join();
  }

  int64_t size() const { return n_; }
  const DatasetIndex& index() const { return index_; }

  void StartEval() {
    if (opt_.split != Split::kVal) return;  // a training stream has no passes
    std::unique_lock<std::mutex> lock(mu_);
    // Workers may be writing into slots of the old pass: let them finish.
    paused_ = true;
    done_cv_.wait(lock, [&] { return in_flight_ == 0; });
    next_batch_ = 0;
    next_image_ = 0;
    consumed_ = 0;
    for (Slot& s : slots_) s.seq = -1;
    eval_active_ = true;
    paused_ = false;
    work_cv_.notify_all();
  }

  absl::StatusOr<bool> Next(ImageBatch* batch) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!failed_.ok()) return failed_;
    if (opt_.split == Split::kVal) {
      if (!eval_active_) {
        return absl::FailedPreconditionError("ImageLoader: call StartEval() before Next()");
      }
      if (consumed_ >= eval_batches_) return false;
    }
    Slot& slot = slots_[static_cast<size_t>(consumed_ % opt_.prefetch_batches)];
    done_cv_.wait(lock, [&] { return slot.seq == consumed_ && slot.pending == 0; });
    if (!slot.status.ok()) {
      failed_ = slot.status;
      return failed_;
    }
    std::swap(batch->pixels, slot.pixels);
    std::swap(batch->labels, slot.labels);
    std::swap(batch->indices, slot.indices);
    std::swap(batch->encoded, slot.encoded);
    batch->count = slot.count;
    batch->epoch = slot.epoch;
    slot.seq = -1;
    ++consumed_;
    work_cv_.notify_all();
    return true;
  }

 private:
  struct Slot {
    int64_t seq = -1;  // batch number held, -1 = free
    int count = 0, pending = 0;
    int64_t epoch = 0;
    std::vector<float> pixels;
    std::vector<int32_t> labels;
    std::vector<int64_t> indices;
    std::vector<EncodedImage> encoded;
    absl::Status status;
    int error_index = 0;  // lowest failing position, so the reported error is deterministic
  };

  struct Item {
    int64_t batch = 0;
    int position = 0;
    int64_t image = 0;
    int64_t epoch = 0;
  };

  // Images in batch `b` of this rank (0 = no such batch).
  int BatchCount(int64_t b) const {
    if (opt_.split == Split::kTrain) return opt_.batch_size;
    if (!eval_active_ || b >= eval_batches_) return 0;
    return static_cast<int>(
        std::min<int64_t>(opt_.batch_size, eval_end_ - eval_begin_ - b * opt_.batch_size));
  }

  // Global stream position of slot `position` of this rank's batch `b`.
  int64_t TrainPosition(int64_t b, int position) const {
    return (b * opt_.world_size + opt_.rank) * opt_.batch_size + position;
  }

  const std::vector<int64_t>& Permutation(int64_t epoch) {
    // Earlier epochs are finished for this rank: positions only increase.
    while (!perms_.empty() && perms_.begin()->first < epoch) perms_.erase(perms_.begin());
    auto it = perms_.find(epoch);
    if (it == perms_.end())
      it = perms_.emplace(epoch, EpochPermutation(n_, opt_.seed, epoch)).first;
    return it->second;
  }

  // Takes the next image to produce; mu_ held. False when there is none now.
  bool TakeItem(Item* item) {
    if (paused_) return false;
    const int count = BatchCount(next_batch_);
    if (count == 0 || next_batch_ >= consumed_ + opt_.prefetch_batches) return false;
    Slot& slot = slots_[static_cast<size_t>(next_batch_ % opt_.prefetch_batches)];
    if (next_image_ == 0) {
      slot.seq = next_batch_;
      slot.count = count;
      slot.pending = count;
      slot.status = absl::OkStatus();
      slot.labels.assign(static_cast<size_t>(opt_.batch_size), -1);
      slot.indices.assign(static_cast<size_t>(opt_.batch_size), -1);
      if (encoded()) {
        slot.pixels.clear();
        slot.encoded.resize(static_cast<size_t>(opt_.batch_size));
        for (size_t i = static_cast<size_t>(count); i < slot.encoded.size(); ++i) {
          slot.encoded[i] = EncodedImage();
        }
      } else {
        slot.encoded.clear();
        slot.pixels.resize(static_cast<size_t>(opt_.batch_size) * image_floats_);
        std::fill(slot.pixels.begin() + static_cast<ptrdiff_t>(count * image_floats_),
                  slot.pixels.end(), 0.0f);
      }
      slot.epoch = opt_.split == Split::kTrain ? TrainPosition(next_batch_, 0) / n_ : 0;
    }
    item->batch = next_batch_;
    item->position = next_image_;
    if (opt_.split == Split::kTrain) {
      const int64_t p = TrainPosition(next_batch_, next_image_);
      item->epoch = p / n_;
      item->image = Permutation(item->epoch)[static_cast<size_t>(p % n_)];
    } else {
      item->epoch = 0;
      item->image = eval_begin_ + next_batch_ * opt_.batch_size + next_image_;
    }
    slot.indices[static_cast<size_t>(next_image_)] = item->image;
    if (++next_image_ == count) {
      ++next_batch_;
      next_image_ = 0;
    }
    return true;
  }

  void WorkerLoop() {
    Scratch scratch;
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      Item item;
      work_cv_.wait(lock, [&] { return stop_ || TakeItem(&item); });
      if (stop_) return;
      Slot& slot = slots_[static_cast<size_t>(item.batch % opt_.prefetch_batches)];
      const size_t position = static_cast<size_t>(item.position);
      float* out = encoded() ? nullptr : slot.pixels.data() + position * image_floats_;
      EncodedImage* left = encoded() ? &slot.encoded[position] : nullptr;
      ++in_flight_;
      lock.unlock();
      int32_t label = -1;
      absl::Status status = Produce(item, out, left, &label, &scratch);
      lock.lock();
      --in_flight_;
      slot.labels[static_cast<size_t>(item.position)] = label;
      if (!status.ok() && (slot.status.ok() || item.position < slot.error_index)) {
        slot.status = std::move(status);
        slot.error_index = item.position;
      }
      --slot.pending;
      done_cv_.notify_all();
    }
  }

  bool encoded() const { return opt_.output == ImageOutput::kEncoded; }

  // Reads, decodes and augments one image into `out`, or, for a device
  // decoder, reads it and draws its augmentation into `left`. Runs without
  // the lock.
  absl::Status Produce(const Item& item, float* out, EncodedImage* left, int32_t* label,
                       Scratch* scratch) {
    const IndexEntry& entry = index_.entries[static_cast<size_t>(item.image)];
    const std::string& file = index_.files[static_cast<size_t>(entry.file)];
    std::string name = file;
    std::string_view jpeg;
    ImageRecord record;
    if (index_.format == DatasetFormat::kImageFolder) {
      if (absl::Status s = ReadWholeFile(file, &scratch->bytes); !s.ok()) return s;
      jpeg = scratch->bytes;
      *label = entry.label;
    } else {
      auto [it, inserted] = scratch->shard_fds.emplace(entry.file, -1);
      if (it->second < 0) it->second = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
      const int fd = it->second;
      if (fd < 0) {
        return absl::NotFoundError(fmt::format("{}: cannot open: {}", file, std::strerror(errno)));
      }
      if (absl::Status s = ReadTfRecordAt(fd, file, {entry.offset, entry.length}, &scratch->bytes);
          !s.ok()) {
        return s;
      }
      name = fmt::format("{}: record at byte {}", file, entry.offset);
      absl::StatusOr<ImageRecord> parsed = ParseImageExample(scratch->bytes, name);
      if (!parsed.ok()) return parsed.status();
      record = *std::move(parsed);
      jpeg = record.encoded;
      if (record.label < 1 || record.label > index_.num_classes) {
        return absl::InvalidArgumentError(
            fmt::format("{}: label {} outside 1..{} (TFRecord labels are 1-based)", name,
                        record.label, index_.num_classes));
      }
      *label = static_cast<int32_t>(record.label - 1);
    }

    absl::StatusOr<JpegInfo> info = ReadJpegInfo(jpeg, name);
    if (!info.ok()) return info.status();
    const int w = info->width, h = info->height, s = opt_.image_size;
    const bool scalable = opt_.scaled_decode && info->scalable && left == nullptr;
    AxisMap ax, ay;
    bool flip = false;
    JpegDecodeRequest request;
    if (opt_.split == Split::kTrain) {
      const uint64_t stream = static_cast<uint64_t>(item.epoch * n_ + item.image);
      const CropWindow crop = SampleDistortedCrop(w, h, opt_.seed, stream);
      flip = SampleFlip(opt_.seed, stream);
      request.scale_num = scalable ? ChooseScale(crop.width, crop.height, s, s) : 8;
      const int sw = ScaledJpegSide(w, request.scale_num),
                sh = ScaledJpegSide(h, request.scale_num);
      ax = CropAxis(crop.x, crop.width, w, sw, s);
      ay = CropAxis(crop.y, crop.height, h, sh, s);
    } else {
      const EvalGeometry g = EvalResize(w, h, opt_.resize_shorter);
      if (g.resized_width < s || g.resized_height < s) {
        return absl::InvalidArgumentError(
            fmt::format("{}: {}x{} image resized to {}x{} is smaller than the {} crop", name, w, h,
                        g.resized_width, g.resized_height, s));
      }
      request.scale_num = scalable ? ChooseScale(w, h, g.resized_width, g.resized_height) : 8;
      const int sw = ScaledJpegSide(w, request.scale_num),
                sh = ScaledJpegSide(h, request.scale_num);
      ax = CentreCropAxis(g.resized_width, sw, s);
      ay = CentreCropAxis(g.resized_height, sh, s);
    }
    if (left != nullptr) {
      left->bytes.assign(jpeg);
      left->name = std::move(name);
      left->x_axis = ax;
      left->y_axis = ay;
      left->flip = flip;
      return absl::OkStatus();
    }
    request.x = ax.First();
    request.width = ax.Last(s) - request.x + 1;
    request.y = ay.First();
    request.height = ay.Last(s) - request.y + 1;
    if (absl::Status st = DecodeJpeg(jpeg, name, request, &scratch->image); !st.ok()) return st;
    const RgbImage& img = scratch->image;
    if (img.x0 > request.x || img.y0 > request.y ||
        img.x0 + img.width < request.x + request.width ||
        img.y0 + img.height < request.y + request.height) {
      return absl::InternalError(fmt::format("{}: decoded region does not cover the crop", name));
    }
    ResampleBilinear(img, ax, ay, s, s, flip, opt_.mean, opt_.layout, out);
    return absl::OkStatus();
  }

  const ImageLoaderOptions opt_;
  const DatasetIndex index_;
  const int64_t n_;
  const size_t image_floats_;
  int64_t eval_begin_ = 0, eval_end_ = 0, eval_batches_ = 0;

  std::mutex mu_;
  std::condition_variable work_cv_;  // workers wait for items
  std::condition_variable done_cv_;  // Next() and StartEval() wait for workers
  bool stop_ = false;
  bool paused_ = false;
  bool eval_active_ = false;
  int in_flight_ = 0;
  std::vector<Slot> slots_;
  int64_t next_batch_ = 0;
  int next_image_ = 0;
  int64_t consumed_ = 0;
  absl::Status failed_;
  std::map<int64_t, std::vector<int64_t>> perms_;
  std::vector<std::thread> workers_;  // last: started after everything above exists
};

ImageLoader::ImageLoader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ImageLoader::~ImageLoader() = default;

absl::StatusOr<std::unique_ptr<ImageLoader>> ImageLoader::Open(const ImageLoaderOptions& options) {
  const ImageLoaderOptions& o = options;
  if (o.image_size < 1 || o.batch_size < 1 || o.world_size < 1 || o.rank < 0 ||
      o.rank >= o.world_size || o.threads < 1 || o.prefetch_batches < 1 ||
      (o.layout != core::Layout::kNCHW && o.layout != core::Layout::kNHWC) ||
      (o.split == Split::kVal && o.resize_shorter < o.image_size)) {
    return absl::InvalidArgumentError(fmt::format(
        "ImageLoader: invalid options (image_size {}, resize_shorter {}, batch_size {}, rank {} "
        "of {}, threads {}, prefetch {}; layout must be NCHW or NHWC)",
        o.image_size, o.resize_shorter, o.batch_size, o.rank, o.world_size, o.threads,
        o.prefetch_batches));
  }
  DatasetFormat format = o.format;
  if (format == DatasetFormat::kAuto) {
    absl::StatusOr<DatasetFormat> detected = DetectFormat(o.root);
    if (!detected.ok()) return detected.status();
    format = *detected;
  }
  absl::StatusOr<DatasetIndex> index =
      !o.index_file.empty() ? CachedIndex(o.root, format, o.split, o.num_classes, o.index_file)
      : format == DatasetFormat::kImageFolder ? IndexImageFolder(o.root, o.split)
                                              : IndexTfRecords(o.root, o.split, o.num_classes);
  if (!index.ok()) return index.status();
  if (o.num_classes > 0 && format == DatasetFormat::kImageFolder &&
      o.num_classes != index->num_classes) {
    return absl::InvalidArgumentError(fmt::format("{}: {} class directories, {} expected", o.root,
                                                  index->num_classes, o.num_classes));
  }
  return std::unique_ptr<ImageLoader>(
      new ImageLoader(std::make_unique<Impl>(o, *std::move(index))));
}

int64_t ImageLoader::size() const { return impl_->size(); }
int ImageLoader::num_classes() const { return impl_->index().num_classes; }
void ImageLoader::StartEval() { impl_->StartEval(); }
absl::StatusOr<bool> ImageLoader::Next(ImageBatch* batch) { return impl_->Next(batch); }
const DatasetIndex& ImageLoader::index() const { return impl_->index(); }

}  // namespace mlperf::datasets
