// A run's settings inside the formats whose FFmpeg encoders write none: a GIF's comment extension (after its
// header and global colour table), a JPEG's comment segment (after its start marker) and a WebP's XMP chunk
// (its dc:description; the file made extended, VP8X, where it was simple), as exiftool and image viewers read
// them. Byte edits of a finished file, and the comment read back. Torch-free, FFmpeg-free.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace studio::video {

// `gif` with a comment extension holding `text` (in 255-byte sub-blocks); `path` names the file in errors.
std::vector<uint8_t> gif_with_comment(const std::vector<uint8_t>& gif, const std::string& text, const std::string& path);
// `jpeg` with a COM segment holding `text` (at most 65533 bytes of it).
std::vector<uint8_t> jpeg_with_comment(const std::vector<uint8_t>& jpeg, const std::string& text, const std::string& path);
// `webp` (RIFF) with an XMP chunk whose description is `text`; `width` x `height` is its canvas.
std::vector<uint8_t> webp_with_xmp(const std::vector<uint8_t>& webp, const std::string& text, int width, int height,
                                   const std::string& path);
// The first comment of a GIF or JPEG file's bytes, or a WebP's XMP description; "" when it has none.
std::string embedded_comment(const std::vector<uint8_t>& bytes);

}  // namespace studio::video
