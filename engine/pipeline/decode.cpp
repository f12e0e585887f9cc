#include "pipeline/decode.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/round.h>
#include <ATen/ops/mean.h>
#include <ATen/ops/std.h>

namespace studio::pipeline {

void decode_latents(const models::CogVideoXVae& vae, const at::Tensor& latents, int pad_frames,
                    const std::function<void(const at::Tensor&)>& on_batch) {
  auto z = latents.narrow(1, pad_frames, latents.size(1) - pad_frames).permute({0, 2, 1, 3, 4});
  vae.decode_batches(z / vae.config().scaling_factor, on_batch);
}

at::Tensor to_rgb8(const at::Tensor& video) {
  auto x = ((video.to(at::kFloat) / 2 + 0.5).clamp(0, 1) * 255);
  return at::round(x).to(at::kByte).permute({0, 2, 3, 4, 1}).contiguous().cpu();
}

at::Tensor latent_preview(const at::Tensor& latents) {
  auto x = latents[0][latents.size(1) / 2].narrow(0, 0, 3).to(at::kFloat).cpu();  // [3, h, w]
  auto mean = x.mean({1, 2}, true), spread = x.std({1, 2}, true, true) * 2 + 1e-6;
  auto y = ((x - mean) / spread * 0.5 + 0.5).clamp(0, 1) * 255;
  return at::round(y).to(at::kByte).permute({1, 2, 0}).contiguous();
}

}  // namespace studio::pipeline
