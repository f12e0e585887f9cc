// CogVideoX's prompt path (CogVideoXPipeline.encode_prompt of diffusers v0.32.2): each prompt tokenized
// to max_sequence_length (truncated, </s>, padded), run through the T5 encoder without an attention
// mask; the negative prompt defaults to "". The encoder's weights are released when this returns.
#pragma once
#include <functional>
#include <string>

#include <ATen/core/Tensor.h>

#include "plan/model_folder.h"

namespace studio::text {

struct PromptEmbeds {
  at::Tensor prompt_embeds;           // [1, L, d_model] float32
  at::Tensor negative_prompt_embeds;  // [1, L, d_model] float32
  at::Tensor input_ids, negative_input_ids;  // [1, L] int64
};

// Throws InputError when the folder lacks tokenizer/ or text_encoder/, saying how to get them.
PromptEmbeds encode_prompts(const plan::ModelFolder& model, const std::string& prompt,
                            const std::string& negative_prompt, int max_sequence_length, at::ScalarType dtype,
                            at::Device device, const std::function<void(const std::string&)>& log);

}  // namespace studio::text
