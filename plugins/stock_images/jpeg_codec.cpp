// JPEG decoding with libjpeg-turbo, errors and warnings routed through our own handlers.
#include "image_codec.hpp"

#include <cstdio>  // jpeglib.h needs FILE and size_t first
#include <jpeglib.h>
#include <jerror.h>  // message codes (JWRN_JPEG_EOF)

#include <csetjmp>
#include <cstring>

namespace stock_images {
namespace {

struct JpegErrors {
  jpeg_error_mgr pub;  // first, so libjpeg's j_common_ptr->err casts back to JpegErrors
  std::jmp_buf jump;
  bool unsupported;
  char message[JMSG_LENGTH_MAX];
};

// As PngJob: reached only through pointers from the functions that call setjmp.
struct JpegJob {
  jpeg_decompress_struct cinfo;
  JpegErrors errors;
  bool created;
  int channels;  // asked for (0: as stored); here, not an argument, so that a longjmp cannot clobber it
};

void on_error(j_common_ptr cinfo) {
  auto* errors = reinterpret_cast<JpegErrors*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, errors->message);
  std::longjmp(errors->jump, 1);
}

// libjpeg reports damaged data ("Corrupt JPEG data: ...", "Premature end of JPEG file") as warnings and goes on
// with grey fill. Silently wrong pixels are worse than an error, so a warning ends the decode too.
void on_message(j_common_ptr cinfo, int level) {
  if (level < 0) on_error(cinfo);
}

void on_output(j_common_ptr) {}  // never print to stderr

bool read_header(JpegJob* job, const uint8_t* data, size_t size, JDIMENSION* height,
                 JDIMENSION* width, int* out_channels) {
  if (setjmp(job->errors.jump)) return false;
  jpeg_decompress_struct* cinfo = &job->cinfo;
  jpeg_create_decompress(cinfo);
  job->created = true;
  jpeg_mem_src(cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(cinfo, TRUE);
  if (cinfo->jpeg_color_space == JCS_CMYK || cinfo->jpeg_color_space == JCS_YCCK) {
    job->errors.unsupported = true;
    std::snprintf(job->errors.message, sizeof job->errors.message, "CMYK/YCCK JPEGs are not supported");
    return false;
  }
  if (job->channels == 1 || (job->channels == 0 && cinfo->jpeg_color_space == JCS_GRAYSCALE))
    cinfo->out_color_space = JCS_GRAYSCALE;
  else
    cinfo->out_color_space = JCS_RGB;
  // The declared size, judged by the caller before jpeg_start_decompress allocates for it (a progressive JPEG's
  // coefficient buffers are as large as the image).
  *height = cinfo->image_height;
  *width = cinfo->image_width;
  *out_channels = cinfo->out_color_space == JCS_GRAYSCALE ? 1 : 3;
  return true;
}

bool start_decompress(JpegJob* job) {
  if (setjmp(job->errors.jump)) return false;
  jpeg_start_decompress(&job->cinfo);
  return true;
}

bool read_pixels(JpegJob* job, uint8_t* pixels, size_t row_bytes) {
  if (setjmp(job->errors.jump)) return false;
  jpeg_decompress_struct* cinfo = &job->cinfo;
  while (cinfo->output_scanline < cinfo->output_height) {
    JSAMPROW row = pixels + size_t{cinfo->output_scanline} * row_bytes;
    jpeg_read_scanlines(cinfo, &row, 1);
  }
  jpeg_finish_decompress(cinfo);
  return true;
}

[[noreturn]] void fail(const JpegJob& job, const uint8_t* data, size_t size, const std::string& what) {
  if (job.errors.unsupported)
    throw ramjet::Error(RAMJET_ERR_UNSUPPORTED, what + ": " + job.errors.message);
  if (job.errors.pub.msg_code == JWRN_JPEG_EOF)
    throw ramjet::Error(RAMJET_ERR_CORRUPT_DATA, what + ": truncated JPEG: the data ends at byte " +
                                                     std::to_string(size) + " before the image does (" +
                                                     job.errors.message + ")");
  // Roughly where the decoder stood: the source's next unread byte (the entropy decoder reads a little ahead).
  size_t offset = size;
  const jpeg_source_mgr* src = job.created ? job.cinfo.src : nullptr;
  if (src != nullptr && src->next_input_byte >= data && src->next_input_byte <= data + size)
    offset = static_cast<size_t>(src->next_input_byte - data);
  throw ramjet::Error(RAMJET_ERR_CORRUPT_DATA,
                      what + ": corrupt JPEG near byte " + std::to_string(offset) + ": " + job.errors.message);
}

struct JpegJobOwner {
  JpegJob& job;
  ~JpegJobOwner() {
    if (job.created) jpeg_destroy_decompress(&job.cinfo);
  }
};

}  // namespace

ramjet::Tensor decode_jpeg(const uint8_t* data, size_t size, int channels, const std::string& what) {
  JpegJob job{};
  job.cinfo.err = jpeg_std_error(&job.errors.pub);
  job.errors.pub.error_exit = on_error;
  job.errors.pub.emit_message = on_message;
  job.errors.pub.output_message = on_output;
  JpegJobOwner owner{job};

  JDIMENSION height = 0, width = 0;
  int out_channels = 0;
  job.channels = channels;
  if (!read_header(&job, data, size, &height, &width, &out_channels)) fail(job, data, size, what);
  check_image_size(height, width, static_cast<uint64_t>(out_channels), what);
  // libjpeg's own working memory (progressive coefficients, colour conversion) stays near the image's size too.
  job.cinfo.mem->max_memory_to_use = static_cast<long>(2 * kMaxImageBytes);
  if (!start_decompress(&job)) fail(job, data, size, what);
  if (job.cinfo.output_height != height || job.cinfo.output_width != width ||
      job.cinfo.output_components != out_channels)
    throw ramjet::Error(RAMJET_ERR_INTERNAL, what + ": the JPEG decoder changed the image size while starting");
  ramjet::Tensor image = ramjet::Tensor::zeros(ramjet::dtype_of<uint8_t>(), {int64_t{height}, int64_t{width}, int64_t{out_channels}});
  if (!read_pixels(&job, image.data<uint8_t>(), size_t{width} * size_t(out_channels))) fail(job, data, size, what);
  return image;
}

}  // namespace stock_images
