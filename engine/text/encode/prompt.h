// What every family's prompt path shares (models/<family>/<family>_runtime.cpp encodes a family's prompts as
// its reference pipeline does): the embeddings it returns, the check that the folder has the encoders
// words need, where an encoder's weights are read from, T5 on a list of texts, and the choice of device for an
// encoder. Each encoder's weights are
// released before the next one loads and before these return.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

#include "io/weights/weights.h"
#include "plan/model_folder.h"

namespace studio::text {

using Log = std::function<void(const std::string&)>;

struct PromptEmbeds {
  at::Tensor prompt_embeds;           // [1, L, d_model] float32: T5's last hidden state
  at::Tensor negative_prompt_embeds;  // the same for the negative prompt (CogVideoX, Wan); else undefined
  at::Tensor pooled_prompt_embeds;    // [1, P] float32: CLIP's pooled output (FLUX.1); else undefined
  // A second encoder's rows the transformer embeds apart (HunyuanVideo-1.5's ByT5, [1, n, d], n maybe 0), and
  // the negative prompt's; else undefined. That family's embeds hold each text's real rows alone.
  at::Tensor prompt_embeds_2, negative_prompt_embeds_2;
  std::vector<std::pair<std::string, at::Tensor>> input_ids;  // [1, L] int64 each, named as --save_tensors writes them
};

// InputError naming what the folder lacks for words (plan::missing_text_parts) and what would work.
void require_text_parts(const plan::ModelFolder& model);

// Token ids as a [1, L] int64 tensor.
at::Tensor ids_tensor(std::vector<int64_t>& ids);
// Logs that `what` was cut to `kept` of its `untruncated` tokens, and `why`.
void note_truncation(size_t untruncated, size_t kept, const std::string& what, const std::string& why, const Log& log);
// Moves an encoder of `parameters` weights to the CPU (in float32) when `device` cannot hold it.
void choose_device(double parameters, const std::string& name, at::ScalarType& dtype, at::Device& device,
                   const Log& log);

// The weights of a text encoder part (text_encoder/, text_encoder_2/): its folder, or the single file the job
// gave for it (ModelFolder::weight_files, --text_encoder FILE): for T5/umT5 a GGUF in llama.cpp's names or
// safetensors in transformers' (fp8 included); for CLIP safetensors in transformers' names. The job's LoRAs
// change it where they have modules for it.
io::WeightSet encoder_weights(const plan::ModelFolder& model, const std::string& part);
// What a log line says the part is read from: the single file, or the part's folder.
std::string encoder_source(const plan::ModelFolder& model, const std::string& part);

// The folder's T5 (plan::ModelFolder::t5_part) on each (what, text) in turn, each tokenized to `max_length`
// (truncated, </s>, padded) without an attention mask: (ids, [1, L, d_model] float32) each.
std::vector<std::pair<at::Tensor, at::Tensor>> encode_t5(const plan::ModelFolder& model,
                                                         const std::vector<std::pair<std::string, std::string>>& texts,
                                                         int max_length, at::ScalarType dtype, at::Device device,
                                                         const Log& log);

}  // namespace studio::text
