// Wan image-to-video's parts against the wan21_i2v_tiny and wan22_i2v_tiny references (diffusers 0.35.2's
// WanImageToVideoPipeline, transformers 4.56.2): the picture read and preprocessed for the VAE and for CLIP
// (PIL's Lanczos and bicubic to the last bit), CLIP's hidden_states[-2], the VAE encoder's moments, the
// condition (mask and normalised mean) and one transformer call with the condition's channels and image
// tokens. The whole run from the picture, and its parallel mixes, are in test_wan; PIL's resizes and the
// pictures refused are in test_pictures.
#include <ATen/ops/cat.h>
#include <ATen/ops/full.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/zeros.h>

#include <cstdio>

#include "io/safetensors/safetensors_file.h"
#include "models/image/clip_vision_encoder.h"
#include "models/wan/wan_pictures.h"
#include "models/wan/wan_transformer.h"
#include "models/wan/wan_vae.h"
#include "plan/error.h"
#include "plan/family.h"
#include "plan/families/wan_config.h"
#include "plan/job.h"
#include "plan/model_folder.h"
#include "tensor_support.h"

using namespace studio;

namespace {

const auto kCases = ::testing::Values("wan21_i2v_tiny", "wan22_i2v_tiny");

class WanPictures : public ::testing::TestWithParam<std::string> {};

TEST_P(WanPictures, condition_equals_the_reference) {
  const std::string c = GetParam();
  const auto folder = plan::read_model_folder(test::golden_case(c));
  const auto out = models::wan_picture_conditioning(folder, test::picture_job(c), at::kFloat, at::kCPU, [](const std::string&) {});
  std::map<std::string, at::Tensor> got(out.record.begin(), out.record.end());
  // The 8-bit picture, / 255, 2x - 1: exact.
  EXPECT_EQ(test::max_abs_diff(got.at("image"), test::golden_tensor(c, "image")), 0.0);
  for (const char* name : {"vae_encoder_output", "latent_condition", "condition"}) {
    const double err = test::max_abs_diff(got.at(name), test::golden_tensor(c, name));
    std::printf("%s %s: %.3g\n", c.c_str(), name, err);
    EXPECT_LT(err, test::kCallTolerance) << name;
  }
  EXPECT_TRUE(at::equal(got.at("mask"), test::golden_tensor(c, "mask")));
  const bool clip = c == "wan21_i2v_tiny";
  EXPECT_EQ(got.count("image_embeds"), size_t(clip));
  EXPECT_EQ(out.image.defined(), clip);
  if (clip) {
    // CLIP's processor resizes the 96 x 64 picture to 336 x 224 (PIL bicubic) and crops the middle.
    const double pixels = test::max_abs_diff(got.at("clip_pixel_values"), test::golden_tensor(c, "clip_pixel_values"));
    const double embeds = test::max_abs_diff(got.at("image_embeds"), test::golden_tensor(c, "image_embeds"));
    std::printf("%s clip_pixel_values %.3g, image_embeds %.3g\n", c.c_str(), pixels, embeds);
    EXPECT_LT(pixels, test::kCallTolerance);
    EXPECT_LT(embeds, test::kCallTolerance);
  }
}

// One call of the (first) transformer on the reference's step-0 input: its 36 channels are the noise, the
// mask and the picture's latents; Wan2.1's cross-attention also reads the 257 image tokens.
TEST_P(WanPictures, transformer_call_with_the_condition) {
  const std::string c = GetParam();
  const std::string file = test::golden_case(c) + "/transformer/config.json";
  const auto cfg = plan::parse_wan_transformer_config(plan::read_text_file(file), file);
  const auto model = models::WanTransformer::load(test::golden_case(c) + "/transformer", cfg, at::kFloat, at::kCPU);
  const auto input = test::golden_tensor(c, "step0_hidden_states");
  const int64_t out = cfg.out_channels;
  models::StepInputs in;
  in.latents = input.narrow(1, 0, out);
  in.condition = input.narrow(1, out, input.size(1) - out);
  in.timestep = test::golden_tensor(c, "step0_timestep").to(at::kFloat);
  if (cfg.image_dim) in.image = test::golden_tensor(c, "image_embeds");
  const auto pos = model->positions(model->token_grid(in.latents));
  for (const auto& [text, want] : {std::pair{"prompt_embeds", "step0_output_cond"},
                                   std::pair{"negative_prompt_embeds", "step0_output_uncond"}}) {
    in.text = test::golden_tensor(c, text);
    const double err = test::max_abs_diff(model->forward(in, pos), test::golden_tensor(c, want));
    std::printf("%s %s: %.3g\n", c.c_str(), want, err);
    EXPECT_LT(err, test::kCallTolerance);
  }
  // Without the condition, or with image tokens the model has no embedding for: refused, not guessed.
  auto bare = in;
  bare.condition = at::Tensor();
  EXPECT_THROW(model->forward(bare, pos), InputError);
  auto extra = in;
  if (cfg.image_dim) extra.image = at::Tensor();
  else extra.image = at::zeros({1, 257, 32});
  EXPECT_THROW(model->forward(extra, pos), InputError);
}

INSTANTIATE_TEST_SUITE_P(Cases, WanPictures, kCases, [](const auto& info) { return info.param; });

// The VAE encoder over a whole conditioning video: the first frame alone, then 4 at a time, its causal
// caches carried from chunk to chunk (the reference's 9 frames make 3 latent frames).
TEST(WanVaeEncoder, chunks_carry_their_past) {
  const std::string c = "wan22_i2v_tiny", file = test::golden_case(c) + "/vae/config.json";
  const auto cfg = plan::parse_wan_vae_config(plan::read_text_file(file), file);
  const auto vae = models::WanVae::load(test::golden_case(c) + "/vae", cfg, at::kFloat, at::kCPU, true);
  const auto image = test::golden_tensor(c, "image").unsqueeze(2);
  const auto video = at::cat({image, at::zeros({1, 3, 8, image.size(3), image.size(4)})}, 2);
  const auto moments = vae->encode(video);
  EXPECT_LT(test::max_abs_diff(moments, test::golden_tensor(c, "vae_encoder_output")), test::kCallTolerance);
  // Frames not 4k + 1, and a VAE loaded without its encoder, are refused by name.
  EXPECT_THROW(vae->encode(video.narrow(2, 0, 4)), InputError);
  const auto decoder_only = models::WanVae::load(test::golden_case(c) + "/vae", cfg, at::kFloat, at::kCPU);
  try {
    decoder_only->encode(video);
    ADD_FAILURE() << "encoded without an encoder";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("encoder"), std::string::npos) << e.what();
  }
}

// Wan2.1-FLF2V's shape, made from wan21_i2v_tiny with its learned positions for two pictures (no reference
// case pins FLF2V): both pictures' CLIP tokens become one sequence of 514, the end picture is the video's
// last frame and the mask's, and the model refuses one picture's tokens.
TEST(WanFirstAndLastFrame, both_pictures_reach_the_model) {
  test::TempDir tmp;
  const std::string dir = tmp.path("flf2v");
  test::copy_tree(test::golden_case("wan21_i2v_tiny"), dir);
  test::edit_json(dir + "/transformer/config.json", [](nlohmann::json& j) { j["pos_embed_seq_len"] = 514; });
  const std::string weights = dir + "/transformer/diffusion_pytorch_model.safetensors";
  std::vector<std::pair<std::string, at::Tensor>> tensors;
  {
    io::TensorFile f(weights, "transformer");
    const auto file = io::SafetensorsFile::open(weights);
    for (const auto& t : file->tensors()) tensors.emplace_back(t.name, f.get(t.name, -1, "").clone());
  }
  tensors.emplace_back("condition_embedder.image_embedder.pos_embed", at::randn({1, 514, 32}) * 0.02);
  io::save_tensors(weights, tensors);
  const auto folder = plan::read_model_folder(dir);
  EXPECT_EQ(folder.variant.id, "wan2.1-flf2v");
  EXPECT_TRUE(plan::rules_of(folder).takes_last_image(folder));

  auto job = test::picture_job("wan21_i2v_tiny");
  job.model_dir = dir;
  // One picture is refused by the plan, before any work, naming the flag that would make it two.
  const auto last_image_problem = [&] {
    for (const auto& p : plan::validate(job, folder))
      if (p.field == "last_image") return p.message;
    return std::string();
  };
  EXPECT_NE(last_image_problem().find("give the one the clip ends on with --last_image FILE"), std::string::npos)
      << last_image_problem();
  job.last_image_file = std::string(test::source_dir()) + "/tests/data/pictures/bicubic_37x80.png";  // resized
  EXPECT_EQ(last_image_problem(), "");
  const auto out = models::wan_picture_conditioning(folder, job, at::kFloat, at::kCPU, [](const std::string&) {});
  ASSERT_EQ(out.image.sizes().vec(), (std::vector<int64_t>{1, 514, 32}));
  const auto mask = out.condition.narrow(1, 0, 4);  // [1, 4, 3, h, w]: frame 0, then the last video frame
  EXPECT_EQ(mask.select(2, 0).min().item<float>(), 1.0f);
  EXPECT_EQ(mask.select(2, 1).max().item<float>(), 0.0f);
  EXPECT_EQ(mask.select(2, 2).narrow(1, 0, 3).max().item<float>(), 0.0f);
  EXPECT_EQ(mask.select(2, 2).narrow(1, 3, 1).min().item<float>(), 1.0f);
  // The end picture's latents differ from the first picture's, frame by frame.
  const auto latents = out.condition.narrow(1, 4, 16);
  EXPECT_GT(test::max_abs_diff(latents.select(2, 2), latents.select(2, 0)), 0.1);

  const auto cfg = folder.parts_as<plan::WanParts>().transformer;
  const auto model = models::WanTransformer::load(dir + "/transformer", cfg, at::kFloat, at::kCPU);
  models::StepInputs in;
  in.latents = at::randn({1, 16, 3, 8, 12});
  in.condition = out.condition;
  in.image = out.image;
  in.text = test::golden_tensor("wan21_i2v_tiny", "prompt_embeds");
  in.timestep = at::full({1}, 999.0);
  const auto pos = model->positions(model->token_grid(in.latents));
  EXPECT_EQ(model->forward(in, pos).sizes().vec(), in.latents.sizes().vec());
  in.image = out.image.narrow(1, 0, 257);
  EXPECT_THROW(model->forward(in, pos), InputError);
}

}  // namespace
