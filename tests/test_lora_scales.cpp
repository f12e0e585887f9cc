// What scale each module of a LoRA gets, where the reference cases have none: a mixed-rank kohya file (each
// module its own alpha / rank, docs/lora.md), PEFT's alpha_pattern matched as PEFT matches it (a regular
// expression the module's name ends in, the first key in the file's order winning), and a CogVideoX LoRA run
// against the same change written into the weights, in one process and split over ranks.
#include <ATen/TensorOperators.h>
#include <ATen/ops/full.h>
#include <ATen/ops/randn.h>

#include "io/safetensors/safetensors_file.h"
#include "io/weights/tensor_file.h"
#include "io/weights/weights.h"
#include "models/family_runtime.h"
#include "plan/error.h"
#include "plan/model_folder.h"
#include "process.h"
#include "tensor_support.h"

using namespace studio;

namespace {

// The change the file at `strength` makes to each named weight of the case's transformer.
std::map<std::string, at::Tensor> changes(const std::string& c, const std::string& file, double strength,
                                          const std::vector<std::pair<std::string, std::vector<int64_t>>>& weights) {
  auto folder = plan::read_model_folder(test::golden_case(c));
  auto base = models::transformer_weights(folder, 0);
  folder.loras = {{file, strength}};
  auto with = models::transformer_weights(folder, 0);
  std::map<std::string, at::Tensor> out;
  for (const auto& [name, shape] : weights)
    out[name] = with.take(name, shape, at::kFloat, at::kCPU) - base.take(name, shape, at::kFloat, at::kCPU);
  return out;
}

// A low-rank pair of random matrices for a `rows` x `cols` layer.
std::pair<at::Tensor, at::Tensor> pair_of(int64_t rank, int64_t rows = 32, int64_t cols = 32) {
  return {at::randn({rank, cols}) * 0.1, at::randn({rows, rank}) * 0.1};
}

}  // namespace

// kohya's names on Wan2.1 (musubi-tuner's layout): ranks 4, 8 and 2, an alpha given for two of them. Each module's
// change is strength * (its alpha, else its rank) / its rank * up @ down; diffusers 0.35.2 gives every module the
// first one's alpha here (docs/lora.md says why we do not).
TEST(LoraScales, each_module_of_a_mixed_rank_kohya_file_keeps_its_own_alpha_over_rank) {
  test::TempDir tmp;
  const std::string file = tmp.path("mixed.safetensors"), p = "lora_unet_blocks_0_";
  const auto [q_down, q_up] = pair_of(4);
  const auto [k_down, k_up] = pair_of(8);
  const auto [v_down, v_up] = pair_of(2);
  io::save_tensors(file, {{p + "self_attn_q.lora_down.weight", q_down}, {p + "self_attn_q.lora_up.weight", q_up},
                          {p + "self_attn_q.alpha", at::full({}, 2.0)},
                          {p + "self_attn_k.lora_down.weight", k_down}, {p + "self_attn_k.lora_up.weight", k_up},
                          {p + "cross_attn_v.lora_down.weight", v_down}, {p + "cross_attn_v.lora_up.weight", v_up},
                          {p + "cross_attn_v.alpha", at::full({}, 8.0)}});
  const std::vector<int64_t> square{32, 32};
  const auto c = changes("wan21_tiny", file, 0.5,
                         {{"blocks.0.attn1.to_q.weight", square}, {"blocks.0.attn1.to_k.weight", square},
                          {"blocks.0.attn2.to_v.weight", square}});
  EXPECT_LT(test::max_abs_diff(c.at("blocks.0.attn1.to_q.weight"), at::mm(q_up, q_down) * (0.5 * 2 / 4)), 1e-6);
  EXPECT_LT(test::max_abs_diff(c.at("blocks.0.attn1.to_k.weight"), at::mm(k_up, k_down) * 0.5), 1e-6);
  EXPECT_LT(test::max_abs_diff(c.at("blocks.0.attn2.to_v.weight"), at::mm(v_up, v_down) * (0.5 * 8 / 2)), 1e-6);
}

// PEFT's metadata on Wan2.1: lora_alpha 4 at rank 4, and an alpha_pattern whose first key ("to_[qk]", a regular
// expression) wins over a later exact name, as PEFT's get_pattern_key takes the keys in order; a key must match
// whole dotted parts ("o_v" does not match to_v). A key that is no regular expression is refused by name.
TEST(LoraScales, peft_alpha_pattern_matches_as_peft_does_in_the_file_s_order) {
  test::TempDir tmp;
  const std::string file = tmp.path("peft.safetensors"), p = "transformer.blocks.0.attn1.";
  const auto [q_down, q_up] = pair_of(4);
  const auto [k_down, k_up] = pair_of(4);
  const auto [v_down, v_up] = pair_of(4);
  const std::vector<std::pair<std::string, at::Tensor>> tensors{
      {p + "to_q.lora_A.weight", q_down}, {p + "to_q.lora_B.weight", q_up}, {p + "to_k.lora_A.weight", k_down},
      {p + "to_k.lora_B.weight", k_up},   {p + "to_v.lora_A.weight", v_down}, {p + "to_v.lora_B.weight", v_up}};
  const auto with_metadata = [&](const std::string& pattern) {
    io::save_tensors(file, tensors,
                     {{"lora_adapter_metadata", R"({"transformer.r": 4, "transformer.lora_alpha": 4, )"
                                                R"("transformer.alpha_pattern": )" + pattern + "}"}});
  };
  with_metadata(R"({"to_[qk]": 16, "blocks.0.attn1.to_q": 2, "o_v": 100})");
  const std::vector<int64_t> square{32, 32};
  const auto c = changes("wan21_tiny", file, 1.0,
                         {{"blocks.0.attn1.to_q.weight", square}, {"blocks.0.attn1.to_k.weight", square},
                          {"blocks.0.attn1.to_v.weight", square}});
  EXPECT_LT(test::max_abs_diff(c.at("blocks.0.attn1.to_q.weight"), at::mm(q_up, q_down) * 4.0), 1e-6);
  EXPECT_LT(test::max_abs_diff(c.at("blocks.0.attn1.to_k.weight"), at::mm(k_up, k_down) * 4.0), 1e-6);
  EXPECT_LT(test::max_abs_diff(c.at("blocks.0.attn1.to_v.weight"), at::mm(v_up, v_down)), 1e-6);

  with_metadata(R"({"to_[q": 16})");
  auto folder = plan::read_model_folder(test::golden_case("wan21_tiny"));
  folder.loras = {{file, 1.0}};
  try {
    models::transformer_weights(folder, 0);
    ADD_FAILURE() << "a pattern that is no regular expression was taken";
  } catch (const InputError& e) {
    EXPECT_TRUE(test::contains(e.what(), "alpha_pattern key \"to_[q\"")) << e.what();
  }
}

// A CogVideoX LoRA in diffusers' names (q, k and v, which the engine fuses after loading, and the feed-forward's
// output) runs as the same change written into a copy of the folder's weights: strength * alpha / rank * B A.
TEST(LoraScales, a_cogvideox_lora_runs_as_its_change_written_into_the_weights) {
  test::TempDir tmp;
  const std::string c = "cogvx2b_t5_tiny", lora = tmp.path("cogvx.safetensors"), copy = tmp.path("model");
  const double strength = 0.7, scale = 8.0 / 4;  // lora_alpha 8 at rank 4
  std::map<std::string, std::pair<at::Tensor, at::Tensor>> modules;  // weight -> (down, up)
  std::vector<std::pair<std::string, at::Tensor>> tensors;
  for (const char* m : {"attn1.to_q", "attn1.to_k", "attn1.to_v", "ff.net.2"}) {
    const std::string name = std::string("transformer_blocks.0.") + m;
    const bool ff = std::string(m) == "ff.net.2";
    modules[name + ".weight"] = pair_of(4, 64, ff ? 256 : 64);
    tensors.push_back({"transformer." + name + ".lora_A.weight", modules[name + ".weight"].first});
    tensors.push_back({"transformer." + name + ".lora_B.weight", modules[name + ".weight"].second});
  }
  io::save_tensors(lora, tensors, {{"lora_adapter_metadata", R"({"transformer.r": 4, "transformer.lora_alpha": 8})"}});

  test::copy_tree(test::golden_case(c), copy);
  const std::string weights = copy + "/transformer/diffusion_pytorch_model.safetensors";
  std::vector<std::pair<std::string, at::Tensor>> changed;
  {
    const auto f = io::SafetensorsFile::open(test::golden_case(c) + "/transformer/diffusion_pytorch_model.safetensors");
    for (const auto& info : f->tensors()) {
      auto t = io::to_tensor(f, info, at::kFloat, at::kCPU).clone();
      if (const auto m = modules.find(info.name); m != modules.end())
        t = t + at::mm(m->second.second, m->second.first) * (scale * strength);
      changed.push_back({info.name, t});
    }
  }
  io::save_tensors(weights, changed);

  const auto run = [&](const std::string& model, const test::Args& extra) {
    static int runs = 0;
    const std::string out = tmp.path("run" + std::to_string(++runs) + ".safetensors");
    const auto r = test::run(test::bin("dit-launch"),
                             test::Args{"--model", model, "--prompt", "A cat sits on a red mat.", "--seed", "7",
                                        "--height", "64", "--width", "96", "--num_frames", "9",
                                        "--num_inference_steps", "3", "--max_sequence_length", "16", "--save_tensors",
                                        out} + extra,
                             240000);
    EXPECT_EQ(r.code, 0) << r.err;
    return io::TensorFile(out, "run").get("final_latents", -1, "");
  };
  const std::string with = lora + ":" + std::to_string(strength);
  const auto plain = run(test::golden_case(c), {}), written = run(copy, {});
  const auto merged = run(test::golden_case(c), {"--lora", with});
  const auto split = run(test::golden_case(c), {"--lora", with, "--ulysses_degree", "2", "--use_cfg_parallel"});
  const double moved = test::max_abs_diff(written, plain), gap = test::max_abs_diff(merged, written),
               split_gap = test::max_abs_diff(split, merged);
  std::printf("CogVideoX LoRA: moves the run %.3g; against the written weights %.3g; split over ranks %.3g\n", moved,
              gap, split_gap);
  EXPECT_GT(moved, 1e-2);
  EXPECT_LT(gap, 1e-4);
  EXPECT_LT(split_gap, 1e-4);
}
