#include "models/cogvideox/cogvideox_positions.h"

#include <cmath>

#include <ATen/TensorOperators.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/cos.h>
#include <ATen/ops/exp.h>
#include <ATen/ops/linspace.h>
#include <ATen/ops/outer.h>
#include <ATen/ops/pow.h>
#include <ATen/ops/sin.h>

namespace studio::models {

namespace {

// [sin(pos * w) | cos(pos * w)] with w = 1 / 10000^(i / (dim/2)), in float64.
at::Tensor sincos_1d(int64_t dim, const at::Tensor& pos) {
  auto omega = at::arange(dim / 2, at::kDouble) / (double(dim) / 2.0);
  omega = 1.0 / at::pow(10000.0, omega);
  auto out = at::outer(pos.to(at::kDouble).reshape(-1), omega);
  return at::cat({at::sin(out), at::cos(out)}, 1);
}

// cos and sin of pos * 1/theta^(2i/dim), each repeated twice (interleaved pairs), float32.
std::pair<at::Tensor, at::Tensor> rope_1d(int64_t dim, const at::Tensor& pos) {
  auto freqs = 1.0 / at::pow(10000.0, at::arange(0, dim, 2, at::kFloat).narrow(0, 0, dim / 2) / double(dim));
  auto f = at::outer(pos, freqs);
  return {at::cos(f).repeat_interleave(2, 1), at::sin(f).repeat_interleave(2, 1)};
}

// Broadcasts per-axis tables over the (t, h, w) grid and concatenates them: [t*h*w, dt + dh + dw].
at::Tensor combine(const at::Tensor& t, const at::Tensor& h, const at::Tensor& w, const TokenGrid& g) {
  auto tt = t.narrow(0, 0, g.frames).view({g.frames, 1, 1, -1}).expand({g.frames, g.rows, g.cols, -1});
  auto hh = h.narrow(0, 0, g.rows).view({1, g.rows, 1, -1}).expand({g.frames, g.rows, g.cols, -1});
  auto ww = w.narrow(0, 0, g.cols).view({1, 1, g.cols, -1}).expand({g.frames, g.rows, g.cols, -1});
  return at::cat({tt, hh, ww}, -1).reshape({g.tokens(), -1});
}

// Python's round(): halves to even.
int round_half_even(double x) { return int(std::nearbyint(x)); }

}  // namespace

at::Tensor sincos_3d(const plan::CogVideoXTransformerConfig& cfg, const TokenGrid& g) {
  const int64_t dim = cfg.inner_dim();
  const int64_t dim_spatial = 3 * dim / 4;
  const int64_t dim_temporal = dim / 4;
  auto rows = at::arange(g.rows, at::kFloat) / cfg.spatial_interpolation_scale;
  auto cols = at::arange(g.cols, at::kFloat) / cfg.spatial_interpolation_scale;
  auto times = at::arange(g.frames, at::kFloat) / cfg.temporal_interpolation_scale;
  // The reference meshes (columns, rows) and embeds the column grid first.
  auto col_emb = sincos_1d(dim_spatial / 2, cols);
  auto row_emb = sincos_1d(dim_spatial / 2, rows);
  auto spatial = at::cat({col_emb.view({1, g.cols, -1}).expand({g.rows, g.cols, -1}),
                          row_emb.view({g.rows, 1, -1}).expand({g.rows, g.cols, -1})},
                         -1)
                     .reshape({1, int64_t(g.rows) * g.cols, dim_spatial})
                     .expand({g.frames, -1, -1});
  auto temporal = sincos_1d(dim_temporal, times).view({g.frames, 1, dim_temporal}).expand({-1, spatial.size(1), -1});
  return at::cat({temporal, spatial}, -1).reshape({g.tokens(), dim}).to(at::kFloat);
}

Rope rope_3d(const plan::CogVideoXTransformerConfig& cfg, const TokenGrid& g) {
  const int64_t hd = cfg.attention_head_dim;
  const int64_t dim_t = hd / 4, dim_h = hd / 8 * 3, dim_w = hd / 8 * 3;
  at::Tensor pt, ph, pw;
  if (!cfg.patch_size_t) {
    // 'linspace': the grid resized and centre-cropped into the base grid (get_resize_crop_region_for_grid).
    const int base_w = cfg.sample_width / cfg.patch_size;
    const int base_h = cfg.sample_height / cfg.patch_size;
    int rh, rw;
    if (double(g.rows) / g.cols > double(base_h) / base_w) {
      rh = base_h;
      rw = round_half_even(double(base_h) / g.rows * g.cols);
    } else {
      rw = base_w;
      rh = round_half_even(double(base_w) / g.cols * g.rows);
    }
    const int top = round_half_even((base_h - rh) / 2.0), left = round_half_even((base_w - rw) / 2.0);
    const double stop_h = top + rh, stop_w = left + rw;
    ph = at::linspace(top, stop_h * (g.rows - 1) / g.rows, g.rows, at::kFloat);
    pw = at::linspace(left, stop_w * (g.cols - 1) / g.cols, g.cols, at::kFloat);
    pt = at::linspace(0, double(g.frames) * (g.frames - 1) / g.frames, g.frames, at::kFloat);
  } else {
    // 'slice': integer positions.
    ph = at::arange(g.rows, at::kFloat);
    pw = at::arange(g.cols, at::kFloat);
    pt = at::arange(g.frames, at::kFloat);
  }
  auto [tc, ts] = rope_1d(dim_t, pt);
  auto [hc, hs] = rope_1d(dim_h, ph);
  auto [wc, ws] = rope_1d(dim_w, pw);
  return {combine(tc, hc, wc, g), combine(ts, hs, ws, g)};
}

}  // namespace studio::models
