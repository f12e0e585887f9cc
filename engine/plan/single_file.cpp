#include "plan/single_file.h"

namespace studio::plan {

bool starts_with(const std::string& name, const std::string& head) { return name.rfind(head, 0) == 0; }

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

std::string without_checkpoint_prefix(const std::string& name) {
  for (const char* prefix : {"model.diffusion_model.", "diffusion_model."})
    if (name.rfind(prefix, 0) == 0) return name.substr(std::string(prefix).size());
  return name;
}

ScaleTensor scale_tensor(const std::string& name) {
  if (name == "scaled_fp8" || ends_with(name, ".scale_input")) return {true, ""};
  if (ends_with(name, ".scale_weight")) return {true, name.substr(0, name.size() - 13) + ".weight"};
  return {};
}

TensorRenames t5_file_renames(const std::set<std::string>& names) {
  static const std::map<std::string, std::string> block_parts = {
      {"attn_norm", "layer.0.layer_norm"},
      {"attn_q", "layer.0.SelfAttention.q"},
      {"attn_k", "layer.0.SelfAttention.k"},
      {"attn_v", "layer.0.SelfAttention.v"},
      {"attn_o", "layer.0.SelfAttention.o"},
      {"attn_rel_b", "layer.0.SelfAttention.relative_attention_bias"},
      {"ffn_norm", "layer.1.layer_norm"},
      {"ffn_gate", "layer.1.DenseReluDense.wi_0"},  // the GELU branch
      {"ffn_up", "layer.1.DenseReluDense.wi_1"},
      {"ffn_down", "layer.1.DenseReluDense.wo"}};
  TensorRenames out;
  for (const auto& name : names) {
    std::string ours;
    if (name == "token_embd.weight") ours = "shared.weight";
    else if (name == "enc.output_norm.weight") ours = "encoder.final_layer_norm.weight";
    else if (name.rfind("enc.blk.", 0) == 0) {
      // enc.blk.<N>.<part>.weight
      const auto dot = name.find('.', 8);
      const auto part_end = name.rfind('.');
      if (dot == std::string::npos || part_end <= dot) continue;
      const auto part = block_parts.find(name.substr(dot + 1, part_end - dot - 1));
      if (part == block_parts.end()) continue;  // left for expect_all_taken to name
      ours = "encoder.block." + name.substr(8, dot - 8) + "." + part->second + name.substr(part_end);
    } else if (name.rfind("text_encoders.", 0) == 0) {
      const auto at = name.find(".transformer.");
      if (at == std::string::npos) continue;
      ours = name.substr(at + 13);
    }
    if (!ours.empty()) out[ours] = {{name}};
  }
  return out;
}

}  // namespace studio::plan
