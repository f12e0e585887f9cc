// The prompt path of each family, as diffusers v0.32.2 runs it. CogVideoX (CogVideoXPipeline.encode_prompt):
// each prompt tokenized to max_sequence_length (truncated, </s>, padded) and run through T5 without an
// attention mask; the negative prompt defaults to "". FLUX.1 (FluxPipeline.encode_prompt): the prompt
// through CLIP (77 tokens, the pooled output) and prompt_2 (the prompt when empty) through T5 as above;
// no negative prompt. Each encoder's weights are released before the next one loads and before this returns.
#pragma once
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

#include "plan/job.h"
#include "plan/model_folder.h"

namespace studio::text {

struct PromptEmbeds {
  at::Tensor prompt_embeds;           // [1, L, d_model] float32: T5's last hidden state
  at::Tensor negative_prompt_embeds;  // the same for the negative prompt (CogVideoX, Wan); else undefined
  at::Tensor pooled_prompt_embeds;    // [1, P] float32: CLIP's pooled output (FLUX.1); else undefined
  std::vector<std::pair<std::string, at::Tensor>> input_ids;  // [1, L] int64 each, named as --save_tensors writes them
};

// Wan2.1 / Wan2.2 (WanPipeline.encode_prompt, diffusers 0.35.2): the prompt and the negative prompt ("" when
// not given) each cleaned (text/prompt_clean.h), tokenized to job.max_sequence_length with the attention
// mask, run through umT5 (text_encoder/, tokenizer/) with that mask, and zeroed past their tokens.
// input_ids holds input_ids, attention_mask, negative_input_ids and negative_attention_mask.
// Throws InputError when the folder lacks the tokenizer or the text encoder, or max_sequence_length < 1.
PromptEmbeds encode_wan_prompts(const plan::ModelFolder& model, const plan::JobSpec& job, at::ScalarType dtype,
                                at::Device device, const std::function<void(const std::string&)>& log);

// Throws InputError when the folder lacks a tokenizer or text encoder the family needs, saying how to get them.
PromptEmbeds encode_prompts(const plan::ModelFolder& model, const plan::JobSpec& job, at::ScalarType dtype,
                            at::Device device, const std::function<void(const std::string&)>& log);

}  // namespace studio::text
