#include "text/prompt.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include <ATen/ops/from_blob.h>
#include <c10/core/InferenceMode.h>

#include "compat/torch_compat.h"
#include "plan/error.h"
#include "text/clip_encoder.h"
#include "text/clip_tokenizer.h"
#include "text/prompt_clean.h"
#include "text/t5_encoder.h"
#include "text/t5_tokenizer.h"

namespace fs = std::filesystem;

namespace studio::text {

namespace {

using Log = std::function<void(const std::string&)>;

at::Tensor ids_tensor(std::vector<int64_t>& ids) {
  return at::from_blob(ids.data(), {1, int64_t(ids.size())}, at::kLong).clone();
}

void note_truncation(size_t untruncated, size_t kept, const std::string& what, const std::string& why, const Log& log) {
  if (untruncated > kept)
    log(what + " is " + std::to_string(untruncated) + " tokens; only the first " + std::to_string(kept) +
        " are used (" + why + ")");
}

// The encoder goes to the CPU when the GPU cannot hold it (T5-XXL's 4.7B parameters in the real models).
void choose_device(double parameters, const std::string& name, at::ScalarType& dtype, at::Device& device,
                   const Log& log) {
  const double need = parameters * double(c10::elementSize(dtype)) * 1.2;
  if (auto mem = compat::device_memory(device); mem && double(mem->free_bytes) < need) {
    char line[240];
    std::snprintf(line, sizeof line, "%s has %.1f GiB free and the %s text encoder needs about %.1f GiB: encoding on the CPU",
                  device.str().c_str(), double(mem->free_bytes) / (1 << 30), name.c_str(), need / (1 << 30));
    log(line);
    device = at::kCPU;
    dtype = at::kFloat;
  }
}

void require_text_parts(const plan::ModelFolder& model) {
  if (!model.can_encode_words())
    throw InputError(model.dir + ": " + plan::missing_text_parts(model) +
                     ", so --prompt cannot be encoded. Download the whole model folder, or pass --prompt_embeds FILE");
}

// T5 on each text in turn: [1, L, d_model] float32 each, with the ids.
std::vector<std::pair<at::Tensor, at::Tensor>> encode_t5(const plan::ModelFolder& model,
                                                         const std::vector<std::pair<std::string, std::string>>& texts,
                                                         int max_length, at::ScalarType dtype, at::Device device,
                                                         const Log& log) {
  const fs::path dir(model.dir);
  const auto tokenizer = T5Tokenizer::load((dir / model.t5_tokenizer_part()).string());
  std::vector<std::pair<at::Tensor, at::Tensor>> out;
  for (const auto& [what, text] : texts) {
    auto e = tokenizer.encode(text, size_t(max_length));
    note_truncation(e.untruncated, size_t(max_length) - 1, what + " (T5)",
                    "--max_sequence_length " + std::to_string(max_length), log);
    out.push_back({ids_tensor(e.ids), {}});
  }
  choose_device(model.text_encoder->parameters(), "T5", dtype, device, log);
  if (dtype == at::kHalf) {
    // T5's feed-forward outputs exceed float16's range (transformers keeps its `wo` in float32 for that);
    // bfloat16 has float32's range.
    log("the T5 text encoder runs in bfloat16: T5 overflows in float16");
    dtype = at::kBFloat16;
  }
  const std::string part = (dir / model.t5_part()).string();
  log("encoding with " + part + " (T5, " + std::to_string(model.text_encoder->num_layers) + " layers) on " +
      device.str());
  auto encoder = T5Encoder::load(part, *model.text_encoder, dtype, device);
  for (auto& [ids, embeds] : out) embeds = encoder->forward(ids).to(at::kCPU, at::kFloat);
  return out;  // the encoder is released here
}

PromptEmbeds encode_cogvideox(const plan::ModelFolder& model, const plan::JobSpec& job, at::ScalarType dtype,
                              at::Device device, const Log& log) {
  auto t5 = encode_t5(model, {{"the prompt", job.prompt}, {"the negative prompt", job.negative_prompt}},
                      job.max_sequence_length, dtype, device, log);
  PromptEmbeds out;
  out.prompt_embeds = t5[0].second;
  out.negative_prompt_embeds = t5[1].second;
  out.input_ids = {{"input_ids", t5[0].first}, {"negative_input_ids", t5[1].first}};
  return out;
}

PromptEmbeds encode_flux(const plan::ModelFolder& model, const plan::JobSpec& job, at::ScalarType dtype,
                         at::Device device, const Log& log) {
  PromptEmbeds out;
  {
    const auto tokenizer = ClipTokenizer::load((fs::path(model.dir) / "tokenizer").string());
    auto e = tokenizer.encode(job.prompt);
    note_truncation(e.untruncated, tokenizer.model_max_length() - 2, "the prompt (CLIP)",
                    "CLIP reads " + std::to_string(tokenizer.model_max_length()) + " tokens; --prompt_2 gives T5 its own",
                    log);
    auto ids = ids_tensor(e.ids);
    at::ScalarType clip_dtype = dtype;
    at::Device clip_device = device;
    choose_device(model.flux->clip->parameters(), "CLIP", clip_dtype, clip_device, log);
    const std::string part = (fs::path(model.dir) / "text_encoder").string();
    log("encoding with " + part + " (CLIP, " + std::to_string(model.flux->clip->num_hidden_layers) + " layers) on " +
        clip_device.str());
    auto encoder = ClipTextEncoder::load(part, *model.flux->clip, clip_dtype, clip_device);
    out.pooled_prompt_embeds = encoder->forward(ids).pooled.to(at::kCPU, at::kFloat);
    out.input_ids.push_back({"clip_input_ids", ids});
  }  // CLIP is released before T5 loads
  const std::string& words_2 = job.prompt_2.empty() ? job.prompt : job.prompt_2;
  auto t5 = encode_t5(model, {{job.prompt_2.empty() ? "the prompt" : "prompt_2", words_2}}, job.max_sequence_length,
                      dtype, device, log);
  out.prompt_embeds = t5[0].second;
  out.input_ids.push_back({"t5_input_ids", t5[0].first});
  return out;
}

}  // namespace

PromptEmbeds encode_wan_prompts(const plan::ModelFolder& model, const plan::JobSpec& job, at::ScalarType dtype,
                                at::Device device, const Log& log) {
  require_text_parts(model);
  const int max_length = job.max_sequence_length;
  if (max_length < 1)
    throw InputError("--max_sequence_length " + std::to_string(max_length) +
                     " leaves no room for the prompt; Wan's pipeline uses 512");
  const fs::path dir(model.dir);
  const auto tokenizer = T5Tokenizer::load((dir / model.t5_tokenizer_part()).string());
  struct Text {
    at::Tensor ids, mask;
    int64_t length;
  };
  std::vector<Text> texts;
  for (const auto& [what, words] : {std::pair<std::string, std::string>{"the prompt", job.prompt},
                                    {"the negative prompt", job.negative_prompt}}) {
    auto e = tokenizer.encode(clean_wan_prompt(words), size_t(max_length));
    note_truncation(e.untruncated, size_t(max_length) - 1, what + " (umT5)",
                    "--max_sequence_length " + std::to_string(max_length), log);
    const auto length = int64_t(std::count(e.mask.begin(), e.mask.end(), 1));
    texts.push_back({ids_tensor(e.ids), ids_tensor(e.mask), length});
  }
  choose_device(model.text_encoder->parameters(), "umT5", dtype, device, log);
  if (dtype == at::kHalf) {
    log("the umT5 text encoder runs in bfloat16: T5 overflows in float16");
    dtype = at::kBFloat16;
  }
  const std::string part = (dir / model.t5_part()).string();
  log("encoding with " + part + " (umT5, " + std::to_string(model.text_encoder->num_layers) + " layers) on " +
      device.str());
  auto encoder = T5Encoder::load(part, *model.text_encoder, dtype, device);
  std::vector<at::Tensor> embeds;
  c10::InferenceMode guard;  // the encoder's outputs are inference tensors, zeroed in place
  for (const auto& t : texts) {
    auto e = encoder->forward(t.ids, t.mask).to(at::kCPU, at::kFloat);
    e.narrow(1, t.length, max_length - t.length).zero_();  // the pipeline keeps each prompt's own tokens only
    embeds.push_back(e);
  }
  PromptEmbeds out;
  out.prompt_embeds = embeds[0];
  out.negative_prompt_embeds = embeds[1];
  out.input_ids = {{"input_ids", texts[0].ids},
                   {"attention_mask", texts[0].mask},
                   {"negative_input_ids", texts[1].ids},
                   {"negative_attention_mask", texts[1].mask}};
  return out;  // the encoder is released here
}

PromptEmbeds encode_prompts(const plan::ModelFolder& model, const plan::JobSpec& job, at::ScalarType dtype,
                            at::Device device, const Log& log) {
  require_text_parts(model);
  if (model.wan) return encode_wan_prompts(model, job, dtype, device, log);
  return model.flux ? encode_flux(model, job, dtype, device, log) : encode_cogvideox(model, job, dtype, device, log);
}

}  // namespace studio::text
