#include "plan/families/wan_config.h"

#include "plan/json_fields.h"

namespace studio::plan {

WanTransformerConfig parse_wan_transformer_config(const std::string& text, const std::string& file) {
  Fields f(text, file);
  expect_class(f, file.c_str(), {"WanTransformer3DModel"});
  WanTransformerConfig c;
  c.patch_size = f.positive_list("patch_size", c.patch_size, 64, 3);
  if (c.patch_size.size() != 3)
    f.fail("patch_size", f.dump("patch_size"), "must be three sizes (frames, rows, columns), e.g. [1, 2, 2]");
  c.num_attention_heads = f.positive("num_attention_heads", c.num_attention_heads, 1024);
  c.attention_head_dim = f.positive("attention_head_dim", c.attention_head_dim, 1024);
  c.in_channels = f.positive("in_channels", c.in_channels, 4096);
  // diffusers: `out_channels or in_channels`.
  c.out_channels = f.get<int64_t>("out_channels", 0) == 0 ? c.in_channels : f.positive("out_channels", 0, 4096);
  c.text_dim = f.positive("text_dim", c.text_dim, 65536);
  c.freq_dim = f.positive("freq_dim", c.freq_dim, 65536);
  c.ffn_dim = f.positive("ffn_dim", c.ffn_dim, 1 << 20);
  c.num_layers = f.in_range("num_layers", c.num_layers, 0, 1024);
  c.cross_attn_norm = f.get<bool>("cross_attn_norm", c.cross_attn_norm);
  c.eps = f.get<double>("eps", c.eps);
  c.rope_max_seq_len = f.positive("rope_max_seq_len", c.rope_max_seq_len, 1 << 20);
  if (c.attention_head_dim % 2)
    f.fail("attention_head_dim", std::to_string(c.attention_head_dim), "must be even (RoPE rotates pairs)");
  if (c.freq_dim % 2) f.fail("freq_dim", std::to_string(c.freq_dim), "must be even ([cos | sin] halves)");
  if (!(c.eps > 0)) f.fail("eps", f.dump("eps"), "must be positive");
  // diffusers builds RMS norms of q and k across all heads whatever this says; other values are not Wan's.
  const auto qk_norm = f.get<std::string>("qk_norm", "rms_norm_across_heads");
  if (qk_norm != "rms_norm_across_heads")
    f.fail("qk_norm", f.dump("qk_norm"), "is not supported; Wan uses \"rms_norm_across_heads\"");
  const auto optional = [&](const char* key) {
    return !f.has(key) || f.dump(key) == "null" ? 0 : f.positive(key, 0, 1 << 20);
  };
  c.image_dim = optional("image_dim");
  c.added_kv_proj_dim = optional("added_kv_proj_dim");
  c.pos_embed_seq_len = optional("pos_embed_seq_len");
  if (c.out_channels > c.in_channels)
    f.fail("out_channels", std::to_string(c.out_channels),
           "exceeds in_channels " + std::to_string(c.in_channels) + ": the input holds the latents and, for "
           "image-to-video, the condition's channels after them");
  if (c.image_dim && c.added_kv_proj_dim != c.inner_dim())
    f.fail("added_kv_proj_dim", f.dump("added_kv_proj_dim"),
           "must equal the inner dim (num_attention_heads x attention_head_dim = " + std::to_string(c.inner_dim()) +
               ") when image_dim is set: the image tokens are embedded to that width");
  if (!c.image_dim && (c.added_kv_proj_dim || c.pos_embed_seq_len))
    f.fail(c.added_kv_proj_dim ? "added_kv_proj_dim" : "pos_embed_seq_len",
           f.dump(c.added_kv_proj_dim ? "added_kv_proj_dim" : "pos_embed_seq_len"),
           "is set without image_dim: there are no image tokens for it");
  return c;
}

UniPCConfig parse_unipc_config(const std::string& text, const std::string& file) {
  Fields f(text, file);
  expect_class(f, file.c_str(), {"UniPCMultistepScheduler"});
  UniPCConfig s;
  s.num_train_timesteps = f.positive("num_train_timesteps", s.num_train_timesteps, 100000);
  s.flow_shift = f.get<double>("flow_shift", s.flow_shift);
  if (!(s.flow_shift > 0)) f.fail("flow_shift", f.dump("flow_shift"), "must be positive");
  s.solver_order = f.in_range("solver_order", s.solver_order, 1, 2);
  if (!f.get<bool>("lower_order_final", true))
    f.fail("lower_order_final", "false",
           "is not supported: with the final sigma 0, a second-order last step divides by an infinite step; "
           "Wan sets it true");
  // diffusers maps the other names of its predecessors to bh2.
  const auto solver = f.get<std::string>("solver_type", "bh2");
  if (solver != "bh1" && solver != "bh2" && solver != "midpoint" && solver != "heun" && solver != "logrho")
    f.fail("solver_type", f.dump("solver_type"), "must be \"bh1\" or \"bh2\" (Wan uses \"bh2\")");
  s.bh1 = solver == "bh1";
  if (f.has("disable_corrector")) {
    const auto& list = f.raw()["disable_corrector"];
    bool ok = list.is_array();
    if (ok)
      for (const auto& x : list) {
        ok = ok && x.is_number_integer() && x.get<int64_t>() >= 0 && x.get<int64_t>() <= 100000;
        if (ok) s.disable_corrector.push_back(int(x.get<int64_t>()));
      }
    if (!ok) f.fail("disable_corrector", f.dump("disable_corrector"), "must be a list of step indices (0 or more)");
  }
  auto require = [&](const char* key, const std::string& wanted, const std::string& fallback) {
    const auto v = f.get<std::string>(key, fallback);
    if (v != wanted)
      f.fail(key, f.dump(key), "is not supported; Wan's UniPC configuration uses \"" + wanted + "\"");
  };
  require("prediction_type", "flow_prediction", "epsilon");
  require("final_sigmas_type", "zero", "zero");
  if (!f.get<bool>("use_flow_sigmas", false))
    f.fail("use_flow_sigmas", f.dump("use_flow_sigmas"), "must be true: only Wan's flow sigmas are supported");
  if (!f.get<bool>("predict_x0", true))
    f.fail("predict_x0", "false", "is not supported; Wan's UniPC configuration predicts x0 (true)");
  for (const char* unsupported : {"use_karras_sigmas", "use_exponential_sigmas", "use_beta_sigmas", "thresholding",
                                  "use_dynamic_shifting"})
    if (f.get<bool>(unsupported, false)) f.fail(unsupported, "true", "is not supported; Wan leaves it false");
  if (f.has("solver_p")) f.fail("solver_p", f.dump("solver_p"), "is not supported; Wan leaves it null");
  return s;
}

}  // namespace studio::plan
