#include "video/embedded_settings.h"

#include <algorithm>
#include <cstring>

#include "plan/error.h"

namespace studio::video {

namespace {

bool is_gif(const std::vector<uint8_t>& b) { return b.size() >= 13 && std::memcmp(b.data(), "GIF89a", 6) == 0; }
bool is_jpeg(const std::vector<uint8_t>& b) { return b.size() >= 4 && b[0] == 0xFF && b[1] == 0xD8; }

// Where a GIF's blocks start: after its 6-byte signature, 7-byte screen descriptor and global colour table.
size_t gif_blocks(const std::vector<uint8_t>& b) {
  const uint8_t packed = b[10];
  return 13 + ((packed & 0x80) ? 3u * (2u << (packed & 0x07)) : 0u);
}

}  // namespace

std::vector<uint8_t> gif_with_comment(const std::vector<uint8_t>& gif, const std::string& text, const std::string& path) {
  if (!is_gif(gif) || gif_blocks(gif) > gif.size())
    throw InputError("--output " + path + ": the GIF muxer wrote something that is not a GIF89a file");
  std::vector<uint8_t> out(gif.begin(), gif.begin() + long(gif_blocks(gif)));
  out.insert(out.end(), {0x21, 0xFE});  // a comment extension: its text in sub-blocks of at most 255 bytes
  for (size_t at = 0; at < text.size(); at += 255) {
    const size_t n = std::min<size_t>(255, text.size() - at);
    out.push_back(uint8_t(n));
    out.insert(out.end(), text.begin() + long(at), text.begin() + long(at + n));
  }
  out.push_back(0);
  out.insert(out.end(), gif.begin() + long(gif_blocks(gif)), gif.end());
  return out;
}

std::vector<uint8_t> jpeg_with_comment(const std::vector<uint8_t>& jpeg, const std::string& text, const std::string& path) {
  if (!is_jpeg(jpeg)) throw InputError("--output " + path + ": the JPEG encoder wrote something that is not a JPEG file");
  const size_t n = std::min<size_t>(text.size(), 65533);  // the segment's length counts its own two bytes
  std::vector<uint8_t> out(jpeg.begin(), jpeg.begin() + 2);
  out.insert(out.end(), {0xFF, 0xFE, uint8_t((n + 2) >> 8), uint8_t((n + 2) & 0xFF)});
  out.insert(out.end(), text.begin(), text.begin() + long(n));
  out.insert(out.end(), jpeg.begin() + 2, jpeg.end());
  return out;
}

std::string embedded_comment(const std::vector<uint8_t>& b) {
  if (is_gif(b)) {
    for (size_t at = gif_blocks(b); at + 1 < b.size() && b[at] == 0x21;) {  // the extensions before the first image
      const bool comment = b[at + 1] == 0xFE;
      std::string text;
      at += 2;
      while (at < b.size() && b[at] != 0) {
        const size_t n = b[at];
        if (at + 1 + n > b.size()) return "";
        if (comment) text.append(b.begin() + long(at) + 1, b.begin() + long(at + 1 + n));
        at += 1 + n;
      }
      if (comment) return text;
      ++at;
    }
    return "";
  }
  if (is_jpeg(b))
    for (size_t at = 2; at + 4 <= b.size() && b[at] == 0xFF && b[at + 1] != 0xDA;) {  // the segments before the scan
      const size_t n = size_t(b[at + 2]) << 8 | b[at + 3];
      if (n < 2 || at + 2 + n > b.size()) return "";
      if (b[at + 1] == 0xFE) return std::string(b.begin() + long(at) + 4, b.begin() + long(at + 2 + n));
      at += 2 + n;
    }
  return "";
}

}  // namespace studio::video
