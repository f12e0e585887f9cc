// CogVideoX's row in models/: CogVideoXPipeline of diffusers 0.32.2. Its prompt and negative prompt ("" when
// not given) each through T5 (text_encoder/, tokenizer/) without an attention mask.
#include "models/cogvideox/cogvideox_transformer.h"
#include "models/cogvideox/cogvideox_vae.h"
#include "models/family_runtime.h"
#include "plan/families/cogvideox_config.h"
#include "plan/families/registry.h"
#include "sampling/scheduler.h"

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
};

}  // namespace

const FamilyRuntime& cogvideox_runtime() {
  static const CogVideoXRuntime row;
  return row;
}

}  // namespace studio::models
