#include "plan/families/wan_single_file.h"

#include <map>

namespace studio::plan {

namespace {

// Modules outside the blocks, and inside a block (after "blocks.N."): original -> diffusers. Wan calls its
// block norms norm1, norm3 (before cross-attention), norm2 (before the feed-forward); diffusers numbers them
// in order, so norm3 and norm2 trade names.
const std::map<std::string, std::string> kTop = {
    {"time_embedding.0", "condition_embedder.time_embedder.linear_1"},
    {"time_embedding.2", "condition_embedder.time_embedder.linear_2"},
    {"text_embedding.0", "condition_embedder.text_embedder.linear_1"},
    {"text_embedding.2", "condition_embedder.text_embedder.linear_2"},
    {"time_projection.1", "condition_embedder.time_proj"},
    {"head.head", "proj_out"},
    {"img_emb.proj.0", "condition_embedder.image_embedder.norm1"},
    {"img_emb.proj.1", "condition_embedder.image_embedder.ff.net.0.proj"},
    {"img_emb.proj.3", "condition_embedder.image_embedder.ff.net.2"},
    {"img_emb.proj.4", "condition_embedder.image_embedder.norm2"},
};
const std::map<std::string, std::string> kBlock = {
    {"self_attn.q", "attn1.to_q"},        {"self_attn.k", "attn1.to_k"},
    {"self_attn.v", "attn1.to_v"},        {"self_attn.o", "attn1.to_out.0"},
    {"self_attn.norm_q", "attn1.norm_q"}, {"self_attn.norm_k", "attn1.norm_k"},
    {"cross_attn.q", "attn2.to_q"},       {"cross_attn.k", "attn2.to_k"},
    {"cross_attn.v", "attn2.to_v"},       {"cross_attn.o", "attn2.to_out.0"},
    {"cross_attn.norm_q", "attn2.norm_q"}, {"cross_attn.norm_k", "attn2.norm_k"},
    {"cross_attn.k_img", "attn2.add_k_proj"}, {"cross_attn.v_img", "attn2.add_v_proj"},
    {"cross_attn.norm_k_img", "attn2.norm_added_k"},
    {"ffn.0", "ffn.net.0.proj"},          {"ffn.2", "ffn.net.2"},
    {"norm3", "norm2"},                   {"norm2", "norm3"},
};

// "a.b.weight" -> ("a.b", ".weight"); a name without a parameter suffix is its own module.
std::pair<std::string, std::string> module_of(const std::string& name) {
  const auto dot = name.rfind('.');
  if (dot == std::string::npos) return {name, ""};
  return {name.substr(0, dot), name.substr(dot)};
}

std::string renamed(const std::string& name) {
  if (name == "head.modulation") return "scale_shift_table";
  if (name == "img_emb.emb_pos") return "condition_embedder.image_embedder.pos_embed";  // FLF2V's
  const auto [module, param] = module_of(name);
  if (const auto it = kTop.find(module); it != kTop.end()) return it->second + param;
  if (name.rfind("blocks.", 0) == 0) {
    const auto dot = name.find('.', 7);
    if (dot == std::string::npos) return name;
    const std::string block = name.substr(0, dot + 1), rest = name.substr(dot + 1);
    if (rest == "modulation") return block + "scale_shift_table";
    const auto [inner, inner_param] = module_of(rest);
    if (const auto it = kBlock.find(inner); it != kBlock.end()) return block + it->second + inner_param;
  }
  return name;
}

}  // namespace

TensorRenames wan_original_renames(const std::set<std::string>& names) {
  if (!names.count("blocks.0.self_attn.q.weight")) return {};
  TensorRenames r;
  for (const auto& n : names) r[renamed(n)] = {{n}};
  return r;
}

TensorRenames wan_original_layout(int layers) {
  std::set<std::string> names;
  for (const char* param : {".weight", ".bias"}) {
    for (const auto& [module, ours] : kTop) names.insert(module + param);
    for (int i = 0; i < layers; ++i)
      for (const auto& [module, ours] : kBlock) names.insert("blocks." + std::to_string(i) + "." + module + param);
  }
  return wan_original_renames(names);
}

}  // namespace studio::plan
