// HunyuanVideo-1.5's VAE decoder against the hunyuan15_tiny reference (diffusers 0.42.1): its config, the
// final latents made its input, and the decoded video.
#include "io/weights/weights.h"
#include "models/hunyuan15/hunyuan15_vae.h"
#include "plan/error.h"
#include "plan/model_folder.h"
#include "tensor_support.h"

using namespace studio;

namespace {

const std::string kCase = "hunyuan15_tiny";

at::Tensor golden(const std::string& name) { return test::golden_tensor(kCase, name); }

std::string config_file() { return test::golden_case(kCase) + "/vae/config.json"; }

std::shared_ptr<models::Hunyuan15Vae> load() {
  const auto cfg = plan::parse_hunyuan15_vae_config(plan::read_text_file(config_file()), config_file());
  auto weights = io::WeightSet::open(test::golden_case(kCase) + "/vae", "diffusion_pytorch_model");
  return models::Hunyuan15Vae::load(weights, cfg, at::kFloat, at::kCPU);
}

}  // namespace

TEST(Hunyuan15Vae, config_is_read_and_checked) {
  const auto c = plan::parse_hunyuan15_vae_config(plan::read_text_file(config_file()), config_file());
  EXPECT_EQ(c.latent_channels, 16);
  EXPECT_EQ(c.spatial_upsamples(), 4);
  EXPECT_EQ(c.temporal_upsamples(), 2);
  auto edited = [&](const char* key, const char* value) {
    auto j = nlohmann::json::parse(plan::read_text_file(config_file()));
    j[key] = nlohmann::json::parse(value);
    return j.dump();
  };
  EXPECT_TRUE(test::throws_with<InputError>(
      [&] { plan::parse_hunyuan15_vae_config(edited("spatial_compression_ratio", "12"), config_file()); },
      {"spatial_compression_ratio", "12", "power of two"}));
  EXPECT_TRUE(test::throws_with<InputError>(
      [&] { plan::parse_hunyuan15_vae_config(edited("block_out_channels", "[8, 8, 16, 32]"), config_file()); },
      {"block_out_channels", "more levels than log2(spatial_compression_ratio) 4"}));
}

TEST(Hunyuan15Vae, decodes_as_the_reference) {
  const auto vae = load();
  const auto z = vae->prepare(golden("final_latents"), 0);
  EXPECT_LT(test::max_abs_diff(z, golden("vae_input")), test::kRunTolerance);
  EXPECT_EQ(vae->output_frames(int(z.size(2))), 9);
  at::Tensor video;
  std::vector<std::pair<int, int>> told;  // the whole video in one pass: its levels are the progress
  vae->decode_batches(z, [&](const at::Tensor& batch) { video = batch; }, nullptr,
                      [&](int done, int total) { told.push_back({done, total}); });
  const int levels = told.empty() ? 0 : told.back().second;
  EXPECT_GE(levels, 3);  // the middle block, the up blocks, the output
  ASSERT_EQ(told.size(), size_t(levels));
  for (int i = 0; i < levels; ++i) EXPECT_EQ(told[size_t(i)], std::make_pair(i + 1, levels));
  const double err = test::max_abs_diff(video, golden("video"));
  EXPECT_LT(err, test::kRunTolerance);
  std::printf("video: max abs diff %.3g (values up to %.3g)\n", err, test::max_abs(golden("video")));
}
