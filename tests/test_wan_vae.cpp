// Wan's VAE decoder (AutoencoderKLWan) against the reference: each case's `video` from its `final_latents`,
// to 1e-3, in one process and split by rows over 2 and 3 ranks (threads over real Gloo sockets); the tiled
// decode laid out and blended as diffusers' tiled_decode (which a throwaway diffusers 0.35.2 run matched
// to 1e-5 on these latents); configs it does not run refused by field.
#include <ATen/ops/abs.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros_like.h>

#include "models/wan/wan_vae.h"
#include "parallel/mesh.h"
#include "parallel/parallel_vae.h"
#include "plan/error.h"
#include "plan/families/wan_vae_config.h"
#include "row_decode.h"
#include "tensor_support.h"

using namespace studio;

namespace {

plan::WanVaeConfig read_config(const std::string& name) {
  const std::string file = test::golden_case(name) + "/vae/config.json";
  return plan::parse_wan_vae_config(test::read_file(file), file);
}

std::shared_ptr<models::WanVae> load_vae(const std::string& name) {
  return models::WanVae::load(test::golden_case(name) + "/vae", read_config(name), at::kFloat, at::kCPU);
}

at::Tensor golden_z(const models::WanVae& vae, const std::string& name) {
  return vae.prepare(test::golden_tensor(name, "final_latents"), 0);
}

const auto kCases = ::testing::Values("wan21_tiny", "wan22_tiny");

class WanDecodesReference : public ::testing::TestWithParam<std::string> {};

TEST_P(WanDecodesReference, in_one_process) {
  const std::string n = GetParam();
  auto vae = load_vae(n);
  auto z = golden_z(*vae, n);
  std::vector<int64_t> batch_frames;
  std::vector<at::Tensor> batches;
  vae->decode_batches(z, [&](const at::Tensor& b) {
    batch_frames.push_back(b.size(2));
    batches.push_back(b);
  });
  auto video = at::cat(batches, 2);
  auto ref = test::golden_tensor(n, "video");
  ASSERT_EQ(video.sizes(), ref.sizes());
  EXPECT_EQ(int64_t(vae->output_frames(int(z.size(2)))), ref.size(2));
  EXPECT_EQ(batch_frames, (std::vector<int64_t>{1, 4, 4}));  // the first latent frame alone, then 4 each
  const double err = test::max_abs_diff(video, ref);
  std::printf("%s: video max error %.3g\n", n.c_str(), err);
  EXPECT_LT(err, test::kRunTolerance);
  EXPECT_LE(test::max_abs(video), 1.0);
}

INSTANTIATE_TEST_SUITE_P(Cases, WanDecodesReference, kCases, [](const auto& info) { return info.param; });

class WanParallelDecode : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(WanParallelDecode, equals_one_process) {
  const std::string n = std::get<0>(GetParam());
  const int ranks = std::get<1>(GetParam());
  auto vae = load_vae(n);
  auto z = golden_z(*vae, n);
  const auto whole = vae->decode(z);
  std::vector<std::string> failure;
  const auto video = test::decode_on_ranks(*vae, z, ranks, failure);
  for (const auto& f : failure) ASSERT_TRUE(f.empty()) << f;
  ASSERT_EQ(video.sizes(), whole.sizes());
  const double err = test::max_abs_diff(video, whole);
  const double ref_err = test::max_abs_diff(video, test::golden_tensor(n, "video"));
  std::printf("%s on %d ranks: %.3g from one process, %.3g from the reference (%lld latent rows)\n", n.c_str(), ranks,
              err, ref_err, (long long)z.size(3));
  EXPECT_LT(err, test::kCallTolerance);
  EXPECT_LT(ref_err, test::kRunTolerance);
}

INSTANTIATE_TEST_SUITE_P(Cases, WanParallelDecode, ::testing::Combine(kCases, ::testing::Values(2, 3)),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" + std::to_string(std::get<1>(info.param)) + "_ranks";
                         });

// |got - want| where `inside` holds, 0 elsewhere.
double max_diff_where(const at::Tensor& got, const at::Tensor& want, const at::Tensor& inside) {
  return test::max_abs(at::where(inside, got - want, at::zeros_like(want)));
}

TEST(WanVae, tiled_decode_blends_tiles_as_diffusers) {
  auto vae = load_vae("wan21_tiny");
  auto z = golden_z(*vae, "wan21_tiny");  // 8 x 12 latent rows and columns
  const auto whole = vae->decode(z);
  // Latents that fit in one tile decode untiled, to the bit.
  EXPECT_EQ(test::max_abs_diff(vae->decode_tiled(z, {64, 96}), whole), 0.0);
  // 32 x 32-pixel tiles (4 x 4 latent) start every 3 latent rows and columns, keep 24 x 24 pixels and
  // blend over 8: three rows and four columns of tiles.
  auto tiled = vae->decode_tiled(z, {32, 32});
  ASSERT_EQ(tiled.sizes(), whole.sizes());
  std::printf("tiled (32 x 32-pixel tiles) against untiled: max %.3g\n", test::max_abs_diff(tiled, whole));
  // The tiles are blended as decoded, not clamped (diffusers 0.35.2); decode() clamps, so the tiles are
  // compared where decode() left them inside (-1, 1).
  auto a = vae->decode(z.narrow(3, 0, 4).narrow(4, 0, 4)), b = vae->decode(z.narrow(3, 0, 4).narrow(4, 3, 4));
  // The first tile is kept as decoded.
  auto first = a.narrow(3, 0, 24).narrow(4, 0, 24);
  EXPECT_EQ(max_diff_where(tiled.narrow(3, 0, 24).narrow(4, 0, 24), first, at::abs(first) < 1), 0.0);
  // The next tile's first 8 columns (output columns 24-31) mix in linearly from the first tile's last 8.
  for (int x = 0; x < 8; ++x) {
    const double w = x / 8.0;
    auto left = a.narrow(3, 0, 24).narrow(4, 24 + x, 1), right = b.narrow(3, 0, 24).narrow(4, x, 1);
    auto got = tiled.narrow(3, 0, 24).narrow(4, 24 + x, 1);
    EXPECT_LT(max_diff_where(got, left * (1 - w) + right * w, (at::abs(left) < 1) & (at::abs(right) < 1)),
              test::kCallTolerance)
        << "column " << x;
  }
}

TEST(WanVae, frame_counts_and_latents_layout) {
  auto vae = load_vae("wan21_tiny");
  EXPECT_EQ(vae->output_frames(21), 81);  // Wan's 81 frames
  EXPECT_EQ(vae->output_frames(3), 9);
  EXPECT_EQ(vae->output_frames(1), 1);
  EXPECT_EQ(vae->spatial_compression(), 8);
  // De-normalised per channel: latents * std + mean.
  const auto latents = test::golden_tensor("wan21_tiny", "final_latents");
  const auto& cfg = vae->config();
  const auto z = vae->prepare(latents, 1);
  ASSERT_EQ(z.size(2), latents.size(2) - 1);
  for (int c : {0, 7, 15}) {
    const auto x = latents.select(1, c).narrow(1, 1, z.size(2));
    const auto want = x * cfg.latents_std[size_t(c)] + cfg.latents_mean[size_t(c)];
    EXPECT_LT(test::max_abs_diff(z.select(1, c), want), 1e-5) << "channel " << c;
  }
}

nlohmann::json golden_config() {
  return nlohmann::json::parse(test::read_file(test::golden_case("wan21_tiny") + "/vae/config.json"));
}

TEST(WanVae, config_fields_it_does_not_run_are_refused) {
  const auto refused = [](const std::string& key, const nlohmann::json& value,
                          std::initializer_list<const char*> parts) {
    auto j = golden_config();
    j[key] = value;
    return test::throws_with<InputError>([&] { plan::parse_wan_vae_config(j.dump(), "vae/config.json"); }, parts);
  };
  // Patches of 2 need channels that hold them (the Wan2.2 VAE's 12 = 3 x 2 x 2); larger ones do not exist.
  EXPECT_TRUE(refused("patch_size", 2, {"vae/config.json", "'patch_size'", "whole patches"}));
  EXPECT_TRUE(refused("patch_size", 4, {"vae/config.json", "'patch_size'"}));
  EXPECT_TRUE(refused("scale_factor_spatial", 16, {"'scale_factor_spatial'", "8"}));
  EXPECT_TRUE(refused("latents_std", {1.0, 2.0}, {"'latents_std'", "z_dim = 16"}));
  EXPECT_TRUE(refused("temperal_downsample", {true, true}, {"'temperal_downsample'", "3"}));
  EXPECT_TRUE(refused("scale_factor_temporal", 8, {"'scale_factor_temporal'", "4"}));
  EXPECT_TRUE(refused("_class_name", "AutoencoderKL", {"AutoencoderKLWan"}));
  // Accepted: what diffusers accepts and the decoder runs the same way.
  auto j = golden_config();
  j["patch_size"] = 1;
  j["decoder_base_dim"] = 8;
  const auto cfg = plan::parse_wan_vae_config(j.dump(), "vae/config.json");
  EXPECT_EQ(cfg.decoder_dims(), (std::vector<int>{32, 32, 32, 16, 8}));
  EXPECT_EQ(cfg.temporal_compression(), 4);
}

TEST(WanVae, weights_are_checked_against_the_config) {
  auto j = golden_config();
  j["base_dim"] = 16;
  const auto cfg = plan::parse_wan_vae_config(j.dump(), "vae/config.json");
  EXPECT_TRUE(test::throws_with<InputError>(
      [&] { models::WanVae::load(test::golden_case("wan21_tiny") + "/vae", cfg, at::kFloat, at::kCPU); },
      {"decoder.conv_in.weight"}));
}

}  // namespace
