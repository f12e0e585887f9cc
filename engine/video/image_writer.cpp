#include "video/image_writer.h"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/crc.h>
#include <libavutil/imgutils.h>
#include <libswscale/swscale.h>
}

#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "plan/partial_file.h"
#include "plan/error.h"
#include "plan/output_format.h"
#include "plan/run_settings.h"
#include "video/placing.h"
#include "video/embedded_settings.h"

namespace fs = std::filesystem;

namespace studio::video {

namespace {

void check(int code, const std::string& path, const char* what) {
  if (code >= 0) return;
  char buf[AV_ERROR_MAX_STRING_SIZE] = {0};
  av_strerror(code, buf, sizeof buf);
  throw InputError("--output " + path + ": " + what + " failed: " + buf);
}

struct Codec {
  AVCodecID id;
  AVPixelFormat pix;
};

Codec codec_for(plan::Format f) {
  switch (f) {
    case plan::Format::ImageJPEG: return {AV_CODEC_ID_MJPEG, AV_PIX_FMT_YUVJ420P};
    case plan::Format::ImageWebP: return {AV_CODEC_ID_WEBP, AV_PIX_FMT_YUV420P};
    default: return {AV_CODEC_ID_PNG, AV_PIX_FMT_RGB24};
  }
}

// One frame through the encoder: the file's bytes.
std::vector<uint8_t> encode(const std::string& path, const uint8_t* rgb, int width, int height, Codec c,
                            std::string& encoder_name) {
  const AVCodec* codec = avcodec_find_encoder(c.id);
  if (!codec) throw InputError("--output " + path + ": this FFmpeg has no " + avcodec_get_name(c.id) + " encoder");
  encoder_name = codec->name;
  auto free_ctx = [](AVCodecContext* x) { avcodec_free_context(&x); };
  std::unique_ptr<AVCodecContext, decltype(free_ctx)> enc(avcodec_alloc_context3(codec), free_ctx);
  enc->width = width;
  enc->height = height;
  enc->pix_fmt = c.pix;
  enc->time_base = {1, 1};
  if (c.id == AV_CODEC_ID_MJPEG) {
    enc->color_range = AVCOL_RANGE_JPEG;
    enc->flags |= AV_CODEC_FLAG_QSCALE;
    enc->global_quality = FF_QP2LAMBDA * 2;  // high quality
  }
  check(avcodec_open2(enc.get(), codec, nullptr), path, "opening the encoder");
  auto free_frame = [](AVFrame* x) { av_frame_free(&x); };
  std::unique_ptr<AVFrame, decltype(free_frame)> frame(av_frame_alloc(), free_frame);
  frame->format = c.pix;
  frame->width = width;
  frame->height = height;
  check(av_frame_get_buffer(frame.get(), 0), path, "allocating a frame");
  SwsContext* sws = sws_getContext(width, height, AV_PIX_FMT_RGB24, width, height, c.pix, SWS_BICUBIC, nullptr,
                                   nullptr, nullptr);
  if (!sws) throw InputError("--output " + path + ": cannot convert RGB to the encoder's pixel format");
  const uint8_t* src[1] = {rgb};
  const int stride[1] = {3 * width};
  sws_scale(sws, src, stride, 0, height, frame->data, frame->linesize);
  sws_freeContext(sws);
  check(avcodec_send_frame(enc.get(), frame.get()), path, "encoding");
  check(avcodec_send_frame(enc.get(), nullptr), path, "flushing the encoder");
  auto free_pkt = [](AVPacket* x) { av_packet_free(&x); };
  std::unique_ptr<AVPacket, decltype(free_pkt)> pkt(av_packet_alloc(), free_pkt);
  std::vector<uint8_t> bytes;
  while (true) {
    const int r = avcodec_receive_packet(enc.get(), pkt.get());
    if (r == AVERROR(EAGAIN) || r == AVERROR_EOF) break;
    check(r, path, "encoding");
    bytes.insert(bytes.end(), pkt->data, pkt->data + pkt->size);
    av_packet_unref(pkt.get());
  }
  return bytes;
}

void put_u32(std::vector<uint8_t>& out, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) out.push_back(uint8_t(v >> s));
}

bool latin1(const std::string& s) {
  for (unsigned char ch : s)
    if (ch >= 0x80) return false;  // plain ASCII is Latin-1; anything else is written as UTF-8 in iTXt
  return true;
}

// A PNG text chunk (length, type, data, CRC) named `keyword`.
std::vector<uint8_t> text_chunk(const std::string& keyword, const std::string& raw) {
  std::string text;  // text chunks hold no NUL
  for (char ch : raw)
    if (ch != '\0') text += ch;
  const bool plain = latin1(text);
  std::vector<uint8_t> data;
  data.insert(data.end(), keyword.begin(), keyword.end());
  data.push_back(0);
  if (!plain) data.insert(data.end(), {0, 0, 0, 0});  // iTXt: no compression, no language, no translated keyword
  data.insert(data.end(), text.begin(), text.end());
  std::vector<uint8_t> chunk;
  put_u32(chunk, uint32_t(data.size()));
  const char* type = plain ? "tEXt" : "iTXt";
  chunk.insert(chunk.end(), type, type + 4);
  chunk.insert(chunk.end(), data.begin(), data.end());
  const uint32_t crc = av_crc(av_crc_get_table(AV_CRC_32_IEEE_LE), 0xFFFFFFFFu, chunk.data() + 4, chunk.size() - 4) ^
                       0xFFFFFFFFu;
  put_u32(chunk, crc);
  return chunk;
}

// The PNG with text chunks after its header chunk (signature 8 bytes, IHDR 25), in the order given.
std::vector<uint8_t> with_texts(const std::vector<uint8_t>& png, const std::vector<std::pair<std::string, std::string>>& texts,
                                const std::string& path) {
  static const uint8_t kSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (png.size() < 33 || std::memcmp(png.data(), kSignature, 8) != 0 || std::memcmp(png.data() + 12, "IHDR", 4) != 0)
    throw InputError("--output " + path + ": the PNG encoder wrote something that does not start with a header chunk");
  std::vector<uint8_t> out(png.begin(), png.begin() + 33);
  for (const auto& [keyword, text] : texts) {
    const auto chunk = text_chunk(keyword, text);
    out.insert(out.end(), chunk.begin(), chunk.end());
  }
  out.insert(out.end(), png.begin() + 33, png.end());
  return out;
}

void write_file(const std::string& file, const void* data, size_t size, const std::string& path) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(static_cast<const char*>(data), std::streamsize(size));
  out.close();
  if (!out) throw InputError("--output " + path + ": writing failed (disk full?)");
}

}  // namespace

std::string write_image(const std::string& path, const uint8_t* rgb, const ImageInfo& info) {
  av_log_set_level(AV_LOG_ERROR);
  const auto format = plan::format_for(path);
  std::string encoder;
  auto bytes = encode(path, rgb, info.width, info.height, codec_for(format), encoder);
  nlohmann::json side = plan::settings_json(info.metadata);
  side["width"] = info.width;
  side["height"] = info.height;
  side["encoder"] = encoder;
  const std::string sidecar = side.dump(2) + "\n";
  if (format == plan::Format::ImagePNG)
    bytes = with_texts(bytes, {{"parameters", parameters_text(info.metadata)}, {"dit-studio", sidecar}}, path);
  if (format == plan::Format::ImageJPEG) bytes = jpeg_with_comment(bytes, sidecar, path);
  if (format == plan::Format::ImageWebP) bytes = webp_with_xmp(bytes, sidecar, info.width, info.height, path);
  const std::string tmp = plan::partial_path(path);
  try {
    write_file(tmp, bytes.data(), bytes.size(), path);
    write_file(tmp + ".json", sidecar.data(), sidecar.size(), path);
    place_with_sidecar(tmp, path, tmp + ".json", plan::sidecar_of(path, format), "image");
  } catch (const std::exception&) {
    std::error_code ec;
    fs::remove(tmp, ec);
    fs::remove(tmp + ".json", ec);
    throw;
  }
  return encoder;
}

ImageProbe probe_image(const std::string& path) {
  ImageProbe probe;
  AVFormatContext* fmt = nullptr;
  if (avformat_open_input(&fmt, path.c_str(), nullptr, nullptr) < 0) throw InputError(path + ": not a readable image");
  if (avformat_find_stream_info(fmt, nullptr) >= 0 && fmt->nb_streams > 0) {
    const auto* par = fmt->streams[0]->codecpar;
    probe.width = par->width;
    probe.height = par->height;
    probe.codec = avcodec_get_name(par->codec_id);
  }
  avformat_close_input(&fmt);
  // A PNG's chunks: length, type, data, CRC; the texts of those named "parameters" and "dit-studio".
  std::ifstream in(path, std::ios::binary);
  std::vector<uint8_t> b((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (size_t at = 8; at + 12 <= b.size();) {
    const uint32_t len = uint32_t(b[at]) << 24 | uint32_t(b[at + 1]) << 16 | uint32_t(b[at + 2]) << 8 | b[at + 3];
    if (at + 12 + len > b.size()) break;
    const std::string type(b.begin() + long(at) + 4, b.begin() + long(at) + 8);
    const std::string data(b.begin() + long(at) + 8, b.begin() + long(at) + 8 + len);
    for (auto [keyword, into] : {std::pair{std::string("parameters"), &probe.parameters},
                                 std::pair{std::string("dit-studio"), &probe.settings}}) {
      const std::string head = keyword + std::string(1, '\0');
      if ((type == "tEXt" || type == "iTXt") && data.compare(0, head.size(), head) == 0)
        *into = data.substr(head.size() + (type == "tEXt" ? 0 : 4));
    }
    at += 12 + len;
  }
  if (probe.settings.empty()) probe.settings = embedded_comment(b);  // a JPEG's comment, a WebP's XMP
  return probe;
}

}  // namespace studio::video
