#include "plan/families/flux_single_file.h"

#include <utility>

namespace studio::plan {

namespace {

struct Split {
  const char* module;  // the diffusers module
  int64_t rows;        // how many rows of the BFL layer it takes, in order
};

// `bfl` (a linear layer) -> the diffusers modules that share its rows, weight and bias alike.
void linear(TensorRenames& out, const std::string& bfl, const std::string& prefix, const std::vector<Split>& splits) {
  for (const char* suffix : {".weight", ".bias"}) {
    int64_t first = 0;
    for (const auto& s : splits) {
      out[prefix + s.module + suffix] = {{bfl + suffix, first, splits.size() == 1 ? -1 : s.rows}};
      first += s.rows;
    }
  }
}

}  // namespace

TensorRenames flux_bfl_renames(const FluxTransformerConfig& cfg) {
  const int64_t D = cfg.inner_dim(), mlp = 4 * D;
  TensorRenames r;
  linear(r, "img_in", "", {{"x_embedder", D}});
  linear(r, "txt_in", "", {{"context_embedder", D}});
  const std::pair<const char*, const char*> embedders[] = {{"time_in", "timestep_embedder"},
                                                           {"vector_in", "text_embedder"},
                                                           {"guidance_in", "guidance_embedder"}};
  for (const auto& [bfl, ours] : embedders) {
    if (std::string(bfl) == "guidance_in" && !cfg.guidance_embeds) continue;
    const std::string p = std::string("time_text_embed.") + ours + ".";
    linear(r, std::string(bfl) + ".in_layer", p, {{"linear_1", D}});
    linear(r, std::string(bfl) + ".out_layer", p, {{"linear_2", D}});
  }
  for (int i = 0; i < cfg.num_layers; ++i) {
    const std::string b = "double_blocks." + std::to_string(i) + ".", t = "transformer_blocks." + std::to_string(i) + ".";
    linear(r, b + "img_mod.lin", t, {{"norm1.linear", 6 * D}});
    linear(r, b + "txt_mod.lin", t, {{"norm1_context.linear", 6 * D}});
    linear(r, b + "img_attn.qkv", t, {{"attn.to_q", D}, {"attn.to_k", D}, {"attn.to_v", D}});
    linear(r, b + "txt_attn.qkv", t, {{"attn.add_q_proj", D}, {"attn.add_k_proj", D}, {"attn.add_v_proj", D}});
    linear(r, b + "img_attn.proj", t, {{"attn.to_out.0", D}});
    linear(r, b + "txt_attn.proj", t, {{"attn.to_add_out", D}});
    linear(r, b + "img_mlp.0", t, {{"ff.net.0.proj", mlp}});
    linear(r, b + "img_mlp.2", t, {{"ff.net.2", D}});
    linear(r, b + "txt_mlp.0", t, {{"ff_context.net.0.proj", mlp}});
    linear(r, b + "txt_mlp.2", t, {{"ff_context.net.2", D}});
    r[t + "attn.norm_q.weight"] = {{b + "img_attn.norm.query_norm.scale"}};
    r[t + "attn.norm_k.weight"] = {{b + "img_attn.norm.key_norm.scale"}};
    r[t + "attn.norm_added_q.weight"] = {{b + "txt_attn.norm.query_norm.scale"}};
    r[t + "attn.norm_added_k.weight"] = {{b + "txt_attn.norm.key_norm.scale"}};
  }
  for (int i = 0; i < cfg.num_single_layers; ++i) {
    const std::string b = "single_blocks." + std::to_string(i) + ".",
                      t = "single_transformer_blocks." + std::to_string(i) + ".";
    linear(r, b + "linear1", t, {{"attn.to_q", D}, {"attn.to_k", D}, {"attn.to_v", D}, {"proj_mlp", mlp}});
    linear(r, b + "linear2", t, {{"proj_out", D}});
    linear(r, b + "modulation.lin", t, {{"norm.linear", 3 * D}});
    r[t + "attn.norm_q.weight"] = {{b + "norm.query_norm.scale"}};
    r[t + "attn.norm_k.weight"] = {{b + "norm.key_norm.scale"}};
  }
  linear(r, "final_layer.linear", "", {{"proj_out", cfg.out_channels}});
  for (const char* suffix : {".weight", ".bias"}) {
    const std::string src = std::string("final_layer.adaLN_modulation.1") + suffix;
    r[std::string("norm_out.linear") + suffix] = {{src, D, D}, {src, 0, D}};
  }
  return r;
}

}  // namespace studio::plan
