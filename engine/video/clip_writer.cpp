#include "video/clip_writer.h"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/imgutils.h>
#include <libavutil/opt.h>
#include <libswscale/swscale.h>
}

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include <nlohmann/json.hpp>

#include "plan/partial_file.h"
#include "plan/error.h"
#include "plan/output_format.h"
#include "plan/run_settings.h"
#include "video/placing.h"
#include "video/av_error.h"
#include "video/embedded_settings.h"

namespace fs = std::filesystem;

namespace studio::video {

namespace {

void check(int code, const std::string& path, const char* what) {
  if (code < 0) throw InputError(path + ": " + what + " failed: " + av_error_text(code));
}

struct FormatSpec {
  const char* muxer;
  std::vector<const char*> encoders;  // in order of preference
  AVPixelFormat pix;
};

FormatSpec spec(Format f) {
  switch (f) {
    case Format::MP4: return {"mp4", {"libx264", "mpeg4"}, AV_PIX_FMT_YUV420P};
    case Format::WebM: return {"webm", {"libvpx-vp9", "libvpx"}, AV_PIX_FMT_YUV420P};
    case Format::GIF: return {"gif", {"gif"}, AV_PIX_FMT_RGB8};
    case Format::PNG: return {nullptr, {"png"}, AV_PIX_FMT_RGB24};
    default: return {};  // single images: video/image_writer.h
  }
}

void write_json(const std::string& path, const nlohmann::json& j) {
  std::ofstream out(path, std::ios::trunc);
  out << j.dump(2) << "\n";
  out.close();
  if (!out) throw InputError(path + ": cannot write the sidecar JSON");
}

}  // namespace

struct ClipWriter::Impl {
  std::string path, tmp, sidecar_tmp, encoder_name;
  Format format = Format::MP4;
  ClipInfo info;
  AVFormatContext* fmt = nullptr;
  AVCodecContext* enc = nullptr;
  AVStream* stream = nullptr;
  SwsContext* sws = nullptr;
  AVFrame* frame = nullptr;
  AVPacket* pkt = nullptr;
  int64_t pts = 0;
  bool finished = false;

  void drain(bool flush) {
    if (flush) check(avcodec_send_frame(enc, nullptr), path, "flushing the encoder");
    while (true) {
      int r = avcodec_receive_packet(enc, pkt);
      if (r == AVERROR(EAGAIN) || r == AVERROR_EOF) return;
      check(r, path, "encoding");
      if (format == Format::PNG) {
        char name[32];
        std::snprintf(name, sizeof name, "frame_%05lld.png", static_cast<long long>(pkt->pts));
        const std::string file = (fs::path(tmp) / name).string();
        std::FILE* f = std::fopen(file.c_str(), "wb");
        const bool ok = f && std::fwrite(pkt->data, 1, size_t(pkt->size), f) == size_t(pkt->size);
        if (f && std::fclose(f) != 0) throw InputError(path + ": writing " + name + " failed (disk full?)");
        if (!ok) throw InputError(path + ": writing " + name + " failed (disk full?)");
        av_packet_unref(pkt);
      } else {
        if (pkt->duration == 0) pkt->duration = 1;  // one frame; some encoders leave it unset
        av_packet_rescale_ts(pkt, enc->time_base, stream->time_base);
        pkt->stream_index = stream->index;
        check(av_interleaved_write_frame(fmt, pkt), path, "writing a frame");
      }
    }
  }

  void release() {
    if (fmt) {
      if (fmt->pb) avio_closep(&fmt->pb);
      avformat_free_context(fmt);
      fmt = nullptr;
    }
    avcodec_free_context(&enc);
    av_frame_free(&frame);
    av_packet_free(&pkt);
    sws_freeContext(sws);
    sws = nullptr;
  }
};

ClipWriter::ClipWriter(const std::string& path, const ClipInfo& info) : impl_(std::make_unique<Impl>()) {
  av_log_set_level(AV_LOG_ERROR);  // encoders' banners are not the user's business; errors are
  Impl& m = *impl_;
  m.path = path;
  m.info = info;
  m.format = format_for(path);
  if (plan::is_image(m.format))
    throw InputError("--output " + path + ": a single image, not a clip; use .mp4, .webm, .gif or a folder name");
  if (info.width % 2 || info.height % 2 || info.width <= 0 || info.height <= 0)
    throw InputError(path + ": frames of " + std::to_string(info.width) + "x" + std::to_string(info.height) +
                     " cannot be encoded; width and height must be even");
  const std::string target = plan::without_trailing_slash(path);
  m.path = target;
  const fs::path p(target);
  m.tmp = plan::partial_path(target);
  std::error_code ec;
  if (m.format == Format::PNG) {
    if (fs::exists(p, ec) && !fs::is_empty(p, ec))
      throw InputError("--output " + target + ": the folder exists and is not empty; choose a new name");
    if (!fs::create_directory(m.tmp, ec))
      throw InputError("--output " + target + ": cannot create a folder there (" + ec.message() + ")");
  }

  const FormatSpec s = spec(m.format);
  const AVCodec* codec = nullptr;
  for (const char* name : s.encoders)
    if ((codec = avcodec_find_encoder_by_name(name))) {
      m.encoder_name = name;
      if (name != s.encoders.front()) m.encoder_name += std::string(" (") + s.encoders.front() + " not available)";
      break;
    }
  if (!codec) throw InputError(path + ": this FFmpeg has no encoder for it (tried " + s.encoders.front() + ")");

  try {
    if (s.muxer) {
      check(avformat_alloc_output_context2(&m.fmt, nullptr, s.muxer, m.tmp.c_str()), path, "creating the container");
      m.stream = avformat_new_stream(m.fmt, nullptr);
      if (!m.stream) throw InputError(path + ": out of memory creating the stream");
    }
    m.enc = avcodec_alloc_context3(codec);
    m.enc->width = info.width;
    m.enc->height = info.height;
    m.enc->pix_fmt = s.pix;
    m.enc->time_base = AVRational{1, info.fps};
    m.enc->framerate = AVRational{info.fps, 1};
    m.enc->gop_size = info.fps * 2;
    if (m.encoder_name.rfind("libx264", 0) == 0) av_opt_set(m.enc->priv_data, "crf", "18", 0);
    if (m.encoder_name.rfind("libvpx", 0) == 0) {
      av_opt_set(m.enc->priv_data, "crf", "24", 0);
      m.enc->bit_rate = 0;
    }
    if (m.encoder_name.rfind("mpeg4", 0) == 0) {
      m.enc->flags |= AV_CODEC_FLAG_QSCALE;
      m.enc->global_quality = FF_QP2LAMBDA * 3;
    }
    if (m.fmt && (m.fmt->oformat->flags & AVFMT_GLOBALHEADER)) m.enc->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
    check(avcodec_open2(m.enc, codec, nullptr), path, "opening the encoder");
    if (m.fmt) {
      check(avcodec_parameters_from_context(m.stream->codecpar, m.enc), path, "configuring the stream");
      m.stream->time_base = m.enc->time_base;
      for (const auto& [k, v] : info.metadata) av_dict_set(&m.fmt->metadata, k.c_str(), v.c_str(), 0);
      AVDictionary* opts = nullptr;
      if (m.format == Format::MP4) av_dict_set(&opts, "movflags", "use_metadata_tags", 0);
      int r = avio_open(&m.fmt->pb, m.tmp.c_str(), AVIO_FLAG_WRITE);
      if (r < 0) {
        av_dict_free(&opts);
        throw InputError("--output " + path + ": cannot write there (" + av_error_text(r) + ")");
      }
      r = avformat_write_header(m.fmt, &opts);
      av_dict_free(&opts);
      check(r, path, "writing the header");
    }
    m.frame = av_frame_alloc();
    m.frame->format = s.pix;
    m.frame->width = info.width;
    m.frame->height = info.height;
    check(av_frame_get_buffer(m.frame, 0), path, "allocating a frame");
    m.pkt = av_packet_alloc();
    m.sws = sws_getContext(info.width, info.height, AV_PIX_FMT_RGB24, info.width, info.height, s.pix,
                           SWS_BICUBIC | SWS_ACCURATE_RND, nullptr, nullptr, nullptr);
    if (!m.sws) throw InputError(path + ": cannot convert RGB to the encoder's pixel format");
  } catch (...) {
    m.release();
    fs::remove_all(m.tmp, ec);
    throw;
  }
}

ClipWriter::~ClipWriter() {
  if (!impl_) return;
  impl_->release();
  if (!impl_->finished) {
    std::error_code ec;
    fs::remove_all(impl_->tmp, ec);
    if (!impl_->sidecar_tmp.empty()) fs::remove(impl_->sidecar_tmp, ec);
  }
}

const std::string& ClipWriter::encoder() const { return impl_->encoder_name; }

void ClipWriter::add_frame(const uint8_t* rgb) {
  Impl& m = *impl_;
  check(av_frame_make_writable(m.frame), m.path, "preparing a frame");
  const uint8_t* src[1] = {rgb};
  const int stride[1] = {3 * m.info.width};
  sws_scale(m.sws, src, stride, 0, m.info.height, m.frame->data, m.frame->linesize);
  m.frame->pts = m.pts++;
  check(avcodec_send_frame(m.enc, m.frame), m.path, "encoding");
  m.drain(false);
}

void ClipWriter::finish(const std::map<std::string, std::string>& more) {
  Impl& m = *impl_;
  m.drain(true);
  if (m.fmt) check(av_write_trailer(m.fmt), m.path, "writing the trailer");
  if (m.fmt && m.fmt->pb) {
    avio_flush(m.fmt->pb);
    if (m.fmt->pb->error < 0) check(m.fmt->pb->error, m.path, "writing");
    avio_closep(&m.fmt->pb);
  }
  nlohmann::json side = plan::settings_json(m.info.metadata);
  side["frames"] = m.pts;
  side["fps"] = m.info.fps;
  side["width"] = m.info.width;
  side["height"] = m.info.height;
  side["encoder"] = m.encoder_name;
  for (const auto& [key, value] : more) side[key] = value;
  if (m.format == Format::GIF) {  // GIF has no tags: the settings go in its comment
    std::ifstream in(m.tmp, std::ios::binary);
    const std::vector<uint8_t> gif((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto with = gif_with_comment(gif, side.dump(), m.path);
    std::ofstream out(m.tmp, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(with.data()), std::streamsize(with.size()));
    if (!out.flush()) throw InputError("--output " + m.path + ": writing failed (disk full?)");
  }
  const std::string final_sidecar = plan::sidecar_of(m.path, m.format);
  if (m.format == Format::PNG) {
    write_json(plan::sidecar_of(m.tmp, m.format), side);
  } else {
    m.sidecar_tmp = m.tmp + ".json";
    write_json(m.sidecar_tmp, side);
  }
  if (m.sidecar_tmp.empty()) {  // a folder of frames, its sidecar inside
    std::error_code ec;
    fs::rename(m.tmp, m.path, ec);
    if (ec)
      throw InputError("--output " + m.path + ": cannot move the finished frames into place (" + ec.message() + ")");
  } else {
    place_with_sidecar(m.tmp, m.path, m.sidecar_tmp, final_sidecar, "clip");
  }
  m.finished = true;
}

ClipProbe probe_clip(const std::string& path) {
  ClipProbe p;
  std::string media = path;
  if (fs::is_directory(path)) {
    std::vector<std::string> frames;
    for (auto& e : fs::directory_iterator(path))
      if (e.path().extension() == ".png") frames.push_back(e.path().string());
    std::sort(frames.begin(), frames.end());
    if (frames.empty()) throw InputError(path + ": no PNG frames in this folder");
    p.frames = int(frames.size());
    media = frames.front();
    std::ifstream side(plan::sidecar_of(path, Format::PNG));
    if (side) {
      auto j = nlohmann::json::parse(side, nullptr, false);
      if (j.is_object())
        for (auto it = j.begin(); it != j.end(); ++it)
          p.metadata[it.key()] = it->is_string() ? it->get<std::string>() : it->dump();
    }
  }
  av_log_set_level(AV_LOG_ERROR);
  AVFormatContext* fmt = nullptr;
  check(avformat_open_input(&fmt, media.c_str(), nullptr, nullptr), path, "opening");
  struct Closer {
    AVFormatContext** f;
    ~Closer() { avformat_close_input(f); }
  } closer{&fmt};
  check(avformat_find_stream_info(fmt, nullptr), path, "reading stream info");
  const int vs = av_find_best_stream(fmt, AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
  check(vs, path, "finding the video stream");
  const AVStream* st = fmt->streams[vs];
  p.width = st->codecpar->width;
  p.height = st->codecpar->height;
  p.codec = avcodec_get_name(st->codecpar->codec_id);
  const AVDictionaryEntry* e = nullptr;
  // Keys in lower case: Matroska stores tag names upper-cased.
  while ((e = av_dict_get(fmt->metadata, "", e, AV_DICT_IGNORE_SUFFIX))) {
    std::string key = e->key;
    for (auto& c : key) c = char(std::tolower(static_cast<unsigned char>(c)));
    p.metadata[key] = e->value;
  }
  if (p.codec == "gif") {
    std::ifstream in(media, std::ios::binary);
    p.settings = embedded_comment(std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()));
  }
  if (p.frames == 0) {
    AVPacket* pkt = av_packet_alloc();
    int64_t last_end = 0;
    while (av_read_frame(fmt, pkt) >= 0) {
      if (pkt->stream_index == vs) {
        ++p.frames;
        last_end = std::max(last_end, pkt->pts + pkt->duration);
      }
      av_packet_unref(pkt);
    }
    av_packet_free(&pkt);
    p.duration_s = fmt->duration > 0 ? double(fmt->duration) / AV_TIME_BASE : double(last_end) * av_q2d(st->time_base);
  }
  return p;
}

}  // namespace studio::video
