// The CogVideoX VAE decoder against the reference: every case's `video` from `vae_input`, to 1e-3, in
// one process and split by rows over 2, 3 and 4 ranks (threads over real Gloo sockets).
#include <ATen/ops/cat.h>

#include <cmath>

#include "plan/families/cogvideox_config.h"
#include "models/cogvideox/cogvideox_vae.h"
#include "parallel/mesh.h"
#include "parallel/parallel_vae.h"
#include "pipeline/decode.h"
#include "plan/error.h"
#include "plan/model_folder.h"
#include "row_decode.h"
#include "tensor_support.h"

using namespace studio;

namespace {

std::shared_ptr<models::CogVideoXVae> load_vae(const std::string& name) {
  auto folder = plan::read_model_folder(test::golden_case(name));
  return models::CogVideoXVae::load(folder.dir + "/vae", *folder.parts_as<plan::CogVideoXParts>().vae, at::kFloat,
                                   at::kCPU);
}

const auto kCases = ::testing::Values("cogvx2b_tiny", "cogvx5b_tiny", "cogvx15_tiny", "cogvx2b_t5_tiny");

class DecodesReference : public ::testing::TestWithParam<std::string> {};

TEST_P(DecodesReference, in_one_process) {
  const std::string n = GetParam();
  auto vae = load_vae(n);
  auto z = test::golden_tensor(n, "vae_input");
  int batches = 0;
  int64_t streamed = 0;
  std::vector<std::pair<int, int>> told;  // the progress heard after each batch
  vae->decode_batches(z, [&](const at::Tensor& b) {
    ++batches;
    streamed += b.size(2);
  }, nullptr, [&](int done, int total) { told.push_back({done, total}); });
  auto video = vae->decode(z);
  auto ref = test::golden_tensor(n, "video");
  EXPECT_EQ(video.sizes().vec(), test::golden_json(n)["video_frames"].get<std::vector<int64_t>>());
  EXPECT_EQ(int64_t(vae->output_frames(int(z.size(2)))), ref.size(2));
  EXPECT_EQ(streamed, ref.size(2));
  EXPECT_EQ(batches, std::max(int(z.size(2)) / 2, 1));
  ASSERT_EQ(told.size(), size_t(batches));
  for (int i = 0; i < batches; ++i) EXPECT_EQ(told[size_t(i)], std::make_pair(i + 1, batches));
  const double err = test::max_abs_diff(video, ref);
  std::printf("%s: video max error %.3g over %d batches\n", n.c_str(), err, batches);
  EXPECT_LT(err, test::kRunTolerance);
}

INSTANTIATE_TEST_SUITE_P(Cases, DecodesReference, kCases, [](const auto& info) { return info.param; });

class ParallelDecode : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(ParallelDecode, equals_the_reference) {
  const std::string n = std::get<0>(GetParam());
  const int ranks = std::get<1>(GetParam());
  auto vae = load_vae(n);
  auto z = test::golden_tensor(n, "vae_input");
  auto ref = test::golden_tensor(n, "video");
  std::vector<std::string> failure;
  const auto video = test::decode_on_ranks(*vae, z, ranks, failure);
  for (const auto& f : failure) ASSERT_TRUE(f.empty()) << f;
  ASSERT_EQ(video.sizes(), ref.sizes());
  const double err = test::max_abs_diff(video, ref);
  std::printf("%s on %d ranks: video max error %.3g (%lld latent rows)\n", n.c_str(), ranks, err, (long long)z.size(3));
  EXPECT_LT(err, test::kRunTolerance);
}

INSTANTIATE_TEST_SUITE_P(Cases, ParallelDecode, ::testing::Combine(kCases, ::testing::Values(2, 3, 4)),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" + std::to_string(std::get<1>(info.param)) + "_ranks";
                         });

TEST(Vae, more_ranks_than_rows_is_refused) {
  auto vae = load_vae("cogvx2b_tiny");
  auto z = test::golden_tensor("cogvx2b_tiny", "vae_input").narrow(3, 0, 1);
  plan::ParallelConfig p;
  p.ulysses_degree = 2;
  std::vector<::testing::AssertionResult> refused(2, ::testing::AssertionFailure() << "did not run");
  test::run_ranks(p, [&](int r, parallel::Mesh& mesh) {
    refused[size_t(r)] = test::throws_with<studio::InputError>(
        [&] { parallel::decode_by_rows(*vae, mesh.world(), z, [](const at::Tensor&) {}); },
        {"2 ranks cannot share 1 latent rows (8 pixels); use at most 1 ranks"});
  });
  EXPECT_TRUE(refused[0]);
  EXPECT_TRUE(refused[1]);
}

TEST(Vae, tiled_decode_blends_tiles_as_diffusers) {
  auto vae = load_vae("cogvx2b_tiny");
  auto z = test::golden_tensor("cogvx2b_tiny", "vae_input");  // 8 x 12 latent rows and columns
  auto ref = test::golden_tensor("cogvx2b_tiny", "video");
  // Latents that fit in one tile decode untiled, to the bit (the same call on the same latents).
  EXPECT_EQ(test::max_abs_diff(vae->decode_tiled(z, {240, 360}), vae->decode(z)), 0.0);
  // 32 x 48-pixel tiles (4 x 6 latent): three rows and three columns of tiles, blended over 5 and 9 pixels.
  models::TileOptions small;
  small.sample_height = 32;
  small.sample_width = 48;
  std::vector<std::pair<int, int>> told;
  auto tiled = vae->decode_tiled(z, small, [&](int done, int total) { told.push_back({done, total}); });
  ASSERT_EQ(tiled.sizes(), ref.sizes());
  // The tiles are the progress (not the frame batches inside each): 1/9 .. 9/9.
  ASSERT_EQ(told.size(), 9u);
  for (int i = 0; i < 9; ++i) EXPECT_EQ(told[size_t(i)], std::make_pair(i + 1, 9));
  const double max_err = test::max_abs_diff(tiled, ref), mean_err = (tiled - ref).abs().mean().item<double>();
  std::printf("tiled (32 x 48-pixel tiles) against the untiled reference: max %.3g, mean %.3g\n", max_err, mean_err);
  EXPECT_TRUE(std::isfinite(max_err));
  // diffusers' layout, checked on the first seam: tiles start every int(4 * 5/6) = 3 latent rows and
  // int(6 * 4/5) = 4 columns; each keeps 32 - int(32/6) = 27 rows and 48 - int(48/5) = 39 columns; the
  // first tile is kept as decoded (exactly: the same decode of the same latents), and the next one's first 9
  // columns (output columns 39-47) mix in linearly from the first tile's last 9.
  auto a = vae->decode(z.narrow(3, 0, 4).narrow(4, 0, 6)), b = vae->decode(z.narrow(3, 0, 4).narrow(4, 4, 6));
  EXPECT_EQ(test::max_abs_diff(tiled.narrow(3, 0, 27).narrow(4, 0, 39), a.narrow(3, 0, 27).narrow(4, 0, 39)), 0.0);
  for (int x = 0; x < 9; ++x) {
    const double w = x / 9.0;
    auto want = a.narrow(3, 0, 27).narrow(4, 39 + x, 1) * (1 - w) + b.narrow(3, 0, 27).narrow(4, x, 1) * w;
    // The engine rounds its weights to float before 1 - w: not the same arithmetic as here.
    EXPECT_LT(test::max_abs_diff(tiled.narrow(3, 0, 27).narrow(4, 39 + x, 1), want),
              test::scaled_bound(want, test::kCallTolerance))
        << "column " << x;
  }
}

TEST(Vae, slicing_decodes_each_video_alone_to_the_same_result) {
  auto folder = plan::read_model_folder(test::golden_case("cogvx15_tiny"));
  const auto& config = *folder.parts_as<plan::CogVideoXParts>().vae;
  auto vae = models::CogVideoXVae::load(folder.dir + "/vae", config, at::kFloat, at::kCPU);
  auto z1 = test::golden_tensor("cogvx15_tiny", "vae_input");
  auto latents = at::cat({z1, z1 * 0.5}, 0).permute({0, 2, 1, 3, 4}) * config.scaling_factor;  // [B, F, C, h, w]
  auto run = [&](bool slicing) {
    std::vector<std::vector<at::Tensor>> per(2);
    pipeline::DecodeOptions o;
    o.slicing = slicing;
    int calls = 0;
    pipeline::decode_latents(*vae, latents, 0, [&](const at::Tensor& f, int v, int) {
      ++calls;
      for (int64_t b = 0; b < f.size(0); ++b) per[size_t(v + b)].push_back(f.narrow(0, b, 1));
    }, o);
    return std::pair{at::cat({at::cat(per[0], 2), at::cat(per[1], 2)}, 0), calls};
  };
  auto [whole, batches] = run(false);
  auto [sliced, calls] = run(true);
  EXPECT_EQ(calls, 2 * batches);  // each video's frame batches on their own
  EXPECT_LT(test::max_abs_diff(whole.narrow(0, 0, 1), test::golden_tensor("cogvx15_tiny", "video")), test::kRunTolerance);
  // A batch of two against two batches of one: the kernels may split the work differently.
  EXPECT_LT(test::max_abs_diff(whole, sliced), test::scaled_bound(whole, test::kCallTolerance));
}

TEST(Vae, frame_counts_follow_the_reference_batching) {
  auto vae = load_vae("cogvx2b_tiny");
  EXPECT_EQ(vae->output_frames(13), 49);  // CogVideoX 1.0: 49 frames
  EXPECT_EQ(vae->output_frames(21), 81);  // CogVideoX 1.5: 81 frames
  EXPECT_EQ(vae->output_frames(3), 9);
  EXPECT_EQ(vae->output_frames(6), 24);
  EXPECT_EQ(vae->output_frames(1), 1);
}

}  // namespace
