// A model family's LibTorch half: its row in models/ (its torch-free row is plan/family.h). The classes
// that run a folder of the family (transformer, VAE, sampler), how its latents are stored, how its prompts
// are encoded and how its latents preview. Each family's row is in models/<family>/<family>_runtime.cpp;
// everything else loads a model through the functions below and sees only the seams (models/dit_model.h,
// models/vae_decoder.h, sampling/sampler.h).
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "io/weights/weights.h"
#include "models/dit_model.h"
#include "models/vae_decoder.h"
#include "plan/family.h"
#include "plan/job.h"
#include "plan/model_folder.h"
#include "sampling/noise.h"
#include "sampling/sampler.h"
#include "text/encode/prompt.h"

namespace studio::models {

// How a family's latents map to an approximate picture while denoising: rgb = latents . factors + bias,
// about [-1, 1] (the factors ComfyUI publishes for the family's latent space). Undefined where none are
// published (CogVideoX): the preview then shows the latents' own first channels.
struct LatentRgb {
  at::Tensor factors;  // [C, 3] float32
  at::Tensor bias;     // [3]
};

// What the job's pictures give an image-to-video run: for one sample when the same for every sample
// (batch 1, repeated), else for each of the run's samples (CogVideoX samples its VAE's posterior per video).
struct PictureConditioning {
  at::Tensor condition;  // models::StepInputs::condition [1 or samples, ...]
  at::Tensor image;      // models::StepInputs::image [1, n, image_dim], or undefined
  std::vector<std::pair<std::string, at::Tensor>> record;  // the intermediates, named as the reference keeps them
};

class FamilyRuntime {
 public:
  virtual ~FamilyRuntime() = default;
  virtual const plan::Family& family() const = 0;  // its torch-free row
  virtual std::shared_ptr<DitModel> load_transformer(const plan::ModelFolder& folder, at::ScalarType dtype,
                                                     at::Device device, BlockRange range, int expert,
                                                     std::shared_ptr<BlockWeights> block_weights) const = 0;
  virtual std::shared_ptr<VaeDecoder> load_vae(const plan::ModelFolder& folder, at::ScalarType dtype,
                                               at::Device device) const = 0;
  virtual std::unique_ptr<sampling::Sampler> make_sampler(const plan::ModelFolder& folder, int steps,
                                                          int64_t image_tokens) const = 0;
  virtual text::PromptEmbeds encode_prompts(const plan::ModelFolder& folder, const plan::JobSpec& job,
                                            at::ScalarType dtype, at::Device device, const text::Log& log) const = 0;
  // Latents as files hold them and back: the same as the model takes them unless the family packs them.
  virtual at::Tensor latents_to_file(const at::Tensor& latents) const { return latents; }
  virtual at::Tensor latents_from_file(const at::Tensor& stored, int64_t, int64_t) const { return stored; }
  virtual LatentRgb latent_rgb(const plan::ModelFolder&) const { return {}; }
  // Image-to-video (plan::Family::takes_image): --image (and --last_image) read, preprocessed and encoded as the
  // family's pipeline does. Run before the initial noise is drawn: `noise` gives a family whose VAE samples
  // its posterior the draws the reference makes first. With `rows` (parallel VAE), every rank of the split
  // calls it and encodes its share of the rows where the family's encoder can; each gets the whole result.
  virtual PictureConditioning condition_on_pictures(const plan::ModelFolder& folder, const plan::JobSpec& job,
                                                    at::ScalarType dtype, at::Device device,
                                                    sampling::SeededNoise& noise, const text::Log& log,
                                                    const RowShare* rows) const;
};

// Every family's runtime, one line each (models/family_runtime.cpp), and the folder's.
const std::vector<const FamilyRuntime*>& runtimes();
const FamilyRuntime& runtime_of(const plan::ModelFolder& folder);

// transformer/ of `folder` (expert 1: Wan2.2's transformer_2/), every weight checked against its config, in
// `dtype` on `device`: the blocks in `range` (a PipeFusion stage's), or all; each block handed to `block_weights`
// as it loads, when given (DitModel::set_block_weights).
std::shared_ptr<DitModel> load_transformer(const plan::ModelFolder& folder, at::ScalarType dtype, at::Device device,
                                           BlockRange range = {}, int expert = 0,
                                           std::shared_ptr<BlockWeights> block_weights = nullptr);
// The weights of transformer/ (expert 1: transformer_2/): the part's folder, or the single file the job gave
// for it (ModelFolder::weight_files), kept as ModelFolder::quantize says.
io::WeightSet transformer_weights(const plan::ModelFolder& folder, int expert = 0);
// vae/ of `folder` (which must have one), likewise.
std::shared_ptr<VaeDecoder> load_vae(const plan::ModelFolder& folder, at::ScalarType dtype, at::Device device);

// The folder's sampler for `steps` steps over latents of `image_tokens` tokens per sample.
std::unique_ptr<sampling::Sampler> make_sampler(const plan::ModelFolder& folder, int steps, int64_t image_tokens);

// The job's texts through the family's encoders (plan::Family::encoder_inputs says which reads which). Throws
// InputError when the folder lacks a tokenizer or text encoder the family needs, saying how to get them.
text::PromptEmbeds encode_prompts(const plan::ModelFolder& folder, const plan::JobSpec& job, at::ScalarType dtype,
                                  at::Device device, const text::Log& log);

// Latents as files hold them (--latents, --save_tensors, --keep_partial), as the reference pipeline keeps
// them: FLUX's packed 2x2 [B, N, 4C], a video family's as the model takes them.
at::Tensor latents_to_file(const plan::ModelFolder& folder, const at::Tensor& latents);
at::Tensor latents_from_file(const plan::ModelFolder& folder, const at::Tensor& stored, int64_t height, int64_t width);

LatentRgb latent_rgb(const plan::ModelFolder& folder);

PictureConditioning condition_on_pictures(const plan::ModelFolder& folder, const plan::JobSpec& job,
                                          at::ScalarType dtype, at::Device device, sampling::SeededNoise& noise,
                                          const text::Log& log, const RowShare* rows = nullptr);

}  // namespace studio::models
