// A picture turned upright as its EXIF orientation tag says (phones store portraits sideways with the tag):
// what PIL's ImageOps.exif_transpose does before diffusers' pipelines see a picture. Torch-free.
#pragma once
#include "video/picture.h"

namespace studio::video {

// `p` with EXIF orientation `tag` undone: 1 (or any value outside 1-8) as it is, 2 mirrored, 3 turned half round,
// 4 flipped, 5 transposed, 6 turned a quarter clockwise, 7 transversed, 8 turned a quarter anticlockwise.
Picture upright(const Picture& p, int tag);

}  // namespace studio::video
