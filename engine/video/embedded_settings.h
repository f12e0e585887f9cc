// A run's settings inside the formats whose FFmpeg encoders write none: a GIF's comment extension (after its
// header and global colour table) and a JPEG's comment segment (after its start marker), as exiftool and
// image viewers read them. Byte edits of a finished file, and the comment read back. Torch-free, FFmpeg-free.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace studio::video {

// `gif` with a comment extension holding `text` (in 255-byte sub-blocks); `path` names the file in errors.
std::vector<uint8_t> gif_with_comment(const std::vector<uint8_t>& gif, const std::string& text, const std::string& path);
// `jpeg` with a COM segment holding `text` (at most 65533 bytes of it).
std::vector<uint8_t> jpeg_with_comment(const std::vector<uint8_t>& jpeg, const std::string& text, const std::string& path);
// The first comment of a GIF or JPEG file's bytes, "" when it has none.
std::string embedded_comment(const std::vector<uint8_t>& bytes);

}  // namespace studio::video
