// The engine against the reference cases, in one process, through the ordinary loader:
// rope tables and one transformer call to 1e-4, the whole denoising loop to 1e-3.
#include <ATen/ops/zeros.h>

#include <cmath>

#include "plan/families/cogvideox_config.h"
#include "models/cogvideox/cogvideox_transformer.h"
#include "pipeline/denoise.h"
#include "plan/error.h"
#include "plan/job.h"
#include "sampling/noise.h"
#include "sampling/scheduler.h"
#include "tensor_support.h"

using namespace studio;

namespace {

const plan::CogVideoXParts& cog(const plan::ModelFolder& m) { return m.parts_as<plan::CogVideoXParts>(); }

struct Case {
  plan::ModelFolder folder;
  std::shared_ptr<models::CogVideoXTransformer> model;
};

Case load(const std::string& name, at::ScalarType dtype = at::kFloat) {
  Case c;
  c.folder = plan::read_model_folder(test::golden_case(name));
  c.model = models::CogVideoXTransformer::load(c.folder.dir + "/transformer", cog(c.folder).transformer, dtype, at::kCPU);
  return c;
}

std::string case_name(const ::testing::TestParamInfo<std::string>& info) { return info.param; }

TEST(Goldens, tensors_of_other_shapes_are_never_compared) {
  EXPECT_TRUE(test::throws_with<std::invalid_argument>(
      [] { test::max_abs_diff(at::zeros({2, 3}), at::zeros({3, 2})); }, {"different shapes", "[2, 3]", "[3, 2]"}));
}

TEST(Goldens, family_is_read_from_config) {
  EXPECT_EQ(plan::read_model_folder(test::golden_case("cogvx2b_tiny")).variant.id, "cogvideox-2b");
  EXPECT_EQ(plan::read_model_folder(test::golden_case("cogvx5b_tiny")).variant.id, "cogvideox-5b");
  EXPECT_EQ(plan::read_model_folder(test::golden_case("cogvx15_tiny")).variant.id, "cogvideox-1.5");
}

class RopeTables : public ::testing::TestWithParam<std::string> {};

TEST_P(RopeTables, match_the_reference) {
  const std::string n = GetParam();
  auto c = load(n);
  auto lat = test::golden_tensor(n, "latents_init");
  auto pos = c.model->positions(c.model->token_grid(lat));
  const double cos_err = test::max_abs_diff(pos.rope_cos, test::golden_tensor(n, "rope_cos"));
  const double sin_err = test::max_abs_diff(pos.rope_sin, test::golden_tensor(n, "rope_sin"));
  std::printf("rope max error: cos %.3g, sin %.3g\n", cos_err, sin_err);
  EXPECT_LT(cos_err, test::kCallTolerance) << "rope_cos max error";
  EXPECT_LT(sin_err, test::kCallTolerance) << "rope_sin max error";
}

INSTANTIATE_TEST_SUITE_P(Cases, RopeTables, ::testing::Values("cogvx5b_tiny", "cogvx15_tiny"), case_name);

class Reference : public ::testing::TestWithParam<std::string> {};

TEST_P(Reference, step0_output) {
  const std::string n = GetParam();
  auto c = load(n);
  auto hidden = test::golden_tensor(n, "step0_hidden_states");
  auto text = test::golden_tensor(n, "step0_encoder_hidden_states");
  io::TensorFile f(test::golden_case(n) + "/golden.safetensors", "golden");
  auto t = f.get_int64("step0_timestep");
  auto out = c.model->forward({hidden, text, t}, c.model->positions(c.model->token_grid(hidden)));
  const double err = test::max_abs_diff(out, test::golden_tensor(n, "step0_output"));
  std::printf("step0_output max error %.3g\n", err);
  EXPECT_LT(err, test::kCallTolerance) << "step0_output max error";
}

// The whole denoising loop of case `n` with the model in `dtype`, its max error against the reference.
double final_latents_error(const std::string& n, at::ScalarType dtype) {
  auto c = load(n, dtype);
  auto g = test::golden_json(n);
  pipeline::DenoiseInputs in;
  in.prompt_embeds = test::golden_tensor(n, "prompt_embeds");
  in.negative_prompt_embeds = test::golden_tensor(n, "negative_prompt_embeds");
  in.latents = test::golden_tensor(n, "latents_init");
  in.guidance_scale = g["guidance_scale"];
  in.use_dynamic_cfg = g["use_dynamic_cfg"];
  std::unique_ptr<sampling::NoiseSource> noise;
  io::TensorFile gf(test::golden_case(n) + "/golden.safetensors", "golden");
  if (gf.has("scheduler_noise"))
    noise = std::make_unique<sampling::RecordedNoise>(gf.get("scheduler_noise", 6, ""));
  else
    noise = std::make_unique<sampling::SeededNoise>(0);  // DDIM draws none
  int calls = 0;
  pipeline::Hooks hooks;
  hooks.on_step = [&](const pipeline::StepDone& d) {
    EXPECT_EQ(d.latents.sizes(), in.latents.sizes());
    EXPECT_EQ(d.step, ++calls);
    EXPECT_EQ(d.total, int(g["num_inference_steps"]));
    EXPECT_GE(d.seconds, 0);
    EXPECT_EQ(d.full, -1);  // no cache
  };
  sampling::Scheduler sampler(cog(c.folder).scheduler, g["num_inference_steps"]);
  auto out = pipeline::denoise(*c.model, sampler, in, noise.get(), hooks);
  EXPECT_EQ(calls, int(g["num_inference_steps"]));
  const double err = test::max_abs_diff(out, test::golden_tensor(n, "final_latents"));
  std::printf("final_latents max error %.3g (%s)\n", err, c10::toString(dtype));
  return err;
}

TEST_P(Reference, final_latents) {
  EXPECT_LT(final_latents_error(GetParam(), at::kFloat), test::kRunTolerance) << "final_latents max error";
}

// diffusers 0.32.2's own bfloat16 result against its float32 reference, max abs error of final_latents
// (measured by bench/bf16_reference.py, which first checks that it replays the float32 case to ~1e-6).
double diffusers_bf16_error(const std::string& n) {
  if (n == "cogvx2b_tiny") return 0.06607;
  if (n == "cogvx5b_tiny") return 0.02274;
  if (n == "cogvx15_tiny") return 0.04895;
  throw std::invalid_argument("no bf16 yardstick for " + n);
}

TEST_P(Reference, final_latents_in_bfloat16_within_twice_diffusers_own_error) {
  const double err = final_latents_error(GetParam(), at::kBFloat16);
  EXPECT_LT(err, 2 * diffusers_bf16_error(GetParam())) << "final_latents max error in bfloat16";
  EXPECT_GT(err, 0) << "a bfloat16 run equal to the float32 reference did not run in bfloat16";
}

INSTANTIATE_TEST_SUITE_P(Cases, Reference, ::testing::Values("cogvx2b_tiny", "cogvx5b_tiny", "cogvx15_tiny"), case_name);

TEST(Goldens, latent_geometry_matches_reference) {
  // The reference's latents_init shape is what the plan derives from the job.
  for (const char* n : {"cogvx2b_tiny", "cogvx5b_tiny", "cogvx15_tiny"}) {
    auto folder = plan::read_model_folder(test::golden_case(n));
    auto g = test::golden_json(n);
    plan::JobSpec job;
    job.height = g["height"];
    job.width = g["width"];
    job.num_frames = g["num_frames"];
    job.prompt_embeds_file = test::golden_case(n) + "/golden.safetensors";
    plan::apply_model_defaults(job, folder);
    EXPECT_TRUE(plan::validate(job, folder).empty()) << n;
    auto geo = plan::latent_geometry(job, folder);
    auto lat = test::golden_tensor(n, "latents_init");
    EXPECT_EQ(std::vector<int64_t>({1, geo.padded_frames, geo.channels, geo.height, geo.width}), lat.sizes().vec()) << n;
  }
}

// A job that leaves the size to the model: CogVideoX 1.5 with its released config's sample size gets its model
// card's size, not the one that sample size makes in diffusers; other sample sizes are the folder's own.
TEST(Goldens, default_sizes_are_ones_a_gpu_runs) {
  for (const auto& [name, height, width] : {std::tuple{"cogvx15_i2v_tiny", 768, 1360}, std::tuple{"cogvx15_tiny", 64, 96},
                                            std::tuple{"cogvx2b_tiny", 64, 96}}) {
    const auto folder = plan::read_model_folder(test::golden_case(name));
    plan::JobSpec job;
    plan::apply_model_defaults(job, folder);
    EXPECT_EQ(job.height, height) << name;
    EXPECT_EQ(job.width, width) << name;
  }
}

TEST(Goldens, cancel_stops_before_the_next_step) {
  auto c = load("cogvx2b_tiny");
  pipeline::DenoiseInputs in;
  in.prompt_embeds = test::golden_tensor("cogvx2b_tiny", "prompt_embeds");
  in.negative_prompt_embeds = test::golden_tensor("cogvx2b_tiny", "negative_prompt_embeds");
  in.latents = test::golden_tensor("cogvx2b_tiny", "latents_init");
  sampling::Scheduler sampler(cog(c.folder).scheduler, 4);
  bool cancel = false;
  int steps = 0;
  pipeline::Hooks hooks;
  hooks.stop_requested = [&] { return cancel; };
  hooks.on_step = [&](const pipeline::StepDone& d) {
    steps = d.step;
    if (d.step == 2) cancel = true;
  };
  sampling::SeededNoise noise(0);
  EXPECT_THROW(pipeline::denoise(*c.model, sampler, in, &noise, hooks), studio::Cancelled);
  EXPECT_EQ(steps, 2);
}

TEST(Goldens, dynamic_guidance_follows_the_timestep_value) {
  // t = 999 of 4 steps: base (4 - 999) / 4 is negative, as upstream keeps it. The engine evaluates this same
  // double expression; the compiler may fold this side exactly where the engine calls libm, hence 4 ulps.
  const double g = sampling::guidance_at(6.0, true, 999, 4);
  EXPECT_DOUBLE_EQ(g, 1 + 6.0 * (1 - std::cos(M_PI * std::pow(-248.75, 5.0))) / 2);
  EXPECT_EQ(sampling::guidance_at(6.0, false, 999, 4), 6.0);
}

TEST(Goldens, trailing_timesteps) {
  auto folder = plan::read_model_folder(test::golden_case("cogvx2b_tiny"));
  sampling::Scheduler s4(cog(folder).scheduler, 4);
  EXPECT_EQ(s4.timesteps(), std::vector<int64_t>({999, 749, 499, 249}));
  sampling::Scheduler s50(cog(folder).scheduler, 50);
  EXPECT_EQ(s50.timesteps().front(), int64_t(999));
  EXPECT_EQ(s50.timesteps()[1], int64_t(979));
  EXPECT_EQ(s50.timesteps().back(), int64_t(19));
  EXPECT_EQ(s50.alpha_cumprod(999), 0.0);  // zero terminal SNR: the rescale subtracts the last value from itself
}

}  // namespace
