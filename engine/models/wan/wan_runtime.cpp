// Wan2.1 / Wan2.2's row in models/: WanPipeline and WanImageToVideoPipeline of diffusers 0.35.2 (the pictures
// in wan_pictures.*). Wan2.2 A14B's second expert is transformer_2/. The prompt and the negative prompt ("" when not given) are each cleaned
// (text/tokenize/prompt_clean.h), tokenized to max_sequence_length with the attention mask, run through umT5
// (text_encoder/, tokenizer/) with that mask, and zeroed past their tokens.
#include <algorithm>

#include <ATen/ops/from_blob.h>
#include <c10/core/InferenceMode.h>

#include "models/family_runtime.h"
#include "models/wan/wan_pictures.h"
#include "models/wan/wan_transformer.h"
#include "models/wan/wan_vae.h"
#include "plan/error.h"
#include "plan/families/registry.h"
#include "plan/families/wan_config.h"
#include "sampling/unipc.h"
#include "text/encode/t5_encoder.h"
#include "text/tokenize/prompt_clean.h"
#include "text/tokenize/t5_tokenizer.h"

namespace studio::models {

namespace {

const plan::WanParts& wan(const plan::ModelFolder& m) { return m.parts_as<plan::WanParts>(); }

// input_ids holds input_ids, attention_mask, negative_input_ids and negative_attention_mask.
text::PromptEmbeds encode_wan_prompts(const plan::ModelFolder& model, const plan::JobSpec& job, at::ScalarType dtype,
                                      at::Device device, const text::Log& log) {
  const int max_length = job.max_sequence_length;
  if (max_length < 1)
    throw InputError("--max_sequence_length " + std::to_string(max_length) +
                     " leaves no room for the prompt; Wan's pipeline uses 512");
  const auto tokenizer = text::T5Tokenizer::load(part_path(model, model.t5_tokenizer_part()));
  struct Text {
    at::Tensor ids, mask;
    int64_t length;
  };
  std::vector<Text> texts;
  for (const auto& [what, words] : {std::pair<std::string, std::string>{"the prompt", job.prompt},
                                    {"the negative prompt", job.negative_prompt}}) {
    auto e = tokenizer.encode(text::clean_wan_prompt(words), size_t(max_length));
    text::note_truncation(e.untruncated, size_t(max_length) - 1, what + " (umT5)",
                    "--max_sequence_length " + std::to_string(max_length), log);
    const auto length = int64_t(std::count(e.mask.begin(), e.mask.end(), 1));
    texts.push_back({text::ids_tensor(e.ids), text::ids_tensor(e.mask), length});
  }
  text::choose_device(model.text_encoder->parameters(), "umT5", dtype, device, log);
  if (dtype == at::kHalf) {
    log("the umT5 text encoder runs in bfloat16: T5 overflows in float16");
    dtype = at::kBFloat16;
  }
  log("encoding with " + text::encoder_source(model, model.t5_part()) + " (umT5, " +
      std::to_string(model.text_encoder->num_layers) + " layers) on " + device.str());
  auto weights = text::encoder_weights(model, model.t5_part());
  auto encoder = text::T5Encoder::load(weights, *model.text_encoder, dtype, device);
  std::vector<at::Tensor> embeds;
  c10::InferenceMode guard;  // the encoder's outputs are inference tensors, zeroed in place
  for (const auto& t : texts) {
    auto e = encoder->forward(t.ids, t.mask).to(at::kCPU, at::kFloat);
    e.narrow(1, t.length, max_length - t.length).zero_();  // the pipeline keeps each prompt's own tokens only
    embeds.push_back(e);
  }
  text::PromptEmbeds out;
  out.prompt_embeds = embeds[0];
  out.negative_prompt_embeds = embeds[1];
  out.input_ids = {{"input_ids", texts[0].ids},
                   {"attention_mask", texts[0].mask},
                   {"negative_input_ids", texts[1].ids},
                   {"negative_attention_mask", texts[1].mask}};
  return out;  // the encoder is released here
}

// A video's latent-to-RGB factors [channels, 3] and bias [3], copied into tensors.
LatentRgb rgb_table(const float* factors, int64_t channels, const float* bias) {
  return {at::from_blob(const_cast<float*>(factors), {channels, 3}, at::kFloat).clone(),
          at::from_blob(const_cast<float*>(bias), {3}, at::kFloat).clone()};
}

class WanRuntime final : public FamilyRuntime {
 public:
  const plan::Family& family() const override { return plan::wan_family(); }
  std::shared_ptr<DitModel> load_transformer(const plan::ModelFolder& folder, at::ScalarType dtype, at::Device device,
                                             BlockRange range, int expert,
                                             std::shared_ptr<BlockWeights> block_weights) const override {
    auto weights = transformer_weights(folder, expert);
    return WanTransformer::load(weights, expert == 1 ? *wan(folder).transformer_2 : wan(folder).transformer, dtype,
                                device, range, std::move(block_weights));
  }
  std::shared_ptr<VaeDecoder> load_vae(const plan::ModelFolder& folder, at::ScalarType dtype,
                                       at::Device device) const override {
    return WanVae::load(part_path(folder, "vae"), *wan(folder).vae, dtype, device);
  }
  std::unique_ptr<sampling::Sampler> make_sampler(const plan::ModelFolder& folder, int steps, int64_t) const override {
    return std::make_unique<sampling::UniPC>(wan(folder).scheduler, steps);
  }
  text::PromptEmbeds encode_prompts(const plan::ModelFolder& folder, const plan::JobSpec& job, at::ScalarType dtype,
                                    at::Device device, const text::Log& log) const override {
    return encode_wan_prompts(folder, job, dtype, device, log);
  }

  PictureConditioning condition_on_pictures(const plan::ModelFolder& folder, const plan::JobSpec& job,
                                            at::ScalarType dtype, at::Device device, sampling::SeededNoise&,
                                            const text::Log& log, const RowShare* rows) const override {
    return wan_picture_conditioning(folder, job, dtype, device, log, rows);  // draws nothing: the VAE's mean
  }

  LatentRgb latent_rgb(const plan::ModelFolder& folder) const override {
    if (wan(folder).transformer.out_channels == 48) {
      // The Wan2.2 VAE's 48 latent channels (TI2V-5B; ComfyUI's latent_formats.Wan22).
      static const float factors[48][3] = {
        {0.0119f, 0.0103f, 0.0046f}, {-0.1062f, -0.0504f, 0.0165f}, {0.0140f, 0.0409f, 0.0491f},
        {-0.0813f, -0.0677f, 0.0607f}, {0.0656f, 0.0851f, 0.0808f}, {0.0264f, 0.0463f, 0.0912f},
        {0.0295f, 0.0326f, 0.0590f}, {-0.0244f, -0.0270f, 0.0025f}, {0.0443f, -0.0102f, 0.0288f},
        {-0.0465f, -0.0090f, -0.0205f}, {0.0359f, 0.0236f, 0.0082f}, {-0.0776f, 0.0854f, 0.1048f},
        {0.0564f, 0.0264f, 0.0561f}, {0.0006f, 0.0594f, 0.0418f}, {-0.0319f, -0.0542f, -0.0637f},
        {-0.0268f, 0.0024f, 0.0260f}, {0.0539f, 0.0265f, 0.0358f}, {-0.0359f, -0.0312f, -0.0287f},
        {-0.0285f, -0.1032f, -0.1237f}, {0.1041f, 0.0537f, 0.0622f}, {-0.0086f, -0.0374f, -0.0051f},
        {0.0390f, 0.0670f, 0.2863f}, {0.0069f, 0.0144f, 0.0082f}, {0.0006f, -0.0167f, 0.0079f},
        {0.0313f, -0.0574f, -0.0232f}, {-0.1454f, -0.0902f, -0.0481f}, {0.0714f, 0.0827f, 0.0447f},
        {-0.0304f, -0.0574f, -0.0196f}, {0.0401f, 0.0384f, 0.0204f}, {-0.0758f, -0.0297f, -0.0014f},
        {0.0568f, 0.1307f, 0.1372f}, {-0.0055f, -0.0310f, -0.0380f}, {0.0239f, -0.0305f, 0.0325f},
        {-0.0663f, -0.0673f, -0.0140f}, {-0.0416f, -0.0047f, -0.0023f}, {0.0166f, 0.0112f, -0.0093f},
        {-0.0211f, 0.0011f, 0.0331f}, {0.1833f, 0.1466f, 0.2250f}, {-0.0368f, 0.0370f, 0.0295f},
        {-0.3441f, -0.3543f, -0.2008f}, {-0.0479f, -0.0489f, -0.0420f}, {-0.0660f, -0.0153f, 0.0800f},
        {-0.0101f, 0.0068f, 0.0156f}, {-0.0690f, -0.0452f, -0.0927f}, {-0.0145f, 0.0041f, 0.0015f},
        {0.0421f, 0.0451f, 0.0373f}, {0.0504f, -0.0483f, -0.0356f}, {-0.0837f, 0.0168f, 0.0055f},
      };
      static const float bias[3] = {0.0317f, -0.0878f, -0.1388f};
      return rgb_table(&factors[0][0], 48, bias);
    }
    if (wan(folder).transformer.out_channels != 16) return {};
    // Wan2.1's 16 latent channels (ComfyUI's latent_formats.Wan21; Wan2.2 A14B shares its VAE).
    static const float factors[16][3] = {
        {-0.1299f, -0.1692f, 0.2932f}, {0.0671f, 0.0406f, 0.0442f},   {0.3568f, 0.2548f, 0.1747f},
        {0.0372f, 0.2344f, 0.1420f},   {0.0313f, 0.0189f, -0.0328f},  {0.0296f, -0.0956f, -0.0665f},
        {-0.3477f, -0.4059f, -0.2925f}, {0.0166f, 0.1902f, 0.1975f},  {-0.0412f, 0.0267f, -0.1364f},
        {-0.1293f, 0.0740f, 0.1636f},  {0.0680f, 0.3019f, 0.1128f},   {0.0032f, 0.0581f, 0.0639f},
        {-0.1251f, 0.0927f, 0.1699f},  {0.0060f, -0.0633f, 0.0005f},  {0.3477f, 0.2275f, 0.2950f},
        {0.1984f, 0.0913f, 0.1861f}};
    static const float bias[3] = {-0.1835f, -0.0868f, -0.3360f};
    return rgb_table(&factors[0][0], 16, bias);
  }
};

}  // namespace

const FamilyRuntime& wan_runtime() {
  static const WanRuntime row;
  return row;
}

}  // namespace studio::models
