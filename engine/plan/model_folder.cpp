#include "plan/model_folder.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "plan/error.h"
#include "plan/json_fields.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace studio::plan {

const char* family_name(Family f) {
  switch (f) {
    case Family::CogVideoX_2B: return "CogVideoX (1.0, 3D sin-cos positions, e.g. CogVideoX-2b)";
    case Family::CogVideoX_5B: return "CogVideoX (1.0, 3D RoPE, e.g. CogVideoX-5b)";
    case Family::CogVideoX_15: return "CogVideoX 1.5 (temporal patches, e.g. CogVideoX1.5-5B)";
    case Family::Flux_Dev: return "FLUX.1 with guidance embedding (e.g. FLUX.1-dev)";
    case Family::Flux_Schnell: return "FLUX.1 without guidance embedding (e.g. FLUX.1-schnell)";
    case Family::Wan21: return "Wan2.1 text-to-video (e.g. Wan2.1-T2V-1.3B, -14B)";
    case Family::Wan22: return "Wan2.2 text-to-video with two experts (e.g. Wan2.2-T2V-A14B)";
  }
  return "?";
}

const char* sampler_name(SamplerKind k) {
  return k == SamplerKind::DDIM ? "CogVideoXDDIMScheduler" : "CogVideoXDPMScheduler";
}

Family TransformerConfig::family() const {
  if (patch_size_t) return Family::CogVideoX_15;
  return use_rotary_positional_embeddings ? Family::CogVideoX_5B : Family::CogVideoX_2B;
}

std::string read_text_file(const std::string& path, size_t max_bytes) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) throw InputError(path + ": file not found");
  auto size = fs::file_size(path, ec);
  if (ec) throw InputError(path + ": cannot read its size (" + ec.message() + ")");
  if (size > max_bytes)
    throw InputError(path + ": " + std::to_string(size) + " bytes is too large for a config file (limit " +
                     std::to_string(max_bytes) + ")");
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (!in && !in.eof()) throw InputError(path + ": read failed");
  return ss.str();
}

void write_text_file(const std::string& path, const std::string& text, const std::string& what) {
  const std::string tmp = path + ".partial";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    if (!out.flush()) {
      std::remove(tmp.c_str());
      throw InputError(path + ": cannot write " + what + " there (" + std::strerror(errno) + ")");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    throw InputError(path + ": cannot write " + what + " there (" + why + ")");
  }
}

TransformerConfig parse_transformer_config(const std::string& text, const std::string& file) {
  Fields f(text, file);
  expect_class(f, file.c_str(), {"CogVideoXTransformer3DModel"});
  TransformerConfig c;
  c.num_attention_heads = f.positive("num_attention_heads", c.num_attention_heads, 1024);
  c.attention_head_dim = f.positive("attention_head_dim", c.attention_head_dim, 1024);
  c.in_channels = f.positive("in_channels", c.in_channels, 4096);
  c.out_channels = f.positive("out_channels", c.in_channels, 4096);
  c.flip_sin_to_cos = f.get<bool>("flip_sin_to_cos", c.flip_sin_to_cos);
  c.freq_shift = f.get<int>("freq_shift", c.freq_shift);
  c.time_embed_dim = f.positive("time_embed_dim", c.time_embed_dim, 65536);
  c.text_embed_dim = f.positive("text_embed_dim", c.text_embed_dim, 65536);
  c.num_layers = f.positive("num_layers", c.num_layers, 1024);
  c.attention_bias = f.get<bool>("attention_bias", c.attention_bias);
  c.sample_width = f.positive("sample_width", c.sample_width, 16384);
  c.sample_height = f.positive("sample_height", c.sample_height, 16384);
  c.sample_frames = f.positive("sample_frames", c.sample_frames, 100000);
  c.patch_size = f.positive("patch_size", c.patch_size, 16);
  if (f.has("patch_size_t")) c.patch_size_t = f.positive("patch_size_t", 1, 16);
  c.temporal_compression_ratio = f.positive("temporal_compression_ratio", c.temporal_compression_ratio, 64);
  c.max_text_seq_length = f.positive("max_text_seq_length", c.max_text_seq_length, 65536);
  c.norm_elementwise_affine = f.get<bool>("norm_elementwise_affine", c.norm_elementwise_affine);
  c.norm_eps = f.get<double>("norm_eps", c.norm_eps);
  c.spatial_interpolation_scale = f.get<double>("spatial_interpolation_scale", c.spatial_interpolation_scale);
  c.temporal_interpolation_scale = f.get<double>("temporal_interpolation_scale", c.temporal_interpolation_scale);
  c.use_rotary_positional_embeddings =
      f.get<bool>("use_rotary_positional_embeddings", c.use_rotary_positional_embeddings);
  c.patch_bias = f.get<bool>("patch_bias", c.patch_bias);

  // Fields the real checkpoints set to one value; anything else is a model this engine cannot run yet.
  auto act = f.get<std::string>("activation_fn", "gelu-approximate");
  if (act != "gelu-approximate")
    f.fail("activation_fn", "\"" + act + "\"", "is not supported; CogVideoX uses \"gelu-approximate\"");
  auto tact = f.get<std::string>("timestep_activation_fn", "silu");
  if (tact != "silu") f.fail("timestep_activation_fn", "\"" + tact + "\"", "is not supported; CogVideoX uses \"silu\"");
  if (f.has("ofs_embed_dim"))
    f.fail("ofs_embed_dim", f.dump("ofs_embed_dim"),
           "is set: image-to-video CogVideoX 1.5 (ofs embedding) is not supported yet; use a text-to-video checkpoint");
  if (f.get<bool>("use_learned_positional_embeddings", false))
    f.fail("use_learned_positional_embeddings", "true",
           "is not supported yet (CogVideoX-5b-I2V); use a text-to-video checkpoint");
  if (c.inner_dim() % 16 != 0 && !c.use_rotary_positional_embeddings)
    f.fail("num_attention_heads", std::to_string(c.num_attention_heads),
           "times attention_head_dim must be divisible by 16 for 3D sin-cos positions");
  if (c.use_rotary_positional_embeddings && c.attention_head_dim % 8 != 0)
    f.fail("attention_head_dim", std::to_string(c.attention_head_dim), "must be divisible by 8 for 3D RoPE");
  if (c.patch_size_t && !c.use_rotary_positional_embeddings)
    f.fail("patch_size_t", std::to_string(*c.patch_size_t),
           "is set but use_rotary_positional_embeddings is false; CogVideoX 1.5 uses RoPE");
  return c;
}

SchedulerConfig parse_scheduler_config(const std::string& text, const std::string& file) {
  Fields f(text, file);
  expect_class(f, file.c_str(), {"CogVideoXDDIMScheduler", "CogVideoXDPMScheduler"});
  SchedulerConfig s;
  s.kind = f.get<std::string>("_class_name", "") == "CogVideoXDPMScheduler" ? SamplerKind::DPM : SamplerKind::DDIM;
  s.num_train_timesteps = f.positive("num_train_timesteps", s.num_train_timesteps, 100000);
  s.beta_start = f.get<double>("beta_start", s.beta_start);
  s.beta_end = f.get<double>("beta_end", s.beta_end);
  s.beta_schedule = f.get<std::string>("beta_schedule", s.beta_schedule);
  if (s.beta_schedule != "scaled_linear" && s.beta_schedule != "linear")
    f.fail("beta_schedule", "\"" + s.beta_schedule + "\"", "is not supported; use \"scaled_linear\" or \"linear\"");
  if (f.has("trained_betas")) f.fail("trained_betas", "(a list)", "is not supported; use beta_start/beta_end");
  if (f.get<bool>("clip_sample", false)) f.fail("clip_sample", "true", "is not supported; CogVideoX uses false");
  if (f.get<bool>("thresholding", false)) f.fail("thresholding", "true", "is not supported; CogVideoX uses false");
  auto pred = f.get<std::string>("prediction_type", "v_prediction");
  if (pred != "v_prediction")
    f.fail("prediction_type", "\"" + pred + "\"", "is not supported; CogVideoX uses \"v_prediction\"");
  s.set_alpha_to_one = f.get<bool>("set_alpha_to_one", s.set_alpha_to_one);
  s.steps_offset = f.get<int>("steps_offset", s.steps_offset);
  s.timestep_spacing = f.get<std::string>("timestep_spacing", s.timestep_spacing);
  if (s.timestep_spacing != "trailing" && s.timestep_spacing != "leading" && s.timestep_spacing != "linspace")
    f.fail("timestep_spacing", "\"" + s.timestep_spacing + "\"", "is not one of \"trailing\", \"leading\", \"linspace\"");
  s.rescale_betas_zero_snr = f.get<bool>("rescale_betas_zero_snr", false);
  s.snr_shift_scale = f.get<double>("snr_shift_scale", 3.0);  // the diffusers class default
  if (!(s.snr_shift_scale > 0)) f.fail("snr_shift_scale", std::to_string(s.snr_shift_scale), "must be positive");
  return s;
}

VaeConfig parse_vae_config(const std::string& text, const std::string& file) {
  Fields f(text, file);
  expect_class(f, file.c_str(), {"AutoencoderKLCogVideoX"});
  VaeConfig v;
  v.scaling_factor = f.get<double>("scaling_factor", v.scaling_factor);
  v.latent_channels = f.positive("latent_channels", v.latent_channels, 4096);
  v.out_channels = f.positive("out_channels", v.out_channels, 4096);
  v.temporal_compression_ratio = f.positive("temporal_compression_ratio", v.temporal_compression_ratio, 64);
  if (v.temporal_compression_ratio != 1 && v.temporal_compression_ratio != 2 && v.temporal_compression_ratio != 4)
    f.fail("temporal_compression_ratio", std::to_string(v.temporal_compression_ratio), "must be 1, 2 or 4");
  v.layers_per_block = f.positive("layers_per_block", v.layers_per_block, 64);
  v.norm_num_groups = f.positive("norm_num_groups", v.norm_num_groups, 1024);
  v.norm_eps = f.get<double>("norm_eps", v.norm_eps);
  v.block_out_channels = f.positive_list("block_out_channels", v.block_out_channels, 16384, 8);
  for (int c : v.block_out_channels)
    if (c % v.norm_num_groups != 0)
      f.fail("block_out_channels", f.dump("block_out_channels"), "must be multiples of norm_num_groups");
  v.spatial_compression = 1 << (v.block_out_channels.size() - 1);
  for (const char* unsupported : {"shift_factor", "latents_mean", "latents_std"})
    if (f.has(unsupported))
      f.fail(unsupported, f.dump(unsupported), "is set; CogVideoX VAEs leave it null and this engine does too");
  for (const char* unsupported : {"use_quant_conv", "use_post_quant_conv", "invert_scale_latents"})
    if (f.get<bool>(unsupported, false))
      f.fail(unsupported, "true", "is not supported; CogVideoX VAEs set it false");
  auto act = f.get<std::string>("act_fn", "silu");
  if (act != "silu") f.fail("act_fn", "\"" + act + "\"", "is not supported; CogVideoX uses \"silu\"");
  return v;
}

double T5Config::parameters() const {
  // The embedding table, then per layer the four attention projections and the gated feed-forward's three.
  return double(vocab_size) * d_model + double(num_layers) * (4.0 * d_model * num_heads * d_kv + 3.0 * d_model * d_ff);
}

T5Config parse_t5_config(const std::string& text, const std::string& file) {
  Fields f(text, file);
  T5Config c;
  auto type = f.get<std::string>("model_type", "t5");
  if (type != "t5" && type != "umt5")
    f.fail("model_type", "\"" + type + "\"", "is not supported; the T5 text encoder is \"t5\" or \"umt5\"");
  c.per_layer_bias = type == "umt5";
  c.d_model = f.positive("d_model", c.d_model, 65536);
  c.d_kv = f.positive("d_kv", c.d_kv, 1024);
  c.num_heads = f.positive("num_heads", c.num_heads, 1024);
  c.d_ff = f.positive("d_ff", c.d_ff, 1 << 20);
  c.num_layers = f.positive("num_layers", c.num_layers, 1024);
  c.relative_attention_num_buckets = f.positive("relative_attention_num_buckets", c.relative_attention_num_buckets, 4096);
  c.relative_attention_max_distance = f.positive("relative_attention_max_distance", c.relative_attention_max_distance, 1 << 20);
  c.layer_norm_epsilon = f.get<double>("layer_norm_epsilon", c.layer_norm_epsilon);
  c.vocab_size = f.positive("vocab_size", c.vocab_size, 1 << 22);
  auto ff = f.get<std::string>("feed_forward_proj", "gated-gelu");
  if (ff != "gated-gelu")
    f.fail("feed_forward_proj", "\"" + ff + "\"", "is not supported; T5 v1.1 (CogVideoX's encoder) uses \"gated-gelu\"");
  auto act = f.get<std::string>("dense_act_fn", "gelu_new");
  if (act != "gelu_new") f.fail("dense_act_fn", "\"" + act + "\"", "is not supported; T5 v1.1 uses \"gelu_new\"");
  return c;
}

std::string missing_text_parts(const ModelFolder& m) {
  std::vector<std::string> missing;
  if (m.flux && !m.flux->has_clip_tokenizer) missing.push_back("tokenizer/ (CLIP's vocab.json, merges.txt)");
  if (m.flux && !m.flux->clip) missing.push_back("text_encoder/ (CLIP)");
  if (!m.has_tokenizer) missing.push_back(m.t5_tokenizer_part() + "/ (T5's spiece.model)");
  if (!m.text_encoder) missing.push_back(m.t5_part() + "/ (T5)");
  std::string out;
  for (const auto& part : missing) out += (out.empty() ? "no " : ", no ") + part;
  return out;
}

std::string example_repo(const ModelFolder& m) {
  switch (m.family) {
    case Family::Flux_Dev: return "black-forest-labs/FLUX.1-dev";
    case Family::Flux_Schnell: return "black-forest-labs/FLUX.1-schnell";
    case Family::CogVideoX_5B: return "THUDM/CogVideoX-5b";
    case Family::CogVideoX_15: return "THUDM/CogVideoX1.5-5B";
    case Family::Wan21: return "Wan-AI/Wan2.1-T2V-1.3B-Diffusers";
    case Family::Wan22: return "Wan-AI/Wan2.2-T2V-A14B-Diffusers";
    default: return "THUDM/CogVideoX-2b";
  }
}

namespace {

// transformer/ (and Wan2.2's transformer_2/), scheduler/ and vae/ of a WanPipeline folder, checked against
// each other and against model_index.json.
WanParts read_wan_parts(Fields& idx, const std::string& index, const fs::path& root) {
  auto config = [&](const char* part, const char* file) { return (root / part / file).string(); };
  const std::string tcfg = config("transformer", "config.json"), scfg = config("scheduler", "scheduler_config.json");
  WanParts w{parse_wan_transformer_config(read_text_file(tcfg), tcfg), std::nullopt, 0,
             parse_unipc_config(read_text_file(scfg), scfg), std::nullopt};
  if (idx.get<bool>("expand_timesteps", false))
    idx.fail("expand_timesteps", "true", "is set: Wan2.2's TI2V-5B (per-token timesteps) is not supported yet; use "
                                         "a Wan2.1 T2V or Wan2.2 T2V-A14B folder");
  const bool second = idx.has("transformer_2") && idx.dump("transformer_2") != "[null,null]";
  if (second) {
    const std::string t2cfg = config("transformer_2", "config.json");
    w.transformer_2 = parse_wan_transformer_config(read_text_file(t2cfg), t2cfg);
    if (w.transformer_2->inner_dim() != w.transformer.inner_dim() ||
        w.transformer_2->in_channels != w.transformer.in_channels || w.transformer_2->text_dim != w.transformer.text_dim)
      throw InputError(t2cfg + ": the second expert's widths (inner dim " + std::to_string(w.transformer_2->inner_dim()) +
                       ", in_channels, text_dim) must equal transformer/'s; the two experts share one run's latents");
    if (!idx.has("boundary_ratio") || idx.dump("boundary_ratio") == "null")
      idx.fail("boundary_ratio", "null", "must be a number between 0 and 1 when transformer_2 is set (Wan2.2 "
                                         "switches experts at boundary_ratio x 1000 timesteps)");
    w.boundary_ratio = idx.get<double>("boundary_ratio", 0);
    if (!(w.boundary_ratio > 0 && w.boundary_ratio < 1))
      idx.fail("boundary_ratio", idx.dump("boundary_ratio"), "must be between 0 and 1 (Wan2.2 A14B uses 0.875)");
  }
  const std::string vcfg = config("vae", "config.json");
  if (fs::exists(vcfg)) {
    w.vae = parse_wan_vae_config(read_text_file(vcfg), vcfg);
    if (w.vae->z_dim != w.transformer.in_channels)
      throw InputError(vcfg + ": z_dim " + std::to_string(w.vae->z_dim) + " does not match the transformer's "
                       "in_channels " + std::to_string(w.transformer.in_channels) + " (the latent channels)");
  }
  return w;
}

}  // namespace

ModelFolder read_model_folder(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw InputError(dir + ": not a folder; --model takes a diffusers folder with model_index.json, transformer/, "
                     "scheduler/ and vae/ (for example a download of THUDM/CogVideoX-2b)");
  ModelFolder m;
  m.dir = dir;
  const fs::path root(dir);
  const std::string index = (root / "model_index.json").string();
  Fields idx(read_text_file(index), index);
  auto cls = idx.get<std::string>("_class_name", "");
  if (cls != "CogVideoXPipeline" && cls != "FluxPipeline" && cls != "WanPipeline")
    throw InputError(index + ": _class_name is '" + cls +
                     "'; this version runs CogVideoXPipeline, FluxPipeline and WanPipeline folders");
  for (const char* part : {"transformer", "scheduler"})
    if (!idx.has(part)) throw InputError(index + ": no '" + part + "' entry; a " + cls + " folder needs one");
  auto config = [&](const char* part, const char* file) { return (root / part / file).string(); };
  const std::string tcfg = config("transformer", "config.json"), scfg = config("scheduler", "scheduler_config.json");
  const std::string vcfg = config("vae", "config.json");
  if (cls == "FluxPipeline") {
    FluxParts f{parse_flux_transformer_config(read_text_file(tcfg), tcfg),
                parse_flow_match_config(read_text_file(scfg), scfg), std::nullopt};
    if (fs::exists(vcfg)) f.vae = parse_autoencoder_kl_config(read_text_file(vcfg), vcfg);
    if (f.vae && f.vae->latent_channels * 4 != f.transformer.in_channels)
      throw InputError(vcfg + ": latent_channels " + std::to_string(f.vae->latent_channels) +
                       " does not match the transformer's in_channels " + std::to_string(f.transformer.in_channels) +
                       " (4 x the latent channels: 2x2 packing)");
    const std::string ccfg = config("text_encoder", "config.json");
    if (fs::exists(ccfg)) f.clip = parse_clip_text_config(read_text_file(ccfg), ccfg);
    if (f.clip && f.clip->hidden_size != f.transformer.pooled_projection_dim)
      throw InputError(ccfg + ": hidden_size " + std::to_string(f.clip->hidden_size) +
                       " does not match the transformer's pooled_projection_dim " +
                       std::to_string(f.transformer.pooled_projection_dim) + " (the pooled CLIP vector's width)");
    f.has_clip_tokenizer = fs::exists(root / "tokenizer" / "vocab.json") && fs::exists(root / "tokenizer" / "merges.txt");
    m.family = f.transformer.guidance_embeds ? Family::Flux_Dev : Family::Flux_Schnell;
    m.flux = f;
  } else if (cls == "WanPipeline") {
    m.wan = read_wan_parts(idx, index, root);
    m.family = m.wan->transformer_2 ? Family::Wan22 : Family::Wan21;
  } else {
    m.transformer = parse_transformer_config(read_text_file(tcfg), tcfg);
    m.family = m.transformer.family();
    m.scheduler = parse_scheduler_config(read_text_file(scfg), scfg);
    if (fs::exists(vcfg)) m.vae = parse_vae_config(read_text_file(vcfg), vcfg);
  }
  const std::string ecfg = config(m.t5_part().c_str(), "config.json");
  if (fs::exists(ecfg)) m.text_encoder = parse_t5_config(read_text_file(ecfg), ecfg);
  const int text_width = m.flux  ? m.flux->transformer.joint_attention_dim
                         : m.wan ? m.wan->transformer.text_dim
                                 : m.transformer.text_embed_dim;
  if (m.text_encoder && m.text_encoder->d_model != text_width)
    throw InputError(ecfg + ": d_model " + std::to_string(m.text_encoder->d_model) + " does not match the transformer's " +
                     (m.flux ? "joint_attention_dim " : m.wan ? "text_dim " : "text_embed_dim ") +
                     std::to_string(text_width) + " (the T5 embeddings' width)");
  m.has_tokenizer = fs::exists(root / m.t5_tokenizer_part() / "spiece.model");
  return m;
}

}  // namespace studio::plan
