// HunyuanVideo-1.5 as a user runs it: words, a seed and the folder (hunyuan15_tiny, diffusers 0.42.1) through
// dit-launch, in one process and in the parallel mixes the family takes; the ids, the embeddings' real rows, the
// final latents and the video against the reference. And what it refuses, by name.
#include <ATen/ops/equal.h>
#include <ATen/ops/nonzero.h>

#include <sstream>

#include "io/gguf/gguf_file.h"
#include "io/safetensors/safetensors_file.h"
#include "io/weights/tensor_file.h"
#include "mixes.h"
#include "plan/error.h"
#include "plan/families/hunyuan15_config.h"
#include "process.h"
#include "support.h"
#include "tensor_support.h"

using namespace studio;

namespace {

const std::string kCase = "hunyuan15_tiny";

at::Tensor golden(const std::string& name) { return test::golden_tensor(kCase, name); }

at::Tensor real_rows(const std::string& embeds, const std::string& mask) {
  return golden(embeds).index_select(1, at::nonzero(golden(mask)[0]).squeeze(1));
}

test::Args words_args(const std::string& out) {
  const auto g = test::golden_json(kCase);
  return {"--model", test::golden_case(kCase), "--prompt", g["prompt"].get<std::string>(), "--negative_prompt",
          g["negative_prompt"].get<std::string>(), "--seed", std::to_string(int(g["seed"])), "--height",
          std::to_string(int(g["height"])), "--width", std::to_string(int(g["width"])), "--num_frames",
          std::to_string(int(g["num_frames"])), "--num_inference_steps", std::to_string(int(g["num_inference_steps"])),
          "--save_tensors", out};
}

}  // namespace

class Hunyuan15ThroughDitLaunch : public ::testing::TestWithParam<const char*> {
 protected:
  test::TempDir tmp_;
};

// The guidance scale is the guider's (6.0): not given here.
TEST_P(Hunyuan15ThroughDitLaunch, from_the_prompt_and_seed) {
  const std::string out = tmp_.path("run.safetensors");
  auto args = words_args(out);
  std::istringstream flags(GetParam());
  for (std::string w; flags >> w;) args.push_back(w);
  const auto r = test::run(test::bin("dit-launch"), args, 300000);
  ASSERT_EQ(r.code, 0) << r.err;
  io::TensorFile f(out, "run");
  for (const char* ids : {"input_ids", "negative_input_ids", "byt5_input_ids"})
    EXPECT_TRUE(at::equal(f.get_int64(ids), test::golden_ids(kCase, ids))) << ids;
  EXPECT_LT(test::max_abs_diff(f.get("prompt_embeds", 3, ""), real_rows("prompt_embeds", "prompt_embeds_mask")), 1e-4);
  EXPECT_LT(test::max_abs_diff(f.get("negative_prompt_embeds", 3, ""),
                               real_rows("negative_prompt_embeds", "negative_prompt_embeds_mask")),
            1e-4);
  EXPECT_LT(test::max_abs_diff(f.get("prompt_embeds_2", 3, ""), real_rows("prompt_embeds_2", "prompt_embeds_mask_2")),
            1e-4);
  EXPECT_EQ(f.get("negative_prompt_embeds_2", 3, "").size(1), 0);  // nothing in quotes
  const double latents = test::max_abs_diff(f.get("final_latents", 5, ""), golden("final_latents"));
  const double video = test::max_abs_diff(f.get("video", 5, ""), golden("video"));
  std::printf("hunyuan15 from words %s: final_latents %.3g, video %.3g\n", GetParam(), latents, video);
  EXPECT_LT(latents, test::kRunTolerance);
  EXPECT_LT(video, test::kRunTolerance);
}

INSTANTIATE_TEST_SUITE_P(Mixes, Hunyuan15ThroughDitLaunch,
                         ::testing::Values("", "--ulysses_degree 2", "--ring_degree 2", "--use_cfg_parallel",
                                           "--enable_tiling",  // 256-pixel tiles: the whole picture in one
                                           "--ulysses_degree 2 --use_parallel_vae",  // 3 latent rows: 2 + 1
                                           "--use_cfg_parallel --use_parallel_vae",
                                           "--use_cfg_parallel --ulysses_degree 2",
                                           "--use_cfg_parallel --pipefusion_parallel_degree 2 --warmup_steps 4"),
                         test::flags_name);

TEST(Hunyuan15Refusals, what_the_family_cannot_do_yet_is_named) {
  test::TempDir tmp;
  const auto base = words_args(tmp.path("x.safetensors"));
  auto refused = [&](const test::Args& more, std::initializer_list<const char*> parts) {
    const auto r = test::run(test::bin("dit-launch"), base + more, 60000);
    EXPECT_NE(r.code, 0);
    for (const char* p : parts) EXPECT_TRUE(test::contains(r.err, p)) << p << " not in: " << r.err;
  };
  refused({"--pipefusion_parallel_degree", "2"},
          {"--pipefusion_parallel_degree 2", "separate calls", "--use_cfg_parallel"});
  refused({"--use_teacache"}, {"--use_teacache", "no coefficients", "--use_fbcache"});
  refused({"--max_sequence_length", "512"}, {"--max_sequence_length 512", "1000 Qwen tokens"});
  refused({"--num_frames", "10"}, {"--num_frames 10", "4k+1", "9 or 13"});
  refused({"--enable_tiling", "--tile_sample_min_height", "48"}, {"--tile_sample_min_height 48", "64"});
}

// Qwen's tokenizer reads tokenizer.json alone: a folder without vocab.json and merges.txt encodes the same ids, and
// one without tokenizer.json is refused before any work, naming what is missing.
TEST(Hunyuan15Tokenizer, the_folder_needs_tokenizer_json_alone) {
  test::TempDir tmp;
  const std::string copy = tmp.path("hunyuan15"), out = tmp.path("run.safetensors");
  test::copy_tree(test::golden_case(kCase), copy);
  std::filesystem::remove(copy + "/tokenizer/vocab.json");
  std::filesystem::remove(copy + "/tokenizer/merges.txt");
  auto args = words_args(out);
  args[1] = copy;
  auto r = test::run(test::bin("dit-launch"), args + test::Args{"--num_inference_steps", "1"}, 300000);
  ASSERT_EQ(r.code, 0) << r.err;
  io::TensorFile f(out, "run");
  EXPECT_TRUE(at::equal(f.get_int64("input_ids"), test::golden_ids(kCase, "input_ids")));

  std::filesystem::remove(copy + "/tokenizer/tokenizer.json");
  r = test::run(test::bin("dit-launch"), args, 60000);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(test::contains(r.err, "tokenizer/ (Qwen's tokenizer.json)")) << r.err;
}

// Qwen2.5-VL's language model from one GGUF in llama.cpp's names (blk.N.attn_q, token_embd, output_norm; as its
// converter writes the qwen2vl architecture) encodes as the folder does; a GGUF of another architecture is refused
// naming the ones it would take.
TEST(Hunyuan15TextEncoderFile, a_qwen_gguf_encodes_as_the_folder) {
  test::TempDir tmp;
  const auto folder = io::SafetensorsFile::open(test::golden_case(kCase) + "/text_encoder/model.safetensors");
  const std::pair<const char*, const char*> parts[] = {
      {"input_layernorm", "attn_norm"}, {"self_attn.q_proj", "attn_q"},  {"self_attn.k_proj", "attn_k"},
      {"self_attn.v_proj", "attn_v"},   {"self_attn.o_proj", "attn_output"}, {"post_attention_layernorm", "ffn_norm"},
      {"mlp.gate_proj", "ffn_gate"},    {"mlp.up_proj", "ffn_up"},      {"mlp.down_proj", "ffn_down"}};
  std::vector<io::GgufTensorToWrite> tensors;
  for (const auto& t : folder->tensors()) {
    std::string name = t.name == "embed_tokens.weight" ? "token_embd.weight"
                       : t.name == "norm.weight"        ? "output_norm.weight"
                                                        : "";
    for (const auto& [ours, theirs] : parts) {
      const auto at = t.name.find(std::string(".") + ours + ".");
      if (name.empty() && at != std::string::npos)
        name = "blk." + t.name.substr(7, at - 7) + "." + theirs + t.name.substr(t.name.rfind('.'));
    }
    ASSERT_FALSE(name.empty()) << t.name;
    tensors.push_back({name, plan::WeightFormat::F32, t.shape, folder->data(t)});
  }
  // Qwen2.5-VL keeps its output head apart from the token table, so its GGUFs hold one; the encoder leaves it.
  const auto* table = folder->find("embed_tokens.weight");
  tensors.push_back({"output.weight", plan::WeightFormat::F32, table->shape, folder->data(*table)});
  io::write_gguf(tmp.path("qwen.gguf"), tensors, {{"general.architecture", "qwen2vl"}});
  const std::string out = tmp.path("run.safetensors");
  auto r = test::run(test::bin("dit-launch"),
                     words_args(out) + test::Args{"--num_inference_steps", "1", "--text_encoder", tmp.path("qwen.gguf")},
                     300000);
  ASSERT_EQ(r.code, 0) << r.err;
  io::TensorFile f(out, "run");
  EXPECT_LT(test::max_abs_diff(f.get("prompt_embeds", 3, ""), real_rows("prompt_embeds", "prompt_embeds_mask")), 1e-4);

  io::write_gguf(tmp.path("t5.gguf"), tensors, {{"general.architecture", "t5encoder"}});
  r = test::run(test::bin("dit-launch"), words_args(out) + test::Args{"--text_encoder", tmp.path("t5.gguf")}, 120000);
  EXPECT_NE(r.code, 0);
  EXPECT_TRUE(test::contains(r.err, "t5encoder") && test::contains(r.err, "qwen2vl")) << r.err;
}

// The guider's config (guider/guider_config.json) sets the guidance: disabled or at 1.0 the checkpoint is
// CFG-distilled, and what diffusers' guider refuses to do differently is refused by name.
TEST(Hunyuan15Guider, the_config_sets_the_scale_and_refuses_what_it_cannot_do) {
  const auto scale = [](const std::string& fields) {
    return plan::parse_hunyuan15_guidance_scale(R"({"_class_name": "ClassifierFreeGuidance", )" + fields + "}",
                                                "guider_config.json");
  };
  EXPECT_EQ(scale(R"("guidance_scale": 6.0)"), 6.0);
  EXPECT_EQ(scale(R"("guidance_scale": 6.0, "enabled": false)"), 1.0);
  EXPECT_EQ(scale(R"("guidance_scale": 1.0)"), 1.0);
  for (const auto& [fields, named] : {std::pair{R"("guidance_rescale": 0.7)", "guidance_rescale"},
                                      std::pair{R"("start": 0.2)", "start"},
                                      std::pair{R"("use_original_formulation": true)", "use_original_formulation"},
                                      std::pair{R"("guidance_scale": -1)", "guidance_scale"}}) {
    try {
      scale(fields);
      ADD_FAILURE() << fields << " was read";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(named), std::string::npos) << e.what();
    }
  }
}

// A CFG-distilled folder (the guider at 1.0): named so as it loads, one branch (no negative prompt encoded), CFG
// parallel refused as having no second branch, and PipeFusion, which needs separate calls, equal to one process
// (every step a warmup step: the stages wait for each other, so nothing is stale).
TEST(Hunyuan15Guider, a_cfg_distilled_folder_runs_one_branch) {
  test::TempDir tmp;
  const std::string dir = tmp.path("distilled");
  test::copy_tree(test::golden_case(kCase), dir);
  test::edit_json(dir + "/guider/guider_config.json", [](nlohmann::json& j) { j["guidance_scale"] = 1.0; });
  const test::Args job{"--model", dir, "--prompt", "a cat", "--height", "48", "--width", "80", "--num_frames", "5",
                       "--num_inference_steps", "3"};
  auto r = test::run(test::bin("dit-launch"), job + test::Args{"--save_tensors", tmp.path("one.safetensors")}, 300000);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(test::contains(r.err, "CFG-distilled")) << r.err;
  io::TensorFile one(tmp.path("one.safetensors"), "run");
  EXPECT_TRUE(one.has("prompt_embeds"));
  EXPECT_FALSE(one.has("negative_prompt_embeds"));
  r = test::run(test::bin("dit-launch"), job + test::Args{"--use_cfg_parallel"}, 60000);
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(test::contains(r.err, "no second branch")) << r.err;
  r = test::run(test::bin("dit-launch"), job + test::Args{"--pipefusion_parallel_degree", "2", "--warmup_steps", "3",
                                                          "--save_tensors", tmp.path("stages.safetensors")},
                300000);
  ASSERT_EQ(r.code, 0) << r.err;
  io::TensorFile stages(tmp.path("stages.safetensors"), "run");
  EXPECT_LT(test::max_abs_diff(stages.get("final_latents", 5, ""), one.get("final_latents", 5, "")), 1e-3);
}

// Several videos from one prompt with guidance on: each sample's text rows counted for both branches, in one
// process and where CFG or Ulysses splits the call (a count per branch, not per sample, once stopped these runs);
// and the fewest frames, 1 and 5, whose latents have fewer frames than the preview's colour channels.
TEST(Hunyuan15Videos, several_per_prompt_and_the_fewest_frames) {
  test::TempDir tmp;
  std::vector<at::Tensor> runs;
  for (const char* flags : {"", "--use_cfg_parallel", "--ulysses_degree 2"}) {
    const std::string out = tmp.path("videos" + std::to_string(runs.size()) + ".safetensors");
    auto args = words_args(out) + test::Args{"--num_videos_per_prompt", "2"};
    std::istringstream more(flags);
    for (std::string w; more >> w;) args.push_back(w);
    const auto r = test::run(test::bin("dit-launch"), args, 300000);
    ASSERT_EQ(r.code, 0) << flags << ": " << r.err;
    runs.push_back(io::TensorFile(out, "run").get("final_latents", 5, ""));
  }
  ASSERT_EQ(runs[0].size(0), 2);
  EXPECT_GT(test::max_abs_diff(runs[0][0], runs[0][1]), 0.1);  // two noises, two videos
  EXPECT_LT(test::max_abs_diff(runs[1], runs[0]), 1e-5);
  EXPECT_LT(test::max_abs_diff(runs[2], runs[0]), 1e-5);
  for (const char* frames : {"1", "5"}) {
    auto args = words_args(tmp.path("few.safetensors")) + test::Args{"--num_frames", frames, "--output",
                                                                      tmp.path("few.mp4")};
    const auto r = test::run(test::bin("dit-launch"), args, 300000);
    EXPECT_EQ(r.code, 0) << frames << " frames: " << r.err;
  }
}
