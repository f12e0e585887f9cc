#include "models/wan/wan_vae.h"

#include <c10/core/InferenceMode.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/clamp.h>
#include <ATen/ops/tensor.h>

#include <optional>
#include <set>

#include "models/vae/vae_tiling.h"
#include "models/wan/wan_vae_blocks.h"
#include "plan/error.h"

namespace studio::models {

std::shared_ptr<WanVae> WanVae::load(const std::string& part_dir, const plan::WanVaeConfig& cfg, at::ScalarType dtype,
                                     at::Device device, bool with_encoder) {
  auto weights = io::WeightSet::open(part_dir, "diffusion_pytorch_model");
  return load(weights, cfg, dtype, device, with_encoder);
}

std::shared_ptr<WanVae> WanVae::load(io::WeightSet& weights, const plan::WanVaeConfig& cfg, at::ScalarType dtype,
                                     at::Device device, bool with_encoder) {
  auto vae = std::shared_ptr<WanVae>(new WanVae());
  vae->decoder_ = Decoder::load(WeightSource{weights, dtype, device}, cfg);
  // Text-to-video needs no encoder: a folder may carry it or not, and it is read only when asked for.
  std::set<std::string> encoder;
  for (const auto& name : weights.names())
    if (name.rfind("encoder.", 0) == 0 || name.rfind("quant_conv.", 0) == 0) encoder.insert(name);
  if (with_encoder && (!encoder.empty() || weights.makes_weights())) vae->encoder_ = Encoder::load(WeightSource{weights, dtype, device}, cfg);
  weights.expect_all_taken(encoder);
  vae->cfg_ = cfg;
  vae->dtype_ = dtype;
  vae->device_ = device;
  return vae;
}

at::Tensor WanVae::prepare(const at::Tensor& latents, int pad_frames) const {
  const auto x = latents.narrow(2, pad_frames, latents.size(2) - pad_frames).to(at::kFloat);
  const auto per_channel = [&](const std::vector<double>& v) {
    return at::tensor(v, x.options()).view({1, cfg_.z_dim, 1, 1, 1});
  };
  // WanPipeline's arithmetic, in float32: the reciprocal of the spread first, then a division by it.
  return x / (1.0 / per_channel(cfg_.latents_std)) + per_channel(cfg_.latents_mean);
}

at::Tensor WanVae::normalize(const at::Tensor& mean) const {
  const auto per_channel = [&](const std::vector<double>& v) {
    return at::tensor(v, mean.options()).view({1, cfg_.z_dim, 1, 1, 1});
  };
  return (mean - per_channel(cfg_.latents_mean)) * (1.0 / per_channel(cfg_.latents_std));
}

int WanVae::output_frames(int latent_frames) const {
  return latent_frames < 1 ? 0 : 1 + cfg_.temporal_compression() * (latent_frames - 1);
}

void WanVae::decode_frames(const at::Tensor& z, const std::function<void(const at::Tensor&)>& on_batch,
                           RowExchange* rows, bool clamp, const DecodeProgress& progress, bool unfold) const {
  // Not with a row split: c10d's Gloo works on threads of its own, which cannot touch inference tensors.
  // Nothing requires grad, so no graph is recorded either way.
  std::optional<c10::InferenceMode> guard;
  if (!rows) guard.emplace();
  if (z.dim() != 5 || z.size(1) != cfg_.z_dim)
    throw InputError("VAE input has shape " + io::shape_str(z.sizes().vec()) + "; expected [B, " +
                     std::to_string(cfg_.z_dim) + ", F, h, w]");
  wan::DecodeState state;
  state.past.resize(decoder_->slots);
  state.rows = rows;
  for (int64_t f = 0; f < z.size(2); ++f, state.first_chunk = false) {
    auto out = (*decoder_)(z.narrow(2, f, 1).to(device_, dtype_), state);
    out = (unfold ? wan::unpatchify(out, cfg_.patch_size) : out).to(at::kFloat);
    on_batch(clamp ? at::clamp(out, -1.0, 1.0) : out);
    if (progress) progress(int(f + 1), int(z.size(2)));
  }
}

void WanVae::decode_batches(const at::Tensor& z, const std::function<void(const at::Tensor&)>& on_batch,
                            RowExchange* rows, const DecodeProgress& progress) const {
  decode_frames(z, on_batch, rows, /*clamp=*/true, progress);
}

at::Tensor WanVae::decode(const at::Tensor& z) const {
  std::vector<at::Tensor> out;
  decode_batches(z, [&](const at::Tensor& frames) { out.push_back(frames); });
  return at::cat(out, 2);
}

at::Tensor WanVae::decode_tiled(const at::Tensor& z, const TileOptions& tiles, const DecodeProgress& progress) const {
  // diffusers 0.35.2 blends the tiles as decoded and, unlike its untiled decode, clamps nothing. Latents
  // that fit in one tile (the only case where a tile is all of z) it decodes untiled, clamped. The Wan2.2 VAE's
  // tiles (0.42.1) are decoded, blended and cropped in patches, then unfolded and clamped.
  const int64_t p = cfg_.patch_size;
  const auto decode_tile = [&](const at::Tensor& tile) {
    const bool whole = tile.size(3) == z.size(3) && tile.size(4) == z.size(4);
    std::vector<at::Tensor> out;
    decode_frames(tile, [&](const at::Tensor& frames) { out.push_back(frames); }, nullptr, /*clamp=*/whole && p == 1,
                  {}, /*unfold=*/p == 1);
    return at::cat(out, 2);
  };
  const auto out = decode_in_tiles(z, spatial_compression() / p, {tiles.sample_height / int(p), tiles.sample_width / int(p)},
                                   {0.25, 0.25}, decode_tile, progress);
  return p == 1 ? out : at::clamp(wan::unpatchify(out, p), -1.0, 1.0);
}

}  // namespace studio::models
