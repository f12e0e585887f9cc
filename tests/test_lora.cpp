// LoRAs (--lora FILE[:SCALE]) against diffusers 0.35.2's load_lora_weights and set_adapters: flux_lora_tiny on
// flux_words_tiny (a diffusers/PEFT file with its LoraConfig metadata and a kohya file in Black Forest Labs' names,
// fused qkv split by rows) and wan21_lora_tiny on wan21_tiny (PEFT, ComfyUI's original names, musubi-tuner's).
// Each module's change and a merged weight at 1e-5, whole runs from words at 1e-3, one process and parallel mixes;
// beside a quantized transformer; files that do not fit the model, or that are damaged, refused by name.
#include <sstream>

#include <ATen/TensorOperators.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/full.h>
#include <ATen/ops/linear.h>
#include <ATen/ops/randn.h>

#include "hub/hashing.h"
#include "io/safetensors/lora_files.h"
#include "io/safetensors/safetensors_file.h"
#include "io/weights/tensor_file.h"
#include "models/family_runtime.h"
#include "models/layers/layers.h"
#include "io/weights/lora.h"
#include "plan/error.h"
#include "plan/lora_choice.h"
#include "plan/model_folder.h"
#include "text/encode/prompt.h"
#include "video/image_writer.h"
#include "process.h"
#include "tensor_support.h"

using namespace studio;

namespace {

// The adapters of a case's golden.json by name: its file in the case folder.
std::string lora_file(const std::string& c, const std::string& adapter) {
  const auto g = test::golden_json(c);
  for (const auto& l : g["loras"])
    if (l["adapter_name"] == adapter) return test::golden_case(c) + "/" + std::string(l["file"]);
  throw std::logic_error("no adapter " + adapter + " in " + c);
}

// The change `loras` make to one weight, summed, as merged: sum of scale * up @ down.
at::Tensor change_of(const std::string& c, const std::vector<plan::LoraUse>& loras, const std::string& weight) {
  const auto folder = plan::read_model_folder(test::golden_case(test::golden_json(c)["model"]));
  auto weights = models::transformer_weights(folder, 0);
  const auto deltas = io::lora_deltas(folder, loras, weights.names());
  at::Tensor sum;
  for (const auto& d : deltas.at(weight)) {
    const auto one = at::mm(d.up, d.down) * d.scale;
    sum = sum.defined() ? sum + one : one;
  }
  return sum;
}

struct Case {
  const char* name;
  const char* weight;  // golden.json's delta_module, as a weight
};
const Case kFlux{"flux_lora_tiny", "transformer_blocks.0.attn.to_q.weight"};
const Case kWan{"wan21_lora_tiny", "blocks.0.attn1.to_k.weight"};

TEST(LoraChanges, each_adapter_changes_its_module_as_the_reference) {
  for (const auto& [c, adapters] : {std::pair{kFlux, std::vector<std::string>{"peft", "kohya"}},
                                    std::pair{kWan, std::vector<std::string>{"peft", "comfy", "musubi"}}}) {
    for (const auto& a : adapters) {
      const auto golden = test::golden_tensor(c.name, "delta_" + a);
      ASSERT_GT(golden.abs().max().item<double>(), 1e-3);  // a change there is to be found
      const double err = test::max_abs_diff(change_of(c.name, {{lora_file(c.name, a), 1.0}}, c.weight), golden);
      std::printf("%s %s: change of %s %.3g\n", c.name, a.c_str(), c.weight, err);
      EXPECT_LT(err, 1e-5) << c.name << " " << a;
    }
  }
}

TEST(LoraChanges, two_adapters_merge_into_the_weight_at_their_strengths) {
  for (const auto& [c, second] : {std::pair{kFlux, "kohya"}, std::pair{kWan, "comfy"}}) {
    auto folder = plan::read_model_folder(test::golden_case(test::golden_json(c.name)["model"]));
    folder.loras = {{lora_file(c.name, "peft"), 0.8}, {lora_file(c.name, second), 0.6}};
    auto weights = models::transformer_weights(folder, 0);
    const auto golden = test::golden_tensor(c.name, "merged_weight_both");
    const auto merged = weights.take(c.weight, golden.sizes().vec(), at::kFloat, at::kCPU);
    EXPECT_LT(test::max_abs_diff(merged, golden), 1e-5) << c.name;
  }
}

// Wan2.2: --lora_2 changes the second expert (transformer_2/) only, as diffusers' load_into_transformer_2.
TEST(LoraChanges, the_second_expert_takes_lora_2_and_the_first_does_not) {
  auto folder = plan::read_model_folder(test::golden_case("wan22_tiny"));
  const auto plain = folder;
  folder.loras_2 = {{lora_file(kWan.name, "peft"), 1.0}};
  const std::vector<int64_t> shape{32, 32};
  const auto take = [&](const plan::ModelFolder& f, int expert) {
    return models::transformer_weights(f, expert).take(kWan.weight, shape, at::kFloat, at::kCPU);
  };
  EXPECT_LT(test::max_abs_diff(take(folder, 1) - take(plain, 1), test::golden_tensor(kWan.name, "delta_peft")), 1e-5);
  EXPECT_TRUE(at::equal(take(folder, 0), take(plain, 0)));
}

// What `loras` change in a weight of `weights` (a set the LoRAs were given to) against `base` (the same without).
at::Tensor change_in(io::WeightSet& with, io::WeightSet& base, const std::string& name, const std::vector<int64_t>& shape) {
  return with.take(name, shape, at::kFloat, at::kCPU) - base.take(name, shape, at::kFloat, at::kCPU);
}

// Whole differences as ComfyUI and Wan's distillation LoRAs carry them (.diff for a weight, a norm's included,
// .diff_b for a bias), by the original checkpoint's names: strength * difference on the weight the name maps to
// (Wan's norm3 is diffusers' norm2). A module with A, B and diff_b changes its layer's weight and bias (diffusers'
// lora_B.bias, at the strength).
TEST(LoraChanges, whole_differences_add_at_the_strength_where_the_original_names_map) {
  test::TempDir tmp;
  const std::string file = tmp.path("diffs.safetensors"), p = "diffusion_model.blocks.0.";
  const auto down = at::randn({4, 32}), up = at::randn({32, 4}), bias = at::randn({32}), norm = at::randn({32}),
             ffn = at::randn({48, 32}), norm_q = at::randn({32});
  io::save_tensors(file, {{p + "self_attn.q.lora_down.weight", down}, {p + "self_attn.q.lora_up.weight", up},
                          {p + "self_attn.q.diff_b", bias}, {p + "norm3.diff", norm}, {p + "ffn.0.diff", ffn},
                          {p + "self_attn.norm_q.diff", norm_q}});
  auto folder = plan::read_model_folder(test::golden_case("wan21_tiny"));
  auto base = models::transformer_weights(folder, 0);
  folder.loras = {{file, 0.7}};
  auto with = models::transformer_weights(folder, 0);
  EXPECT_LT(test::max_abs_diff(change_in(with, base, "blocks.0.attn1.to_q.weight", {32, 32}), at::mm(up, down) * 0.7), 1e-5);
  EXPECT_LT(test::max_abs_diff(change_in(with, base, "blocks.0.attn1.to_q.bias", {32}), bias * 0.7), 1e-6);
  EXPECT_LT(test::max_abs_diff(change_in(with, base, "blocks.0.norm2.weight", {32}), norm * 0.7), 1e-6);
  EXPECT_LT(test::max_abs_diff(change_in(with, base, "blocks.0.ffn.net.0.proj.weight", {48, 32}), ffn * 0.7), 1e-6);
  EXPECT_LT(test::max_abs_diff(change_in(with, base, "blocks.0.attn1.norm_q.weight", {32}), norm_q * 0.7), 1e-6);
  EXPECT_TRUE(at::equal(with.take("blocks.0.attn1.to_k.weight", {32, 32}, at::kFloat, at::kCPU),
                        base.take("blocks.0.attn1.to_k.weight", {32, 32}, at::kFloat, at::kCPU)));
  // Wan's original norm2 (before the feed-forward) has no weight: not diffusers' norm2, which is norm3.
  io::save_tensors(file, {{p + "norm2.diff", norm}});
  EXPECT_THROW(models::transformer_weights(folder, 0), InputError);
}

// FLUX.1's fused original layers: img_attn.qkv's .diff and .diff_b split by rows into to_q, to_k, to_v as the
// LoRAs' B does; a norm's ".scale.diff", in ComfyUI's names and in kohya's.
TEST(LoraChanges, a_fused_layer_s_differences_split_by_its_rows) {
  test::TempDir tmp;
  const std::string file = tmp.path("diffs.safetensors");
  const auto qkv = at::randn({96, 32}), qkv_b = at::randn({96}), key_norm = at::randn({16}), query_norm = at::randn({16});
  io::save_tensors(file, {{"diffusion_model.double_blocks.0.img_attn.qkv.diff", qkv},
                          {"diffusion_model.double_blocks.0.img_attn.qkv.diff_b", qkv_b},
                          {"diffusion_model.double_blocks.0.img_attn.norm.key_norm.scale.diff", key_norm},
                          {"lora_unet_double_blocks_0_img_attn_norm_query_norm_scale.diff", query_norm}});
  auto folder = plan::read_model_folder(test::golden_case("flux_words_tiny"));
  auto base = models::transformer_weights(folder, 0);
  folder.loras = {{file, -0.5}};
  auto with = models::transformer_weights(folder, 0);
  const std::string a = "transformer_blocks.0.attn.";
  EXPECT_LT(test::max_abs_diff(change_in(with, base, a + "to_k.weight", {32, 32}), qkv.narrow(0, 32, 32) * -0.5), 1e-6);
  EXPECT_LT(test::max_abs_diff(change_in(with, base, a + "to_v.bias", {32}), qkv_b.narrow(0, 64, 32) * -0.5), 1e-6);
  EXPECT_LT(test::max_abs_diff(change_in(with, base, a + "norm_k.weight", {16}), key_norm * -0.5), 1e-6);
  EXPECT_LT(test::max_abs_diff(change_in(with, base, a + "norm_q.weight", {16}), query_norm * -0.5), 1e-6);
}

// FLUX.1 in Black Forest Labs' names with PEFT's lora_A / lora_B (ComfyUI's exports): diffusers 0.35.2 drops these
// silently; we apply them as ComfyUI does, the fused qkv's product split by its rows, each at rank 4's alpha = rank.
TEST(LoraChanges, black_forest_labs_names_with_lora_a_and_b_apply) {
  test::TempDir tmp;
  const std::string file = tmp.path("bfl.safetensors");
  const auto down = at::randn({4, 32}), up = at::randn({96, 4});
  io::save_tensors(file, {{"diffusion_model.double_blocks.0.img_attn.qkv.lora_A.weight", down},
                          {"diffusion_model.double_blocks.0.img_attn.qkv.lora_B.weight", up}});
  auto folder = plan::read_model_folder(test::golden_case("flux_words_tiny"));
  auto base = models::transformer_weights(folder, 0);
  folder.loras = {{file, 0.75}};
  auto with = models::transformer_weights(folder, 0);
  const auto product = at::mm(up, down) * 0.75;
  const std::string a = "transformer_blocks.0.attn.";
  EXPECT_LT(test::max_abs_diff(change_in(with, base, a + "to_q.weight", {32, 32}), product.narrow(0, 0, 32)), 1e-5);
  EXPECT_LT(test::max_abs_diff(change_in(with, base, a + "to_v.weight", {32, 32}), product.narrow(0, 64, 32)), 1e-5);
}

// FLUX.1 takes a LoRA's text-encoder modules: CLIP's in kohya's names (lora_te1_, with its alpha) and ComfyUI's,
// T5's in kohya's (lora_te3_); the job's strength applies to them as to the transformer's, as diffusers'
// set_adapters gives one weight to both.
TEST(LoraTextEncoders, flux_clip_and_t5_modules_merge_into_the_encoders) {
  test::TempDir tmp;
  const std::string file = tmp.path("te.safetensors"), te1 = "lora_te1_text_model_encoder_layers_0_self_attn_q_proj.",
                    comfy = "text_encoders.clip_l.transformer.text_model.encoder.layers.1.mlp.fc1.",
                    te3 = "lora_te3_encoder_block_0_layer_0_SelfAttention_q.";
  const auto q_down = at::randn({4, 32}), q_up = at::randn({32, 4}), fc1_down = at::randn({2, 32}),
             fc1_up = at::randn({37, 2}), t5_down = at::randn({4, 32}), t5_up = at::randn({32, 4});
  io::save_tensors(file, {{te1 + "lora_down.weight", q_down}, {te1 + "lora_up.weight", q_up},
                          {te1 + "alpha", at::full({}, 2.0)}, {comfy + "lora_A.weight", fc1_down},
                          {comfy + "lora_B.weight", fc1_up}, {te3 + "lora_down.weight", t5_down},
                          {te3 + "lora_up.weight", t5_up}});
  auto folder = plan::read_model_folder(test::golden_case("flux_words_tiny"));
  auto clip_base = text::encoder_weights(folder, "text_encoder"), t5_base = text::encoder_weights(folder, "text_encoder_2");
  folder.loras = {{file, 0.8}};
  auto clip = text::encoder_weights(folder, "text_encoder"), t5 = text::encoder_weights(folder, "text_encoder_2");
  const std::string l = "text_model.encoder.layers.";
  EXPECT_LT(test::max_abs_diff(change_in(clip, clip_base, l + "0.self_attn.q_proj.weight", {32, 32}),
                               at::mm(q_up, q_down) * (0.8 * 2 / 4)), 1e-5);
  EXPECT_LT(test::max_abs_diff(change_in(clip, clip_base, l + "1.mlp.fc1.weight", {37, 32}), at::mm(fc1_up, fc1_down) * 0.8), 1e-5);
  EXPECT_LT(test::max_abs_diff(change_in(t5, t5_base, "encoder.block.0.layer.0.SelfAttention.q.weight", {32, 32}),
                               at::mm(t5_up, t5_down) * 0.8), 1e-5);
  // The transformer's weights stay as they are: the file has no module for it.
  const auto deltas = io::lora_deltas(folder, folder.loras, models::transformer_weights(folder, 0).names());
  EXPECT_TRUE(deltas.empty());
}

// What the reference leaves out is left out, and said: DoRA's magnitudes, and a text encoder's modules in a
// family whose pipeline takes LoRAs into its transformer alone (Wan). The run equals the one without them.
TEST(LoraRuns, what_the_reference_leaves_out_is_named_in_the_log_and_changes_nothing) {
  test::TempDir tmp;
  const std::string m = "diffusion_model.blocks.0.self_attn.q.";
  const auto down = at::randn({4, 32}), up = at::randn({32, 4});
  const std::string plain = tmp.path("plain.safetensors"), extra = tmp.path("extra.safetensors");
  io::save_tensors(plain, {{m + "lora_down.weight", down}, {m + "lora_up.weight", up}});
  io::save_tensors(extra, {{m + "lora_down.weight", down}, {m + "lora_up.weight", up}, {m + "dora_scale", at::randn({32, 1})},
                           {"lora_te_encoder_block_0_layer_0_SelfAttention_q.lora_down.weight", at::randn({4, 32})},
                           {"lora_te_encoder_block_0_layer_0_SelfAttention_q.lora_up.weight", at::randn({32, 4})}});
  const auto run = [&](const std::string& lora, const std::string& out) {
    const auto r = test::run(test::bin("dit-launch"),
                             {"--model", test::golden_case("wan21_tiny"), "--prompt", "a fox", "--height", "32", "--width",
                              "32", "--num_frames", "5", "--num_inference_steps", "2", "--lora", lora, "--save_tensors",
                              tmp.path(out)},
                             240000);
    EXPECT_EQ(r.code, 0) << r.err;
    return r.out + r.err;
  };
  const auto log = run(extra, "extra_run.safetensors");
  run(plain, "plain_run.safetensors");
  for (const char* said : {"1 tensors left out, DoRA", "dora_scale", "2 tensors left out, text-encoder modules",
                           "lora_te_encoder_block_0_layer_0_SelfAttention_q.lora_down.weight"})
    EXPECT_NE(log.find(said), std::string::npos) << "no '" << said << "' in: " << log;
  const auto latents = [&](const std::string& out) {
    return io::TensorFile(tmp.path(out), "run").get("final_latents", -1, "");
  };
  EXPECT_TRUE(at::equal(latents("extra_run.safetensors"), latents("plain_run.safetensors")));
}

// The family a LoRA is for, from its header: each case's files, and what a model of another family or size says.
TEST(LoraFit, the_family_and_width_come_from_the_names_and_shapes) {
  const auto fit = [](const std::string& c, const std::string& adapter) { return io::lora_fit_of(lora_file(c, adapter)); };
  EXPECT_EQ(io::describe(fit(kFlux.name, "kohya")), "FLUX.1, width 32");  // double_blocks: FLUX.1's own names
  EXPECT_EQ(io::describe(fit(kFlux.name, "peft")), "FLUX.1, width 32");  // its single blocks are FLUX.1's alone
  // diffusers' transformer_blocks.N.attn alone names a dual-stream block, FLUX.1's or HunyuanVideo-1.5's.
  EXPECT_EQ(io::describe(io::lora_fit({{"transformer.transformer_blocks.0.attn.to_q.lora_A.weight", {4, 2048}},
                                           {"transformer.transformer_blocks.0.attn.to_q.lora_B.weight", {2048, 4}}})),
            "FLUX.1 or HunyuanVideo-1.5, width 2048");
  for (const char* a : {"peft", "comfy", "musubi"}) EXPECT_EQ(io::describe(fit(kWan.name, a)), "Wan, width 32") << a;
  const auto flux = plan::read_model_folder(test::golden_case("flux_words_tiny"));
  EXPECT_EQ(io::lora_mismatch(fit(kFlux.name, "peft"), flux, "f"), "");
  EXPECT_TRUE(test::contains(io::lora_mismatch(fit(kWan.name, "comfy"), flux, "f"), "a LoRA for Wan"));
  auto wider = fit(kFlux.name, "kohya");
  wider.width = 3072;
  EXPECT_TRUE(test::contains(io::lora_mismatch(wider, flux, "f"), "reads width 3072, and this FLUX.1 transformer is 32"));
  io::LoraFit none;  // no LoRA names at all: the loader names what it cannot place
  EXPECT_FALSE(io::lora_fit({{"model.weight", {4, 4}}}).is_lora);
  EXPECT_EQ(io::lora_mismatch(none, flux, "f"), "");
}

TEST(LoraList, strengths_follow_the_last_colon_and_repeats_add) {
  const auto l = plan::parse_loras(plan::add_lora("a.safetensors:0.8", "C:\\x\\b.safetensors"));
  ASSERT_EQ(l.size(), 2u);
  EXPECT_EQ(l[0].file, "a.safetensors");
  EXPECT_DOUBLE_EQ(l[0].scale, 0.8);
  EXPECT_EQ(l[1].file, "C:\\x\\b.safetensors");
  EXPECT_DOUBLE_EQ(l[1].scale, 1.0);
  EXPECT_DOUBLE_EQ(plan::parse_loras("a.safetensors:-1.5e-1")[0].scale, -0.15);
}

// dit-launch from the case's words with `adapters` (name -> strength) and `flags`; the file of saved tensors.
std::string run_case(const test::TempDir& tmp, const std::string& c, const nlohmann::json& adapters,
                     const std::string& flags) {
  const auto g = test::golden_json(c);
  static int runs = 0;  // a file each
  const std::string out = tmp.path("run" + std::to_string(++runs) + ".safetensors");
  test::Args args{"--model", test::golden_case(g["model"]), "--prompt", g["prompt"], "--seed",
                  std::to_string(int(g["seed"])), "--height", std::to_string(int(g["height"])), "--width",
                  std::to_string(int(g["width"])), "--num_inference_steps", std::to_string(int(g["num_inference_steps"])),
                  "--guidance_scale", std::to_string(double(g["guidance_scale"])), "--max_sequence_length",
                  std::to_string(int(g["max_sequence_length"])), "--save_tensors", out};
  if (g.contains("num_frames"))
    args = args + test::Args{"--negative_prompt", g["negative_prompt"], "--num_frames", std::to_string(int(g["num_frames"]))};
  for (const auto& [adapter, weight] : adapters.items())
    args = args + test::Args{"--lora", lora_file(c, adapter) + ":" + std::to_string(double(weight))};
  std::istringstream words(flags);
  for (std::string w; words >> w;) args.push_back(w);
  const auto r = test::run(test::bin("dit-launch"), args, 240000);
  if (r.code != 0) throw std::runtime_error("dit-launch failed: " + r.err);
  return out;
}

// The case's variant run; its tensors against the variant's golden.
void expect_variant(const std::string& c, const std::string& variant, const std::string& flags) {
  const auto g = test::golden_json(c);
  test::TempDir tmp;
  const auto& v = g["variants"][variant];
  const std::string out = run_case(tmp, c, v["adapters"], flags);
  const io::TensorFile f(out, "run");
  const double latents = test::max_abs_diff(f.get("final_latents", -1, "").narrow(0, 0, 1),
                                            test::golden_tensor(c, v["final_latents"]));
  const std::string pixels = g.contains("num_frames") ? "video" : "image";
  const double decoded = test::max_abs_diff(f.get(pixels, -1, "").narrow(0, 0, 1), test::golden_tensor(c, v[pixels]));
  std::printf("%s %s %s: final_latents %.3g, %s %.3g\n", c.c_str(), variant.c_str(), flags.c_str(), latents,
              pixels.c_str(), decoded);
  EXPECT_LT(latents, 1e-3);
  EXPECT_LT(decoded, 1e-3);
  // The run's metadata names each LoRA with its strength, and what each file was, in order.
  const auto meta = io::SafetensorsFile::open(out)->metadata();
  std::vector<std::string> files, sums;
  for (const auto& [adapter, weight] : v["adapters"].items()) {
    files.push_back(lora_file(c, adapter));
    sums.push_back(hub::sha256_of_file(files.back()));
  }
  const auto listed = meta.at("lora"), hashed = meta.at("lora_sha256");
  size_t at = 0;
  for (size_t i = 0; i < files.size(); ++i) {
    EXPECT_NE(listed.find(files[i] + ":"), std::string::npos) << listed;
    EXPECT_EQ(hashed.substr(at, sums[i].size()), sums[i]) << hashed;
    at += sums[i].size() + 1;
  }
  EXPECT_EQ(at, hashed.size() + 1) << hashed;
}

// A PNG's parameters text names each LoRA as image tools write them, with its file's hash after the settings.
TEST(LoraMetadata, png_parameters_name_each_lora) {
  const std::string a(64, 'a'), b(64, 'b');
  const auto text = video::parameters_text({{"prompt", "a cat"}, {"num_inference_steps", "4"},
                                            {"lora", "/loras/pixel style.safetensors:0.8,C:\\loras\\fast.safetensors"},
                                            {"lora_sha256", a + "," + b}, {"use_fbcache", "true"},
                                            {"cache_threshold", "0.08"}});
  EXPECT_EQ(text.substr(0, text.find('\n')), "a cat <lora:pixel style:0.8> <lora:fast:1>");
  EXPECT_NE(text.find("LoRA hashes: \"pixel style: " + a + ", fast: " + b + "\""), std::string::npos) << text;
  EXPECT_NE(text.find("Step cache: First-Block Cache 0.08"), std::string::npos) << text;
}

TEST(LoraRuns, flux_each_format_and_both_together) {
  for (const char* v : {"lora_peft", "lora_kohya", "both"}) expect_variant("flux_lora_tiny", v, "");
}

TEST(LoraRuns, wan_each_format_and_both_together) {
  for (const char* v : {"lora_peft", "lora_comfy", "lora_musubi", "both"}) expect_variant("wan21_lora_tiny", v, "");
}

// On a quantized transformer (flux_gguf_tiny's Q8_0 file and flux_fp8_tiny's scaled fp8 file of flux_words_tiny's)
// the LoRAs run beside the packed layers: with them the run is as far from the float folder's LoRA run as the
// quantized base is from the float base, and they move it as much as they move the float one. (No reference runs a
// LoRA on a GGUF or fp8 file.)
TEST(LoraRuns, beside_a_quantized_transformer_as_on_the_float_one) {
  test::TempDir tmp;
  const auto both = test::golden_json(kFlux.name)["variants"]["both"]["adapters"];
  const auto latents = [&](const nlohmann::json& adapters, const std::string& flags) {
    return io::TensorFile(run_case(tmp, kFlux.name, adapters, flags), "run").get("final_latents", -1, "");
  };
  const auto float_base = latents(nlohmann::json::object(), ""), float_lora = latents(both, "");
  for (const std::string file : {"flux_gguf_tiny/transformer-Q8_0.gguf",
                                 "flux_fp8_tiny/transformer-fp8_e4m3fn_scaled.safetensors"}) {
    const std::string flag = "--transformer " + test::golden_case(file.substr(0, file.find('/'))) +
                             file.substr(file.find('/'));
    const auto q_base = latents(nlohmann::json::object(), flag), q_lora = latents(both, flag);
    const double base_gap = test::max_abs_diff(q_base, float_base), lora_gap = test::max_abs_diff(q_lora, float_lora);
    const double float_move = test::max_abs_diff(float_lora, float_base), q_move = test::max_abs_diff(q_lora, q_base);
    std::printf("%s against float: base %.3g, with LoRAs %.3g; the LoRAs move float %.3g, it %.3g\n", file.c_str(),
                base_gap, lora_gap, float_move, q_move);
    EXPECT_LT(lora_gap, 2 * base_gap + 1e-4) << file;
    EXPECT_GT(q_move, 0.8 * float_move) << file;
    EXPECT_LT(q_move, 1.25 * float_move) << file;
  }
}

// Layers fused after loading (CogVideoX's q, k, v) keep each part's LoRA on its own output rows.
TEST(LoraLayers, a_fused_layer_keeps_each_part_s_adapter_on_its_rows) {
  std::vector<models::Linear> parts(3);
  for (int i = 0; i < 3; ++i) {
    parts[i].weight = at::randn({6 + i, 5}), parts[i].bias = at::randn({6 + i});
    if (i != 1) parts[i].adapters.push_back({at::randn({2, 5}), at::randn({6 + i, 2}), 0.5 + i});
  }
  const auto x = at::randn({4, 5});
  const auto fused = models::fuse_outputs(parts);
  const auto want = at::cat({parts[0](x), parts[1](x), parts[2](x)}, 1);
  EXPECT_LT(test::max_abs_diff(fused(x), want), 1e-5);
  EXPECT_GT(test::max_abs_diff(parts[2](x), at::linear(x, parts[2].weight, parts[2].bias)), 1e-2);
}

// Beside a packed layer a whole difference (.diff) is one more product: y + scale * x D^T.
TEST(LoraLayers, a_whole_difference_beside_the_layer_adds_its_product) {
  models::Linear l;
  l.weight = at::randn({6, 5}), l.bias = at::randn({6});
  const auto diff = at::randn({6, 5}), x = at::randn({4, 5});
  l.adapters.push_back({at::Tensor(), diff, 0.3});
  EXPECT_LT(test::max_abs_diff(l(x), at::linear(x, l.weight + 0.3 * diff, l.bias)), 1e-5);
}

// Each rank merges the LoRAs into the blocks it holds: the mixes equal one process.
TEST(LoraRuns, parallel_mixes_equal_one_process) {
  expect_variant("flux_lora_tiny", "both", "--ulysses_degree 2 --ring_degree 2");
  expect_variant("wan21_lora_tiny", "both", "--pipefusion_parallel_degree 2 --num_pipeline_patch 2 --warmup_steps 4");
  expect_variant("wan21_lora_tiny", "both", "--use_cfg_parallel --ring_degree 2 --shard_weights");
}

// A refused run: its exit status is not 0, and its message names `what`.
void expect_refused(const test::Args& args, const std::vector<std::string>& what) {
  const auto r = test::run(test::bin("dit-launch"), args, 120000);
  EXPECT_NE(r.code, 0);
  for (const auto& w : what) EXPECT_NE(r.err.find(w), std::string::npos) << "no '" << w << "' in: " << r.err;
}

TEST(LoraRefusals, wrong_model_missing_file_and_damaged_files_are_named) {
  const std::string flux = test::golden_case("flux_words_tiny"), wan_lora = lora_file(kWan.name, "comfy");
  const test::Args base{"--model", flux, "--prompt", "a fox", "--height", "64", "--width", "96",
                        "--num_inference_steps", "1"};
  // A Wan LoRA on FLUX: refused from its header before any work, naming a tensor of its Wan blocks.
  expect_refused(base + test::Args{"--lora", wan_lora},
                 {"--lora " + wan_lora + ": a LoRA for Wan", "diffusion_model.blocks.0.", "choose a LoRA made for FLUX.1"});
  expect_refused(base + test::Args{"--lora", "/nonexistent/style.safetensors:0.5"},
                 {"--lora /nonexistent/style.safetensors", "cannot be read"});
  expect_refused(base + test::Args{"--lora_2", lora_file(kFlux.name, "peft")}, {"--lora_2", "one transformer"});
  const std::string peft = lora_file(kFlux.name, "peft");
  expect_refused(base + test::Args{"--lora", peft + ":0.5," + peft}, {"--lora " + peft + ": given twice", "once"});
  // A model's own weights given as a LoRA: refused from the header before any work (exit 2), not by a rank.
  const std::string weights = flux + "/transformer/diffusion_pytorch_model.safetensors";
  const auto own = test::run(test::bin("dit-launch"), base + test::Args{"--lora", weights}, 120000);
  EXPECT_EQ(own.code, 2) << own.err;
  for (const std::string& w : std::vector<std::string>{"--lora " + weights + ": tensor ", "is not a LoRA weight",
                                                       "a model's own weights", "--transformer FILE"})
    EXPECT_NE(own.err.find(w), std::string::npos) << "no '" << w << "' in: " << own.err;
  // Hand-made damaged files: ranks that disagree, a value that is not finite, a B without its A.
  test::TempDir tmp;
  const std::string m = "transformer.transformer_blocks.0.attn.to_q.";
  const std::pair<std::string, std::vector<std::pair<std::string, at::Tensor>>> damaged[] = {
      {"rank", {{m + "lora_A.weight", at::randn({4, 32})}, {m + "lora_B.weight", at::randn({32, 3})}}},
      {"finite", {{m + "lora_A.weight", at::full({4, 32}, NAN)}, {m + "lora_B.weight", at::randn({32, 4})}}},
      {"finite", {{m + "lora_A.weight", at::randn({4, 32})}, {m + "lora_B.weight", at::full({32, 4}, INFINITY)}}},
      // A rank above the layer's sizes: no low-rank product, and a file of any size would be read.
      {"has rank 64, more than its layer's sizes",
       {{m + "lora_A.weight", at::randn({64, 32})}, {m + "lora_B.weight", at::randn({32, 64})}}},
      {"other half", {{m + "lora_B.weight", at::randn({32, 4})}}},
      {"has none", {{"diffusion_model.double_blocks.0.img_attn.norm.key_norm.scale.diff_b", at::randn({16})}}},
      {"by a difference of [31, 32]", {{m + "diff", at::randn({31, 32})}}},
      {"is I64; a LoRA's matrices are floating point",
       {{m + "lora_A.weight", at::ones({4, 32}, at::kInt)}, {m + "lora_B.weight", at::randn({32, 4})}}},
      // One layer under two names (diffusers' and kohya's): it would be applied twice.
      {"both change transformer_blocks.0.attn.to_q.weight: the file holds that layer twice",
       {{m + "lora_A.weight", at::randn({4, 32})}, {m + "lora_B.weight", at::randn({32, 4})},
        {"lora_unet_double_blocks_0_img_attn_qkv.lora_down.weight", at::randn({4, 32})},
        {"lora_unet_double_blocks_0_img_attn_qkv.lora_up.weight", at::randn({96, 4})}}},
  };
  for (const auto& [why, tensors] : damaged) {
    const std::string file = tmp.path("damaged.safetensors");
    io::save_tensors(file, tensors);
    expect_refused(base + test::Args{"--lora", file}, {"--lora " + file, why});
  }
  // Found by every rank: the launcher says it as it happens and at the end (whose last line is the failed rank's
  // own), not again for each rank's stderr.
  const std::string nan = tmp.path("nan.safetensors");
  io::save_tensors(nan, {{m + "lora_A.weight", at::full({4, 32}, NAN)}, {m + "lora_B.weight", at::randn({32, 4})}});
  const auto two =
      test::run(test::bin("dit-launch"), base + test::Args{"--lora", nan, "--ulysses_degree", "2"}, 120000);
  EXPECT_EQ(two.code, 3) << two.err;
  size_t said = 0;
  for (size_t at = two.err.find("holds values that are not finite"); at != std::string::npos;
       at = two.err.find("holds values that are not finite", at + 1))
    ++said;
  EXPECT_EQ(said, 3u) << two.err;
  // PEFT's lora_alpha that is not a number (it once read as no alpha: the rank, a different strength).
  const std::string alpha = tmp.path("alpha.safetensors");
  io::save_tensors(alpha, {{m + "lora_A.weight", at::randn({4, 32})}, {m + "lora_B.weight", at::randn({32, 4})}},
                   {{"lora_adapter_metadata", R"({"lora_alpha": "abc"})"}});
  expect_refused(base + test::Args{"--lora", alpha}, {"--lora " + alpha, "lora_alpha", "\"abc\", not a number"});
}


// What is wrong with a LoRA is found before the text is encoded, under the flag that gave it: Wan2.2's --lora_2
// once went unread until the switch to the second expert (and not at all with too few steps); a header that does
// not parse, a strength that is not a number, and a path that is not a file are each named as such.
TEST(LoraRefusals, before_any_work_under_the_flag_given) {
  test::TempDir tmp;
  const test::Args wan22{"--model", test::golden_case("wan22_tiny"), "--prompt", "a fox", "--height", "32", "--width",
                         "32", "--num_frames", "5", "--num_inference_steps", "2"};
  const std::string nan = tmp.path("nan.safetensors"), m = "transformer.blocks.0.attn1.to_q.";
  io::save_tensors(nan, {{m + "lora_A.weight", at::full({4, 32}, NAN)}, {m + "lora_B.weight", at::randn({32, 4})}});
  const auto r = test::run(test::bin("dit-launch"), wan22 + test::Args{"--lora_2", nan}, 120000);
  EXPECT_NE(r.code, 0);
  EXPECT_TRUE(test::contains(r.err, "--lora_2 " + nan + ": tensor " + m + "lora_A.weight holds values that are not "
                                    "finite")) << r.err;
  EXPECT_FALSE(test::contains(r.err, "encoding with")) << r.err;
  const std::string wide = tmp.path("wide.safetensors");  // 31 output rows for a layer of 32
  io::save_tensors(wide, {{m + "lora_A.weight", at::randn({4, 32})}, {m + "lora_B.weight", at::randn({31, 4})}});
  expect_refused(wan22 + test::Args{"--lora_2", wide}, {"--lora_2 " + wide, "another model's sizes"});
  const std::string cut = tmp.path("cut.safetensors");
  test::write_file(cut, std::string("\x40\0\0\0\0\0\0\0{\"a\":", 12));  // a header cut short
  expect_refused(wan22 + test::Args{"--lora", cut}, {"--lora: " + cut});
  const std::string good = lora_file(kWan.name, "peft");
  expect_refused(wan22 + test::Args{"--lora", good + ":abc"}, {"--lora " + good + ":abc", "the strength 'abc'"});
  expect_refused(wan22 + test::Args{"--lora", tmp.path("")}, {"not a file"});
  expect_refused(wan22 + test::Args{"--lora", good + ":1e999"},
                 {"--lora " + good + ": the strength after the last ':' is not a finite number"});
  // A strength so large the run turns to NaN stops at that step, writing nothing, where it made a black clip.
  const std::string clip = tmp.path("black.mp4");
  expect_refused(wan22 + test::Args{"--lora", good + ":1e30", "--output", clip},
                 {"step 1 of 2 made the latents NaN or infinite", "--lora FILE:SCALE"});
  EXPECT_FALSE(std::filesystem::exists(clip));
}

}  // namespace
