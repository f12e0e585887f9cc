// PIL's resampling (Pillow's libImaging/Resample.c) for 8-bit pictures: each output pixel is a weighted
// sum of the input pixels under the filter, stretched by the scale when shrinking; the weights are
// normalised to sum to 1, then held as integers with 22 fractional bits, and each pass rounds and clamps
// to 8 bits.
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "video/picture.h"

namespace studio::video {

namespace {

constexpr int kPrecisionBits = 32 - 8 - 2;

double bicubic(double x) {
  constexpr double a = -0.5;
  x = std::fabs(x);
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

double sinc(double x) {
  if (x == 0.0) return 1.0;
  x *= M_PI;
  return std::sin(x) / x;
}

double lanczos(double x) { return -3.0 <= x && x < 3.0 ? sinc(x) * sinc(x / 3) : 0.0; }

// For each output position along one axis: the first input position, how many it reads, and their
// integer weights (ksize per output position).
struct Weights {
  int ksize = 0;
  std::vector<int> first, count;
  std::vector<int32_t> k;
};

Weights weights(int in_size, int out_size, Resample filter) {
  const double support_1 = filter == Resample::Lanczos ? 3.0 : 2.0;
  const double scale = double(in_size) / out_size;
  const double filterscale = scale < 1.0 ? 1.0 : scale;
  const double support = support_1 * filterscale;
  Weights w;
  w.ksize = int(std::ceil(support)) * 2 + 1;
  w.k.assign(size_t(out_size) * size_t(w.ksize), 0);
  const double ss = 1.0 / filterscale;
  std::vector<double> k(size_t(w.ksize));
  for (int xx = 0; xx < out_size; ++xx) {
    const double center = (xx + 0.5) * scale;
    int xmin = int(center - support + 0.5);
    if (xmin < 0) xmin = 0;
    int xmax = int(center + support + 0.5);
    if (xmax > in_size) xmax = in_size;
    xmax -= xmin;
    double total = 0.0;
    for (int x = 0; x < xmax; ++x) {
      const double v = (x + xmin - center + 0.5) * ss;
      k[size_t(x)] = filter == Resample::Lanczos ? lanczos(v) : bicubic(v);
      total += k[size_t(x)];
    }
    for (int x = 0; x < xmax; ++x) {
      const double v = total != 0.0 ? k[size_t(x)] / total : k[size_t(x)];
      w.k[size_t(xx) * size_t(w.ksize) + size_t(x)] =
          int32_t(v < 0 ? -0.5 + v * (1 << kPrecisionBits) : 0.5 + v * (1 << kPrecisionBits));
    }
    w.first.push_back(xmin);
    w.count.push_back(xmax);
  }
  return w;
}

uint8_t clip8(int32_t v) {
  const int32_t s = v >> kPrecisionBits;
  return uint8_t(s < 0 ? 0 : s > 255 ? 255 : s);
}

// One pass along x (`horizontal`) or y.
Picture pass(const Picture& in, int out_size, Resample filter, bool horizontal) {
  const auto w = weights(horizontal ? in.width : in.height, out_size, filter);
  Picture out;
  out.width = horizontal ? out_size : in.width;
  out.height = horizontal ? in.height : out_size;
  out.rgb.resize(size_t(out.width) * size_t(out.height) * 3);
  for (int y = 0; y < out.height; ++y)
    for (int x = 0; x < out.width; ++x) {
      const int o = horizontal ? x : y;
      const int32_t* k = &w.k[size_t(o) * size_t(w.ksize)];
      for (int c = 0; c < 3; ++c) {
        int32_t s = 1 << (kPrecisionBits - 1);
        for (int i = 0; i < w.count[size_t(o)]; ++i) {
          const int sx = horizontal ? w.first[size_t(o)] + i : x, sy = horizontal ? y : w.first[size_t(o)] + i;
          s += int32_t(in.rgb[(size_t(sy) * size_t(in.width) + size_t(sx)) * 3 + size_t(c)]) * k[i];
        }
        out.rgb[(size_t(y) * size_t(out.width) + size_t(x)) * 3 + size_t(c)] = clip8(s);
      }
    }
  return out;
}

}  // namespace

Picture resize(const Picture& p, int width, int height, Resample filter) {
  if (width < 1 || height < 1) throw std::invalid_argument("resize: empty output size");
  // PIL runs only the passes whose size changes, the horizontal one first.
  Picture out = p;
  if (width != p.width) out = pass(out, width, filter, true);
  if (height != p.height) out = pass(out, height, filter, false);
  return out;
}

Picture crop(const Picture& p, int left, int top, int width, int height) {
  if (left < 0 || top < 0 || width < 0 || height < 0 || left + width > p.width || top + height > p.height)
    throw std::invalid_argument("crop: the window lies outside the picture");
  Picture out{width, height, std::vector<uint8_t>(size_t(width) * size_t(height) * 3)};
  for (int y = 0; y < height; ++y)
    std::copy_n(&p.rgb[(size_t(top + y) * size_t(p.width) + size_t(left)) * 3], size_t(width) * 3,
                &out.rgb[size_t(y) * size_t(width) * 3]);
  return out;
}

}  // namespace studio::video
