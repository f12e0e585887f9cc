// The layers of Wan's VAE (models/wan/wan_vae.h), run one chunk of frames at a time with the caches that
// carry each causal convolution's past from one chunk to the next (the decoder's chunk is a latent frame,
// the encoder's the first frame, then temporal_compression() frames).
#pragma once
#include <optional>
#include <vector>

#include <ATen/core/Tensor.h>

#include "models/layers/layers.h"
#include "models/vae_decoder.h"
#include "models/wan/wan_vae.h"

namespace studio::models::wan {

// What one decode (or encode) carries from chunk to chunk: the last input frames of every causal
// convolution (with their halo rows under a row split), and the row split (nullptr: every row here).
struct DecodeState {
  std::vector<at::Tensor> past;  // one slot per causal convolution; undefined before its first call
  RowExchange* rows = nullptr;
  bool first_chunk = true;  // the decoder's first latent frame (the Wan2.2 VAE's shortcuts drop frames for it)
  // x with the neighbours' adjacent row (dim `dim`) above and below; zeros at the picture's edges, which
  // is the zero padding one process adds there.
  at::Tensor with_halo(const at::Tensor& x, int64_t dim) const;
};

// Convolution over time that sees only the past (WanCausalConv3d): 3 x 3 x 3 with two zero frames before
// the first, and 1 x 1 x 1 without a past.
struct CausalConv {
  at::Tensor weight, bias;
  size_t slot = 0;
  at::Tensor operator()(const at::Tensor& x, DecodeState& s) const;
};

// F.normalize over the channels (dim 1) times sqrt(channels) and a gain per channel (WanRMS_norm).
struct RmsNorm {
  at::Tensor gamma;  // [C, 1, 1, 1] (video) or [C, 1, 1] (frames)
  at::Tensor operator()(const at::Tensor& x) const;
};

struct Resnet {
  RmsNorm norm1, norm2;
  CausalConv conv1, conv2, shortcut;  // shortcut: 1 x 1 x 1, when the channel count changes
  at::Tensor operator()(const at::Tensor& x, DecodeState& s) const;
};

// One head over every pixel of each frame, the channels as its width; a residual around it.
struct Attention {
  RmsNorm norm;
  at::Tensor qkv_w, qkv_b, proj_w, proj_b;  // 1 x 1 convolutions
  at::Tensor operator()(const at::Tensor& x, const DecodeState& s) const;
};

// Nearest 2x upsampling of rows and columns and a 3 x 3 convolution that halves the channels, after,
// when it doubles time ("upsample3d"), a causal (3, 1, 1) convolution to twice the channels whose halves
// become the even and odd frames. The first latent frame passes the time convolution by, and the
// convolution's past starts at the second one, with zeros before it.
struct Upsampler {
  at::Tensor weight, bias;
  std::optional<CausalConv> time_conv;
  at::Tensor operator()(const at::Tensor& x, DecodeState& s) const;
};

// The Wan2.2 VAE's shortcut around a decoder level (DupUp3D): each input value repeated into a
// factor_t x factor_s x factor_s block of positions of the output's `out` channels. On the first chunk the
// first factor_t - 1 frames are dropped, as the time upsampler passes the first frame by.
struct RepeatUp {
  int64_t out = 0, factor_t = 1, factor_s = 1;
  at::Tensor operator()(const at::Tensor& x, bool first_chunk) const;
};

struct UpBlock {
  std::vector<Resnet> resnets;
  std::optional<Upsampler> up;
  std::optional<RepeatUp> shortcut;  // the Wan2.2 VAE's, added to the level's output
};

// The encoder's resampler: zero padding after the last row and column and a stride-2 3 x 3 convolution,
// after, when it halves time ("downsample3d"), a (3, 1, 1) convolution of stride 2 over the previous chunk's
// last frame and this chunk. The first chunk passes the time convolution by.
struct Downsampler {
  at::Tensor weight, bias;
  std::optional<CausalConv> time_conv;  // its slot keeps the last frame of the previous chunk
  at::Tensor operator()(const at::Tensor& x, DecodeState& s) const;
};

// The Wan2.2 VAE's shortcut around an encoder level (AvgDown3D): the input, its front padded with zero frames
// to a multiple of factor_t, each factor_t x factor_s x factor_s block of positions folded into channels and
// the channels averaged in groups down to `out`.
struct AverageDown {
  int64_t out = 0, factor_t = 1, factor_s = 1;
  at::Tensor operator()(const at::Tensor& x) const;
};

struct DownBlock {
  std::vector<Resnet> resnets;
  std::optional<Downsampler> down;
  std::optional<AverageDown> shortcut;  // the Wan2.2 VAE's, added to the level's output
};

// The Wan2.2 VAE's pixels and patches: [B, C, F, H, W] <-> [B, C p^2, F, H / p, W / p], pixel (p y + dy, p x + dx)
// of channel c in channel c p^2 + p dx + dy (the column's offset before the row's), as diffusers folds them.
at::Tensor patchify(const at::Tensor& x, int64_t p);
at::Tensor unpatchify(const at::Tensor& x, int64_t p);

// Reads the layers' weights, giving each causal convolution with a past its slot in DecodeState::past.
struct LayerReader {
  const WeightSource& w;
  size_t slots = 0;
  CausalConv conv(const std::string& prefix, int64_t in, int64_t out, std::vector<int64_t> kernel);
  RmsNorm norm(const std::string& prefix, int64_t channels, size_t dims);
  Resnet resnet(const std::string& prefix, int64_t in, int64_t out);
  Attention attention(const std::string& prefix, int64_t channels);
};

}  // namespace studio::models::wan

namespace studio::models {

struct WanVae::Decoder {
  wan::CausalConv post_quant_conv, conv_in, conv_out;  // post_quant_conv: 1 x 1 x 1, on the latents
  wan::Resnet mid_first, mid_second;
  wan::Attention mid_attention;
  std::vector<wan::UpBlock> up_blocks;
  wan::RmsNorm norm_out;
  size_t slots = 0;  // causal convolutions with a past

  static std::shared_ptr<Decoder> load(const WeightSource& w, const plan::WanVaeConfig& cfg);
  // One latent frame [B, z_dim, 1, h, w] -> its output frames [B, out_channels, n, H, W], unclamped.
  at::Tensor operator()(const at::Tensor& z, wan::DecodeState& s) const;
};

struct WanVae::Encoder {
  wan::CausalConv conv_in, conv_out, quant_conv;  // quant_conv: 1 x 1 x 1, on the moments
  std::vector<wan::DownBlock> down_blocks;
  wan::Resnet mid_first, mid_second;
  wan::Attention mid_attention;
  wan::RmsNorm norm_out;
  size_t slots = 0;

  static std::shared_ptr<Encoder> load(const WeightSource& w, const plan::WanVaeConfig& cfg);
  // One chunk of frames [B, in_channels, n, H, W] -> its latent frames' moments [B, 2 z_dim, m, h, w]
  // (mean, then log-variance).
  at::Tensor operator()(const at::Tensor& x, wan::DecodeState& s) const;
};

}  // namespace studio::models
