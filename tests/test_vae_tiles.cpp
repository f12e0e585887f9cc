// Tiled VAE encoding (--enable_tiling reaches the picture's encode, as the pipelines' vae.encode with tiling on)
// and decoding against diffusers itself: tests/data/vae_tiles, made by make_vae_tiles.sh there, holds diffusers
// 0.35.2's tiles of the Wan2.1 VAE and CogVideoX's and 0.42.1's of the Wan2.2 VAE (0.35.2's fail on its patches:
// docs/image-to-video.md) and of HunyuanVideo-1.5's. The input is torch's randn from seed 0, which LibTorch's CPU generator draws alike.
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/ops/randn.h>

#include "io/weights/tensor_file.h"
#include "models/cogvideox/cogvideox_picture_encoder.h"
#include "models/cogvideox/cogvideox_vae.h"
#include "models/hunyuan15/hunyuan15_vae.h"
#include "models/wan/wan_vae.h"
#include "plan/families/hunyuan15_config.h"
#include "plan/families/wan_config.h"
#include "plan/model_folder.h"
#include "tensor_support.h"

using namespace studio;

namespace {

at::Tensor input(int64_t frames) {
  auto generator = at::make_generator<at::CPUGeneratorImpl>(0);
  return at::randn({1, 3, frames, 64, 96}, generator, at::TensorOptions(at::kFloat)).clamp(-1, 1);
}

at::Tensor reference(const std::string& file, const std::string& name) {
  return io::TensorFile(std::string(test::source_dir()) + "/tests/data/vae_tiles/" + file + ".safetensors", "reference")
      .get(name, -1, "");
}

std::shared_ptr<models::WanVae> wan_vae(const std::string& c) {
  const auto folder = plan::read_model_folder(test::golden_case(c));
  return models::WanVae::load(folder.dir + "/vae", *folder.parts_as<plan::WanParts>().vae, at::kFloat, at::kCPU,
                              /*with_encoder=*/true);
}

struct Told {
  int done = 0, total = 0;
  models::DecodeProgress fn() {
    return [this](int d, int t) { done = d, total = t; };
  }
};

TEST(VaeTiles, wan_encodes_and_decodes_in_tiles_as_diffusers) {
  // Wan2.1: 32-pixel tiles every 24 over 64 x 96 pixels, 3 x 4; the Wan2.2 VAE's tiles are 32 patches (64
  // pixels) every 24, 2 x 2, and its decode's 16 patches (32 pixels) every latent pixel, 4 x 6.
  for (const auto& [c, file, encode_tiles, decode_tiles] :
       {std::tuple{"wan21_i2v_tiny", "wan21", 12, 12}, std::tuple{"wan22_ti2v_tiny", "wan22", 4, 24}}) {
    const auto vae = wan_vae(c);
    for (int frames : {1, 5}) {
      const auto x = input(frames);
      Told told;
      const auto ours = vae->encode_tiled(x, {32, 32}, told.fn());
      const auto want = reference(file, "moments_tiled_" + std::to_string(frames));
      ASSERT_EQ(ours.sizes(), want.sizes()) << c;
      const double err = test::max_abs_diff(ours, want), tiling = test::max_abs_diff(vae->encode(x), want);
      std::printf("%s, %d frame(s): tiled encode %.3g from diffusers' (untiled is %.3g from it)\n", c, frames, err, tiling);
      EXPECT_LT(err, 1e-4) << c;
      EXPECT_GT(tiling, 1e-2) << c << ": the tiles must change the moments";
      EXPECT_EQ(told.done, encode_tiles) << c;
      EXPECT_EQ(told.total, encode_tiles) << c;
    }
    Told told;
    const auto decoded = vae->decode_tiled(reference(file, "z_1"), {32, 32}, told.fn());
    const double err = test::max_abs_diff(decoded, reference(file, "decoded_tiled_1"));
    std::printf("%s: tiled decode %.3g from diffusers'\n", c, err);
    EXPECT_LT(err, 1e-4) << c;
    EXPECT_EQ(told.total, decode_tiles) << c;
  }
}

TEST(VaeTiles, wan_pictures_within_a_tile_are_encoded_whole) {
  const auto vae = wan_vae("wan21_i2v_tiny");
  const auto x = input(1);
  EXPECT_TRUE(at::equal(vae->encode_tiled(x, {64, 96}), vae->encode(x)));
}

TEST(VaeTiles, cogvideox_encodes_the_picture_and_decodes_in_tiles_as_diffusers) {
  const auto folder = plan::read_model_folder(test::golden_case("cogvx5b_i2v_tiny"));
  const auto& cfg = *folder.parts_as<plan::CogVideoXParts>().vae;
  const auto picture = input(1).squeeze(2);
  const auto encoder = models::CogVideoXPictureEncoder::load(folder.dir + "/vae", cfg, at::kFloat, at::kCPU);
  // 48 x 40-pixel tiles: down every 40 (a sixth overlaps), across every 32 (a fifth): 2 x 3.
  Told told;
  const auto ours = encoder->moments_tiled(picture, {48, 40}, told.fn());
  const auto want = reference("cogvideox", "moments_tiled_1");
  ASSERT_EQ(ours.sizes(), want.sizes());
  const double err = test::max_abs_diff(ours, want), tiling = test::max_abs_diff(encoder->moments(picture), want);
  std::printf("cogvx5b_i2v_tiny: tiled encode %.3g from diffusers' (untiled is %.3g from it)\n", err, tiling);
  EXPECT_LT(err, 1e-4);
  EXPECT_GT(tiling, 1e-2);
  EXPECT_EQ(told.total, 6);
  EXPECT_TRUE(at::equal(encoder->moments_tiled(picture, {64, 96}), encoder->moments(picture)));
  const auto vae = models::CogVideoXVae::load(folder.dir + "/vae", cfg, at::kFloat, at::kCPU);
  const double decode_err = test::max_abs_diff(vae->decode_tiled(reference("cogvideox", "z_1"), {48, 40}),
                                               reference("cogvideox", "decoded_tiled_1"));
  std::printf("cogvx5b_i2v_tiny: tiled decode %.3g from diffusers'\n", decode_err);
  EXPECT_LT(decode_err, 1e-4);
}

TEST(VaeTiles, hunyuan15_encodes_and_decodes_in_tiles_as_diffusers) {
  const auto folder = plan::read_model_folder(test::golden_case("hunyuan15_i2v_tiny"));
  auto weights = io::WeightSet::open(folder.dir + "/vae", "diffusion_pytorch_model");
  const auto vae = models::Hunyuan15Vae::load(weights, *folder.parts_as<plan::Hunyuan15Parts>().vae, at::kFloat,
                                              at::kCPU, /*with_encoder=*/true);
  // Tiles of 64 pixels starting every three quarters of a tile: two rows of two over the input.
  for (int frames : {1, 5}) {
    const auto x = input(frames);
    Told told;
    const auto ours = vae->encode_tiled(x, {64, 64}, told.fn());
    const auto want = reference("hunyuan15", "moments_tiled_" + std::to_string(frames));
    ASSERT_EQ(ours.sizes(), want.sizes());
    const double err = test::max_abs_diff(ours, want), tiling = test::max_abs_diff(vae->encode(x), want);
    std::printf("hunyuan15, %d frame(s): tiled encode %.3g from diffusers' (untiled is %.3g from it)\n", frames, err,
                tiling);
    EXPECT_LT(err, 1e-4);
    EXPECT_GT(tiling, 1e-2) << "the tiles must change the moments";
    EXPECT_EQ(told.total, 4);
  }
  EXPECT_TRUE(at::equal(vae->encode_tiled(input(1), {64, 96}), vae->encode(input(1))));  // one tile: whole
  const double decode_err = test::max_abs_diff(vae->decode_tiled(reference("hunyuan15", "z_1"), {64, 64}),
                                               reference("hunyuan15", "decoded_tiled_1"));
  std::printf("hunyuan15: tiled decode %.3g from diffusers'\n", decode_err);
  EXPECT_LT(decode_err, 1e-4);
}

}  // namespace
