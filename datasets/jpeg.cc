#include "datasets/jpeg.h"

#include <algorithm>
#include <csetjmp>
#include <cstdio>
#include <cstdlib>

// libjpeg's headers need size_t and FILE declared first.
#include <fmt/format.h>
#include <jerror.h>
#include <jpeglib.h>

#include "datasets/png.h"

namespace mlperf::datasets {
namespace {

// libjpeg reports fatal errors through error_exit, which must not return: we
// longjmp back to the caller's setjmp and turn the message into a Status.
struct ErrorManager {
  jpeg_error_mgr pub;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
  bool truncated = false;
};

void OnError(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

// Warnings are silent, except a premature end of data: libjpeg would fill the
// rest of the image with grey, which would be a silently wrong sample.
void OnMessage(j_common_ptr cinfo, int msg_level) {
  auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
  if (msg_level < 0 && cinfo->err->msg_code == JWRN_JPEG_EOF) err->truncated = true;
}

void InstallErrorManager(ErrorManager* err, jpeg_common_struct* cinfo) {
  cinfo->err = jpeg_std_error(&err->pub);
  err->pub.error_exit = OnError;
  err->pub.emit_message = OnMessage;
  err->message[0] = '\0';
}

absl::Status DecodeError(const std::string& name, const char* what) {
  return absl::DataLossError(fmt::format("{}: cannot decode JPEG: {}", name, what));
}

inline uint8_t MulDiv255(int a, int b) { return static_cast<uint8_t>((a * b + 127) / 255); }

}  // namespace

absl::StatusOr<JpegInfo> ReadJpegInfo(std::string_view bytes, const std::string& name) {
  if (IsPng(bytes)) return ReadPngInfo(bytes, name);
  jpeg_decompress_struct cinfo;
  ErrorManager err;
  InstallErrorManager(&err, reinterpret_cast<jpeg_common_struct*>(&cinfo));
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    return DecodeError(name, err.message);
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
  jpeg_read_header(&cinfo, TRUE);
  JpegInfo info{static_cast<int>(cinfo.image_width), static_cast<int>(cinfo.image_height)};
  jpeg_destroy_decompress(&cinfo);
  if (err.truncated) return DecodeError(name, "premature end of data");
  if (info.width <= 0 || info.height <= 0) return DecodeError(name, "empty image");
  return info;
}

absl::Status DecodeJpeg(std::string_view bytes, const std::string& name,
                        const JpegDecodeRequest& request, RgbImage* out) {
  if (request.scale_num < 1 || request.scale_num > 8) {
    return absl::InvalidArgumentError(
        fmt::format("{}: scale {}/8 out of range", name, request.scale_num));
  }
  if (IsPng(bytes)) {
    if (request.scale_num != 8)
      return absl::InvalidArgumentError(fmt::format("{}: a PNG decodes at scale 8/8 only", name));
    return DecodePng(bytes, name, out);
  }
  jpeg_decompress_struct cinfo;
  ErrorManager err;
  InstallErrorManager(&err, reinterpret_cast<jpeg_common_struct*>(&cinfo));
  // The error branch reads only cinfo and err, which live in memory, and no
  // object with a destructor is created between setjmp and a libjpeg call.
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    return DecodeError(name, err.message);
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
  jpeg_read_header(&cinfo, TRUE);
  const bool cmyk = cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK;
  // libjpeg converts greyscale and YCbCr to RGB itself, but not CMYK.
  cinfo.out_color_space = cmyk ? JCS_CMYK : JCS_RGB;
  cinfo.scale_num = static_cast<unsigned>(request.scale_num);
  cinfo.scale_denom = 8;
  cinfo.dct_method = JDCT_ISLOW;
  jpeg_start_decompress(&cinfo);
  const int full_w = static_cast<int>(cinfo.output_width);
  const int full_h = static_cast<int>(cinfo.output_height);

  int rx = 0, ry = 0, rw = full_w, rh = full_h;
  if (request.width > 0 && request.height > 0) {
    rx = std::clamp(request.x, 0, full_w - 1);
    ry = std::clamp(request.y, 0, full_h - 1);
    rw = std::clamp(request.width, 1, full_w - rx);
    rh = std::clamp(request.height, 1, full_h - ry);
  }
  if (rw < full_w) {
    // Chroma upsampling at the edges of a cropped scanline lacks its neighbour
    // and differs from a full decode; a margin keeps those columns outside the
    // requested window. libjpeg then widens to iMCU column boundaries, and
    // rx/rw become the real window.
    constexpr int kMargin = 8;
    const int left = std::max(0, rx - kMargin), right = std::min(full_w, rx + rw + kMargin);
    JDIMENSION xoff = static_cast<JDIMENSION>(left), width = static_cast<JDIMENSION>(right - left);
    jpeg_crop_scanline(&cinfo, &xoff, &width);
    rx = static_cast<int>(xoff);
    rw = static_cast<int>(width);
  }
  if (ry > 0) jpeg_skip_scanlines(&cinfo, static_cast<JDIMENSION>(ry));

  const int channels = cmyk ? 4 : 3;
  out->width = rw;
  out->height = rh;
  out->x0 = rx;
  out->y0 = ry;
  out->pixels.resize(static_cast<size_t>(rw) * rh * 3);
  // CMYK rows go through a scratch row and are converted to RGB below. It is
  // thread_local so that a longjmp out of libjpeg skips no destructor.
  thread_local std::vector<uint8_t> row;
  if (cmyk) row.resize(static_cast<size_t>(rw) * channels);
  for (int y = 0; y < rh; ++y) {
    uint8_t* dst = out->pixels.data() + static_cast<size_t>(y) * rw * 3;
    JSAMPROW target = cmyk ? row.data() : dst;
    if (jpeg_read_scanlines(&cinfo, &target, 1) != 1) {
      jpeg_destroy_decompress(&cinfo);
      return DecodeError(name, "premature end of data");
    }
    if (cmyk) {
      // Adobe writers store CMYK inverted (0 = full ink); others store it plain.
      const bool inverted = cinfo.saw_Adobe_marker;
      for (int x = 0; x < rw; ++x) {
        const uint8_t* p = &row[static_cast<size_t>(x) * 4];
        const int k = inverted ? p[3] : 255 - p[3];
        for (int c = 0; c < 3; ++c) dst[x * 3 + c] = MulDiv255(inverted ? p[c] : 255 - p[c], k);
      }
    }
  }
  // Stopping early is allowed; it releases the decoder without reading the rest.
  if (ry + rh < full_h) {
    jpeg_abort_decompress(&cinfo);
  } else {
    jpeg_finish_decompress(&cinfo);
  }
  jpeg_destroy_decompress(&cinfo);
  if (err.truncated) return DecodeError(name, "premature end of data");
  return absl::OkStatus();
}

absl::StatusOr<std::string> EncodeJpegComponents(const uint8_t* pixels, int width, int height,
                                                 int components, int quality) {
  if (components != 1 && components != 3 && components != 4) {
    return absl::InvalidArgumentError(fmt::format("cannot encode {} components", components));
  }
  jpeg_compress_struct cinfo;
  ErrorManager err;
  InstallErrorManager(&err, reinterpret_cast<jpeg_common_struct*>(&cinfo));
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  if (setjmp(err.jump)) {
    jpeg_destroy_compress(&cinfo);
    std::free(buffer);
    return absl::InternalError(fmt::format("cannot encode JPEG: {}", err.message));
  }
  jpeg_create_compress(&cinfo);
  jpeg_mem_dest(&cinfo, &buffer, &size);
  cinfo.image_width = static_cast<JDIMENSION>(width);
  cinfo.image_height = static_cast<JDIMENSION>(height);
  cinfo.input_components = components;
  cinfo.in_color_space = components == 1 ? JCS_GRAYSCALE : components == 3 ? JCS_RGB : JCS_CMYK;
  jpeg_set_defaults(&cinfo);
  if (components == 4) jpeg_set_colorspace(&cinfo, JCS_CMYK);  // also writes the Adobe marker
  jpeg_set_quality(&cinfo, quality, TRUE);
  jpeg_start_compress(&cinfo, TRUE);
  const size_t stride = static_cast<size_t>(width) * components;
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = const_cast<JSAMPROW>(pixels + cinfo.next_scanline * stride);
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  std::string bytes(reinterpret_cast<const char*>(buffer), size);
  std::free(buffer);
  return bytes;
}

absl::StatusOr<std::string> EncodeJpeg(const RgbImage& image, int quality) {
  if (image.pixels.size() != static_cast<size_t>(image.width) * image.height * 3) {
    return absl::InvalidArgumentError("EncodeJpeg: pixel buffer does not match the size");
  }
  return EncodeJpegComponents(image.pixels.data(), image.width, image.height, 3, quality);
}

}  // namespace mlperf::datasets
