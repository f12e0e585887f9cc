// FLUX.1's row in models/: FluxPipeline of diffusers 0.32.2. Its latents are stored packed 2x2, as the
// pipeline returns them; the prompt goes through CLIP (77 tokens, the pooled output) and the text that
// plan::Family::encoder_inputs names for T5 (prompt_2, or the prompt) through T5; no negative prompt.

#include <ATen/ops/from_blob.h>

#include "models/family_runtime.h"
#include "models/flux/flux_transformer.h"
#include "models/vae/autoencoder_kl.h"
#include "plan/families/flux_config.h"
#include "plan/families/registry.h"
#include "sampling/flow_match.h"
#include "text/encode/clip_encoder.h"
#include "text/tokenize/clip_tokenizer.h"

namespace studio::models {

namespace {

const plan::FluxParts& flux(const plan::ModelFolder& m) { return m.parts_as<plan::FluxParts>(); }

class FluxRuntime final : public FamilyRuntime {
 public:
  const plan::Family& family() const override { return plan::flux_family(); }
  std::shared_ptr<DitModel> load_transformer(const plan::ModelFolder& folder, at::ScalarType dtype, at::Device device,
                                             BlockRange range, int,
                                             std::shared_ptr<BlockWeights> block_weights) const override {
    auto weights = transformer_weights(folder);
    return FluxTransformer::load(weights, flux(folder).transformer, dtype, device, range, std::move(block_weights));
  }
  std::shared_ptr<VaeDecoder> load_vae(const plan::ModelFolder& folder, at::ScalarType dtype,
                                       at::Device device) const override {
    return AutoencoderKL::load(part_path(folder, "vae"), *flux(folder).vae, dtype, device);
  }
  std::unique_ptr<sampling::Sampler> make_sampler(const plan::ModelFolder& folder, int steps,
                                                  int64_t image_tokens) const override {
    return std::make_unique<sampling::FlowMatchEuler>(flux(folder).scheduler, steps, image_tokens);
  }
  at::Tensor latents_to_file(const at::Tensor& latents) const override { return pack_latents(latents); }
  at::Tensor latents_from_file(const at::Tensor& stored, int64_t height, int64_t width) const override {
    return unpack_latents(stored, height, width);
  }

  text::PromptEmbeds encode_prompts(const plan::ModelFolder& folder, const plan::JobSpec& job, at::ScalarType dtype,
                                    at::Device device, const text::Log& log) const override {
    text::PromptEmbeds out;
    std::string clip_field, t5_field;  // the job's texts each encoder reads
    for (const auto& in : family().encoder_inputs(job))
      (in.encoder == plan::TextEncoder::CLIP ? clip_field : t5_field) = in.field;
    {
      const auto tokenizer = text::ClipTokenizer::load(part_path(folder, family().clip_tokenizer_part()));
      auto e = tokenizer.encode(plan::job_text(job, clip_field));
      text::note_truncation(e.untruncated, tokenizer.model_max_length() - 2, "the prompt (CLIP)",
                            "CLIP reads " + std::to_string(tokenizer.model_max_length()) +
                                " tokens; --prompt_2 gives T5 its own",
                            log);
      auto ids = text::ids_tensor(e.ids);
      at::ScalarType clip_dtype = dtype;
      at::Device clip_device = device;
      const auto& clip = *flux(folder).clip;
      text::choose_device(clip.parameters(), "CLIP", clip_dtype, clip_device, log);
      log("encoding with " + text::encoder_source(folder, "text_encoder") + " (CLIP, " +
          std::to_string(clip.num_hidden_layers) + " layers) on " + clip_device.str());
      auto weights = text::encoder_weights(folder, "text_encoder");
      auto encoder = text::ClipTextEncoder::load(weights, clip, clip_dtype, clip_device);
      out.pooled_prompt_embeds = encoder->forward(ids).pooled.to(at::kCPU, at::kFloat);
      out.input_ids.push_back({"clip_input_ids", ids});
    }  // CLIP is released before T5 loads
    auto t5 = text::encode_t5(folder, {{t5_field == "prompt" ? "the prompt" : t5_field, plan::job_text(job, t5_field)}},
                              job.max_sequence_length, dtype, device, log);
    out.prompt_embeds = t5[0].second;
    out.input_ids.push_back({"t5_input_ids", t5[0].first});
    return out;
  }

  // FLUX.1's 16 latent channels (ComfyUI's latent_formats.Flux, fitted for the denoiser's latent space).
  LatentRgb latent_rgb(const plan::ModelFolder& folder) const override {
    if (flux(folder).transformer.in_channels != 64) return {};
    static const float factors[16][3] = {
        {-0.0346f, 0.0244f, 0.0681f},  {0.0034f, 0.0210f, 0.0687f},   {0.0275f, -0.0668f, -0.0433f},
        {-0.0174f, 0.0160f, 0.0617f},  {0.0859f, 0.0721f, 0.0329f},   {0.0004f, 0.0383f, 0.0115f},
        {0.0405f, 0.0861f, 0.0915f},   {-0.0236f, -0.0185f, -0.0259f}, {-0.0245f, 0.0250f, 0.1180f},
        {0.1008f, 0.0755f, -0.0421f},  {-0.0515f, 0.0201f, 0.0011f},  {0.0428f, -0.0012f, -0.0036f},
        {0.0817f, 0.0765f, 0.0749f},   {-0.1264f, -0.0522f, -0.1103f}, {-0.0280f, -0.0881f, -0.0499f},
        {-0.1262f, -0.0982f, -0.0778f}};
    static const float bias[3] = {-0.0329f, -0.0718f, -0.0851f};
    return {at::from_blob(const_cast<float*>(&factors[0][0]), {16, 3}, at::kFloat).clone(),
            at::from_blob(const_cast<float*>(bias), {3}, at::kFloat).clone()};
  }
};

}  // namespace

const FamilyRuntime& flux_runtime() {
  static const FluxRuntime row;
  return row;
}

}  // namespace studio::models
