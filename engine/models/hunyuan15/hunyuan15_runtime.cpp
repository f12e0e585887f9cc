// HunyuanVideo-1.5's row in models/: HunyuanVideo15Pipeline of diffusers 0.42.1, text-to-video, and
// HunyuanVideo15ImageToVideoPipeline (models/hunyuan15/hunyuan15_pictures.h). The prompt and
// the negative prompt go through Qwen2.5-VL's language model and ByT5 (models/hunyuan15/hunyuan15_prompt.h); the
// transformer is given each one's real rows alone (its text is ragged: a call per guidance branch).
#include <ATen/ops/nonzero.h>

#include "models/family_runtime.h"
#include "models/hunyuan15/hunyuan15_pictures.h"
#include "models/hunyuan15/hunyuan15_prompt.h"
#include "models/hunyuan15/hunyuan15_transformer.h"
#include "models/hunyuan15/hunyuan15_vae.h"
#include "plan/families/hunyuan15_config.h"
#include "plan/families/registry.h"
#include "sampling/flow_match.h"

namespace studio::models {

namespace {

const plan::Hunyuan15Parts& hy(const plan::ModelFolder& m) { return m.parts_as<plan::Hunyuan15Parts>(); }

// Sample i's rows of `rows` [B, T, d] that `mask` [B, T] marks, as [1, n, d] float32 on the CPU.
at::Tensor real_rows(const at::Tensor& rows, const at::Tensor& mask, int64_t i) {
  return rows.narrow(0, i, 1).index_select(1, at::nonzero(mask[i].to(at::kCPU)).squeeze(1).to(rows.device()))
      .to(at::kCPU, at::kFloat);
}

class Hunyuan15Runtime final : public FamilyRuntime {
 public:
  const plan::Family& family() const override { return plan::hunyuan15_family(); }
  std::shared_ptr<DitModel> load_transformer(const plan::ModelFolder& folder, at::ScalarType dtype, at::Device device,
                                             BlockRange range, int,
                                             std::shared_ptr<BlockWeights> block_weights) const override {
    auto weights = transformer_weights(folder);
    return Hunyuan15Transformer::load(weights, hy(folder).transformer, dtype, device, range, std::move(block_weights));
  }
  std::shared_ptr<VaeDecoder> load_vae(const plan::ModelFolder& folder, at::ScalarType dtype,
                                       at::Device device) const override {
    auto weights = io::WeightSet::open(part_path(folder, "vae"), "diffusion_pytorch_model");
    return Hunyuan15Vae::load(weights, *hy(folder).vae, dtype, device);
  }
  std::unique_ptr<sampling::Sampler> make_sampler(const plan::ModelFolder& folder, int steps,
                                                  int64_t image_tokens) const override {
    return std::make_unique<sampling::FlowMatchEuler>(hy(folder).scheduler, steps, image_tokens);
  }

  text::PromptEmbeds encode_prompts(const plan::ModelFolder& folder, const plan::JobSpec& job, at::ScalarType dtype,
                                    at::Device device, const text::Log& log) const override {
    const bool negative = job.guidance_scale > 1;  // the guider encodes the negative prompt only to use it
    std::vector<std::string> texts{job.prompt};
    if (negative) texts.push_back(job.negative_prompt);
    const auto& qwen_cfg = *hy(folder).qwen;
    const int layers = hy(folder).qwen_layers();  // the last two never run
    text::choose_device(qwen_cfg.parameters(layers), "Qwen2.5-VL's language model", dtype, device, log);
    log("encoding with " + text::encoder_source(folder, "text_encoder") + " (Qwen2.5-VL's language model, " +
        std::to_string(layers) + " of its " + std::to_string(qwen_cfg.num_hidden_layers) +
        " layers) and " + text::encoder_source(folder, "text_encoder_2") +
        " (ByT5, for the text in quotes) on " + device.str());
    auto qwen_weights = text::encoder_weights(folder, "text_encoder");
    const auto qwen = text::LlmEncoder::load(qwen_weights, qwen_cfg, dtype, device, plan::kQwenHiddenState);
    auto byt5_weights = text::encoder_weights(folder, "text_encoder_2");
    const auto byt5 = text::T5Encoder::load(byt5_weights, *folder.text_encoder, dtype, device);
    const auto e = hunyuan15::encode_prompts(texts, text::QwenTokenizer::load(part_path(folder, "tokenizer")), *qwen,
                                             text::ByT5Tokenizer::load(part_path(folder, "tokenizer_2")), *byt5,
                                             hunyuan15::Rows::Real);
    text::PromptEmbeds out;
    for (int64_t i = 0; i < int64_t(texts.size()); ++i) {
      const std::string what = i == 0 ? "the prompt" : "the negative prompt", name = i == 0 ? "" : "negative_";
      text::note_truncation(e.chat_tokens[size_t(i)], hunyuan15::kPromptTokens + hunyuan15::kCropStart,
                            what + " (in Qwen's chat template)",
                            "HunyuanVideo-1.5 reads " + std::to_string(hunyuan15::kPromptTokens) + " tokens", log);
      (i == 0 ? out.prompt_embeds : out.negative_prompt_embeds) = real_rows(e.embeds, e.mask, i);
      (i == 0 ? out.prompt_embeds_2 : out.negative_prompt_embeds_2) = real_rows(e.glyph_embeds, e.glyph_mask, i);
      out.input_ids.push_back({name + "input_ids", e.input_ids.narrow(0, i, 1)});
      out.input_ids.push_back({name + "byt5_input_ids", e.glyph_ids.narrow(0, i, 1)});
    }
    return out;
  }

  PictureConditioning condition_on_pictures(const plan::ModelFolder& folder, const plan::JobSpec& job,
                                            at::ScalarType dtype, at::Device device, sampling::SeededNoise&,
                                            const text::Log& log, const RowShare* rows) const override {
    return hunyuan15_picture_conditioning(folder, job, dtype, device, log, rows);  // draws nothing: the VAE's mean
  }
};

}  // namespace

const FamilyRuntime& hunyuan15_runtime() {
  static const Hunyuan15Runtime row;
  return row;
}

}  // namespace studio::models
