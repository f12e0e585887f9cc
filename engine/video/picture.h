// A still picture as the image-to-video pipelines take it: 8-bit RGB, read with FFmpeg, resized exactly as
// PIL resizes (diffusers and transformers preprocess with PIL). Torch-free.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace studio::video {

struct Picture {
  int width = 0, height = 0;
  std::vector<uint8_t> rgb;  // rows top to bottom, 3 bytes a pixel
};

// The largest side a picture may have: the models take at most 1280 x 720, and a larger file is almost
// always a mistake that would cost seconds and memory to decode.
constexpr int kMaxPictureSide = 8192;

// The one picture in `path`, as RGB, turned upright as its EXIF orientation says (as diffusers' load_image). Grey,
// palette and 8-bit RGBA pictures (the alpha dropped, as PIL's convert("RGB")) and JPEG's YUV are accepted. Throws
// InputError naming `flag` and the file for a file that is missing, not a picture, corrupt or truncated, animated,
// CMYK, more than 8 bits a channel, or larger than kMaxPictureSide.
Picture read_picture(const std::string& path, const std::string& flag);

// PIL's Image.resize(size, filter) on an 8-bit RGB picture, to the last bit: the same filter weights in
// fixed point, the horizontal pass first, each pass rounded to 8 bits.
enum class Resample { Bicubic, Lanczos };
Picture resize(const Picture& p, int width, int height, Resample filter);

// The `width` x `height` window at (left, top); it must lie inside the picture.
Picture crop(const Picture& p, int left, int top, int width, int height);

}  // namespace studio::video
