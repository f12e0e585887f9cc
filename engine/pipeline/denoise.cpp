#include "pipeline/denoise.h"

#include <chrono>

#include <ATen/TensorOperators.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/full.h>

#include "compat/torch_compat.h"
#include "io/safetensors_file.h"
#include "plan/error.h"
#include "sampling/scheduler.h"

namespace studio::pipeline {

void check_inputs(const models::CogVideoXTransformer& model, const DenoiseInputs& in) {
  const auto& c = model.config();
  auto shape = [](const at::Tensor& t) { return io::shape_str(t.sizes().vec()); };
  const auto& l = in.latents;
  if (l.dim() != 5 || l.size(2) != c.in_channels || l.size(3) % c.patch_size || l.size(4) % c.patch_size ||
      l.size(1) % c.patch_size_t.value_or(1))
    throw InputError("latents have shape " + shape(l) + "; the model needs [B, F, " + std::to_string(c.in_channels) +
                     ", H, W] with H and W multiples of patch_size " + std::to_string(c.patch_size) +
                     (c.patch_size_t ? " and F a multiple of patch_size_t " + std::to_string(*c.patch_size_t) : ""));
  const bool cfg = in.guidance_scale > 1;
  for (auto [t, name] : {std::pair{&in.prompt_embeds, "prompt_embeds"},
                         std::pair{&in.negative_prompt_embeds, "negative_prompt_embeds"}}) {
    if (!cfg && t == &in.negative_prompt_embeds) continue;
    if (t->dim() != 3 || t->size(0) != l.size(0) || t->size(2) != c.text_embed_dim)
      throw InputError(std::string(name) + " has shape " + shape(*t) + "; the model needs [" +
                       std::to_string(l.size(0)) + ", T, " + std::to_string(c.text_embed_dim) +
                       "] (batch of the latents, text_embed_dim of transformer/config.json)");
    // The 2B model adds one position table over max_text_seq_length text slots + the video tokens.
    if (!c.use_rotary_positional_embeddings && t->size(1) != c.max_text_seq_length)
      throw InputError(std::string(name) + " has " + std::to_string(t->size(1)) + " text tokens; this model (3D " +
                       "sin-cos positions) needs exactly max_text_seq_length = " +
                       std::to_string(c.max_text_seq_length));
  }
  if (cfg && in.negative_prompt_embeds.size(1) != in.prompt_embeds.size(1))
    throw InputError("negative_prompt_embeds " + shape(in.negative_prompt_embeds) + " and prompt_embeds " +
                     shape(in.prompt_embeds) + " must have the same number of text tokens");
}

at::Tensor denoise(const models::CogVideoXTransformer& model, const plan::SchedulerConfig& sampler,
                   const DenoiseInputs& in, sampling::NoiseSource* noise, const Hooks& hooks, const ModelCall& call) {
  // No InferenceMode here: c10d's Gloo works on its own threads and cannot write into inference tensors.
  // Nothing requires grad, so no graph is recorded either way.
  check_inputs(model, in);
  const int N = in.num_inference_steps;
  sampling::Scheduler scheduler(sampler, N);
  const bool cfg = in.guidance_scale > 1;
  const auto dev = model.device();
  // Classifier-free guidance runs both branches as one batch, unconditional first.
  const at::Tensor text = cfg ? at::cat({in.negative_prompt_embeds, in.prompt_embeds}, 0).to(dev)
                              : in.prompt_embeds.to(dev);
  const auto& l = in.latents;
  const auto pos = model.positions(model.token_grid(l.size(1), l.size(3), l.size(4)));
  at::Tensor latents = l.to(dev, at::kFloat);

  for (int i = 0; i < N; ++i) {
    if (hooks.stop()) throw Cancelled();
    const auto start = std::chrono::steady_clock::now();
    const int64_t t = scheduler.timesteps()[size_t(i)];
    const at::Tensor input = cfg ? at::cat({latents, latents}, 0) : latents;
    const at::Tensor timestep = at::full({input.size(0)}, t, at::TensorOptions().dtype(at::kLong).device(dev));
    at::Tensor pred = (call ? call(input, text, timestep, pos) : model.forward(input, text, timestep, pos)).to(at::kFloat);
    if (cfg) {
      auto parts = pred.chunk(2, 0);
      const double g = sampling::guidance_at(in.guidance_scale, in.use_dynamic_cfg, t, N);
      pred = parts[0] + g * (parts[1] - parts[0]);
    }
    latents = scheduler.step(i, pred, latents, noise);
    // A step's time is the device's: wait for its queue here, at the step's end (the next step's agreed
    // stop flag waits for it anyway).
    compat::synchronize(dev);
    if (hooks.on_step)
      hooks.on_step(i + 1, N, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
                    latents);
  }
  return latents;
}

}  // namespace studio::pipeline
