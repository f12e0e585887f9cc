// The cost model's arithmetic (plan/cost_model.h) against counts made by hand for one configuration of
// each kind, on the tiny CogVideoX-2B-shaped reference case; and `dit-launch --plan --json` as a user
// runs it (which measures the CPU through dit-worker --calibrate once and caches it).
#include <algorithm>
#include <cmath>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "plan/cost_model.h"
#include "plan/error.h"
#include "plan/families/cogvideox_config.h"
#include "plan/family.h"
#include "process.h"
#include "support.h"

using namespace studio;

namespace {

// cogvx2b_tiny: 4 heads x 16 (width D = 64), 2 layers, time embedding 32, text 32 -> 8 tokens; at its
// 64 x 96 x 9 frames the latent is 3 frames of 8 x 12, 72 tokens after 2 x 2 patches; with the 8 text tokens
// a sequence of 80. Guidance 6: a CFG batch of 2. float32 (4 bytes).
class CostModel : public ::testing::Test {
 protected:
  plan::ModelFolder model_ = plan::read_model_folder(test::golden_case("cogvx2b_tiny"));
  plan::JobSpec job_ = [this] {
    plan::JobSpec j;
    j.prompt_embeds_file = "embeds.safetensors";
    j.height = 64, j.width = 96, j.num_frames = 9, j.num_inference_steps = 4;
    plan::apply_model_defaults(j, model_);
    return j;
  }();
  static constexpr double kGemmPerToken = 2 * 12 * 64 * 64;  // q/k/v/out 4 D^2, feed-forward 8 D^2
  static constexpr double kPerPair = 4 * 64;                  // Q K^T and P V
  static constexpr double kOut = 3 * 4 * 8 * 12 * 4.0;        // one sample's latent output, bytes

  plan::StepWork work(const plan::ParallelConfig& p, bool pipelined = false) {
    return plan::count_step_work(p, job_, model_, 4, pipelined);
  }
};

TEST_F(CostModel, one_process) {
  const auto w = work({});
  EXPECT_EQ(w.batch, 2);
  EXPECT_EQ(w.tokens, 80);
  EXPECT_DOUBLE_EQ(w.gemm_flops, 2 * 80 * 2 * kGemmPerToken);           // 31,457,280
  EXPECT_DOUBLE_EQ(w.attention_flops, 2 * 2 * kPerPair * 80 * 80);      // 6,553,600
  EXPECT_EQ(w.ulysses_calls + w.ring_calls + w.gather_calls + w.pipe_hops, 0);
  // The VAE: the family's count of one video's decode (tests/test_decoder_flops.cpp holds it to the decoder's work).
  EXPECT_DOUBLE_EQ(w.vae_flops, plan::rules_of(model_).vae_decode_flops(model_, 64, 96, 9));
  EXPECT_GT(w.vae_flops, 0);
  EXPECT_EQ(w.head_dim, 16);
}

// The attention rate at the model's head dim: interpolated in log2(head_dim) between the measured ones, the
// nearest one's outside them (this case's 16 below 32), 1 where nothing was measured.
TEST_F(CostModel, attention_rate_at_the_head_dim) {
  plan::Calibration c;
  EXPECT_EQ(plan::attention_head_dim_factor(c, 16), 1);
  c.attention_by_head_dim = {{32, 0.8}, {64, 1.0}, {128, 1.2}};
  EXPECT_DOUBLE_EQ(plan::attention_head_dim_factor(c, 16), 0.8);
  EXPECT_DOUBLE_EQ(plan::attention_head_dim_factor(c, 32), 0.8);
  EXPECT_NEAR(plan::attention_head_dim_factor(c, 45.254833995939045), 0.9, 1e-12);  // 2^5.5
  EXPECT_DOUBLE_EQ(plan::attention_head_dim_factor(c, 96), 1.0 + 0.2 * std::log2(1.5));
  EXPECT_DOUBLE_EQ(plan::attention_head_dim_factor(c, 256), 1.2);
  // The prediction's attention term at 0.8 of the rate; the GEMMs unchanged.
  c.gemm_flops_per_s = c.gemm_flops_per_s_all = 1e9;
  c.attention_flops_per_s = c.attention_flops_per_s_all = 5e8;
  EXPECT_DOUBLE_EQ(plan::predict({}, job_, model_, c, 4).compute_s,
                   2 * 80 * 2 * kGemmPerToken / 1e9 + 2 * 2 * kPerPair * 80 * 80 / (5e8 * 0.8));
}

TEST_F(CostModel, ulysses) {
  plan::ParallelConfig p;
  p.ulysses_degree = 2;
  const auto w = work(p);
  EXPECT_EQ(w.tokens, 40);
  EXPECT_DOUBLE_EQ(w.gemm_flops, 2 * 40 * 2 * kGemmPerToken);
  EXPECT_DOUBLE_EQ(w.attention_flops, 2 * 2 * kPerPair * 40 * 80);  // 2 heads of all 80 rows
  // 4 all-to-alls a block of [2, 4 heads, 40 rows, 16] floats, half of each sent.
  EXPECT_EQ(w.ulysses_calls, 8);
  EXPECT_DOUBLE_EQ(w.ulysses_bytes, 8 * (2 * 4 * 40 * 16 * 4.0) / 2);  // 81,920
  EXPECT_EQ(w.gather_calls, 1);
  EXPECT_DOUBLE_EQ(w.gather_bytes, 2 * kOut / 2);

  // 3 ranks: 4 heads padded to 6, 27 rows each.
  p.ulysses_degree = 3;
  const auto w3 = work(p);
  EXPECT_EQ(w3.tokens, 27);
  EXPECT_DOUBLE_EQ(w3.attention_flops, 2 * 2 * kPerPair * 6 / 4 * 27 * 80);
  EXPECT_DOUBLE_EQ(w3.ulysses_bytes, 8 * (2 * 6 * 27 * 16 * 4.0) * 2 / 3);

  // Memory: weights (2 blocks of 12 D E + 12 D^2 = 73,728, and 12,288 once) and activations
  // (batch 2 x D x 4 bytes x (16 x 40 local tokens + 2 x 80 gathered)): 638,976 + 409,600 bytes = 1 MiB.
  p.ulysses_degree = 2;
  const auto m = plan::estimate_memory(p, job_, model_, 4);
  EXPECT_DOUBLE_EQ(m.transformer_gib * plan::kGiB, 1048576);

  // Time: compute at the rates, 8 + 1 collectives at the latency, their bytes at the bandwidth.
  plan::Calibration c;
  c.ranks = 2, c.gemm_flops_per_s = c.gemm_flops_per_s_all = 1e9;
  c.attention_flops_per_s = c.attention_flops_per_s_all = 5e8;
  c.link_bytes_per_s = 1e8, c.link_latency_s = 1e-4;
  const auto r = plan::predict(p, job_, model_, c, 4);
  EXPECT_DOUBLE_EQ(r.compute_s, 2 * 40 * 2 * kGemmPerToken / 1e9 + 2 * 2 * kPerPair * 40 * 80 / 5e8);
  EXPECT_NEAR(r.communication_s, 9 * 1e-4 + (81920 + kOut) / 1e8, 1e-12);
  EXPECT_DOUBLE_EQ(r.total_s, 4 * r.seconds_per_step + r.vae_s);
  EXPECT_DOUBLE_EQ(r.warmup_step_s, r.seconds_per_step);  // no PipeFusion: every step alike
  EXPECT_DOUBLE_EQ(r.pipelined_step_s, r.seconds_per_step);
  EXPECT_DOUBLE_EQ(r.peak_bytes_per_rank, m.peak_gib() * plan::kGiB);
}

TEST_F(CostModel, ring) {
  plan::ParallelConfig p;
  p.ring_degree = 2;
  const auto w = work(p);
  EXPECT_DOUBLE_EQ(w.attention_flops, 2 * 2 * kPerPair * 40 * 80);  // 40 queries against both key blocks
  // One key/value block a layer: [2, 2, 4, 40, 16] floats.
  EXPECT_EQ(w.ring_calls, 2);
  EXPECT_DOUBLE_EQ(w.ring_bytes, 2 * (2 * 2 * 4 * 40 * 16 * 4.0));
  EXPECT_EQ(w.ulysses_calls, 0);
}

TEST_F(CostModel, cfg_parallel) {
  plan::ParallelConfig p;
  p.use_cfg_parallel = true;
  const auto w = work(p);
  EXPECT_EQ(w.batch, 1);
  EXPECT_DOUBLE_EQ(w.gemm_flops, 1 * 80 * 2 * kGemmPerToken);
  EXPECT_DOUBLE_EQ(w.attention_flops, 1 * 2 * kPerPair * 80 * 80);
  EXPECT_EQ(w.gather_calls, 1);
  EXPECT_DOUBLE_EQ(w.gather_bytes, kOut);  // this rank's branch of the output
}

TEST_F(CostModel, data_parallel) {
  job_.num_videos_per_prompt = 2;
  plan::ParallelConfig p;
  p.data_parallel_degree = 2;
  const auto w = work(p);
  EXPECT_EQ(w.batch, 2);  // one video, its CFG pair
  EXPECT_DOUBLE_EQ(w.gemm_flops, 2 * 80 * 2 * kGemmPerToken);
  EXPECT_EQ(w.ulysses_calls + w.ring_calls + w.gather_calls + w.pipe_hops, 0);
  EXPECT_DOUBLE_EQ(w.vae_flops, plan::rules_of(model_).vae_decode_flops(model_, 64, 96, 9));  // each group its own
}

TEST_F(CostModel, pipefusion) {
  plan::ParallelConfig p;
  p.pipefusion_parallel_degree = 2;
  p.num_pipeline_patch = 2;
  p.warmup_steps = 1;
  const auto sync = work(p, false), pipe = work(p, true);
  EXPECT_EQ(sync.blocks, 1);
  EXPECT_DOUBLE_EQ(sync.gemm_flops, 2 * 80 * 1 * kGemmPerToken);
  // Warm-up: the whole [2, 80, 64] sequence once to the next stage; pipelined: 2 patches of 40 rows,
  // M + S - 1 = 3 hops on the critical path.
  EXPECT_EQ(sync.pipe_hops, 1);
  EXPECT_DOUBLE_EQ(sync.pipe_bytes, 2 * 80 * 64 * 4.0);
  EXPECT_EQ(pipe.pipe_hops, 3);
  EXPECT_DOUBLE_EQ(pipe.pipe_bytes, 2 * 40 * 64 * 4.0);
  EXPECT_DOUBLE_EQ(sync.gather_bytes, 2 * kOut);  // the last stage's broadcast

  // Devices of their own (GPUs: alone = together = 1e9). Warm-up (1 of 4 steps): stage after stage,
  // 2 x a stage's work; pipelined: 3 slots of half a stage's work.
  plan::Calibration c;
  c.ranks = 2, c.gemm_flops_per_s = c.attention_flops_per_s = 1e9;
  c.gemm_flops_per_s_all = c.attention_flops_per_s_all = 1e9;
  const double stage = sync.gemm_flops + sync.attention_flops;
  auto r = plan::predict(p, job_, model_, c, 4);
  EXPECT_DOUBLE_EQ(r.compute_s, stage / 1e9);
  EXPECT_NEAR(r.compute_s + r.bubble_s, 0.25 * (2 * stage / 1e9) + 0.75 * (3 * stage / 2 / 1e9), 1e-12);
  // Each kind of step apart (no communication priced: no link figures), the average weighted by the steps.
  EXPECT_NEAR(r.warmup_step_s, 2 * stage / 1e9, 1e-12);
  EXPECT_NEAR(r.pipelined_step_s, 3 * stage / 2 / 1e9, 1e-12);
  EXPECT_NEAR(r.seconds_per_step, 0.25 * r.warmup_step_s + 0.75 * r.pipelined_step_s, 1e-12);
  // Two ranks sharing the cores (together 0.5e9 each): the fill and drain slots (one stage at work) at
  // 1e9, the full slot (both) at 0.5e9: a half stage at 1e9, 0.5e9, 1e9 = 2 stages at 1e9.
  c.gemm_flops_per_s_all = c.attention_flops_per_s_all = 0.5e9;
  r = plan::predict(p, job_, model_, c, 4);
  EXPECT_DOUBLE_EQ(r.compute_s, stage / 0.5e9);
  EXPECT_NEAR(r.compute_s + r.bubble_s, 0.25 * (2 * stage / 1e9) + 0.75 * (2 * stage / 1e9), 1e-12);
  // 4 patches through the 2 stages (together 0.4e9 each): 5 slots of a quarter stage, 1, 2, 2, 2, 1 stages
  // at work: 2 at 1e9 and 3 at 0.4e9 (less than both stages' work over the machine's 0.8e9: the fill and
  // drain leave a core to the stage at work).
  p.num_pipeline_patch = 4;
  c.gemm_flops_per_s_all = c.attention_flops_per_s_all = 0.4e9;
  r = plan::predict(p, job_, model_, c, 4);
  EXPECT_NEAR(r.compute_s + r.bubble_s, 0.25 * (2 * stage / 1e9) + 0.75 * (stage / 4 * (2 / 1e9 + 3 / 0.4e9)),
              1e-12);

  // Stages of unequal work (3 blocks: 2 and 1), 2 patches, the ranks sharing the cores (together 0.5e9
  // each). Slots: stage 0's half patch alone; both stages' (half and quarter of stage 0's work) at once,
  // at 0.5e9 until the smaller is done and then at 1e9; stage 1's quarter alone.
  auto three = model_;
  auto parts = std::make_shared<plan::CogVideoXParts>(three.parts_as<plan::CogVideoXParts>());
  parts->transformer.num_layers = 3;
  three.parts = parts;
  p.num_pipeline_patch = 2;
  c.gemm_flops_per_s_all = c.attention_flops_per_s_all = 0.5e9;
  const auto big = plan::count_step_work(p, job_, three, 4, true);
  ASSERT_EQ(big.blocks, 2);
  const double big_stage = big.gemm_flops + big.attention_flops;
  r = plan::predict(p, job_, three, c, 4);
  EXPECT_NEAR(r.pipelined_step_s, big_stage * (0.5 / 1e9 + 0.25 / 0.5e9 + 0.25 / 1e9 + 0.25 / 1e9), 1e-12);
}

// Four GPUs in two NVLink pairs (0-1, 2-3: 100 GB/s) joined over PCIe (10 GB/s); an all-to-all of all four
// measured 8 GB/s per rank, held back by PCIe. Ulysses 2 x CFG 2 puts each Ulysses pair on NVLink (ranks
// 0-1 and 2-3: Ulysses is the fastest-varying coordinate) and the CFG pairs across PCIe.
TEST_F(CostModel, each_transfer_over_its_own_groups_links) {
  plan::Calibration c;
  c.ranks = 4, c.gemm_flops_per_s = c.gemm_flops_per_s_all = c.attention_flops_per_s = c.attention_flops_per_s_all = 1e12;
  c.link_bytes_per_s = 8e9, c.link_latency_s = 0;
  c.pair_bytes_per_s.assign(16, 10e9);
  for (auto [i, j] : {std::pair{0, 1}, std::pair{1, 0}, std::pair{2, 3}, std::pair{3, 2}}) c.pair_bytes_per_s[i * 4 + j] = 100e9;
  for (int i = 0; i < 4; ++i) c.pair_bytes_per_s[i * 4 + i] = 0;
  plan::ParallelConfig p;
  p.ulysses_degree = 2, p.use_cfg_parallel = true;
  EXPECT_DOUBLE_EQ(plan::group_bytes_per_s(c, p, plan::Dim::Ulysses), 80e9);  // 8 GB/s x 100 / 10
  EXPECT_DOUBLE_EQ(plan::group_bytes_per_s(c, p, plan::Dim::Cfg), 8e9);
  const auto w = work(p);
  // The all-to-alls over NVLink; the output's gathers (the Ulysses pair's, then the CFG pair's) at PCIe's.
  EXPECT_NEAR(plan::predict(p, job_, model_, c, 4).communication_s, w.ulysses_bytes / 80e9 + w.gather_bytes / 8e9,
              1e-15);
  // Laid out the other way (CFG inside the pairs is not a choice: the layout is fixed), ring 2 x CFG 2
  // keeps its ring on NVLink too; without pair figures, every group gets the all-to-all's rate.
  plan::ParallelConfig r;
  r.ring_degree = 2, r.use_cfg_parallel = true;
  EXPECT_DOUBLE_EQ(plan::group_bytes_per_s(c, r, plan::Dim::Ring), 80e9);
  c.pair_bytes_per_s.clear();
  EXPECT_DOUBLE_EQ(plan::group_bytes_per_s(c, p, plan::Dim::Ulysses), 8e9);
}

// The work that is neither GEMM nor attention (plan::BlockCosts, counted by tests/test_op_counts): a
// CogVideoX-2B block (no rotary embedding) reads and writes 19.9 D + 2 x 4D values per token and dispatches
// 50 operations, 39 more per call outside the blocks and 32 per step outside the calls (DDIM, guidance).
TEST_F(CostModel, elementwise_work_and_dispatch) {
  const double per_token = 19.9 * 64 + 2 * 256;
  const auto w = work({});
  EXPECT_NEAR(w.elementwise_bytes, 2 * 80 * 2 * per_token * 4, 1e-6);  // batch 2, 80 tokens, 2 blocks, float32
  EXPECT_DOUBLE_EQ(w.ops, 2 * 50 + 39 + 32);
  plan::ParallelConfig p;
  p.ulysses_degree = 2;
  EXPECT_NEAR(work(p).elementwise_bytes, 2 * 40 * 2 * per_token * 4, 1e-6);  // half the tokens
  EXPECT_DOUBLE_EQ(work(p).ops, 2 * 50 + 39 + 32);
  // PipeFusion 2 stages, 2 patches: a stage's block runs once per patch.
  p = {};
  p.pipefusion_parallel_degree = 2, p.num_pipeline_patch = 2;
  EXPECT_DOUBLE_EQ(work(p, true).ops, 1 * 50 * 2 + 39 + 32);
  EXPECT_DOUBLE_EQ(work(p, false).ops, 1 * 50 + 39 + 32);

  // The device's work and the host's dispatch add up.
  plan::Calibration c;
  c.gemm_flops_per_s = c.gemm_flops_per_s_all = 1e9;
  c.attention_flops_per_s = c.attention_flops_per_s_all = 5e8;
  c.memory_bytes_per_s = c.memory_bytes_per_s_all = 1e9;
  c.op_seconds = 1e-5;
  const double device = w.gemm_flops / 1e9 + w.attention_flops / 5e8 + w.elementwise_bytes / 1e9;
  EXPECT_NEAR(plan::predict({}, job_, model_, c, 4).compute_s, device + 171 * 1e-5, 1e-12);
  // Two ranks sharing the cores at half the GEMM rate each: the dispatch slows as much.
  c.ranks = 2, c.gemm_flops_per_s_all = 0.5e9;
  plan::ParallelConfig cfg;
  cfg.use_cfg_parallel = true;
  const auto half = plan::count_step_work(cfg, job_, model_, 4, false);
  EXPECT_NEAR(plan::predict(cfg, job_, model_, c, 4).compute_s,
              half.gemm_flops / 0.5e9 + half.attention_flops / 5e8 + half.elementwise_bytes / 1e9 + half.ops * 1e-5 * 2,
              1e-12);
}

// Wan calls the model once per guidance branch (its pipeline's "cond" and "uncond"): twice the operations
// of one call a step, unless CFG parallelism gives each rank one branch.
TEST(CostModelWan, a_call_per_guidance_branch) {
  const auto model = plan::read_model_folder(test::golden_case("wan21_tiny"));
  plan::JobSpec job;
  job.prompt_embeds_file = "embeds.safetensors";
  job.height = 64, job.width = 96, job.num_frames = 9, job.num_inference_steps = 4;
  plan::apply_model_defaults(job, model);
  plan::ParallelConfig p;
  EXPECT_DOUBLE_EQ(plan::count_step_work(p, job, model, 4, false).ops, 2 * (2 * 114 + 40) + 37);
  p.use_cfg_parallel = true;
  EXPECT_DOUBLE_EQ(plan::count_step_work(p, job, model, 4, false).ops, 2 * 114 + 40 + 37);
}

TEST_F(CostModel, ranking_marks_what_does_not_fit) {
  plan::Calibration c;
  c.ranks = 2, c.gemm_flops_per_s = c.attention_flops_per_s = 1e9;
  c.gemm_flops_per_s_all = c.attention_flops_per_s_all = 0.5e9;
  c.link_bytes_per_s = 1e8, c.link_latency_s = 1e-4;
  const auto ranked = plan::rank_configs(job_, model_, 2, c, 0.1 /* GiB: below the VAE's 0.5 */, 4);
  ASSERT_FALSE(ranked.empty());
  for (size_t i = 0; i < ranked.size(); ++i) {
    EXPECT_FALSE(ranked[i].fits) << ranked[i].config.describe();
    EXPECT_TRUE(test::contains(ranked[i].reason, "GiB per rank")) << ranked[i].reason;
    if (i > 0) EXPECT_LE(ranked[i - 1].total_s, ranked[i].total_s);
  }
}

TEST(DitLaunchPlan, json_through_the_real_binary) {
  test::TempDir cache;
  const std::string c = test::golden_case("cogvx2b_tiny");
  const test::Args args{"--model", c, "--prompt_embeds", c + "/golden.safetensors", "--num_inference_steps", "4",
                        "--plan", "--json", "--nproc_per_node", "2"};
  // The calibration's ranks under c10d's collective checker, which fails a call that NCCL would hang on.
  const auto r = test::run(test::bin("dit-launch"), args, 120000,
                           {{"XDG_CACHE_HOME", cache.path()}, {"TORCH_DISTRIBUTED_DEBUG", "DETAIL"}});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto a = nlohmann::json::parse(r.out);
  ASSERT_TRUE(a.is_array());
  ASSERT_GE(a.size(), 4u);  // ulysses 2, ring 2, CFG 2, PipeFusion 2 (and each with the parallel decode)
  double last = 0;
  for (const auto& o : a) {
    ASSERT_TRUE(o.at("args").is_string());
    ASSERT_TRUE(o.at("seconds_per_step").is_number());
    ASSERT_TRUE(o.at("warmup_step_seconds").is_number());
    ASSERT_TRUE(o.at("pipelined_step_seconds").is_number());
    ASSERT_TRUE(o.at("peak_bytes_per_rank").is_number());
    ASSERT_TRUE(o.at("fits").is_boolean());
    ASSERT_TRUE(o.at("weights_otherwise").is_array());
    ASSERT_FALSE(o["weights_otherwise"].empty()) << o.dump();  // --quantize fp8 at least (no offload on the CPU)
    EXPECT_TRUE(o["weights_otherwise"][0].at("peak_bytes_per_rank").is_number());
    EXPECT_GT(o["seconds_per_step"].get<double>(), 0);
    const double warm = o["warmup_step_seconds"], piped = o["pipelined_step_seconds"], step = o["seconds_per_step"];
    EXPECT_LE(std::min(warm, piped), step * (1 + 1e-12)) << o.dump();  // an average of the two kinds of step
    EXPECT_GE(std::max(warm, piped), step * (1 - 1e-12)) << o.dump();
    EXPECT_GE(o["total_seconds"].get<double>(), last);
    last = o["total_seconds"].get<double>();
  }
  // The cache holds what the two dit-worker ranks measured, each pair's link among it.
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::recursive_directory_iterator(cache.path()))
    if (e.path().extension() == ".json") files.push_back(e.path());
  ASSERT_EQ(files.size(), 1u);
  const auto cached = nlohmann::json::parse(test::read_file(files[0].string()));
  const auto cal = plan::calibration_from_json(cached.at("calibration").dump(), files[0].string());
  EXPECT_EQ(cal.ranks, 2);
  EXPECT_GT(cal.gemm_flops_per_s_all, 0);
  EXPECT_LE(cal.gemm_flops_per_s_all, cal.gemm_flops_per_s);
  EXPECT_GT(cal.memory_bytes_per_s_all, 0);
  EXPECT_LE(cal.memory_bytes_per_s_all, cal.memory_bytes_per_s);
  EXPECT_GT(cal.op_seconds, 0);
  EXPECT_LT(cal.op_seconds, 1e-3);  // a small add: microseconds on any CPU
  // The attention kernel measured at head dims 32 and 128 besides 64 (the reference, 1).
  ASSERT_EQ(cal.attention_by_head_dim.size(), 3u);
  EXPECT_EQ(cal.attention_by_head_dim[0].first, 32);
  EXPECT_EQ(cal.attention_by_head_dim[1], (std::pair<int, double>{64, 1.0}));
  EXPECT_EQ(cal.attention_by_head_dim[2].first, 128);
  EXPECT_GT(cal.attention_by_head_dim[0].second, 0);
  EXPECT_GT(cal.attention_by_head_dim[2].second, 0);
  ASSERT_EQ(cal.pair_bytes_per_s.size(), 4u);
  EXPECT_EQ(cal.pair_bytes_per_s[0], 0);
  EXPECT_GT(cal.pair_bytes_per_s[1], 0);
  EXPECT_GT(cal.pair_bytes_per_s[2], 0);
  // A matrix of the wrong size is refused, naming the file and what to do.
  auto bad = cached.at("calibration");
  bad["pair_bytes_per_s"] = {1.0, 2.0, 3.0};
  EXPECT_TRUE(test::throws_with<InputError>([&] { plan::calibration_from_json(bad.dump(), "cal.json"); },
                                            {"cal.json", "pair_bytes_per_s has 3 values", "--calibrate again"}));
  bad = cached.at("calibration");
  bad["attention_by_head_dim"] = {{128, 1.1}, {64, 1.0}};
  EXPECT_TRUE(test::throws_with<InputError>([&] { plan::calibration_from_json(bad.dump(), "cal.json"); },
                                            {"cal.json", "attention_by_head_dim", "increasing head_dim"}));
  // The calibration is cached: a second plan measures nothing and ranks the same.
  const auto again = test::run(test::bin("dit-launch"), args, 120000, {{"XDG_CACHE_HOME", cache.path()}});
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(nlohmann::json::parse(again.out), a);
}

}  // namespace

// FLUX.1-dev's shape on two GPUs too small for its bfloat16 weights: Ulysses alone does not fit, the same with
// its blocks sharded does (half the blocks plus two whole), and pays for the gathers in time; the ranking
// offers it beside PipeFusion's stages.
// FLUX.1-dev's shape at 512^2, from embeddings, and a calibration of `ranks` GPUs of one speed.
struct FluxDevJob {
  explicit FluxDevJob(int ranks) {
    test::flux_dev_shaped(dir);
    model = plan::read_model_folder(dir);
    job.prompt_embeds_file = "x";
    job.height = job.width = 512;
    c.ranks = ranks, c.gemm_flops_per_s = c.attention_flops_per_s = 4e14;
    c.gemm_flops_per_s_all = c.attention_flops_per_s_all = 4e14;
  }
  test::TempDir tmp;
  const std::string dir = tmp.path("flux-dev");
  plan::ModelFolder model;
  plan::JobSpec job;
  plan::Calibration c;
};

TEST(CostModelSharding, sharded_blocks_fit_where_whole_ones_do_not) {
  FluxDevJob f(2);
  const auto& model = f.model;
  auto& job = f.job;
  auto& c = f.c;
  c.link_bytes_per_s = 2e10, c.link_latency_s = 1e-5;
  const auto ranked = plan::rank_configs(job, model, 2, c, 16.0, 2);
  const plan::Prediction *whole = nullptr, *sharded = nullptr;
  for (const auto& r : ranked)
    if (r.config.ulysses_degree == 2 && !r.config.use_parallel_vae) (r.config.shard_weights ? sharded : whole) = &r;
  ASSERT_TRUE(whole && sharded);
  EXPECT_FALSE(whole->fits);
  EXPECT_TRUE(sharded->fits) << sharded->reason;
  EXPECT_GT(sharded->communication_s, whole->communication_s);
  EXPECT_LT(sharded->peak_bytes_per_rank, 0.7 * whole->peak_bytes_per_rank);
  EXPECT_TRUE(ranked.front().fits) << ranked.front().config.describe();  // PipeFusion, which divides the blocks too
  EXPECT_TRUE(test::contains(sharded->config.flags(), "--shard_weights")) << sharded->config.flags();
}

// One GPU too small for FLUX.1-dev's transformer in bfloat16, and no ranks to shard over: nothing on the device
// fits, so each configuration is ranked again with the blocks in host memory (exact), and --auto takes that;
// quantizing, which changes the result, stays an offer.
TEST(CostModelOffload, offloaded_blocks_where_nothing_on_the_device_fits) {
  FluxDevJob f(1);
  const auto& model = f.model;
  auto& job = f.job;
  const auto& c = f.c;
  const auto ranked = plan::rank_configs(job, model, 1, c, 16.0, 2);
  ASSERT_EQ(ranked.size(), 2u);
  EXPECT_TRUE(ranked[0].fits && ranked[0].offload) << ranked[0].reason;
  EXPECT_TRUE(!ranked[1].fits && !ranked[1].offload);
  EXPECT_LT(ranked[0].peak_bytes_per_rank, 0.5 * ranked[1].peak_bytes_per_rank);
  const std::string json = plan::predictions_json(ranked);
  EXPECT_TRUE(test::contains(json, "\"args\": \"--offload blocks\"")) << json;
  // On the CPU the blocks are in host memory already: nothing is added.
  job.device = "cpu";
  for (const auto& r : plan::rank_configs(job, model, 1, c, 16.0, 2)) EXPECT_FALSE(r.offload);
  // Where something fits on the device, nothing offloaded is ranked.
  job.device = "auto";
  for (const auto& r : plan::rank_configs(job, model, 1, c, 80.0, 2)) EXPECT_FALSE(r.offload);
}

// Offloaded blocks are copied to the GPU at each call, at the host link the calibration measured: a call's first
// block before it runs, each next one while the one before computes, so a step takes the first blocks' copies and
// the longer of the rest and the compute. PipeFusion copies a block a patch. A calibration without the figure (older
// files) leaves the copies out, and the figure survives the calibration's file.
TEST(CostModelOffload, the_copies_take_the_time_the_compute_does_not_hide) {
  FluxDevJob f(1);
  f.job.offload = "blocks";
  f.job.num_inference_steps = 20;
  plan::ParallelConfig one;
  const auto unmeasured = plan::predict(one, f.job, f.model, f.c, 2);
  EXPECT_EQ(unmeasured.host_copy_s, 0);
  const int blocks = plan::rules_of(f.model).blocks(f.model);
  const double bytes = plan::estimate_memory(one, f.job, f.model, 2).block_weight_gib * blocks * plan::kGiB;
  const auto expected = [&](double copies, double compute) {
    return copies / blocks + std::max(0.0, copies - copies / blocks - compute);
  };
  f.c.host_bytes_per_s = 1e9;  // slower than the compute: the step waits for the copies
  const auto slow = plan::predict(one, f.job, f.model, f.c, 2);
  EXPECT_GT(bytes / 1e9, 2 * slow.compute_s);
  EXPECT_NEAR(slow.host_copy_s, expected(bytes / 1e9, slow.compute_s), 1e-6 * bytes / 1e9);
  EXPECT_NEAR(slow.seconds_per_step, unmeasured.seconds_per_step + slow.host_copy_s, 1e-9);
  f.c.host_bytes_per_s = 1e15;  // faster: the compute hides every copy but the first block's
  EXPECT_NEAR(plan::predict(one, f.job, f.model, f.c, 2).host_copy_s, bytes / blocks / 1e15, 1e-18);
  // PipeFusion, 4 patches after 2 warm-up steps of 20: its pipelined steps copy each block 4 times.
  plan::ParallelConfig pf;
  pf.pipefusion_parallel_degree = 2, pf.num_pipeline_patch = 4, pf.warmup_steps = 2;
  const auto sync = plan::count_step_work(pf, f.job, f.model, 2, false), pipe = plan::count_step_work(pf, f.job, f.model, 2, true);
  EXPECT_NEAR(pipe.host_bytes, 4 * sync.host_bytes, 1e-6 * pipe.host_bytes);
  f.c.host_bytes_per_s = 1e9;
  const auto staged = plan::predict(pf, f.job, f.model, f.c, 2);
  const double copies = (0.1 * sync.host_bytes + 0.9 * pipe.host_bytes) / 1e9;
  EXPECT_NEAR(staged.host_copy_s, copies / sync.blocks + std::max(0.0, copies - copies / sync.blocks - staged.compute_s),
              1e-6 * copies);
  f.job.offload.clear();  // on the device: nothing is copied
  EXPECT_EQ(plan::predict(one, f.job, f.model, f.c, 2).host_copy_s, 0);
  f.c.memory_bytes_per_s = 1, f.c.op_seconds = 1;  // what calibration_from_json requires
  EXPECT_EQ(plan::calibration_from_json(plan::calibration_json(f.c), "c.json").host_bytes_per_s, 1e9);
  auto old = nlohmann::json::parse(plan::calibration_json(f.c));
  old.erase("host_bytes_per_s");
  EXPECT_EQ(plan::calibration_from_json(old.dump(), "c.json").host_bytes_per_s, 0);
}
