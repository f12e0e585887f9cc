// CogVideoX's row in models/: CogVideoXPipeline of diffusers 0.32.2 and CogVideoXImageToVideoPipeline of 0.35.2.
// Its prompt and negative prompt ("" when not given) each through T5 (text_encoder/, tokenizer/) without an
// attention mask.
#include <ATen/TensorOperators.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/zeros.h>

#include "models/cogvideox/cogvideox_picture_encoder.h"
#include "models/cogvideox/cogvideox_transformer.h"
#include "models/cogvideox/cogvideox_vae.h"
#include "models/family_runtime.h"
#include "models/image/pixel_values.h"
#include "plan/families/cogvideox_config.h"
#include "plan/families/registry.h"
#include "plan/job.h"
#include "sampling/scheduler.h"
#include "video/picture.h"

namespace studio::models {

namespace {

const plan::CogVideoXParts& cog(const plan::ModelFolder& m) { return m.parts_as<plan::CogVideoXParts>(); }

class CogVideoXRuntime final : public FamilyRuntime {
 public:
  const plan::Family& family() const override { return plan::cogvideox_family(); }
  std::shared_ptr<DitModel> load_transformer(const plan::ModelFolder& folder, at::ScalarType dtype, at::Device device,
                                             BlockRange range, int,
                                             std::shared_ptr<BlockWeights> block_weights) const override {
    auto weights = transformer_weights(folder);
    return CogVideoXTransformer::load(weights, cog(folder).transformer, dtype, device, range, std::move(block_weights));
  }
  std::shared_ptr<VaeDecoder> load_vae(const plan::ModelFolder& folder, at::ScalarType dtype,
                                       at::Device device) const override {
    return CogVideoXVae::load(part_path(folder, "vae"), *cog(folder).vae, dtype, device);
  }
  std::unique_ptr<sampling::Sampler> make_sampler(const plan::ModelFolder& folder, int steps, int64_t) const override {
    return std::make_unique<sampling::Scheduler>(cog(folder).scheduler, steps);
  }
  text::PromptEmbeds encode_prompts(const plan::ModelFolder& folder, const plan::JobSpec& job, at::ScalarType dtype,
                                    at::Device device, const text::Log& log) const override {
    auto t5 = text::encode_t5(folder, {{"the prompt", job.prompt}, {"the negative prompt", job.negative_prompt}},
                              job.max_sequence_length, dtype, device, log);
    text::PromptEmbeds out;
    out.prompt_embeds = t5[0].second;
    out.negative_prompt_embeds = t5[1].second;
    out.input_ids = {{"input_ids", t5[0].first}, {"negative_input_ids", t5[1].first}};
    return out;
  }
  // prepare_latents' picture: encoded on every rank, whole, in tiles or split by rows; its latent distribution
  // sampled from each video's generator (before that video's noise), scaled, in latent frame 0 of otherwise zero
  // frames as many as the noise's.
  PictureConditioning condition_on_pictures(const plan::ModelFolder& folder, const plan::JobSpec& job,
                                            at::ScalarType dtype, at::Device device, sampling::SeededNoise& noise,
                                            const text::Log& log, const RowShare* rows) const override {
    const auto& vae = *cog(folder).vae;
    const auto image = vae_pixel_values(video::read_picture(job.image_file, "--image"), job.width, job.height);
    log("encoding the picture with the VAE encoder on " + device.str() +
        (rows ? ", split by rows over " + std::to_string(rows->ranks) + " ranks"
              : job.vae_tiling ? ", in tiles (--enable_tiling)" : ""));
    const auto encoder = CogVideoXPictureEncoder::load(part_path(folder, "vae"), vae, dtype, device);
    // As the pipeline encodes with the VAE's tiling on: the same tiles as the decode's (--tile_sample_min_*).
    const auto moments =
        (job.vae_tiling && !rows ? encoder->moments_tiled(image, {job.tile_sample_min_height, job.tile_sample_min_width})
                                 : encoder->moments(image, rows))
            .cpu();
    const int64_t V = noise.videos(), C = vae.latent_channels;
    const auto drawn = noise.draw({V, C, 1, moments.size(3), moments.size(4)});
    const auto sampled = sample_latents(moments.expand({V, -1, -1, -1, -1}), drawn);
    const double scale = vae.invert_scale_latents ? 1.0 / vae.scaling_factor : vae.scaling_factor;
    const auto first = (sampled.permute({0, 2, 1, 3, 4}) * scale).contiguous();  // [V, 1, C, h, w]
    const auto geo = plan::latent_geometry(job, folder);
    PictureConditioning out;
    out.condition = at::cat({first, at::zeros({V, geo.padded_frames - 1, C, first.size(3), first.size(4)})}, 1);
    out.record = {{"image", image},
                  {"vae_encoder_output", moments},
                  {"image_latent_noise", drawn},
                  {"image_latents_sampled", sampled},
                  {"image_latents", out.condition}};
    return out;
  }
};

}  // namespace

const FamilyRuntime& cogvideox_runtime() {
  static const CogVideoXRuntime row;
  return row;
}

}  // namespace studio::models
