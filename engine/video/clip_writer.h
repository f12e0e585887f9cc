// Writes RGB8 frames as a clip: MP4 (H.264 through libx264, else MPEG-4 Part 2, and it says which), WebM
// (VP9, else VP8), animated GIF, or a folder of numbered PNGs. The settings that made the clip go into
// the file's metadata where the container has a place for it, and always into a sidecar JSON.
// Everything is written under a temporary name and renamed into place when complete, so a failed or
// cancelled run never leaves a half-written file under the name asked for. Plain C++ and FFmpeg.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "plan/output_format.h"

namespace studio::video {

using plan::Format;
using plan::format_for;

struct ClipInfo {
  std::map<std::string, std::string> metadata;  // written as tags and as the sidecar's fields
  int width = 0, height = 0;
  int fps = 8;
};

class ClipWriter {
 public:
  ClipWriter(const std::string& path, const ClipInfo& info);
  ~ClipWriter();  // without finish(): removes everything written so far
  ClipWriter(const ClipWriter&) = delete;
  ClipWriter& operator=(const ClipWriter&) = delete;

  void add_frame(const uint8_t* rgb);  // width * height * 3 bytes
  // Flushes, writes the sidecar (with `more` fields: a clip cut short says so), renames into place.
  void finish(const std::map<std::string, std::string>& more = {});
  const std::string& encoder() const;  // e.g. "libx264" or "mpeg4 (libx264 not available)"

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// What a written clip holds, read back with libavformat (a PNG folder: its frames and sidecar).
struct ClipProbe {
  int frames = 0, width = 0, height = 0;
  double duration_s = 0;
  std::string codec;
  std::map<std::string, std::string> metadata;
  std::string settings;  // a GIF's: its comment (the format has no tags)
};
ClipProbe probe_clip(const std::string& path);

}  // namespace studio::video
