#include "datasets/cuda/device_image_decoder.h"

#include <fmt/format.h>
#include <nvjpeg.h>

#include <atomic>
#include <cstdio>
#include <utility>
#include <vector>

#include "base/check.h"
#include "datasets/cuda/device_resample.h"
#include "datasets/jpeg.h"

namespace mlperf::datasets::cuda {
namespace {

absl::Status NvjpegStatus(nvjpegStatus_t s, const char* what) {
  if (s == NVJPEG_STATUS_SUCCESS) return absl::OkStatus();
  return absl::InternalError(fmt::format("nvJPEG: {} failed with status {}", what, int(s)));
}

absl::Status CudaStatus(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(fmt::format("CUDA: {}: {}", what, cudaGetErrorString(e)));
}

// One batch position's decoded image on the device, kept between batches.
struct Surface {
  uint8_t* pixels = nullptr;
  size_t capacity = 0;
  int width = 0, height = 0;
};

}  // namespace

class DeviceImageDecoder::Impl {
 public:
  explicit Impl(const DeviceDecoderOptions& options) : opt_(options) {}

  ~Impl() {
    for (Surface& s : surfaces_) {
      if (s.pixels != nullptr) cudaFree(s.pixels);
    }
    if (parsed_ != nullptr) nvjpegJpegStreamDestroy(parsed_);
    if (state_ != nullptr) nvjpegJpegStateDestroy(state_);
    if (handle_ != nullptr) nvjpegDestroy(handle_);
  }

  absl::Status Init() {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
      return absl::FailedPreconditionError("device decoding needs a CUDA device; there is none");
    }
    if (opt_.image_size < 1) return absl::InvalidArgumentError("device decoder: image_size < 1");
    if (opt_.backend != JpegBackend::kCuda &&
        nvjpegCreateEx(NVJPEG_BACKEND_HARDWARE, nullptr, nullptr, 0, &handle_) ==
            NVJPEG_STATUS_SUCCESS) {
      hardware_ = true;
    } else if (opt_.backend == JpegBackend::kHardware) {
      return absl::FailedPreconditionError("nvJPEG: this GPU has no hardware JPEG decoder");
    } else if (absl::Status s = NvjpegStatus(
                   nvjpegCreateEx(NVJPEG_BACKEND_DEFAULT, nullptr, nullptr, 0, &handle_),
                   "creating the decoder");
               !s.ok()) {
      return s;
    }
    if (absl::Status s = NvjpegStatus(nvjpegJpegStateCreate(handle_, &state_), "state"); !s.ok())
      return s;
    if (hardware_) return NvjpegStatus(nvjpegJpegStreamCreate(handle_, &parsed_), "stream");
    return absl::OkStatus();
  }

  const char* backend_name() const { return hardware_ ? "hardware" : "cuda"; }
  int image_size() const { return opt_.image_size; }

  absl::Status Decode(const ImageBatch& batch, float* out, cudaStream_t stream) {
    const size_t size = batch.encoded.size();
    const int count = batch.count;
    if (size == 0 || count < 0 || static_cast<size_t>(count) > size) {
      return absl::InvalidArgumentError(
          "device decoder: the batch holds no encoded images (open the loader with "
          "ImageOutput::kEncoded)");
    }
    if (surfaces_.size() < size) surfaces_.resize(size);
    std::vector<int> on_device, on_host;
    for (int i = 0; i < count; ++i) {
      (NvjpegCanDecode(batch.encoded[static_cast<size_t>(i)], i) ? on_device : on_host)
          .push_back(i);
    }
    if (absl::Status s =
            on_device.empty() ? absl::OkStatus() : DecodeOnDevice(batch, on_device, stream);
        !s.ok()) {
      // nvJPEG refused the batch (a file it cannot read): the host decodes
      // it instead, and names the culprit if libjpeg refuses it too.
      if (!said_refused_) {
        std::fprintf(stderr, "device decoder: %s; that batch is decoded on the host\n",
                     std::string(s.message()).c_str());
        said_refused_ = true;
      }
      on_host.insert(on_host.end(), on_device.begin(), on_device.end());
      on_device.clear();
      initialized_batch_ = 0;  // nvJPEG asks for a new initialisation after a failure
    }
    for (int i : on_host) {
      if (absl::Status s = DecodeOnHost(batch.encoded[static_cast<size_t>(i)], i, stream); !s.ok())
        return s;
    }
    device_decoded_ += static_cast<int64_t>(on_device.size());
    host_decoded_ += static_cast<int64_t>(on_host.size());

    std::vector<ResampleJob> jobs(static_cast<size_t>(count));
    for (int i = 0; i < count; ++i) {
      const EncodedImage& e = batch.encoded[static_cast<size_t>(i)];
      const Surface& s = surfaces_[static_cast<size_t>(i)];
      const int n = opt_.image_size;
      if (e.x_axis.First() < 0 || e.x_axis.Last(n) >= s.width || e.y_axis.First() < 0 ||
          e.y_axis.Last(n) >= s.height) {
        return absl::InternalError(
            fmt::format("{}: the decoded {}x{} image does not cover the crop drawn from its header",
                        e.name, s.width, s.height));
      }
      jobs[static_cast<size_t>(i)] = {
          {s.pixels, s.width, s.height, 0, 0}, e.x_axis, e.y_axis, e.flip};
    }
    const size_t image_floats = static_cast<size_t>(3) * opt_.image_size * opt_.image_size;
    if (static_cast<size_t>(count) < size) {
      absl::Status s =
          CudaStatus(cudaMemsetAsync(out + count * image_floats, 0,
                                     (size - count) * image_floats * sizeof(float), stream),
                     "zeroing the padding");
      if (!s.ok()) return s;
    }
    resampler_.Run(jobs, opt_.image_size, opt_.mean, opt_.layout, out, stream);
    return CudaStatus(cudaStreamSynchronize(stream), "decoding a batch");
  }

  int64_t device_decoded() const { return device_decoded_; }
  int64_t host_decoded() const { return host_decoded_; }

 private:
  absl::Status Reserve(int i, int width, int height) {
    Surface& s = surfaces_[static_cast<size_t>(i)];
    const size_t bytes = static_cast<size_t>(width) * height * 3;
    if (bytes > s.capacity) {
      if (s.pixels != nullptr) cudaFree(s.pixels);
      s.pixels = nullptr;
      s.capacity = 0;
      if (absl::Status st = CudaStatus(cudaMalloc(&s.pixels, bytes), "allocating an image");
          !st.ok())
        return st;
      s.capacity = bytes;
    }
    s.width = width;
    s.height = height;
    return absl::OkStatus();
  }

  // Three-component JPEGs that nvJPEG (and, on the hardware backend, the
  // engine) accepts; the rest go the host route.
  bool NvjpegCanDecode(const EncodedImage& e, int i) {
    const auto* data = reinterpret_cast<const unsigned char*>(e.bytes.data());
    int components = 0;
    nvjpegChromaSubsampling_t subsampling;
    int widths[NVJPEG_MAX_COMPONENT], heights[NVJPEG_MAX_COMPONENT];
    if (nvjpegGetImageInfo(handle_, data, e.bytes.size(), &components, &subsampling, widths,
                           heights) != NVJPEG_STATUS_SUCCESS ||
        components != 3 || subsampling == NVJPEG_CSS_UNKNOWN || subsampling == NVJPEG_CSS_GRAY) {
      return false;
    }
    if (hardware_) {
      int unsupported = 1;  // nvJPEG's convention: 0 means supported
      if (nvjpegJpegStreamParse(handle_, data, e.bytes.size(), 0, 0, parsed_) !=
              NVJPEG_STATUS_SUCCESS ||
          nvjpegDecodeBatchedSupported(handle_, parsed_, &unsupported) != NVJPEG_STATUS_SUCCESS ||
          unsupported != 0) {
        return false;
      }
    }
    return Reserve(i, widths[0], heights[0]).ok();
  }

  absl::Status DecodeOnDevice(const ImageBatch& batch, const std::vector<int>& which,
                              cudaStream_t stream) {
    const int n = static_cast<int>(which.size());
    if (initialized_batch_ != n) {
      if (absl::Status s =
              NvjpegStatus(nvjpegDecodeBatchedInitialize(handle_, state_, n, 1, NVJPEG_OUTPUT_RGBI),
                           "initialising a batch");
          !s.ok())
        return s;
      initialized_batch_ = n;
    }
    std::vector<const unsigned char*> data;
    std::vector<size_t> lengths;
    std::vector<nvjpegImage_t> images(static_cast<size_t>(n));
    for (int k = 0; k < n; ++k) {
      const EncodedImage& e = batch.encoded[static_cast<size_t>(which[static_cast<size_t>(k)])];
      const Surface& s = surfaces_[static_cast<size_t>(which[static_cast<size_t>(k)])];
      data.push_back(reinterpret_cast<const unsigned char*>(e.bytes.data()));
      lengths.push_back(e.bytes.size());
      images[static_cast<size_t>(k)].channel[0] = s.pixels;
      images[static_cast<size_t>(k)].pitch[0] = static_cast<size_t>(s.width) * 3;
    }
    return NvjpegStatus(
        nvjpegDecodeBatched(handle_, state_, data.data(), lengths.data(), images.data(), stream),
        "decoding a batch");
  }

  absl::Status DecodeOnHost(const EncodedImage& e, int i, cudaStream_t stream) {
    if (absl::Status s = DecodeJpeg(e.bytes, e.name, {}, &host_image_); !s.ok()) return s;
    if (absl::Status s = Reserve(i, host_image_.width, host_image_.height); !s.ok()) return s;
    const Surface& surface = surfaces_[static_cast<size_t>(i)];
    if (absl::Status s =
            CudaStatus(cudaMemcpyAsync(surface.pixels, host_image_.pixels.data(),
                                       host_image_.pixels.size(), cudaMemcpyHostToDevice, stream),
                       "uploading an image");
        !s.ok())
      return s;
    // host_image_ is reused for the next one.
    return CudaStatus(cudaStreamSynchronize(stream), "uploading an image");
  }

  const DeviceDecoderOptions opt_;
  nvjpegHandle_t handle_ = nullptr;
  nvjpegJpegState_t state_ = nullptr;
  nvjpegJpegStream_t parsed_ = nullptr;
  bool hardware_ = false;
  int initialized_batch_ = 0;
  std::vector<Surface> surfaces_;
  DeviceResampler resampler_;
  RgbImage host_image_;
  bool said_refused_ = false;  // the first refusal goes to stderr, once
  // Read by other threads than the decoding one (a queue's consumer).
  std::atomic<int64_t> device_decoded_{0}, host_decoded_{0};
};

absl::StatusOr<std::unique_ptr<DeviceImageDecoder>> DeviceImageDecoder::Create(
    const DeviceDecoderOptions& options) {
  auto impl = std::make_unique<Impl>(options);
  if (absl::Status s = impl->Init(); !s.ok()) return s;
  return std::unique_ptr<DeviceImageDecoder>(new DeviceImageDecoder(std::move(impl)));
}

DeviceImageDecoder::DeviceImageDecoder(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DeviceImageDecoder::~DeviceImageDecoder() = default;

absl::Status DeviceImageDecoder::Decode(const ImageBatch& batch, float* out, cudaStream_t stream) {
  return impl_->Decode(batch, out, stream);
}
const char* DeviceImageDecoder::backend_name() const { return impl_->backend_name(); }
int DeviceImageDecoder::image_size() const { return impl_->image_size(); }
int64_t DeviceImageDecoder::device_decoded() const { return impl_->device_decoded(); }
int64_t DeviceImageDecoder::host_decoded() const { return impl_->host_decoded(); }

}  // namespace mlperf::datasets::cuda
