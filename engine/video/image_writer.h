// Writes one RGB8 image: PNG (the settings also in a text chunk named "parameters", as the image tools
// users know write them, and every setting as the sidecar's JSON in one named "dit-studio": tEXt when the text
// is Latin-1, else UTF-8 iTXt), JPEG or WebP, chosen by the extension, plus a sidecar NAME.json with every
// setting (a JPEG keeps them in a comment segment too, a WebP in an XMP chunk). Written under a temporary name and renamed when
// complete, so nothing half-written is left under the name asked for. FFmpeg's encoders.
#pragma once
#include <cstdint>
#include <map>
#include <string>

namespace studio::video {

struct ImageInfo {
  std::map<std::string, std::string> metadata;  // the sidecar's fields; the PNG's "parameters" text
  int width = 0, height = 0;
};

// `rgb`: width * height * 3 bytes. Returns the encoder used ("png", "mjpeg", "libwebp").
std::string write_image(const std::string& path, const uint8_t* rgb, const ImageInfo& info);

// The "parameters" text as written into a PNG: the prompt, then "Steps: 28, Sampler: ..., ...".
std::string parameters_text(const std::map<std::string, std::string>& metadata);

// What a written image holds, read back: its size and codec (libavformat), a PNG's "parameters" text, and the
// settings a PNG ("dit-studio"), a JPEG (its comment) or a WebP (its XMP) carries.
struct ImageProbe {
  int width = 0, height = 0;
  std::string codec, parameters, settings;
};
ImageProbe probe_image(const std::string& path);

}  // namespace studio::video
