#include "pipeline/decode.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/round.h>

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

}  // namespace studio::pipeline
