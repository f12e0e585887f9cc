#include "plan/qwen_file.h"

#include <map>

#include "plan/family.h"

namespace studio::plan {

bool reads_qwen(const ModelFolder& model) {
  for (const auto& input : rules_of(model).encoder_inputs(JobSpec{}))
    if (input.encoder == TextEncoder::Qwen) return true;
  return false;
}

TensorRenames qwen_file_renames(const std::set<std::string>& names) {
  static const std::map<std::string, std::string> block_parts = {
      {"attn_norm", "input_layernorm"},       {"attn_q", "self_attn.q_proj"},  {"attn_k", "self_attn.k_proj"},
      {"attn_v", "self_attn.v_proj"},         {"attn_output", "self_attn.o_proj"},
      {"ffn_norm", "post_attention_layernorm"}, {"ffn_gate", "mlp.gate_proj"}, {"ffn_up", "mlp.up_proj"},
      {"ffn_down", "mlp.down_proj"}};
  TensorRenames out;
  for (const auto& name : names) {
    std::string ours;
    if (name == "token_embd.weight") ours = "embed_tokens.weight";
    else if (name == "output_norm.weight") ours = "norm.weight";
    else if (name == "output.weight") ours = "lm_head.weight";  // the head, which the encoder leaves unread
    else if (starts_with(name, "blk.")) {
      // blk.<N>.<part>.<weight|bias>
      const auto dot = name.find('.', 4);
      const auto kind = name.rfind('.');
      if (dot == std::string::npos || kind <= dot) continue;
      const auto part = block_parts.find(name.substr(dot + 1, kind - dot - 1));
      if (part == block_parts.end()) continue;
      ours = "layers." + name.substr(4, dot - 4) + "." + part->second + name.substr(kind);
    }
    if (!ours.empty()) out[ours] = {{name}};
  }
  return out;
}

}  // namespace studio::plan
