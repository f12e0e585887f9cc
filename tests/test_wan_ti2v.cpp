// Wan2.2 TI2V-5B against wan22_ti2v_tiny (diffusers 0.35.2: WanImageToVideoPipeline with expand_timesteps from a
// picture, WanPipeline from words alone, on the same folder): the Wan2.2 VAE (residual levels, 2x2 patches,
// 48 latent channels) encoding the picture and decoding the results, one transformer call with the picture's
// latent frame and a timestep per token, and whole runs through dit-launch from the picture or from words, in
// one process and in the parallel mixes.
#include <ATen/ops/equal.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros.h>

#include <filesystem>
#include <sstream>

#include "io/weights/tensor_file.h"
#include "mixes.h"
#include "models/dit_model.h"
#include "models/family_runtime.h"
#include "models/wan/wan_pictures.h"
#include "models/wan/wan_transformer.h"
#include "models/wan/wan_vae.h"
#include "plan/error.h"
#include "plan/families/wan_config.h"
#include "plan/family.h"
#include "plan/job.h"
#include "plan/model_folder.h"
#include "process.h"
#include "tensor_support.h"

using namespace studio;

namespace {

const std::string kCase = "wan22_ti2v_tiny";

at::Tensor golden(const std::string& name) { return test::golden_tensor(kCase, name); }

std::shared_ptr<models::WanVae> load_vae() {
  const auto folder = plan::read_model_folder(test::golden_case(kCase));
  return models::WanVae::load(test::golden_case(kCase) + "/vae", *folder.parts_as<plan::WanParts>().vae, at::kFloat,
                              at::kCPU, /*with_encoder=*/true);
}

TEST(Wan22Vae, config_says_sixteen_pixels_a_latent) {
  const std::string file = test::golden_case(kCase) + "/vae/config.json";
  const auto cfg = plan::parse_wan_vae_config(plan::read_text_file(file), file);
  EXPECT_TRUE(cfg.is_residual);
  EXPECT_EQ(cfg.patch_size, 2);
  EXPECT_EQ(cfg.spatial_compression(), 16);
  EXPECT_EQ(cfg.temporal_compression(), 4);
  // A scale factor that disagrees with the levels and the patch is refused by name.
  auto text = plan::read_text_file(file);
  text.replace(text.find("\"scale_factor_spatial\": 16"), 26, "\"scale_factor_spatial\": 8");
  try {
    plan::parse_wan_vae_config(text, file);
    ADD_FAILURE() << "accepted scale_factor_spatial 8";
  } catch (const InputError& e) {
    EXPECT_TRUE(test::contains(e.what(), "scale_factor_spatial")) << e.what();
  }
}

// The picture alone, patchified, through the residual encoder: the moments of its one latent frame.
TEST(Wan22Vae, encodes_the_picture_as_the_reference) {
  const auto vae = load_vae();
  const auto moments = vae->encode(golden("image").unsqueeze(2));
  const double err = test::max_abs_diff(moments, golden("vae_encoder_output"));
  std::printf("wan22_ti2v_tiny vae_encoder_output: %.3g\n", err);
  EXPECT_LT(err, test::kCallTolerance);
  // Pixels that do not fill whole 16 x 16 latent pixels are refused, naming the shape that would fit.
  EXPECT_THROW(vae->encode(golden("image").unsqueeze(2).narrow(4, 0, 88)), InputError);
}

// Both runs' latents through the residual decoder, a latent frame at a time, unpatchified: the first gives one
// frame (the duplicating shortcuts drop theirs), each next one four.
TEST(Wan22Vae, decodes_as_the_reference) {
  const auto vae = load_vae();
  for (const std::string prefix : {"", "t2v_"}) {
    const double err = test::max_abs_diff(vae->decode(golden(prefix + "vae_input")), golden(prefix + "video"));
    std::printf("wan22_ti2v_tiny %svideo: %.3g\n", prefix.c_str(), err);
    EXPECT_LT(err, test::kRunTolerance);
  }
  // Latents within one tile decode untiled (tiles against diffusers' own: tests/test_vae_tiles.cpp).
  EXPECT_TRUE(at::equal(vae->decode_tiled(golden("vae_input"), {256, 256}), vae->decode(golden("vae_input"))));
}

TEST(Wan22Ti2v, folder_takes_a_picture_but_needs_none) {
  const auto folder = plan::read_model_folder(test::golden_case(kCase));
  const auto& rules = plan::rules_of(folder);
  EXPECT_EQ(folder.variant.id, "wan2.2-ti2v");
  EXPECT_TRUE(rules.takes_image(folder));
  EXPECT_FALSE(rules.needs_image(folder));
  EXPECT_FALSE(rules.takes_last_image(folder));
  EXPECT_EQ(rules.pixel_step(folder), 32);
  EXPECT_EQ(folder.vae_scale_spatial(), 16);
  // The preview reads its 48 latent channels with their own factors.
  EXPECT_EQ(models::latent_rgb(folder).factors.sizes().vec(), (std::vector<int64_t>{48, 3}));
}

// The picture's condition, then one call with it: the first latent frame is the picture's, and its tokens are
// told timestep 0 while the others get the step's.
TEST(Wan22Ti2v, picture_frame_and_timestep_per_token) {
  const auto folder = plan::read_model_folder(test::golden_case(kCase));
  const auto out =
      models::wan_picture_conditioning(folder, test::picture_job(kCase), at::kFloat, at::kCPU, [](const std::string&) {});
  std::map<std::string, at::Tensor> got(out.record.begin(), out.record.end());
  EXPECT_EQ(test::max_abs_diff(got.at("image"), golden("image")), 0.0);
  for (const char* name : {"vae_encoder_output", "latent_condition", "condition"}) {
    const double err = test::max_abs_diff(got.at(name), golden(name));
    std::printf("wan22_ti2v_tiny %s: %.3g\n", name, err);
    EXPECT_LT(err, test::kCallTolerance) << name;
  }
  EXPECT_FALSE(out.image.defined());  // no image encoder: no image tokens

  const auto& cfg = folder.parts_as<plan::WanParts>().transformer;
  ASSERT_TRUE(cfg.expand_timesteps);
  const auto model = models::WanTransformer::load(test::golden_case(kCase) + "/transformer", cfg, at::kFloat, at::kCPU);
  models::StepInputs in;
  in.latents = golden("latents_init");
  in.condition = golden("condition");
  in.timestep = golden("timesteps").narrow(0, 0, 1);
  const auto c = model->condition(in);
  ASSERT_TRUE(c.token_rows.defined());
  // Token n's timestep is that of its row: row 1 (timestep 0) for the picture frame's 6 tokens.
  const auto per_token = at::where(c.token_rows == 1, at::zeros({1}), in.timestep).unsqueeze(0);
  EXPECT_TRUE(at::equal(per_token, golden("step0_timestep")));
  const auto pos = model->positions(model->token_grid(in.latents));
  for (const auto& [text, want] : {std::pair{"prompt_embeds", "step0_output_cond"},
                                   std::pair{"negative_prompt_embeds", "step0_output_uncond"}}) {
    in.text = golden(text);
    const double err = test::max_abs_diff(model->forward(in, pos), golden(want));
    std::printf("wan22_ti2v_tiny %s: %.3g\n", want, err);
    EXPECT_LT(err, test::kCallTolerance);
  }
  // After the last step the picture's frame is put back, to the bit.
  const auto last = golden("step_latents").select(0, 3);
  EXPECT_TRUE(at::equal(model->final_latents(last, in.condition), golden("final_latents")));
  // A condition of the wrong shape is refused, not broadcast.
  auto wrong = in;
  wrong.condition = golden("condition").narrow(3, 0, 2);
  EXPECT_THROW(model->forward(wrong, pos), InputError);
}

// From words alone every token takes the step's timestep: the ordinary path, equal to the reference's.
TEST(Wan22Ti2v, words_alone_one_timestep) {
  const auto folder = plan::read_model_folder(test::golden_case(kCase));
  const auto& cfg = folder.parts_as<plan::WanParts>().transformer;
  const auto model = models::WanTransformer::load(test::golden_case(kCase) + "/transformer", cfg, at::kFloat, at::kCPU);
  models::StepInputs in;
  in.latents = golden("t2v_latents_init");
  in.timestep = golden("t2v_timesteps").narrow(0, 0, 1);
  in.text = golden("t2v_prompt_embeds");
  EXPECT_FALSE(model->condition(in).token_rows.defined());
  const auto pos = model->positions(model->token_grid(in.latents));
  const double err = test::max_abs_diff(model->forward(in, pos), golden("t2v_step0_output_cond"));
  std::printf("wan22_ti2v_tiny t2v_step0_output_cond: %.3g\n", err);
  EXPECT_LT(err, test::kCallTolerance);
}

// dit-launch with the reference call's arguments (`g`: the image-to-video call, or its "t2v" one), `flags` added.
struct Run {
  test::Finished result;
  std::string tensors;
};

Run launch(const test::TempDir& tmp, const nlohmann::json& g, bool picture, const std::string& flags) {
  Run run{{}, tmp.path(std::string(picture ? "i2v" : "t2v") + ".safetensors")};
  test::Args args{"--model", test::golden_case(kCase), "--prompt", g["prompt"], "--negative_prompt",
                  g["negative_prompt"], "--seed", std::to_string(int(g["seed"])), "--height",
                  std::to_string(int(g["height"])), "--width", std::to_string(int(g["width"])), "--num_frames",
                  std::to_string(int(g["num_frames"])), "--num_inference_steps",
                  std::to_string(int(g["num_inference_steps"])), "--guidance_scale",
                  std::to_string(double(g["guidance_scale"])), "--max_sequence_length",
                  std::to_string(int(g["max_sequence_length"])), "--save_tensors", run.tensors};
  if (picture) args = args + test::Args{"--image", test::golden_case(kCase) + "/" + std::string(g["image"])};
  std::istringstream words(flags);
  for (std::string w; words >> w;) args.push_back(w);
  run.result = test::run(test::bin("dit-launch"), args, 240000);
  return run;
}

double expect_reference(const Run& run, const std::string& prefix, double bound) {
  EXPECT_EQ(run.result.code, 0) << run.result.err;
  if (run.result.code != 0) return 1e9;
  io::TensorFile f(run.tensors, "run");
  for (const char* ids : {"input_ids", "attention_mask", "negative_input_ids", "negative_attention_mask"})
    EXPECT_TRUE(at::equal(f.get_int64(ids), test::golden_ids(kCase, prefix + ids))) << ids;
  EXPECT_LT(test::max_abs_diff(f.get("prompt_embeds", 3, ""), golden(prefix + "prompt_embeds")), 1e-4);
  if (prefix.empty()) EXPECT_LT(test::max_abs_diff(f.get("condition", -1, ""), golden("condition")), 1e-4);
  // With two videos (data parallel) the first is the reference's.
  const double latents = test::max_abs_diff(f.get("final_latents", 5, "").narrow(0, 0, 1), golden(prefix + "final_latents"));
  const double video = test::max_abs_diff(f.get("video", 5, "").narrow(0, 0, 1), golden(prefix + "video"));
  std::printf("wan22_ti2v_tiny %s: final_latents %.3g, video %.3g\n", prefix.empty() ? "i2v" : "t2v", latents, video);
  EXPECT_LT(latents, bound);
  EXPECT_LT(video, bound);
  return latents;
}

class Ti2vThroughDitLaunch : public ::testing::TestWithParam<const char*> {
 protected:
  test::TempDir tmp_;
};

// 18 video tokens (3 latent frames of 2 x 3 patches), the picture frame's 6 first; Ring 4 pads the last rank.
TEST_P(Ti2vThroughDitLaunch, from_the_picture) {
  expect_reference(launch(tmp_, test::golden_json(kCase), true, GetParam()), "", test::kRunTolerance);
}

INSTANTIATE_TEST_SUITE_P(Mixes, Ti2vThroughDitLaunch,
                         ::testing::Values("", "--ulysses_degree 2 --use_parallel_vae", "--ring_degree 4 --use_parallel_vae",
                                           "--ulysses_degree 2 --ring_degree 2", "--use_cfg_parallel --ring_degree 3",
                                           "--pipefusion_parallel_degree 2 --num_pipeline_patch 2 --warmup_steps 4",
                                           "--pipefusion_parallel_degree 2 --ulysses_degree 2 --warmup_steps 4",
                                           "--data_parallel_degree 2 --num_videos_per_prompt 2",
                                           "--ulysses_degree 2 --shard_weights", "--use_fbcache --cache_threshold 0"),
                         test::flags_name);

TEST(Ti2vFromWords, one_process_and_sequence_parallel) {
  test::TempDir tmp;
  for (const char* flags : {"", "--ulysses_degree 2 --ring_degree 2 --use_parallel_vae"})
    expect_reference(launch(tmp, test::golden_json(kCase)["t2v"], false, flags), "t2v_", test::kRunTolerance);
}

// PipeFusion past its warm-up: each patch of token rows takes its own tokens' timesteps (the picture's frame
// is in every patch). Not exact by design (one-step-old keys and values for the patches not yet done);
// bounded, and above 1e-5 so that the steps really were pipelined.
TEST(Ti2vFromThePicture, pipelined_pipefusion_stays_near_the_reference) {
  test::TempDir tmp;
  const auto run = launch(tmp, test::golden_json(kCase), true,
                          "--pipefusion_parallel_degree 2 --num_pipeline_patch 2 --warmup_steps 1");
  const double drift = expect_reference(run, "", 0.05);
  EXPECT_GT(drift, 1e-5);
}

TEST(Ti2vRefusals, each_names_the_flag) {
  test::TempDir tmp;
  const auto g = test::golden_json(kCase);
  const std::string picture = test::golden_case(kCase) + "/image.png";
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases{
      {"--use_teacache", {"--use_teacache", "TI2V-5B"}},
      {"--enable_tiling --tile_sample_min_height 96", {"tile_sample_min_height", "64"}},
      {"--last_image " + picture, {"--last_image", "cannot end on a picture"}},
      {"--height 80", {"height", "32"}},
  };
  // A folder without vae/ cannot encode the picture: refused before any work, naming what is missing.
  test::copy_tree(test::golden_case(kCase), tmp.path("no_vae"));
  std::filesystem::remove_all(tmp.path("no_vae") + "/vae");
  const auto bare = test::run(test::bin("dit-launch"),
                              {"--model", tmp.path("no_vae"), "--prompt", "a boat", "--height", "64", "--width", "96",
                               "--num_frames", "9", "--image", picture, "--save_tensors", tmp.path("x.safetensors")},
                              60000);
  EXPECT_EQ(bare.code, 2) << bare.err;
  EXPECT_TRUE(test::contains(bare.err, "no vae/")) << bare.err;
  for (const auto& [flags, words] : cases) {
    const auto run = launch(tmp, g, true, flags);
    EXPECT_EQ(run.result.code, 2) << flags;  // a job the model cannot run
    for (const auto& w : words) EXPECT_TRUE(test::contains(run.result.err, w)) << flags << ": " << run.result.err;
  }
}

}  // namespace
