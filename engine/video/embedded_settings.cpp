#include "video/embedded_settings.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "plan/error.h"

namespace studio::video {

namespace {

bool is_gif(const std::vector<uint8_t>& b) { return b.size() >= 13 && std::memcmp(b.data(), "GIF89a", 6) == 0; }
bool is_jpeg(const std::vector<uint8_t>& b) { return b.size() >= 4 && b[0] == 0xFF && b[1] == 0xD8; }
bool is_webp(const std::vector<uint8_t>& b) {
  return b.size() >= 20 && std::memcmp(b.data(), "RIFF", 4) == 0 && std::memcmp(b.data() + 8, "WEBP", 4) == 0;
}

void put_le(std::vector<uint8_t>& out, uint32_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(uint8_t(v >> (8 * i)));
}
uint32_t le32(const std::vector<uint8_t>& b, size_t at) {
  return uint32_t(b[at]) | uint32_t(b[at + 1]) << 8 | uint32_t(b[at + 2]) << 16 | uint32_t(b[at + 3]) << 24;
}

constexpr const char* kXmpOpen = "<rdf:li xml:lang=\"x-default\">";
constexpr const char* kXmpClose = "</rdf:li>";

std::string xml_escaped(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '&' ? "&amp;" : c == '<' ? "&lt;" : c == '>' ? "&gt;" : std::string(1, c);
  return out;
}

std::string xml_unescaped(std::string s) {
  for (auto [from, to] : {std::pair{"&lt;", "<"}, std::pair{"&gt;", ">"}, std::pair{"&amp;", "&"}})
    for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + 1)) s.replace(at, std::strlen(from), to);
  return s;
}

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

std::vector<uint8_t> webp_with_xmp(const std::vector<uint8_t>& webp, const std::string& text, int width, int height,
                                   const std::string& path) {
  if (!is_webp(webp)) throw InputError("--output " + path + ": the WebP encoder wrote something that is not a WebP file");
  const std::string xmp = std::string("<?xpacket begin=\"\xEF\xBB\xBF\" id=\"W5M0MpCehiHzreSzNTczkc9d\"?>") +
                          "<x:xmpmeta xmlns:x=\"adobe:ns:meta/\"><rdf:RDF xmlns:rdf=\"http://www.w3.org/1999/02/22-rdf-"
                          "syntax-ns#\"><rdf:Description rdf:about=\"\" xmlns:dc=\"http://purl.org/dc/elements/1.1/\">"
                          "<dc:description><rdf:Alt>" + kXmpOpen + xml_escaped(text) + kXmpClose +
                          "</rdf:Alt></dc:description></rdf:Description></rdf:RDF></x:xmpmeta><?xpacket end=\"w\"?>";
  std::vector<uint8_t> body(webp.begin() + 12, webp.end());
  if (std::memcmp(body.data(), "VP8X", 4) == 0) {
    body[8] |= 0x04;  // its flags: XMP metadata present
  } else {  // a simple file becomes an extended one: a VP8X chunk first, with the canvas size
    std::vector<uint8_t> vp8x{'V', 'P', '8', 'X'};
    put_le(vp8x, 10, 4);
    vp8x.insert(vp8x.end(), {0x04, 0, 0, 0});
    put_le(vp8x, uint32_t(width - 1), 3);
    put_le(vp8x, uint32_t(height - 1), 3);
    body.insert(body.begin(), vp8x.begin(), vp8x.end());
  }
  body.insert(body.end(), {'X', 'M', 'P', ' '});
  put_le(body, uint32_t(xmp.size()), 4);
  body.insert(body.end(), xmp.begin(), xmp.end());
  if (xmp.size() % 2) body.push_back(0);  // chunks are padded to even sizes
  std::vector<uint8_t> out{'R', 'I', 'F', 'F'};
  put_le(out, uint32_t(4 + body.size()), 4);
  out.insert(out.end(), {'W', 'E', 'B', 'P'});
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

std::string embedded_comment(const std::vector<uint8_t>& b) {
  if (is_webp(b)) {
    for (size_t at = 12; at + 8 <= b.size();) {
      const size_t n = le32(b, at + 4);
      if (at + 8 + n > b.size()) return "";
      if (std::memcmp(b.data() + at, "XMP ", 4) == 0) {
        const std::string xmp(b.begin() + long(at) + 8, b.begin() + long(at + 8 + n));
        const size_t open = xmp.find(kXmpOpen), close = xmp.find(kXmpClose);
        if (open == std::string::npos || close == std::string::npos || close < open) return "";
        return xml_unescaped(xmp.substr(open + std::strlen(kXmpOpen), close - open - std::strlen(kXmpOpen)));
      }
      at += 8 + n + (n % 2);
    }
    return "";
  }
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
