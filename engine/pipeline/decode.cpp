#include "pipeline/decode.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/round.h>
#include <ATen/ops/mean.h>
#include <ATen/ops/std.h>

#include "models/family_runtime.h"
#include "parallel/parallel_vae.h"

namespace studio::pipeline {

void decode_latents(const models::VaeDecoder& vae, const at::Tensor& latents, int pad_frames,
                    const FramesFn& on_frames, const DecodeOptions& o) {
  const auto z = vae.prepare(latents, pad_frames);
  int frame = 0;
  if (o.rows)
    return parallel::decode_by_rows(vae, *o.rows, z, [&](const at::Tensor& f) {
      on_frames(f, 0, frame);
      frame += int(f.size(2));
    }, o.progress);
  const int64_t B = z.size(0), per = o.slicing ? 1 : B, slices = (B + per - 1) / per;
  for (int64_t b = 0; b < B; b += per) {
    const auto part = z.narrow(0, b, std::min(per, B - b));
    // Each slice's parts as a share of the whole decode's.
    models::DecodeProgress progress;
    if (o.progress)
      progress = [&, slice = int(b / per)](int done, int total) {
        o.progress(slice * total + done, int(slices) * total);
      };
    if (o.tiling) {
      on_frames(vae.decode_tiled(part, o.tiles, progress), int(b), 0);
      continue;
    }
    frame = 0;
    vae.decode_batches(part, [&](const at::Tensor& f) {
      on_frames(f, int(b), frame);
      frame += int(f.size(2));
    }, nullptr, progress);
  }
}

at::Tensor to_rgb8(const at::Tensor& video) {
  auto x = ((video.to(at::kFloat) / 2 + 0.5).clamp(0, 1) * 255);
  return at::round(x).to(at::kByte).permute({0, 2, 3, 4, 1}).contiguous().cpu();
}

at::Tensor latent_preview(const at::Tensor& latents, const models::LatentRgb& rgb, bool channels_first) {
  // A video's middle latent frame [C, h, w], or an image's latents.
  const auto frame = latents.dim() != 5      ? latents[0]
                     : channels_first ? latents[0].select(1, latents.size(2) / 2)
                                          : latents[0][latents.size(1) / 2];
  if (rgb.factors.defined() && frame.size(0) == rgb.factors.size(0)) {
    const auto y = at::matmul(frame.to(at::kFloat).cpu().permute({1, 2, 0}), rgb.factors) + rgb.bias;  // [h, w, 3]
    return at::round(((y + 1) / 2).clamp(0, 1) * 255).to(at::kByte).contiguous();
  }
  auto x = frame.narrow(0, 0, 3).to(at::kFloat).cpu();  // [3, h, w]
  auto mean = x.mean({1, 2}, true), spread = x.std({1, 2}, true, true) * 2 + 1e-6;
  auto y = ((x - mean) / spread * 0.5 + 0.5).clamp(0, 1) * 255;
  return at::round(y).to(at::kByte).permute({1, 2, 0}).contiguous();
}

}  // namespace studio::pipeline
