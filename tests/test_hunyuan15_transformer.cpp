// HunyuanVideo-1.5's transformer against the hunyuan15_tiny reference (diffusers 0.42.1): its config, the RoPE
// tables and the two transformer calls of step 0 (the prompt with its ByT5 glyph rows, the negative prompt
// without), given the valid text rows alone as the engine feeds them, in one process and in the parallel mixes
// of one branch per call (ranks as threads over real Gloo sockets).
#include <ATen/ops/nonzero.h>

#include "io/weights/weights.h"
#include "mixes.h"
#include "models/hunyuan15/hunyuan15_transformer.h"
#include "parallel/parallel_model.h"
#include "pipeline/denoise.h"
#include "plan/error.h"
#include "plan/model_folder.h"
#include "rank_threads.h"
#include "sampling/flow_match.h"
#include "tensor_support.h"

using namespace studio;

namespace {

const std::string kCase = "hunyuan15_tiny";

at::Tensor golden(const std::string& name) { return test::golden_tensor(kCase, name); }

plan::Hunyuan15TransformerConfig config() {
  const std::string file = test::golden_case(kCase) + "/transformer/config.json";
  return plan::parse_hunyuan15_transformer_config(plan::read_text_file(file), file);
}

std::shared_ptr<models::Hunyuan15Transformer> load() {
  auto weights = io::WeightSet::open(test::golden_case(kCase) + "/transformer", "diffusion_pytorch_model");
  return models::Hunyuan15Transformer::load(weights, config(), at::kFloat, at::kCPU);
}

// The rows of embeds [1, T, d] that mask [1, T] marks valid, as the engine's text path hands them over.
at::Tensor valid_rows(const at::Tensor& embeds, const at::Tensor& mask) {
  return embeds.index_select(1, at::nonzero(mask[0]).squeeze(1));
}

// Step 0's call for one guidance branch ("" or "negative_").
models::StepInputs step0(const std::string& branch) {
  const auto hidden = golden("step0_hidden_states");
  const int64_t c = config().out_channels;
  models::StepInputs in;
  in.latents = hidden.narrow(1, 0, c);
  in.condition = hidden.narrow(1, c, hidden.size(1) - c);
  in.text = valid_rows(golden(branch + "prompt_embeds"), golden(branch + "prompt_embeds_mask"));
  in.text_2 = valid_rows(golden(branch + "prompt_embeds_2"), golden(branch + "prompt_embeds_mask_2"));
  in.timestep = golden("step0_timestep") / 1000;  // as FlowMatchEuler gives it
  return in;
}

pipeline::DenoiseInputs run_inputs() {
  pipeline::DenoiseInputs in;
  for (const char* branch : {"", "negative_"}) {
    const std::string b = branch;
    (b.empty() ? in.prompt_embeds : in.negative_prompt_embeds) =
        valid_rows(golden(b + "prompt_embeds"), golden(b + "prompt_embeds_mask"));
    (b.empty() ? in.prompt_embeds_2 : in.negative_prompt_embeds_2) =
        valid_rows(golden(b + "prompt_embeds_2"), golden(b + "prompt_embeds_mask_2"));
  }
  in.latents = golden("latents_init");
  in.guidance_scale = test::golden_json(kCase)["guidance_scale"];
  return in;
}

// The whole loop (flow-match Euler, shift 5, CFG as the guider's two calls) with `call` (the model's own
// forward() when empty); checks every step's latents and returns the final ones.
at::Tensor run(const models::Hunyuan15Transformer& model, const pipeline::ModelCall& call = {}) {
  const std::string file = test::golden_case(kCase) + "/scheduler/scheduler_config.json";
  const auto cfg = plan::parse_flow_match_config(plan::read_text_file(file), file);
  const int steps = test::golden_json(kCase)["num_inference_steps"];
  const auto in = run_inputs();
  sampling::FlowMatchEuler sampler(cfg, steps, 0);
  sampling::SeededNoise unused(0);
  const auto want = golden("step_latents");
  pipeline::Hooks hooks;
  hooks.on_step = [&](const pipeline::StepDone& d) {
    EXPECT_LT(test::max_abs_diff(d.latents, want[d.step - 1]), test::kRunTolerance) << "latents after step " << d.step;
  };
  return pipeline::denoise(model, sampler, in, &unused, hooks, call);
}

}  // namespace

TEST(Hunyuan15Transformer, config_is_read_and_checked) {
  const auto c = config();
  EXPECT_EQ(c.inner_dim(), 32);
  EXPECT_EQ(c.num_layers, 2);
  EXPECT_EQ(c.rope_axes_dim, std::vector<int>({4, 6, 6}));
  EXPECT_EQ(c.task_type, "t2v");
  const std::string file = test::golden_case(kCase) + "/transformer/config.json";
  auto edited = [&](const char* key, const char* value) {
    auto j = nlohmann::json::parse(plan::read_text_file(file));
    j[key] = nlohmann::json::parse(value);
    return j.dump();
  };
  EXPECT_TRUE(test::throws_with<InputError>(
      [&] { plan::parse_hunyuan15_transformer_config(edited("rope_axes_dim", "[4, 6, 8]"), file); },
      {"rope_axes_dim", "adding up to attention_head_dim 16"}));
  EXPECT_TRUE(test::throws_with<InputError>(
      [&] { plan::parse_hunyuan15_transformer_config(edited("in_channels", "32"), file); },
      {"in_channels", "2 x out_channels + 1", "33"}));
  EXPECT_TRUE(test::throws_with<InputError>(
      [&] { plan::parse_hunyuan15_transformer_config(edited("use_meanflow", "true"), file); },
      {"use_meanflow", "super-resolution"}));
}

TEST(Hunyuan15Transformer, rope_tables_match_the_reference) {
  const auto model = load();
  const auto pos = model->positions(model->token_grid(step0("").latents));
  EXPECT_LT(test::max_abs_diff(pos.rope_cos, golden("rope_cos")), test::kCallTolerance);
  EXPECT_LT(test::max_abs_diff(pos.rope_sin, golden("rope_sin")), test::kCallTolerance);
}

// Both branches: the prompt's 19 glyph rows and 43 Qwen rows, the negative prompt's 22 Qwen rows and no glyphs.
TEST(Hunyuan15Transformer, step0_outputs_of_both_branches) {
  const auto model = load();
  for (const auto& [branch, want] : {std::pair{"", "step0_output_cond"}, std::pair{"negative_", "step0_output_uncond"}}) {
    const auto in = step0(branch);
    const auto out = model->forward(in, model->positions(model->token_grid(in.latents)));
    const double err = test::max_abs_diff(out, golden(want));
    EXPECT_LT(err, test::kCallTolerance) << want;
    std::printf("%s: max abs diff %.3g (values up to %.3g)\n", want, err, test::max_abs(golden(want)));
  }
}

TEST(Hunyuan15Transformer, wrong_inputs_are_named) {
  const auto model = load();
  const auto in = step0("");
  EXPECT_TRUE(test::throws_with<InputError>([&] { model->check_inputs(in.latents.narrow(1, 0, 8), in.text, "prompt_embeds"); },
                                            {"latents have shape [1, 8, 3, 3, 4]", "[B, 16, frames, h, w]"}));
  EXPECT_TRUE(test::throws_with<InputError>(
      [&] { model->check_inputs(in.latents, in.text.narrow(2, 0, 32), "prompt_embeds"); },
      {"prompt_embeds has shape [1, 43, 32]", "[1, T, 64]", "text_embed_dim"}));
}

class Hunyuan15Mix : public ::testing::TestWithParam<int> {};

// The mixes of one branch per call: no CFG parallelism, and Ulysses at most the model's 2 heads.
std::vector<int> hunyuan15_mixes() {
  std::vector<int> out;
  for (int i = 0; i < int(test::mixes().size()); ++i) {
    const auto& p = test::mixes()[size_t(i)].p;
    if (!p.use_cfg_parallel && p.ulysses_degree <= 2) out.push_back(i);
  }
  return out;
}

TEST_P(Hunyuan15Mix, step0_outputs_equal_one_process) {
  auto p = test::mixes()[size_t(GetParam())].p;
  const auto model = load();
  const int world = p.world_size();
  std::vector<double> err(size_t(world), 1e30);
  const auto failure = test::run_ranks(p, [&](int r, parallel::Mesh& mesh) {
    double worst = 0;
    for (const auto& [branch, want] :
         {std::pair{"", "step0_output_cond"}, std::pair{"negative_", "step0_output_uncond"}}) {
      parallel::ParallelTransformer call(*model, mesh);  // a first call: PipeFusion's synchronous warm-up step
      const auto in = step0(branch);
      worst = std::max(worst, test::max_abs_diff(call(in, model->positions(model->token_grid(in.latents))), golden(want)));
    }
    err[size_t(r)] = worst;
  });
  for (int r = 0; r < world; ++r) {
    ASSERT_TRUE(failure[size_t(r)].empty()) << "rank " << r << ": " << failure[size_t(r)];
    EXPECT_LT(err[size_t(r)], test::kCallTolerance) << "rank " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(Mixes, Hunyuan15Mix, ::testing::ValuesIn(hunyuan15_mixes()),
                         [](const ::testing::TestParamInfo<int>& info) { return std::string(test::mixes()[size_t(info.param)].name); });

// Ulysses over a head count the ranks do not divide: the tiny case has 2 heads, so the same shape with 3 heads
// and made weights (a synthetic set: the layout is the loader's), 3 heads over 2 ranks and over 3.
TEST(Hunyuan15Transformer, ulysses_over_uneven_heads_equals_one_process) {
  const std::string file = test::golden_case(kCase) + "/transformer/config.json";
  auto j = nlohmann::json::parse(plan::read_text_file(file));
  j["num_attention_heads"] = 3;
  const auto cfg = plan::parse_hunyuan15_transformer_config(j.dump(), file);
  auto weights = io::WeightSet::synthetic(11);
  const auto model = models::Hunyuan15Transformer::load(weights, cfg, at::kFloat, at::kCPU);
  const auto in = step0("");
  const auto want = model->forward(in, model->positions(model->token_grid(in.latents)));
  ASSERT_GT(test::max_abs(want), 0.1);  // the made weights move the output
  for (const int u : {2, 3}) {
    plan::ParallelConfig p;
    p.ulysses_degree = u;
    std::vector<double> err(size_t(u), 1e30);
    const auto failure = test::run_ranks(p, [&](int r, parallel::Mesh& mesh) {
      parallel::ParallelTransformer call(*model, mesh);
      err[size_t(r)] = test::max_abs_diff(call(in, model->positions(model->token_grid(in.latents))), want);
    });
    for (int r = 0; r < u; ++r) {
      ASSERT_TRUE(failure[size_t(r)].empty()) << "ulysses " << u << " rank " << r << ": " << failure[size_t(r)];
      EXPECT_LT(err[size_t(r)], test::scaled_bound(want, test::kCallTolerance)) << "ulysses " << u << " rank " << r;
    }
  }
}

// The loop's sigmas and every step's latents, the branches' texts of different lengths each in its own call.
TEST(Hunyuan15Transformer, the_whole_loop_reproduces_the_reference) {
  const std::string file = test::golden_case(kCase) + "/scheduler/scheduler_config.json";
  sampling::FlowMatchEuler sampler(plan::parse_flow_match_config(plan::read_text_file(file), file), 4, 0);
  const auto sigmas = golden("sigmas");
  for (int i = 0; i < 5; ++i) EXPECT_NEAR(sampler.sigmas()[size_t(i)], sigmas[i].item<double>(), 1e-6) << i;
  const auto model = load();
  const double err = test::max_abs_diff(run(*model), golden("final_latents"));
  EXPECT_LT(err, test::kRunTolerance);
  std::printf("final_latents: max abs diff %.3g\n", err);
}

class Hunyuan15LoopMix : public ::testing::TestWithParam<int> {};

// The loop in the mixes with CFG among them: a CFG rank runs its branch, text length and all.
std::vector<int> hunyuan15_loop_mixes() {
  std::vector<int> out;
  for (int i = 0; i < int(test::mixes().size()); ++i) {
    const auto& p = test::mixes()[size_t(i)].p;
    if (p.ulysses_degree <= 2 && p.pipefusion_parallel_degree == 1 && p.world_size() <= 4) out.push_back(i);
  }
  return out;
}

TEST_P(Hunyuan15LoopMix, final_latents_equal_one_process) {
  const auto p = test::mixes()[size_t(GetParam())].p;
  const auto model = load();
  const int world = p.world_size();
  std::vector<double> err(size_t(world), 1e30);
  const auto failure = test::run_ranks(p, [&](int r, parallel::Mesh& mesh) {
    auto call = std::make_shared<parallel::ParallelTransformer>(*model, mesh);
    err[size_t(r)] = test::max_abs_diff(
        run(*model, [call](const models::StepInputs& in, const models::Positions& pos) { return (*call)(in, pos); }),
        golden("final_latents"));
  });
  for (int r = 0; r < world; ++r) {
    ASSERT_TRUE(failure[size_t(r)].empty()) << "rank " << r << ": " << failure[size_t(r)];
    EXPECT_LT(err[size_t(r)], test::kRunTolerance) << "rank " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(Mixes, Hunyuan15LoopMix, ::testing::ValuesIn(hunyuan15_loop_mixes()),
                         [](const ::testing::TestParamInfo<int>& info) { return std::string(test::mixes()[size_t(info.param)].name); });
