// The FLOPs of a VAE decode (2 per multiply-add), added up as the decoder computes them: each family's VAE config
// walks its own levels with these (decoder_flops() beside its config), and tests/test_decoder_flops.cpp holds each
// count to what LibTorch's hooks see the decoder compute.
#pragma once

namespace studio::plan {

class DecoderFlops {
 public:
  // A convolution of `taps` taps from `in` to `out` channels computing `points` outputs (pixels x frames).
  void conv(double points, int taps, int in, int out) { flops_ += 2.0 * points * taps * in * out; }
  // A residual block: two convolutions (`in` -> `out`, `out` -> `out`), and a 1x1 one on the shortcut where the
  // width changes.
  void resnet(double points, int taps, int in, int out) {
    conv(points, taps, in, out);
    conv(points, taps, out, out);
    if (in != out) conv(points, 1, in, out);
  }
  // One head of width `c` over `points` positions: the query, key, value and output projections, and
  // `pairs` query-key pairs scored and weighed (Q K^T and P V).
  void attention(double points, double pairs, int c) {
    conv(points, 1, c, 4 * c);
    flops_ += 4.0 * pairs * c;
  }
  double total() const { return flops_; }

 private:
  double flops_ = 0;
};

}  // namespace studio::plan
