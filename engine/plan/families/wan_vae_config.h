// vae/config.json of Wan's causal 3D VAE (AutoencoderKLWan, diffusers 0.35.2): Wan2.1's (Wan2.2 A14B shares it)
// and the Wan2.2 VAE of TI2V-5B (residual levels, 2x2 patches, 48 latent channels); read from JSON alone, with
// diffusers' defaults for absent fields.
#pragma once
#include <string>
#include <vector>

namespace studio::plan {

struct WanVaeConfig {
  int base_dim = 96;
  int decoder_base_dim = 96;  // base_dim when the file leaves it null
  int z_dim = 16;
  std::vector<int> dim_mult{1, 2, 4, 4};
  int num_res_blocks = 2;
  std::vector<double> attn_scales;  // the encoder's; the decoder adds no attention for them
  std::vector<bool> temperal_downsample{false, true, true};  // diffusers' spelling; the decoder reverses it
  std::vector<double> latents_mean, latents_std;  // z_dim each
  int in_channels = 3;  // the encoder's, after the patches are folded into channels
  int out_channels = 3;  // the decoder's, likewise
  // The Wan2.2 VAE: each level's resnets carry a shortcut that averages (encoder) or repeats (decoder) the
  // level's input to its output's shape, and each side of a patch_size x patch_size pixel square becomes
  // channels before the encoder (and back after the decoder).
  bool is_residual = false;
  int patch_size = 1;

  // Pixels per latent pixel: 2 per resampling level, times the patch.
  int spatial_compression() const { return patch_size << temperal_downsample.size(); }
  int temporal_compression() const;  // 2 per level that compresses time
  // The channels of the decoder's levels, from the latents down: [decoder_base_dim * dim_mult.back(),
  // then decoder_base_dim * dim_mult reversed].
  std::vector<int> decoder_dims() const;
  // The FLOPs of decoding one video of `frames` frames (an image: 1) at `height` x `width` pixels, as
  // models/wan/wan_vae_blocks.cpp decodes it (plan/decoder_flops.h).
  double decoder_flops(int height, int width, int frames) const;
};

WanVaeConfig parse_wan_vae_config(const std::string& json_text, const std::string& file);

}  // namespace studio::plan
