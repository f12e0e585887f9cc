// Wan's transformer and sampler against the wan21_tiny and wan22_tiny references (diffusers 0.35.2's
// WanPipeline): UniPC's sigmas and timesteps, and the whole denoising loop from the reference's text
// embeddings and initial noise, with classifier-free guidance over both branches as one batch
// [uncond; cond], and for Wan2.2 its two experts split at boundary_ratio.
#include <ATen/ops/cat.h>

#include <cstdio>
#include <memory>

#include "models/wan/wan_transformer.h"
#include "plan/error.h"
#include "plan/model_folder.h"
#include "plan/families/wan_config.h"
#include "sampling/unipc.h"
#include "tensor_support.h"

using namespace studio;

namespace {

std::string read(const std::string& c, const std::string& file) {
  return plan::read_text_file(test::golden_case(c) + "/" + file);
}

plan::UniPCConfig scheduler(const std::string& c) {
  return plan::parse_unipc_config(read(c, "scheduler/scheduler_config.json"), "scheduler/scheduler_config.json");
}

std::shared_ptr<models::WanTransformer> transformer(const std::string& c, const std::string& part,
                                                   at::ScalarType dtype = at::kFloat) {
  const auto cfg = plan::parse_wan_transformer_config(read(c, part + "/config.json"), part + "/config.json");
  return models::WanTransformer::load(test::golden_case(c) + "/" + part, cfg, dtype, at::kCPU);
}

// The loop of WanPipeline: `experts` (high-noise first) switch below boundary_ratio * train steps, each
// with its guidance scale (applied in the model's dtype, as the pipeline does). Checks every step's latents
// when `check_steps`; returns the final latents.
at::Tensor denoise(const std::string& c, const std::vector<std::shared_ptr<models::WanTransformer>>& experts,
                   const std::vector<double>& guidance, double boundary, bool check_steps = true) {
  const auto g = test::golden_json(c);
  const auto cfg = scheduler(c);
  sampling::UniPC sampler(cfg, g["num_inference_steps"]);
  const auto text =
      at::cat({test::golden_tensor(c, "negative_prompt_embeds"), test::golden_tensor(c, "prompt_embeds")});
  const auto want = test::golden_tensor(c, "step_latents");
  auto latents = test::golden_tensor(c, "latents_init");
  const auto& first = *experts.front();
  first.check_inputs(latents, test::golden_tensor(c, "prompt_embeds"), "prompt_embeds");
  const auto pos = first.positions(first.token_grid(latents));
  for (int i = 0; i < sampler.steps(); ++i) {
    const size_t e = sampler.timestep(i) >= boundary * cfg.num_train_timesteps ? 0 : 1;
    const models::StepInputs in{at::cat({latents, latents}), text, sampler.model_timestep(i, 2, at::kCPU)};
    const auto out = experts[e]->forward(in, pos);
    const auto uncond = out.narrow(0, 0, 1), cond = out.narrow(0, 1, 1);
    latents = sampler.step(i, uncond + guidance[e] * (cond - uncond), latents, nullptr);
    if (!check_steps) continue;
    const double err = test::max_abs_diff(latents, want[i]);
    std::printf("%s step %d (expert %zu) max error %.3g\n", c.c_str(), i, e + 1, err);
    EXPECT_LT(err, test::kRunTolerance) << "latents after step " << i;
  }
  return latents;
}

}  // namespace

TEST(Wan, unipc_sigmas_and_timesteps_match_the_reference) {
  for (const std::string c : {"wan21_tiny", "wan22_tiny"}) {
    const sampling::UniPC sampler(scheduler(c), test::golden_json(c)["num_inference_steps"]);
    const auto sigmas = test::golden_tensor(c, "sigmas"), timesteps = test::golden_tensor(c, "timesteps");
    ASSERT_EQ(int64_t(sampler.sigmas().size()), sigmas.size(0)) << c;
    ASSERT_EQ(int64_t(sampler.steps()), timesteps.size(0)) << c;
    double sigma_err = 0, timestep_err = 0;
    for (int i = 0; i < int(sigmas.size(0)); ++i)
      sigma_err = std::max(sigma_err, std::abs(sampler.sigmas()[size_t(i)] - sigmas[i].item<double>()));
    for (int i = 0; i < sampler.steps(); ++i)
      timestep_err = std::max(timestep_err, std::abs(sampler.timestep(i) - timesteps[i].item<double>()));
    std::printf("%s sigmas max error %.3g, timesteps max error %.3g\n", c.c_str(), sigma_err, timestep_err);
    EXPECT_EQ(sigma_err, 0.0) << c;
    EXPECT_EQ(timestep_err, 0.0) << c;
  }
}

TEST(Wan, wan21_loop_matches_every_step) {
  const std::string c = "wan21_tiny";
  const double g = test::golden_json(c)["guidance_scale"];
  const auto final_latents = denoise(c, {transformer(c, "transformer")}, {g}, 0.0);
  const double err = test::max_abs_diff(final_latents, test::golden_tensor(c, "final_latents"));
  std::printf("%s final_latents max error %.3g\n", c.c_str(), err);
  EXPECT_LT(err, test::kRunTolerance);
}

TEST(Wan, wan22_two_experts_match_the_final_latents) {
  const std::string c = "wan22_tiny";
  const auto g = test::golden_json(c);
  const double boundary = nlohmann::json::parse(read(c, "model_index.json"))["boundary_ratio"];
  const auto final_latents = denoise(c, {transformer(c, "transformer"), transformer(c, "transformer_2")},
                                     {g["guidance_scale"], g["guidance_scale_2"]}, boundary);
  const double err = test::max_abs_diff(final_latents, test::golden_tensor(c, "final_latents"));
  std::printf("%s final_latents max error %.3g\n", c.c_str(), err);
  EXPECT_LT(err, test::kRunTolerance);
}

// float16 and bfloat16, within twice diffusers' own error in that dtype on this case (the same loop, two calls a
// step, diffusers 0.35.2 on torch 2.15's CPU: float16 max 0.0059, bfloat16 max 0.0480, values up to 4.35).
TEST(Wan, wan21_in_half_precision_within_twice_diffusers_own_error) {
  const std::string c = "wan21_tiny";
  const double g = test::golden_json(c)["guidance_scale"];
  for (const auto& [dtype, diffusers_error] : {std::pair{at::kHalf, 0.0059}, std::pair{at::kBFloat16, 0.0480}}) {
    const auto final_latents = denoise(c, {transformer(c, "transformer", dtype)}, {g}, 0.0, false);
    const double err = test::max_abs_diff(final_latents, test::golden_tensor(c, "final_latents"));
    std::printf("%s final_latents in %s max error %.3g (diffusers' own %.3g)\n", c.c_str(), c10::toString(dtype), err,
                diffusers_error);
    EXPECT_LT(err, 2 * diffusers_error) << c10::toString(dtype);
  }
}

TEST(Wan, inconsistent_config_fields_are_refused_by_name) {
  auto edited = [](const std::string& file, const char* key, const nlohmann::json& value) {
    auto j = nlohmann::json::parse(read("wan21_tiny", file));
    j[key] = value;
    return j.dump();
  };
  EXPECT_TRUE(test::throws_with<InputError>(
      [&] { plan::parse_wan_transformer_config(edited("transformer/config.json", "image_dim", 1280), "t.json"); },
      {"t.json", "added_kv_proj_dim", "must equal the inner dim", "when image_dim is set"}));
  EXPECT_TRUE(test::throws_with<InputError>(
      [&] {
        plan::parse_wan_transformer_config(edited("transformer/config.json", "added_kv_proj_dim", 5120), "t.json");
      },
      {"t.json", "added_kv_proj_dim", "5120", "without image_dim"}));
  EXPECT_TRUE(test::throws_with<InputError>(
      [&] { plan::parse_wan_transformer_config(edited("transformer/config.json", "out_channels", 20), "t.json"); },
      {"t.json", "out_channels", "20", "exceeds in_channels 16"}));
  EXPECT_TRUE(test::throws_with<InputError>(
      [&] {
        plan::parse_unipc_config(edited("scheduler/scheduler_config.json", "prediction_type", "epsilon"), "s.json");
      },
      {"s.json", "prediction_type", "\"epsilon\"", "flow_prediction"}));
  EXPECT_TRUE(test::throws_with<InputError>(
      [&] { plan::parse_unipc_config(edited("scheduler/scheduler_config.json", "solver_order", 3), "s.json"); },
      {"s.json", "solver_order", "3"}));
}
