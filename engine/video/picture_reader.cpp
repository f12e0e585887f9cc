// read_picture: one still through FFmpeg's demuxers and decoders, every error a refusal that names the
// file. The decoder is asked to fail on damage (AV_EF_EXPLODE) instead of concealing it.
extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>
}

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "plan/error.h"
#include "video/av_error.h"
#include "video/picture.h"
#include "video/picture_orientation.h"

namespace studio::video {

namespace {

const char* kWhatWorks = "an 8-bit RGB or greyscale PNG, JPEG, WebP, BMP or TIFF would work";
const char* kAnimated = "is animated (more than one frame); the model takes one picture: export the frame you want "
                        "as a PNG";

struct Input {
  AVFormatContext* fmt = nullptr;
  ~Input() { avformat_close_input(&fmt); }
};

// A frame's pixels as RGB24: copied where they already are, else through swscale (JPEG's YUV).
Picture to_rgb(const AVFrame& f) {
  Picture p{f.width, f.height, std::vector<uint8_t>(size_t(f.width) * size_t(f.height) * 3)};
  const auto format = AVPixelFormat(f.format);
  const bool direct = format == AV_PIX_FMT_RGB24 || format == AV_PIX_FMT_RGBA || format == AV_PIX_FMT_GRAY8 ||
                      format == AV_PIX_FMT_PAL8;
  if (!direct) {
    // Not PIL's bytes for JPEG: libjpeg and swscale upsample the chroma differently (test_pictures bounds it).
    SwsContext* sws = sws_getContext(f.width, f.height, format, f.width, f.height, AV_PIX_FMT_RGB24,
                                     SWS_BICUBIC | SWS_ACCURATE_RND | SWS_FULL_CHR_H_INT | SWS_FULL_CHR_H_INP,
                                     nullptr, nullptr, nullptr);
    if (!sws) throw std::runtime_error("swscale cannot convert this picture's pixels to RGB");
    uint8_t* dst[1] = {p.rgb.data()};
    const int stride[1] = {3 * f.width};
    sws_scale(sws, f.data, f.linesize, 0, f.height, dst, stride);
    sws_freeContext(sws);
    return p;
  }
  const auto* palette = reinterpret_cast<const uint32_t*>(f.data[1]);  // PAL8: ARGB in native order
  for (int y = 0; y < f.height; ++y) {
    const uint8_t* row = f.data[0] + ptrdiff_t(y) * f.linesize[0];
    uint8_t* out = &p.rgb[size_t(y) * size_t(f.width) * 3];
    for (int x = 0; x < f.width; ++x, out += 3) {
      if (format == AV_PIX_FMT_RGB24) std::copy_n(row + 3 * x, 3, out);
      else if (format == AV_PIX_FMT_RGBA) std::copy_n(row + 4 * x, 3, out);  // alpha dropped, as PIL's convert
      else if (format == AV_PIX_FMT_GRAY8) std::fill_n(out, 3, row[x]);
      else {
        const uint32_t c = palette[row[x]];
        out[0] = uint8_t(c >> 16), out[1] = uint8_t(c >> 8), out[2] = uint8_t(c);
      }
    }
  }
  return p;
}

// Whether the file is an animated WebP (a VP8X header with its animation flag), which this FFmpeg's WebP decoder
// cannot read at all: it would be refused as damaged.
bool animated_webp(const std::string& path) {
  char head[21] = {};
  std::ifstream in(path, std::ios::binary);
  in.read(head, sizeof head);
  return in && std::string_view(head, 4) == "RIFF" && std::string_view(head + 8, 8) == "WEBPVP8X" && (head[20] & 0x02);
}

// A PNG's or a JPEG's size as its header gives it, {0, 0} for other files. FFmpeg refuses pictures of more than
// about 268 million pixels as invalid data before it says their size; the header says it first.
std::pair<uint32_t, uint32_t> header_size(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  unsigned char b[24] = {};
  in.read(reinterpret_cast<char*>(b), sizeof b);
  const auto be = [](const unsigned char* p, int n) {
    uint32_t v = 0;
    for (int i = 0; i < n; ++i) v = v << 8 | p[i];
    return v;
  };
  if (in && std::memcmp(b, "\x89PNG\r\n\x1a\n", 8) == 0 && std::memcmp(b + 12, "IHDR", 4) == 0)
    return {be(b + 16, 4), be(b + 20, 4)};
  if (b[0] != 0xFF || b[1] != 0xD8) return {0, 0};
  // JPEG: the markers in turn (fill bytes skipped, standalone ones without a length) to the first start of frame
  // (SOF0-SOF15 but DHT, JPG and DAC): its length, precision, height and width.
  in.clear();
  in.seekg(2);
  while (in.get() == 0xFF) {
    int marker = in.get();
    while (marker == 0xFF) marker = in.get();
    if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD7)) continue;
    unsigned char m[7];
    if (marker == EOF || !in.read(reinterpret_cast<char*>(m), 2)) break;
    if (marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC)
      return in.read(reinterpret_cast<char*>(m + 2), 5) ? std::pair{be(m + 5, 2), be(m + 3, 2)} : std::pair{0u, 0u};
    if (be(m, 2) < 2) break;
    in.seekg(be(m, 2) - 2, std::ios::cur);
  }
  return {0, 0};
}

std::string too_large(const std::string& who, uint32_t width, uint32_t height) {
  return who + "is " + std::to_string(width) + " x " + std::to_string(height) + " pixels, larger than " +
         std::to_string(kMaxPictureSide) + " on a side; resize it first (the models take at most 1280 x 720)";
}

std::string damaged(const std::string& who, const std::string& detail) {
  return who + "is damaged, truncated or not a picture (" + detail + "); open it in an image editor and save it "
         "again, or use another copy: " + kWhatWorks;
}

// FFmpeg's own log lines are quiet while a picture is read: every problem becomes one message of ours.
struct QuietLog {
  int was = av_log_get_level();
  QuietLog() { av_log_set_level(AV_LOG_FATAL); }
  ~QuietLog() { av_log_set_level(was); }
};

}  // namespace

Picture read_picture(const std::string& path, const std::string& flag) {
  const QuietLog quiet;
  const std::string who = flag + " " + path + ": ";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) throw InputError(who + "no such file");
  if (animated_webp(path)) throw InputError(who + kAnimated);
  if (const auto [w, h] = header_size(path); w > uint32_t(kMaxPictureSide) || h > uint32_t(kMaxPictureSide))
    throw InputError(too_large(who, w, h));
  Input in;
  if (int e = avformat_open_input(&in.fmt, path.c_str(), nullptr, nullptr); e < 0)
    throw InputError(who + "not a picture FFmpeg can read (" + av_error_text(e) + "); " + kWhatWorks);
  if (int e = avformat_find_stream_info(in.fmt, nullptr); e < 0)
    throw InputError(who + "not a picture FFmpeg can read (" + av_error_text(e) + "); " + kWhatWorks);
  const int stream = av_find_best_stream(in.fmt, AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
  if (stream < 0) throw InputError(who + "holds no picture; " + kWhatWorks);
  const AVCodecParameters* par = in.fmt->streams[stream]->codecpar;
  if (par->width > kMaxPictureSide || par->height > kMaxPictureSide)
    throw InputError(too_large(who, uint32_t(par->width), uint32_t(par->height)));
  const AVCodec* codec = avcodec_find_decoder(par->codec_id);
  if (!codec) throw InputError(who + "this FFmpeg has no decoder for its format; " + kWhatWorks);
  auto free_ctx = [](AVCodecContext* x) { avcodec_free_context(&x); };
  std::unique_ptr<AVCodecContext, decltype(free_ctx)> dec(avcodec_alloc_context3(codec), free_ctx);
  avcodec_parameters_to_context(dec.get(), par);
  // TIFF's decoder explodes on tags it does not know (a resolution unit): a sound file; damage still shows in the
  // frame's error flags below.
  dec->err_recognition = (par->codec_id == AV_CODEC_ID_TIFF ? 0 : AV_EF_EXPLODE) | AV_EF_CRCCHECK | AV_EF_BITSTREAM |
                         AV_EF_BUFFER;
  dec->thread_count = 1;
  if (int e = avcodec_open2(dec.get(), codec, nullptr); e < 0)
    throw InputError(who + "cannot be decoded (" + av_error_text(e) + ")");

  auto free_frame = [](AVFrame* x) { av_frame_free(&x); };
  auto free_packet = [](AVPacket* x) { av_packet_free(&x); };
  std::unique_ptr<AVFrame, decltype(free_frame)> frame(av_frame_alloc(), free_frame), more(av_frame_alloc(), free_frame);
  std::unique_ptr<AVPacket, decltype(free_packet)> pkt(av_packet_alloc(), free_packet);
  int frames = 0;
  bool draining = false;
  // Every frame of the stream: a still has one.
  while (true) {
    int e = avcodec_receive_frame(dec.get(), frames == 0 ? frame.get() : more.get());
    if (e == 0) {
      AVFrame& f = frames == 0 ? *frame : *more;
      if (f.decode_error_flags || (f.flags & AV_FRAME_FLAG_CORRUPT))
        throw InputError(damaged(who, "the decoder reports missing or corrupt data"));
      if (++frames > 1) throw InputError(who + kAnimated);
      continue;
    }
    if (e == AVERROR_EOF) break;
    if (e != AVERROR(EAGAIN)) throw InputError(damaged(who, av_error_text(e)));
    if (draining) break;
    e = av_read_frame(in.fmt, pkt.get());
    if (e == AVERROR_EOF) {
      draining = true;
      avcodec_send_packet(dec.get(), nullptr);
      continue;
    }
    if (e < 0) throw InputError(damaged(who, av_error_text(e)));
    if (pkt->stream_index == stream) {
      e = avcodec_send_packet(dec.get(), pkt.get());
      if (e < 0 && e != AVERROR(EAGAIN)) throw InputError(damaged(who, av_error_text(e)));
    }
    av_packet_unref(pkt.get());
  }
  if (frames == 0) throw InputError(damaged(who, "nothing could be decoded from it"));

  const auto* desc = av_pix_fmt_desc_get(AVPixelFormat(frame->format));
  if (!desc) throw InputError(who + "has pixels in a format FFmpeg does not describe; " + kWhatWorks);
  if (desc->comp[0].depth > 8)
    throw InputError(who + "has " + std::to_string(desc->comp[0].depth) + " bits per channel (" + desc->name +
                     "); the models take 8-bit pictures: save it with 8 bits per channel");
  // FFmpeg's JPEG decoder hands CMYK and YCCK pictures out as 4-channel planar GBR(A).
  if (par->codec_id == AV_CODEC_ID_MJPEG && desc->nb_components == 4)
    throw InputError(who + "is a CMYK JPEG; the models take RGB: convert it to RGB (e.g. export as sRGB)");
  if (desc->flags & AV_PIX_FMT_FLAG_BITSTREAM)
    throw InputError(who + "is a 1-bit picture; " + kWhatWorks);
  // Phones keep a portrait's pixels sideways and say so in EXIF; FFmpeg's JPEG decoder hands the tag on.
  const AVDictionaryEntry* tag = av_dict_get(frame->metadata, "Orientation", nullptr, 0);
  return upright(to_rgb(*frame), tag ? std::atoi(tag->value) : 1);
}

}  // namespace studio::video
