#include "video/picture_orientation.h"

#include <algorithm>

namespace studio::video {

Picture upright(const Picture& p, int tag) {
  if (tag < 2 || tag > 8) return p;
  const bool swaps = tag >= 5;  // 5-8 exchange the sides
  Picture out{swaps ? p.height : p.width, swaps ? p.width : p.height, std::vector<uint8_t>(p.rgb.size())};
  const int w = p.width, h = p.height;
  for (int y = 0; y < out.height; ++y)
    for (int x = 0; x < out.width; ++x) {
      // The source pixel of output pixel (x, y), as PIL's transposes choose it.
      int sx = x, sy = y;
      switch (tag) {
        case 2: sx = w - 1 - x; break;                      // FLIP_LEFT_RIGHT
        case 3: sx = w - 1 - x, sy = h - 1 - y; break;      // ROTATE_180
        case 4: sy = h - 1 - y; break;                      // FLIP_TOP_BOTTOM
        case 5: sx = y, sy = x; break;                      // TRANSPOSE
        case 6: sx = y, sy = h - 1 - x; break;              // ROTATE_270 (a quarter clockwise)
        case 7: sx = w - 1 - y, sy = h - 1 - x; break;      // TRANSVERSE
        case 8: sx = w - 1 - y, sy = x; break;              // ROTATE_90 (a quarter anticlockwise)
      }
      const size_t from = (size_t(sy) * size_t(w) + size_t(sx)) * 3, to = (size_t(y) * size_t(out.width) + size_t(x)) * 3;
      std::copy_n(&p.rgb[from], 3, &out.rgb[to]);
    }
  return out;
}

}  // namespace studio::video
