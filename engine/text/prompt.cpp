#include "text/prompt.h"

#include <cstdio>
#include <filesystem>

#include <ATen/ops/from_blob.h>

#include "compat/torch_compat.h"
#include "plan/error.h"
#include "text/t5_encoder.h"
#include "text/t5_tokenizer.h"

namespace fs = std::filesystem;

namespace studio::text {

PromptEmbeds encode_prompts(const plan::ModelFolder& model, const std::string& prompt,
                            const std::string& negative_prompt, int max_length, at::ScalarType dtype,
                            at::Device device, const std::function<void(const std::string&)>& log) {
  if (!model.has_tokenizer || !model.text_encoder)
    throw InputError(model.dir + ": no " + std::string(!model.has_tokenizer ? "tokenizer/" : "text_encoder/") +
                     " folder, so --prompt cannot be encoded. Download the whole model folder (e.g. "
                     "`huggingface-cli download THUDM/CogVideoX-2b`, which includes tokenizer/ and text_encoder/), "
                     "or pass --prompt_embeds FILE");
  const auto tokenizer = T5Tokenizer::load((fs::path(model.dir) / "tokenizer").string());
  PromptEmbeds out;
  auto ids_of = [&](const std::string& text, const char* what) {
    auto e = tokenizer.encode(text, size_t(max_length));
    if (e.untruncated > size_t(max_length) - 1)
      log(std::string(what) + " is " + std::to_string(e.untruncated) + " tokens; only the first " +
          std::to_string(max_length - 1) + " are used (--max_sequence_length " + std::to_string(max_length) + ")");
    return at::from_blob(e.ids.data(), {1, int64_t(e.ids.size())}, at::kLong).clone();
  };
  out.input_ids = ids_of(prompt, "the prompt");
  out.negative_input_ids = ids_of(negative_prompt, "the negative prompt");
  // The encoder (4.7B parameters in the real models) goes to the CPU when the GPU cannot hold it.
  const double need = model.text_encoder->parameters() * double(c10::elementSize(dtype)) * 1.2;
  if (auto mem = compat::device_memory(device); mem && double(mem->free_bytes) < need) {
    char line[200];
    std::snprintf(line, sizeof line, "%s has %.1f GiB free and the text encoder needs about %.1f GiB: encoding on the CPU",
                  device.str().c_str(), double(mem->free_bytes) / (1 << 30), need / (1 << 30));
    log(line);
    device = at::kCPU;
    dtype = at::kFloat;
  }
  if (dtype == at::kHalf) {
    // T5's feed-forward outputs exceed float16's range (transformers keeps its `wo` in float32 for that);
    // bfloat16 has float32's range.
    log("the text encoder runs in bfloat16: T5 overflows in float16");
    dtype = at::kBFloat16;
  }
  log("encoding the prompts with " + (fs::path(model.dir) / "text_encoder").string() + " (T5, " +
      std::to_string(model.text_encoder->num_layers) + " layers) on " + device.str());
  auto encoder = T5Encoder::load((fs::path(model.dir) / "text_encoder").string(), *model.text_encoder, dtype, device);
  out.prompt_embeds = encoder->forward(out.input_ids).to(at::kCPU, at::kFloat);
  out.negative_prompt_embeds = encoder->forward(out.negative_input_ids).to(at::kCPU, at::kFloat);
  return out;  // the encoder goes out of scope here: its weights are released before denoising
}

}  // namespace studio::text
