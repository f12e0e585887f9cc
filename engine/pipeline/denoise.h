// Embeddings -> final latents: the denoising loop of diffusers' pipelines (v0.32.2: CogVideoXPipeline,
// FluxPipeline; 0.35.2: WanPipeline) for any family and sampler, with a per-step callback and a stop request
// checked before every step. Classifier-free guidance runs both branches as one batch, unconditional first
// (WanPipeline makes two calls; each sample of a batch is computed alone, so the result is the same).
#pragma once
#include <string>
#include <functional>

#include <ATen/core/Tensor.h>

#include "models/dit_model.h"
#include "plan/model_folder.h"
#include "sampling/noise.h"
#include "sampling/sampler.h"

namespace studio::pipeline {

struct DenoiseInputs {
  at::Tensor prompt_embeds;           // [B, T, text_embed_dim]
  at::Tensor negative_prompt_embeds;  // [B, T, text_embed_dim]; used with classifier-free guidance
  at::Tensor pooled_prompt_embeds;    // [B, pooled dim], for a family that takes a pooled text vector (FLUX)
  // A second text the family embeds apart (models::StepInputs::text_2: HunyuanVideo-1.5's ByT5 rows), and the
  // negative prompt's; [B, 0, dim] where a prompt has none. A family whose branches differ in text length
  // (models::DitModel::ragged_text) is given each branch's real rows alone, here and in prompt_embeds.
  at::Tensor prompt_embeds_2, negative_prompt_embeds_2;
  at::Tensor latents;                 // the initial noise in the model's latent layout (CogVideoX 1.5: F padded)
  // Image-to-video (models::StepInputs::condition, ::image) for each sample, the same in both guidance branches.
  at::Tensor condition;
  at::Tensor image;
  double guidance_scale = 6.0;  // classifier-free, or the input of a guidance embedding
  bool use_dynamic_cfg = false;
};

// One finished denoising step.
struct StepDone {
  int step = 0, total = 0;  // 1-based
  double seconds = 0;       // the step's own time
  at::Tensor latents;       // after the step [B, F, C, h, w] (float32, on the model's device)
  // With a step cache: how many of the step's `calls` transformer calls ran every block (the others
  // reused); else -1. `calls` is 2 where the family's reference calls the transformer once per guidance
  // branch (Wan) and a step cache keeps a context for each, else 1.
  int full = -1;
  int calls = 1;
};

// What a run tells its caller as it goes (every member may be empty).
struct Hooks {
  std::function<void(const std::string& phase)> on_phase;  // loading, encoding, denoising, decoding, writing
  std::function<void(const StepDone& done)> on_step;
  // Each decoded batch as RGB8 [b, T, H, W, 3] on the CPU: videos first_video.., frames first_frame..
  std::function<void(const at::Tensor& rgb8, int first_video, int first_frame)> on_frames;
  // How far the decode has got: `done` of its `total` parts (tiles, frame batches, the decoder's levels).
  std::function<void(int done, int total)> on_decode_progress;
  // Checked before every step and every part of the decode; when true the run throws Cancelled.
  std::function<bool()> stop_requested;
  bool stop() const { return stop_requested && stop_requested(); }
};

// One transformer call over the whole batch (both guidance branches). The default is the model's own
// forward(); a parallel rank passes its wrapper (parallel/parallel_model.h).
using ModelCall = std::function<at::Tensor(const models::StepInputs& in, const models::Positions& pos)>;

// The transformer some steps run, and how it is called (its own forward() when `call` is empty).
struct StepModel {
  const models::DitModel* model = nullptr;
  ModelCall call;
};

// Wan2.2's second expert: the steps whose timestep is below `boundary_timestep` run it, guided by
// `guidance_scale`. `load()` is called once, before the first such step: it releases the first expert and
// then loads the second, so that one expert is resident at a time.
struct SecondExpert {
  double boundary_timestep = 0;
  double guidance_scale = 0;
  std::function<StepModel()> load;
};

// Checks the inputs' shapes against the model; InputError names the tensor and what would fit.
void check_inputs(const models::DitModel& model, const DenoiseInputs& in);

// Returns the final latents as float32 on the model's device, in the model's latent layout.
// `model` is not used again once `second` has loaded.
at::Tensor denoise(const models::DitModel& model, sampling::Sampler& sampler,
                   const DenoiseInputs& in, sampling::NoiseSource* noise, const Hooks& hooks = {},
                   const ModelCall& call = {}, const SecondExpert* second = nullptr);

}  // namespace studio::pipeline
