// vae/config.json of Wan's causal 3D VAE (AutoencoderKLWan, diffusers 0.35.2), Wan2.1's and Wan2.2
// A14B's: read from JSON alone, with diffusers' defaults for absent fields.
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
  int in_channels = 3;  // the encoder's
  int out_channels = 3;

  int spatial_compression() const { return 1 << temperal_downsample.size(); }
  int temporal_compression() const;  // 2 per level that compresses time
  // The channels of the decoder's levels, from the latents down: [decoder_base_dim * dim_mult.back(),
  // then decoder_base_dim * dim_mult reversed].
  std::vector<int> decoder_dims() const;
};

WanVaeConfig parse_wan_vae_config(const std::string& json_text, const std::string& file);

}  // namespace studio::plan
