#include "pipeline/denoise.h"

#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

#include <ATen/TensorOperators.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/constant_pad_nd.h>
#include <ATen/ops/full.h>
#include <ATen/ops/isfinite.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/zeros.h>

#include "compat/torch_compat.h"
#include "io/safetensors/safetensors_file.h"
#include "plan/error.h"
#include "sampling/scheduler.h"  // guidance_at

namespace studio::pipeline {

namespace {

bool classifier_free(const models::DitModel& model, const DenoiseInputs& in) {
  return model.guidance() == models::Guidance::ClassifierFree && in.guidance_scale > 1;
}

// The guidance branches' texts as one batch [negative; prompt]: stacked, or where the family's branches differ
// in length zero-padded to the longer, with each sample's real rows counted.
std::pair<at::Tensor, at::Tensor> batch_text(const at::Tensor& negative, const at::Tensor& prompt, bool ragged,
                                             const at::Device& dev) {
  if (!prompt.defined()) return {};
  if (!ragged) return {at::cat({negative, prompt}, 0).to(dev), {}};
  const int64_t n = negative.size(1), p = prompt.size(1), T = std::max(n, p);
  const auto padded = [T](const at::Tensor& t) { return at::constant_pad_nd(t, {0, 0, 0, T - t.size(1)}); };
  std::vector<int64_t> valid(size_t(negative.size(0)), n);  // a count for every sample of both branches
  valid.insert(valid.end(), size_t(prompt.size(0)), p);
  return {at::cat({padded(negative), padded(prompt)}, 0).to(dev), at::tensor(valid, at::kLong)};
}

}  // namespace

void check_inputs(const models::DitModel& model, const DenoiseInputs& in) {
  const bool cfg = classifier_free(model, in);
  model.check_inputs(in.latents, in.prompt_embeds, "prompt_embeds");
  if (!cfg) return;
  model.check_inputs(in.latents, in.negative_prompt_embeds, "negative_prompt_embeds");
  if (!model.ragged_text() && in.negative_prompt_embeds.size(1) != in.prompt_embeds.size(1))
    throw InputError("negative_prompt_embeds " + io::shape_str(in.negative_prompt_embeds.sizes().vec()) +
                     " and prompt_embeds " + io::shape_str(in.prompt_embeds.sizes().vec()) +
                     " must have the same number of text tokens");
}

at::Tensor denoise(const models::DitModel& model, sampling::Sampler& sampler, const DenoiseInputs& in,
                   sampling::NoiseSource* noise, const Hooks& hooks, const ModelCall& call, const SecondExpert* second) {
  // No InferenceMode here: c10d's Gloo works on its own threads and cannot write into inference tensors.
  // Nothing requires grad, so no graph is recorded either way.
  check_inputs(model, in);
  const int N = sampler.steps();
  const bool cfg = classifier_free(model, in);
  const auto dev = model.device();
  const bool ragged = model.ragged_text();
  const auto [text, text_valid] = cfg ? batch_text(in.negative_prompt_embeds, in.prompt_embeds, ragged, dev)
                                      : std::pair{in.prompt_embeds.to(dev), at::Tensor()};
  // A negative prompt without the second encoder's rows has none of them (no text in quotes).
  const at::Tensor& p2 = in.prompt_embeds_2;
  const at::Tensor negative_2 = !p2.defined() || in.negative_prompt_embeds_2.defined()
                                    ? in.negative_prompt_embeds_2
                                    : at::zeros({p2.size(0), 0, p2.size(2)}, p2.options());
  const auto [text_2, text_2_valid] =
      cfg ? batch_text(negative_2, in.prompt_embeds_2, ragged, dev)
          : std::pair{in.prompt_embeds_2.defined() ? in.prompt_embeds_2.to(dev) : at::Tensor(), at::Tensor()};
  const auto& l = in.latents;
  const auto pos = model.positions(model.token_grid(l));
  at::Tensor latents = l.to(dev, at::kFloat);
  const int64_t batch = cfg ? 2 * l.size(0) : l.size(0);
  at::Tensor pooled, guidance;
  if (in.pooled_prompt_embeds.defined()) pooled = in.pooled_prompt_embeds.to(dev);
  if (model.guidance() == models::Guidance::Embedded)
    guidance = at::full({batch}, in.guidance_scale, at::TensorOptions(at::kFloat).device(dev));

  const auto both = [&](const at::Tensor& t) {
    return !t.defined() ? t : cfg ? at::cat({t, t}, 0).to(dev) : t.to(dev);
  };
  const at::Tensor condition = both(in.condition), image = both(in.image);
  StepModel current{&model, call};
  double scale = in.guidance_scale;
  bool switched = false;
  for (int i = 0; i < N; ++i) {
    if (hooks.stop()) throw Cancelled();
    if (second && !switched && sampler.timestep(i) < second->boundary_timestep) {
      current = second->load();
      scale = second->guidance_scale;
      switched = true;
    }
    const auto start = std::chrono::steady_clock::now();
    models::StepInputs step{cfg ? at::cat({latents, latents}, 0) : latents,
                            text,
                            sampler.model_timestep(i, batch, dev),
                            pooled,
                            guidance,
                            condition,
                            image};
    step.text_2 = text_2;
    step.text_valid = text_valid;
    step.text_2_valid = text_2_valid;
    at::Tensor pred = (current.call ? current.call(step, pos) : current.model->forward(step, pos)).to(at::kFloat);
    if (cfg) {
      auto parts = pred.chunk(2, 0);
      const double g = sampling::guidance_at(scale, in.use_dynamic_cfg, int64_t(sampler.timestep(i)), N);
      pred = parts[0] + g * (parts[1] - parts[0]);
    }
    latents = sampler.step(i, pred, latents, noise);
    // A run gone to NaN or infinity (a LoRA strength far from 1, float16's range) would decode to a black clip.
    if (!at::isfinite(latents).all().item<bool>())
      throw InputError("step " + std::to_string(i + 1) + " of " + std::to_string(N) + " made the latents NaN or "
                       "infinite; nothing was written. A LoRA strength far from 1 (--lora FILE:SCALE) or float16's "
                       "range (--dtype bfloat16 or float32) is the usual cause");
    // A step's time is the device's: wait for its queue here, at the step's end (the next step's agreed
    // stop flag waits for it anyway).
    compat::synchronize(dev);
    if (hooks.on_step)
      hooks.on_step({i + 1, N, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
                     latents});
  }
  return current.model->final_latents(latents, in.condition.defined() ? in.condition.to(dev) : in.condition);
}

}  // namespace studio::pipeline
