// engine/plan's parallel rules, each with its message and suggestions (no LibTorch, as the GUI uses them).
#include <filesystem>

#include "plan/families/cogvideox_config.h"
#include "plan/job_file.h"
#include "plan/family.h"
#include "plan/parallel.h"
#include "plan/weight_choice.h"
#include "support.h"

using namespace studio;

namespace {

class PlanParallel : public ::testing::Test {
 protected:
  plan::ModelFolder model_ = plan::read_model_folder(test::golden_case("cogvx2b_tiny"));  // 4 heads, 2 layers
  plan::JobSpec job() {
    plan::JobSpec j;
    j.prompt_embeds_file = "embeds.safetensors";
    plan::apply_model_defaults(j, model_);
    return j;
  }
  static plan::ParallelConfig cfg(int u, int r, bool c = false, int dp = 1) {
    plan::ParallelConfig p;
    p.ulysses_degree = u;
    p.ring_degree = r;
    p.use_cfg_parallel = c;
    p.data_parallel_degree = dp;
    return p;
  }
  // A problem of `field` whose message holds every one of `parts`; otherwise the messages of that field.
  static ::testing::AssertionResult has(const std::vector<plan::Problem>& ps, const std::string& field,
                                        std::initializer_list<const char*> parts) {
    std::string seen;
    for (const auto& p : ps) {
      if (p.field != field) continue;
      bool all = true;
      for (const char* s : parts) all = all && test::contains(p.message, s);
      if (all) return ::testing::AssertionSuccess();
      seen += "\n  " + p.message;
    }
    return ::testing::AssertionFailure() << "no '" << field << "' problem with every expected part; seen:" << seen;
  }
};

TEST_F(PlanParallel, rank_layout_is_xdits) {
  // data 2 x CFG 2 x ring 2 x Ulysses 2: Ulysses innermost on contiguous ranks.
  auto p = cfg(2, 2, true, 2);
  EXPECT_EQ(p.world_size(), 16);
  auto c = plan::coords_of(13, p);  // 13 = ((1*2 + 1)*2 + 1)*2 + 1
  EXPECT_EQ(c.data, 1);
  EXPECT_EQ(c.cfg, 1);
  EXPECT_EQ(c.ring, 0);
  EXPECT_EQ(c.ulysses, 1);
  EXPECT_EQ(plan::rank_of(c, p), 13);
  EXPECT_EQ(plan::group_of(13, plan::Dim::Ulysses, p), std::vector<int>({12, 13}));
  EXPECT_EQ(plan::group_of(13, plan::Dim::Ring, p), std::vector<int>({13, 15}));
  EXPECT_EQ(plan::group_of(13, plan::Dim::Sequence, p), std::vector<int>({12, 13, 14, 15}));
  // --shard_weights' group: both guidance branches' sequence ranks, in CFG then sequence order.
  EXPECT_EQ(plan::group_of(13, plan::Dim::Replica, p), std::vector<int>({8, 9, 10, 11, 12, 13, 14, 15}));
  EXPECT_EQ(plan::group_of(13, plan::Dim::Cfg, p), std::vector<int>({9, 13}));
  EXPECT_EQ(plan::group_of(13, plan::Dim::Data, p), std::vector<int>({5, 13}));
}

TEST_F(PlanParallel, product_must_match_processes_with_suggestions) {
  auto ps = plan::validate_parallel(cfg(2, 2), job(), model_, 2);
  EXPECT_TRUE(has(ps, "world_size", {"ring 2 x ulysses 2", "needs 4 processes, but 2 are available",
                                     "Valid for 2:", "--ulysses_degree 2"}));
  EXPECT_TRUE(plan::validate_parallel(cfg(2, 2), job(), model_, 4).empty());
}

TEST_F(PlanParallel, suggestions_are_valid_and_nearest_first) {
  auto near = cfg(2, 1);
  auto all = plan::valid_configs(job(), model_, 4, near);
  ASSERT_FALSE(all.empty());
  for (const auto& p : all) {
    EXPECT_EQ(p.world_size(), 4);
    EXPECT_TRUE(plan::validate_parallel(p, job(), model_, 4).empty()) << p.flags();
  }
  // 4 heads: Ulysses 4, ring 4, 2 x 2, CFG x 2 and data-parallel ones that fit the job.
  EXPECT_EQ(all.front().sp_degree() * all.front().cfg_degree(), 4);
}

TEST_F(PlanParallel, uneven_heads_are_fine_but_not_more_ranks_than_heads) {
  EXPECT_TRUE(plan::validate_parallel(cfg(3, 1), job(), model_, 3).empty());  // 4 heads over 3 ranks
  EXPECT_TRUE(has(plan::validate_parallel(cfg(8, 1), job(), model_, 8), "ulysses_degree",
                  {"--ulysses_degree 8", "4 attention heads", "at most 4"}));
}

TEST_F(PlanParallel, cfg_parallel_needs_guidance) {
  auto j = job();
  j.guidance_scale = 1.0;
  EXPECT_TRUE(has(plan::validate_parallel(cfg(1, 1, true), j, model_, 2), "use_cfg_parallel", {"turns guidance off"}));
}

TEST_F(PlanParallel, shard_weights_needs_ranks_that_run_together) {
  auto p = cfg(1, 1);
  p.shard_weights = true;
  EXPECT_TRUE(has(plan::validate_parallel(p, job(), model_, 1), "shard_weights", {"--use_cfg_parallel", "--ulysses_degree"}));
  p.use_cfg_parallel = true;  // the two guidance branches run the same blocks side by side
  for (const auto& problem : plan::validate_parallel(p, job(), model_, 2)) ADD_FAILURE() << problem.message;
}

// Wan keeps a step cache's context per guidance branch: sharded across the branches, one could skip a block the
// other gathers. Refused with a cache; sharding over sequence ranks with it, or across the branches without it,
// is fine.
TEST(PlanWan, cfg_sharding_with_a_branch_cache_is_refused) {
  const auto model = plan::read_model_folder(test::golden_case("wan21_tiny"));
  plan::JobSpec j;
  j.prompt = "a boat";
  j.height = 64, j.width = 96, j.num_frames = 9;
  j.use_fbcache = true;
  plan::apply_model_defaults(j, model);
  plan::ParallelConfig p;
  p.use_cfg_parallel = true;
  p.shard_weights = true;
  const auto problems = plan::validate_parallel(p, j, model, 2);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].field, "use_fbcache");
  EXPECT_TRUE(test::contains(problems[0].message, "--shard_weights")) << problems[0].message;
  EXPECT_TRUE(test::contains(problems[0].message, "--ulysses_degree")) << problems[0].message;
  // Nor is it offered there as a way to save memory.
  p.shard_weights = false;
  for (const auto& choice : plan::storage_choices(p, j, model, 4, 0)) EXPECT_NE(choice.flag, "--shard_weights");
  p.shard_weights = true;
  j.use_fbcache = false;
  EXPECT_TRUE(plan::validate_parallel(p, j, model, 2).empty());
  j.use_fbcache = true;
  p.use_cfg_parallel = false;
  p.ulysses_degree = 2;
  EXPECT_TRUE(plan::validate_parallel(p, j, model, 2).empty());
}

TEST_F(PlanParallel, data_parallel_needs_videos_to_split) {
  EXPECT_TRUE(has(plan::validate_parallel(cfg(1, 1, false, 2), job(), model_, 2), "data_parallel_degree",
                  {"makes 1 video", "--num_videos_per_prompt"}));
  auto j = job();
  j.num_videos_per_prompt = 4;
  EXPECT_TRUE(plan::validate_parallel(cfg(1, 1, false, 2), j, model_, 2).empty());
}

TEST_F(PlanParallel, pipefusion_stages_patches_and_warmup) {
  plan::ParallelConfig p;
  p.pipefusion_parallel_degree = 2;
  p.num_pipeline_patch = 2;
  p.warmup_steps = 1;
  EXPECT_TRUE(plan::validate_parallel(p, job(), model_, 2).empty());
  p.pipefusion_parallel_degree = 3;  // 2 layers
  EXPECT_TRUE(has(plan::validate_parallel(p, job(), model_, 3), "pipefusion_parallel_degree",
                  {"has 2 layers", "use at most 2"}));
  p.pipefusion_parallel_degree = 2;
  p.num_pipeline_patch = 5;  // 64 pixels / 8 / 2 = 4 token rows
  EXPECT_TRUE(has(plan::validate_parallel(p, job(), model_, 2), "num_pipeline_patch", {"4 token rows", "at most 4"}));
  p.num_pipeline_patch = 2;
  p.warmup_steps = 0;
  EXPECT_TRUE(has(plan::validate_parallel(p, job(), model_, 2), "warmup_steps", {"must be 1 to 50"}));
  p.warmup_steps = 10;
  p.ulysses_degree = 2;
  EXPECT_TRUE(has(plan::validate_parallel(p, job(), model_, 4), "warmup_steps", {"synchronously", "--warmup_steps 50"}));
}

TEST_F(PlanParallel, memory_estimate_divides_and_is_checked) {
  // The real CogVideoX-2b shape: 30 layers of width 1920, 17,776 tokens.
  auto folder = model_;
  auto parts = std::make_shared<plan::CogVideoXParts>(folder.parts_as<plan::CogVideoXParts>());
  parts->transformer.num_attention_heads = 30;
  parts->transformer.attention_head_dim = 64;
  parts->transformer.num_layers = 30;
  parts->transformer.time_embed_dim = 512;
  parts->transformer.text_embed_dim = 4096;
  parts->transformer.max_text_seq_length = 226;
  folder.parts = parts;
  plan::JobSpec j;
  j.prompt_embeds_file = "e.safetensors";
  j.height = 480, j.width = 720, j.num_frames = 49;
  plan::apply_model_defaults(j, folder);
  const auto one = plan::estimate_memory({}, j, folder, 2);
  // Weights alone: about 1.7 billion parameters in bf16.
  EXPECT_TRUE(one.transformer_gib > 3 && one.transformer_gib < 12) << one.transformer_gib;
  const auto four = plan::estimate_memory(cfg(4, 1), j, folder, 2);
  EXPECT_LT(four.transformer_gib, one.transformer_gib);
  EXPECT_TRUE(has(plan::validate_parallel({}, j, folder, 1, 2.0, 2), "memory",
                  {"estimated at", "GiB per rank", "more than the 2.0 GiB", "ring/Ulysses"}));
  EXPECT_TRUE(plan::validate_parallel({}, j, folder, 1, 80.0, 2).empty());
}

TEST_F(PlanParallel, degrees_below_one) {
  EXPECT_TRUE(has(plan::validate_parallel(cfg(0, 1), job(), model_, 1), "ulysses_degree", {"must be 1 or more"}));
}

}  // namespace

TEST(JobFile, allow_tf32_travels_to_the_ranks) {
  // dit-launch --allow_tf32 reaches each worker through the job file; without it, TF32 stays off.
  plan::JobFile f;
  EXPECT_FALSE(plan::job_file_from_json(plan::to_json(f), "job.json").job.allow_tf32);
  f.job.allow_tf32 = true;
  EXPECT_TRUE(plan::job_file_from_json(plan::to_json(f), "job.json").job.allow_tf32);
}

TEST(PlanFlux, cfg_parallel_is_refused_and_never_offered) {
  auto model = plan::read_model_folder(test::golden_case("flux_tiny"));
  plan::JobSpec job;
  job.prompt_embeds_file = "x";
  job.height = 64, job.width = 96;
  plan::apply_model_defaults(job, model);
  plan::ParallelConfig p;
  p.use_cfg_parallel = true;
  const auto problems = plan::validate_parallel(p, job, model, 2);
  ASSERT_FALSE(problems.empty());
  EXPECT_EQ(problems.front().field, "use_cfg_parallel");
  EXPECT_NE(problems.front().message.find("no classifier-free guidance"), std::string::npos) << problems.front().message;
  for (const auto& c : plan::valid_configs(job, model, 4)) EXPECT_FALSE(c.use_cfg_parallel) << c.flags();
  plan::ParallelConfig rows;
  rows.ulysses_degree = 2;
  rows.use_parallel_vae = true;  // split by rows, as for a video: 8 latent rows over 2 ranks
  EXPECT_TRUE(plan::validate_parallel(rows, job, model, 2).empty());
}

// FLUX.1-dev's published configs: 12B transformer parameters (about 22 GiB in bf16) and T5-XXL's 4.7B
// encoder (about 9 GiB): PipeFusion divides the transformer's weights, sequence parallelism does not.
TEST(PlanFlux, memory_of_the_real_model) {
  test::TempDir tmp;
  const std::string dir = tmp.path("flux-dev");
  test::flux_dev_shaped(dir);
  std::filesystem::create_directories(dir + "/text_encoder_2");
  test::write_file(dir + "/text_encoder_2/config.json",
                   R"({"model_type": "t5", "d_model": 4096, "d_kv": 64, "num_heads": 64, "d_ff": 10240,
                       "num_layers": 24, "vocab_size": 32128})");
  const auto model = plan::read_model_folder(dir);
  plan::JobSpec job;
  job.prompt_embeds_file = "x";
  plan::apply_model_defaults(job, model);  // 1024 x 1024: 4096 image tokens + 512 text tokens
  plan::ParallelConfig one;
  const auto m = plan::estimate_memory(one, job, model, 2);
  EXPECT_GT(m.transformer_gib, 22.0);
  EXPECT_LT(m.transformer_gib, 30.0);
  EXPECT_EQ(m.text_encoder_gib, 0.0) << "embeddings from a file: the encoder never runs";
  plan::JobSpec words = job;
  words.prompt = "a paper boat";
  EXPECT_NEAR(plan::estimate_memory(one, words, model, 2).text_encoder_gib, 8.9, 0.3);
  plan::ParallelConfig stages;
  stages.pipefusion_parallel_degree = 2;
  stages.num_pipeline_patch = 2;
  EXPECT_LT(plan::estimate_memory(stages, job, model, 2).transformer_gib, 0.6 * m.transformer_gib);
  plan::ParallelConfig sequence;
  sequence.ulysses_degree = 2;
  EXPECT_GT(plan::estimate_memory(sequence, job, model, 2).transformer_gib, 0.9 * m.transformer_gib - 1);
  // On two 20 GiB GPUs the weights do not fit one rank, however the sequence is split; two stages do.
  EXPECT_FALSE(plan::validate_parallel(sequence, job, model, 2, 20.0, 2).empty());
  EXPECT_TRUE(plan::validate_parallel(stages, job, model, 2, 20.0, 2).empty());
}

// How the weights are kept changes what they take: FLUX.1-dev's weights in bfloat16, fp8 (half), or a single
// file (its own size: a sparse file on disk the size of a Q4_K quant); kept packed, the layer that runs is
// dequantized into one buffer, as large as the widest layer (a double block's modulation, 6 D^2).
TEST(PlanFlux, memory_follows_how_the_weights_are_kept) {
  test::TempDir tmp;
  const std::string dir = tmp.path("flux-dev");
  test::flux_dev_shaped(dir);
  const auto model = plan::read_model_folder(dir);
  plan::JobSpec job;
  job.prompt_embeds_file = "x";  // no sizes: the weights alone
  plan::ParallelConfig one;
  const double bf16 = plan::estimate_memory(one, job, model, 2).transformer_gib;
  EXPECT_NEAR(bf16, 22.2, 0.5);
  const double dense_layer = 6.0 * 3072 * 3072 * 2 / plan::kGiB;
  job.quantize = "fp8";
  EXPECT_NEAR(plan::estimate_memory(one, job, model, 2).transformer_gib, bf16 / 2 + dense_layer, 0.01);
  job.quantize = "";
  const std::string file = tmp.path("flux1-dev-Q4_K.gguf");
  test::write_file(file, "GGUF");
  std::filesystem::resize_file(file, 6'800'000'000);
  job.transformer_file = file;
  EXPECT_NEAR(plan::estimate_memory(one, job, model, 2).transformer_gib, 6.8e9 / plan::kGiB + dense_layer, 0.01);
  plan::ParallelConfig stages;  // PipeFusion divides a file's blocks as it divides a folder's
  stages.pipefusion_parallel_degree = 2;
  stages.num_pipeline_patch = 2;
  EXPECT_LT(plan::estimate_memory(stages, job, model, 2).transformer_gib, 0.55 * 6.8e9 / plan::kGiB);
  // A file of float types (2 bytes a weight here) loads as the run's dtype: in float32, what the folder takes.
  std::filesystem::resize_file(file, uint64_t(bf16 * plan::kGiB));
  EXPECT_NEAR(plan::estimate_memory(one, job, model, 4).transformer_gib, 2 * bf16, 0.01);
  std::filesystem::resize_file(file, 6'800'000'000);
  // A 16 GiB GPU: bfloat16 does not fit; the quantized file does, and the refusal names the choices.
  job.transformer_file.clear();
  const auto refused = plan::validate_parallel(one, job, model, 1, 16.0, 2);
  ASSERT_FALSE(refused.empty());
  EXPECT_TRUE(test::contains(refused[0].message, "--quantize fp8")) << refused[0].message;
  job.transformer_file = file;
  EXPECT_TRUE(plan::validate_parallel(one, job, model, 1, 16.0, 2).empty());
  // What --plan offers beside the job as given, each with whether it fits; sharding only where there are
  // sequence ranks to shard over.
  job.transformer_file.clear();
  const auto choices = plan::storage_choices(one, job, model, 2, 16.0);
  ASSERT_EQ(choices.size(), 3u);
  EXPECT_EQ(choices[0].flag, "");
  EXPECT_FALSE(choices[0].fits);
  EXPECT_EQ(choices[1].flag, "--quantize fp8");
  EXPECT_TRUE(choices[1].fits);
  EXPECT_NEAR(choices[1].peak_gib, plan::kProcessGiB + bf16 / 2 + dense_layer, 0.01);  // a peak: the process's too
  EXPECT_EQ(choices[2].flag, "--offload blocks");
  EXPECT_TRUE(choices[2].fits);
  EXPECT_LT(choices[2].peak_gib, plan::kProcessGiB + 1.5);  // two of 57 blocks, and the layers outside them
  // On the CPU the blocks run in the memory they would be offloaded to: offloading saves nothing there (it costs
  // the block copied from the host), so the plan counts every block and the copy, and does not offer it.
  plan::JobSpec on_cpu = job;
  on_cpu.device = "cpu";
  on_cpu.offload = "blocks";
  plan::JobSpec kept = on_cpu;
  kept.offload.clear();
  const auto kept_memory = plan::estimate_memory(one, kept, model, 4);
  EXPECT_NEAR(plan::estimate_memory(one, on_cpu, model, 4).transformer_gib,
              kept_memory.transformer_gib + kept_memory.block_weight_gib, 1e-9);
  for (const auto& c : plan::storage_choices(one, kept, model, 4, 0)) EXPECT_NE(c.flag, "--offload blocks");
  // diffusers' model offload is how every run goes already: asked for, it is refused saying so.
  plan::JobSpec whole_parts = job;
  whole_parts.offload = "model";
  std::vector<plan::Problem> offload_problems;
  plan::check_weight_choices(whole_parts, model, offload_problems);
  ASSERT_EQ(offload_problems.size(), 1u);
  EXPECT_EQ(offload_problems[0].field, "offload");
  EXPECT_TRUE(test::contains(offload_problems[0].message, "--offload model: blocks is what is offered") &&
              test::contains(offload_problems[0].message, "loaded only while they run"))
      << offload_problems[0].message;
  plan::ParallelConfig two;
  two.ulysses_degree = 2;
  const auto with_ranks = plan::storage_choices(two, job, model, 2, 16.0);
  ASSERT_EQ(with_ranks.size(), 5u);
  EXPECT_EQ(with_ranks[3].flag, "--shard_weights");
  EXPECT_TRUE(with_ranks[3].fits);
  // The same two ranks as PipeFusion stages, each holding half the blocks.
  EXPECT_EQ(with_ranks[4].flag, "--pipefusion_parallel_degree 2");
  EXPECT_EQ(with_ranks[4].config.pipefusion_parallel_degree, 2);
  EXPECT_EQ(with_ranks[4].config.sp_degree(), 1);
  EXPECT_TRUE(with_ranks[4].fits);
  // Where no one way fits alone, fp8 with each of the other ways is offered, with its configuration and job.
  // (On the CPU, offloading is not offered: the blocks are in host memory already.)
  plan::JobSpec in_host = job;
  in_host.device = "cpu";
  const auto roomy = plan::storage_choices(two, in_host, model, 2, 0);
  ASSERT_EQ(roomy.size(), 4u);
  double least = roomy[1].peak_gib;
  for (const auto& c : roomy) least = std::min(least, c.peak_gib);
  const auto tight = plan::storage_choices(two, in_host, model, 2, least - 0.01);
  ASSERT_EQ(tight.size(), 6u);
  for (size_t i = 0; i < 4; ++i) EXPECT_FALSE(tight[i].fits) << tight[i].flag;
  EXPECT_EQ(tight[4].flag, "--quantize fp8 --shard_weights");
  EXPECT_TRUE(tight[4].config.shard_weights && tight[4].job.quantize == "fp8");
  EXPECT_EQ(tight[5].flag, "--quantize fp8 --pipefusion_parallel_degree 2");
  EXPECT_TRUE(tight[5].config.pipefusion_parallel_degree == 2 && tight[5].job.quantize == "fp8");
  for (size_t i = 4; i < 6; ++i) {
    EXPECT_LT(tight[i].peak_gib, least) << tight[i].flag;
    EXPECT_TRUE(tight[i].fits) << tight[i].flag << ": " << tight[i].peak_gib << " GiB";
  }
  // CFG's two ranks run the same blocks side by side: they shard as two Ulysses ranks do, to the same peak.
  plan::ParallelConfig branches;
  branches.use_cfg_parallel = true;
  const auto with_branches = plan::storage_choices(branches, job, model, 2, 16.0);
  ASSERT_EQ(with_branches.size(), 4u);
  EXPECT_EQ(with_branches[3].flag, "--shard_weights");
  EXPECT_TRUE(with_branches[3].fits);
}

// Wan2.2-T2V-A14B's published configs: two experts of Wan2.1-14B's shape (40 layers of width 5120, about
// 14B parameters: 26-30 GiB in bf16) of which one is resident at a time, and umT5-XXL (5.7B parameters
// with its 256k vocabulary: about 11 GiB). At 480p, 81 frames: 32,760 video tokens.
TEST(PlanWan, memory_of_the_real_model_is_one_expert) {
  test::TempDir tmp;
  const std::string dir = tmp.path("wan-a14b");
  test::copy_tree(test::golden_case("wan22_tiny"), dir);
  for (const char* expert : {"/transformer/config.json", "/transformer_2/config.json"})
    test::edit_json(dir + expert, [](nlohmann::json& j) {
      j.update({{"num_layers", 40}, {"attention_head_dim", 128}, {"num_attention_heads", 40}, {"ffn_dim", 13824},
                {"text_dim", 4096}, {"freq_dim", 256}});
    });
  test::write_file(dir + "/text_encoder/config.json",
                   R"({"model_type": "umt5", "d_model": 4096, "d_kv": 64, "num_heads": 64, "d_ff": 10240,
                       "num_layers": 24, "vocab_size": 256384})");
  const auto model = plan::read_model_folder(dir);
  ASSERT_EQ(model.variant.id, "wan2.2");
  plan::JobSpec job;
  job.prompt = "a red fox runs through the snowy forest";
  plan::apply_model_defaults(job, model);
  EXPECT_EQ(plan::latent_geometry(job, model).latent_tokens, 21 * 30 * 52);
  plan::ParallelConfig one;
  const auto m = plan::estimate_memory(one, job, model, 2);
  EXPECT_GT(m.transformer_gib, 26.0);
  // One expert's weights and the activations of a CFG batch: below two experts' 52 GiB of weights alone.
  EXPECT_LT(m.transformer_gib, 45.0);
  EXPECT_NEAR(m.text_encoder_gib, 10.7, 0.5);
  plan::ParallelConfig stages;
  stages.pipefusion_parallel_degree = 4;
  stages.num_pipeline_patch = 4;
  EXPECT_LT(plan::estimate_memory(stages, job, model, 2).transformer_gib, 0.5 * m.transformer_gib);
  // On 4 x 24 GiB GPUs: PipeFusion over 4 stages fits; Ulysses 4 holds a whole expert on every rank and
  // does not.
  plan::ParallelConfig ulysses;
  ulysses.ulysses_degree = 4;
  EXPECT_FALSE(plan::validate_parallel(ulysses, job, model, 4, 24.0, 2).empty());
  EXPECT_TRUE(plan::validate_parallel(stages, job, model, 4, 24.0, 2).empty());
}

// HunyuanVideo-1.5 480p at its real size (hunyuanvideo-community's configs; 8.3B transformer, Qwen2.5-VL-7B's language
// model, ByT5-small): the plan counts the transformer's bf16 weights and what the encoder loads (26 of its 28 layers,
// for hidden_states[-3]), and the ways to divide them divide the transformer.
TEST(PlanHunyuan15, memory_of_the_real_model) {
  test::TempDir tmp;
  const std::string dir = tmp.path("hunyuan15-480p");
  test::copy_tree(test::golden_case("hunyuan15_tiny"), dir);
  test::edit_json(dir + "/transformer/config.json", [](nlohmann::json& j) {
    j.update({{"attention_head_dim", 128}, {"num_attention_heads", 16}, {"num_layers", 54}, {"num_refiner_layers", 2},
              {"mlp_ratio", 4.0}, {"in_channels", 65}, {"out_channels", 32}, {"text_embed_dim", 3584},
              {"text_embed_2_dim", 1472}, {"image_embed_dim", 1152}, {"rope_axes_dim", {16, 56, 56}},
              {"target_size", 640}});
  });
  test::edit_json(dir + "/vae/config.json", [](nlohmann::json& j) {
    j.update({{"block_out_channels", {128, 256, 512, 1024, 1024}}, {"latent_channels", 32}, {"layers_per_block", 2}});
  });
  test::edit_json(dir + "/text_encoder/config.json", [](nlohmann::json& j) {
    j.update({{"hidden_size", 3584}, {"intermediate_size", 18944}, {"num_attention_heads", 28},
              {"num_key_value_heads", 4}, {"num_hidden_layers", 28}, {"vocab_size", 152064}, {"max_window_layers", 28}});
    j.erase("layer_types");
  });
  test::edit_json(dir + "/text_encoder_2/config.json", [](nlohmann::json& j) {
    j.update({{"d_model", 1472}, {"d_ff", 3584}, {"num_layers", 12}, {"num_heads", 6}, {"d_kv", 64}});
  });
  const auto model = plan::read_model_folder(dir);
  plan::JobSpec job;
  job.prompt = "a red fox runs through the snowy forest";
  plan::apply_model_defaults(job, model);
  const plan::ParallelConfig one;
  const auto m = plan::estimate_memory(one, job, model, 2);
  std::printf("HunyuanVideo-1.5 480p, %d x %d x %d: transformer %.2f GiB, text encoder %.2f GiB, VAE %.2f GiB\n",
              job.width, job.height, job.num_frames, m.transformer_gib, m.text_encoder_gib, m.vae_gib);
  EXPECT_GT(m.transformer_gib, 8.3e9 * 2 / (1 << 30));  // the weights alone, in bfloat16
  EXPECT_LT(m.transformer_gib, 40.0);
  // Qwen's table (0.55B) and 26 layers (0.23B each) in bfloat16, with ByT5-small beside it.
  EXPECT_NEAR(m.text_encoder_gib, (0.545e9 + 26 * 0.233e9) * 2 / (1 << 30), 1.0);
  plan::ParallelConfig four;
  four.ulysses_degree = 4;
  four.shard_weights = true;
  EXPECT_LT(plan::estimate_memory(four, job, model, 2).transformer_gib, 0.5 * m.transformer_gib);
  // The default clip decoded whole is the largest part on a large GPU: the refusal points to tiles, which fit.
  ASSERT_GT(m.vae_gib, 48.0);
  const auto problems = plan::validate_parallel(one, job, model, 1, 48.0, 2);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems.front().message.find("--enable_tiling"), std::string::npos) << problems.front().message;
  job.vae_tiling = true;
  EXPECT_LT(plan::estimate_memory(one, job, model, 2).vae_gib, m.vae_gib / 4);
  EXPECT_TRUE(plan::validate_parallel(one, job, model, 1, 48.0, 2).empty());
}

// umT5-XXL beside a small transformer on a GPU too small for it: --text_encoder_device cpu encodes in the host's
// memory, and auto sends it there when the GPU lacks the room, so neither makes the job not fit. On the CPU the
// host's memory is the device's: there it still counts.
TEST(PlanWan, a_text_encoder_on_the_cpu_is_not_counted_on_the_gpu) {
  test::TempDir tmp;
  const std::string dir = tmp.path("wan-xxl");
  test::copy_tree(test::golden_case("wan21_tiny"), dir);
  test::write_file(dir + "/text_encoder/config.json",
                   R"({"model_type": "umt5", "d_model": 4096, "d_kv": 64, "num_heads": 64, "d_ff": 10240,
                       "num_layers": 24, "vocab_size": 256384})");
  test::edit_json(dir + "/transformer/config.json", [](nlohmann::json& j) { j["text_dim"] = 4096; });
  const auto model = plan::read_model_folder(dir);
  plan::JobSpec job;
  job.prompt = "a boat";
  plan::apply_model_defaults(job, model);
  job.height = 64, job.width = 96, job.num_frames = 9;
  const plan::ParallelConfig one;
  ASSERT_NEAR(plan::estimate_memory(one, job, model, 2).text_encoder_gib, 10.7, 0.5);
  EXPECT_TRUE(plan::validate_parallel(one, job, model, 1, 8.0, 2).empty()) << "auto: the encoder goes to the CPU";
  EXPECT_TRUE(plan::storage_choices(one, job, model, 2, 8.0).front().fits);

  job.text_encoder_device = "cpu";
  EXPECT_EQ(plan::estimate_memory(one, job, model, 2).text_encoder_gib, 0.0);
  EXPECT_TRUE(plan::validate_parallel(one, job, model, 1, 8.0, 2).empty());
  job.device = "cpu";
  EXPECT_NEAR(plan::estimate_memory(one, job, model, 4).text_encoder_gib, 21.4, 1.0);

  // A transformer that does not fit is still refused, whatever the encoder does.
  job.device = "auto";
  job.text_encoder_device = "auto";
  const auto m = plan::estimate_memory(one, job, model, 2);
  const double short_of_it = plan::kProcessGiB + std::max(m.transformer_gib, m.vae_gib) * 0.9;
  EXPECT_TRUE(plan::validate_parallel(one, job, model, 1, short_of_it / 0.9, 2).empty());
  const auto problems = plan::validate_parallel(one, job, model, 1, short_of_it, 2);
  ASSERT_FALSE(problems.empty());
  EXPECT_EQ(problems.front().field, "memory");
}

// Wan2.2 TI2V-5B gives each token its own timestep, so each token its own six modulation vectors (float32): six
// values per latent token and channel, for both guidance branches, more than the same folder without.
TEST(PlanWan, ti2v_counts_each_token_s_modulation) {
  test::TempDir tmp;
  const auto folder_of = [&](const std::string& name, bool per_token) {
    const std::string dir = tmp.path(name);
    test::copy_tree(test::golden_case("wan22_ti2v_tiny"), dir);
    test::edit_json(dir + "/transformer/config.json", [](nlohmann::json& j) {
      j.update({{"num_layers", 30}, {"attention_head_dim", 128}, {"num_attention_heads", 24}, {"ffn_dim", 14336},
                {"freq_dim", 256}});  // text_dim stays the tiny umT5's
    });
    test::edit_json(dir + "/model_index.json", [&](nlohmann::json& j) { j["expand_timesteps"] = per_token; });
    return plan::read_model_folder(dir);
  };
  const auto ti2v = folder_of("ti2v", true), plain = folder_of("plain", false);
  plan::JobSpec job;
  job.height = 704, job.width = 1280, job.num_frames = 121;
  plan::apply_model_defaults(job, ti2v);
  ASSERT_EQ(plan::latent_geometry(job, ti2v).latent_tokens, 31 * 22 * 40);
  const double extra = plan::estimate_memory({}, job, ti2v, 2).transformer_gib -
                       plan::estimate_memory({}, job, plain, 2).transformer_gib;
  EXPECT_NEAR(extra, 2 * 6 * 27280.0 * 3072 * 4 / plan::kGiB, 0.01);
}
