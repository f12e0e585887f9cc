// HunyuanVideo-1.5's VAE against the references of diffusers 0.42.1: its config; the decoder on hunyuan15_tiny
// (the final latents made its input, the decoded video); the encoder on hunyuan15_i2v_tiny (the picture's
// moments and its latents).
#include <ATen/ops/cat.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/rand.h>
#include <ATen/ops/zeros.h>

#include <cmath>
#include <filesystem>

#include "io/safetensors/safetensors_file.h"
#include "io/weights/weights.h"
#include "models/hunyuan15/hunyuan15_vae.h"
#include "plan/error.h"
#include "plan/model_folder.h"
#include "row_decode.h"
#include "tensor_support.h"

using namespace studio;

namespace {

const std::string kCase = "hunyuan15_tiny";
const std::string kPictureCase = "hunyuan15_i2v_tiny";

at::Tensor golden(const std::string& name) { return test::golden_tensor(kCase, name); }

std::string config_file(const std::string& c = kCase) { return test::golden_case(c) + "/vae/config.json"; }

plan::Hunyuan15VaeConfig config(const std::string& c = kCase) {
  return plan::parse_hunyuan15_vae_config(plan::read_text_file(config_file(c)), config_file(c));
}

std::shared_ptr<models::Hunyuan15Vae> load(const std::string& c = kCase, bool with_encoder = false) {
  auto weights = io::WeightSet::open(test::golden_case(c) + "/vae", "diffusion_pytorch_model");
  return models::Hunyuan15Vae::load(weights, config(c), at::kFloat, at::kCPU, with_encoder);
}

}  // namespace

// The plan counts the decoder's weights from the config: as many as the reference folder's file holds, and the
// real configuration's (the defaults) as many as a folder bench-make-model writes with it.
TEST(Hunyuan15Vae, the_plan_counts_the_decoders_weights) {
  const auto file = io::SafetensorsFile::open(test::golden_case(kCase) + "/vae/diffusion_pytorch_model.safetensors");
  int64_t in_file = 0;
  for (const auto& t : file->tensors())
    if (t.name.rfind("decoder.", 0) == 0) in_file += t.numel();
  EXPECT_EQ(config().decoder_parameters(), in_file);
  EXPECT_EQ(plan::Hunyuan15VaeConfig{}.decoder_parameters(), 871309571);
}

TEST(Hunyuan15Vae, config_is_read_and_checked) {
  const auto c = config();
  EXPECT_EQ(c.in_channels, 3);
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
  EXPECT_TRUE(test::throws_with<InputError>(
      [&] { plan::parse_hunyuan15_vae_config(edited("block_out_channels", "[8, 8, 16, 16, 16]"), config_file()); },
      {"block_out_channels", "multiple of 2 x latent_channels 32"}));
  EXPECT_TRUE(test::throws_with<InputError>(
      [&] { plan::parse_hunyuan15_vae_config(edited("block_out_channels", "[8, 8, 2, 8, 32]"), config_file()); },
      {"block_out_channels", "downsampler cannot average"}));
  EXPECT_TRUE(test::throws_with<InputError>(
      [&] { plan::parse_hunyuan15_vae_config(edited("downsample_match_channel", "false"), config_file()); },
      {"downsample_match_channel", "not supported"}));
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

TEST(Hunyuan15Vae, encodes_a_picture_as_the_reference) {
  const auto vae = load(kPictureCase, /*with_encoder=*/true);
  auto reference = [](const std::string& name) { return test::golden_tensor(kPictureCase, name); };
  const auto moments = vae->encode(reference("vae_encoder_input"));
  const double err = test::max_abs_diff(moments, reference("vae_encoder_output"));
  EXPECT_LT(err, test::kCallTolerance);
  const auto cfg = config(kPictureCase);
  const auto latents = moments.narrow(1, 0, cfg.latent_channels) * cfg.scaling_factor;  // the mean, scaled
  const double latents_err = test::max_abs_diff(latents, reference("image_latents"));
  EXPECT_LT(latents_err, test::kCallTolerance);
  std::printf("vae_encoder_output: max abs diff %.3g (values up to %.3g); image_latents: %.3g\n", err,
              test::max_abs(reference("vae_encoder_output")), latents_err);

  // Causal: the picture followed by 4 more frames encodes to its own moments, then one more latent frame.
  const auto picture = reference("vae_encoder_input");
  const auto video = vae->encode(at::cat({picture, at::rand({1, 3, 4, 48, 80}) * 2 - 1}, 2));
  ASSERT_EQ(video.sizes(), at::IntArrayRef({1, 32, 2, 3, 5}));
  EXPECT_LT(test::max_abs_diff(video.narrow(2, 0, 1), reference("vae_encoder_output")), test::kCallTolerance);
}

TEST(Hunyuan15Vae, encoder_refuses_what_it_cannot_encode) {
  const auto vae = load(kPictureCase, /*with_encoder=*/true);
  auto refused = [&](std::vector<int64_t> shape) {
    return test::throws_with<InputError>([&] { vae->encode(at::zeros(shape)); },
                                         {io::shape_str(shape).c_str(), "[B, 3, F, H, W]", "F = 1 + 4k", "16"});
  };
  EXPECT_TRUE(refused({1, 3, 48, 80}));  // a picture without its frame axis
  EXPECT_TRUE(refused({1, 4, 1, 48, 80}));  // RGBA
  EXPECT_TRUE(refused({1, 3, 2, 48, 80}));  // frames not 1 + 4k
  EXPECT_TRUE(refused({1, 3, 1, 40, 80}));  // rows not a multiple of 16

  // A vae/ folder with the decoder's weights only decodes, and says why it cannot encode.
  test::TempDir tmp;
  std::filesystem::create_directories(tmp.path("vae"));
  std::filesystem::copy_file(config_file(kPictureCase), tmp.path("vae/config.json"));
  const auto file =
      io::SafetensorsFile::open(test::golden_case(kPictureCase) + "/vae/diffusion_pytorch_model.safetensors");
  std::vector<io::TensorToWrite> decoder;
  for (const auto& t : file->tensors())
    if (t.name.rfind("encoder.", 0) != 0) decoder.push_back({t.name, t.dtype, t.shape, file->data(t)});
  io::write_safetensors(tmp.path("vae/diffusion_pytorch_model.safetensors"), decoder);
  auto weights = [&] { return io::WeightSet::open(tmp.path("vae"), "diffusion_pytorch_model"); };
  auto decoder_only = weights();
  EXPECT_NE(models::Hunyuan15Vae::load(decoder_only, config(kPictureCase), at::kFloat, at::kCPU), nullptr);
  auto no_encoder = weights();
  EXPECT_TRUE(test::throws_with<InputError>(
      [&] { models::Hunyuan15Vae::load(no_encoder, config(kPictureCase), at::kFloat, at::kCPU, true); },
      {tmp.path("vae").c_str(), "no encoder weights"}));
}

// Tiles as diffusers' tiled_decode makes them (the same blend as the other VAEs'): latents within one tile are
// decoded untiled, and the part of the first tile no neighbour blends into is that tile's own decode.
TEST(Hunyuan15Vae, decodes_in_tiles) {
  const auto vae = load();
  const auto z = vae->prepare(golden("final_latents"), 0);  // 3 x 4 latent pixels
  const auto whole = vae->decode(z);
  EXPECT_TRUE(at::equal(vae->decode_tiled(z, {48, 64}), whole));
  // 32-pixel tiles (2 latent pixels, a new one every pixel): 3 rows of 4, blended over 8 pixels, each keeping 24.
  std::vector<std::pair<int, int>> told;
  const auto tiled = vae->decode_tiled(z, {32, 32}, [&](int done, int total) { told.push_back({done, total}); });
  ASSERT_EQ(told.size(), 12u);
  for (int i = 0; i < 12; ++i) EXPECT_EQ(told[size_t(i)], std::make_pair(i + 1, 12));
  ASSERT_EQ(tiled.sizes(), whole.sizes());
  const auto first = vae->decode(z.narrow(3, 0, 2).narrow(4, 0, 2));
  auto kept = [](const at::Tensor& x) { return x.narrow(3, 0, 24).narrow(4, 0, 24); };  // 32 less a quarter
  EXPECT_LT(test::max_abs_diff(kept(tiled), kept(first)), 1e-6);
  const double seams = test::max_abs_diff(tiled, whole);
  std::printf("tiled (32-pixel tiles) against the untiled decode: max %.3g\n", seams);
  EXPECT_TRUE(std::isfinite(seams));
  EXPECT_GT(seams, 1e-3) << "blending must change the seams";
}

// Split by rows over 2 and 3 ranks (3 latent rows: 2 + 1, 1 + 1 + 1): the halos (each edge row repeated where
// the picture ends, as the replicate padding does), the mid attention over every rank's keys; rank 0 gets the
// whole video, equal to one process's.
TEST(Hunyuan15Vae, decodes_split_by_rows) {
  const auto vae = load();
  const auto z = vae->prepare(golden("final_latents"), 0);
  const auto whole = vae->decode(z);
  for (int ranks : {2, 3}) {
    std::vector<std::string> failure;
    const auto video = test::decode_on_ranks(*vae, z, ranks, failure);
    for (int r = 0; r < ranks; ++r) ASSERT_TRUE(failure[size_t(r)].empty()) << "rank " << r << ": " << failure[size_t(r)];
    ASSERT_TRUE(video.defined());
    const double err = test::max_abs_diff(video, whole), ref = test::max_abs_diff(video, golden("video"));
    std::printf("split by rows over %d ranks: %.3g from one process, %.3g from the reference\n", ranks, err, ref);
    EXPECT_LT(err, 1e-5);
    EXPECT_LT(ref, test::kRunTolerance);
  }
}

// The encode split by rows over 2 and 3 ranks (threads over real Gloo sockets): the picture's 3 latent rows as
// 2 + 1 and 1 + 1 + 1, and the picture followed by 4 frames (the mid attention's second frame seeing the first
// across the ranks); every rank gets the whole moments, equal to one process's.
TEST(Hunyuan15Vae, encodes_split_by_rows) {
  const auto vae = load(kPictureCase, /*with_encoder=*/true);
  const auto picture = test::golden_tensor(kPictureCase, "vae_encoder_input");
  const auto video = at::cat({picture, at::rand({1, 3, 4, 48, 80}) * 2 - 1}, 2);
  const auto one_process = vae->encode(video);
  for (int ranks : {2, 3}) {
    plan::ParallelConfig p;
    p.ulysses_degree = ranks;  // any layout: the encode uses the world group
    std::vector<at::Tensor> got(size_t(ranks) * 2);
    for (const auto& failure : test::run_ranks(p, [&](int r, parallel::Mesh& mesh) {
           const auto exchange = parallel::row_exchange(mesh.world());
           const models::RowShare share{exchange.get(), r, ranks};
           got[size_t(r) * 2] = vae->encode(picture, &share);
           got[size_t(r) * 2 + 1] = vae->encode(video, &share);
         }))
      EXPECT_EQ(failure, "");
    for (int r = 0; r < ranks; ++r) {
      ASSERT_TRUE(got[size_t(r) * 2].defined() && got[size_t(r) * 2 + 1].defined());
      const auto want = test::golden_tensor(kPictureCase, "vae_encoder_output");
      const double err = test::max_abs_diff(got[size_t(r) * 2], want);
      const double video_err = test::max_abs_diff(got[size_t(r) * 2 + 1], one_process);
      std::printf("encoded on rank %d of %d: the picture %.3g from the reference, the video %.3g from one process\n", r,
                  ranks, err, video_err);
      EXPECT_LT(err, test::kCallTolerance);
      EXPECT_LT(video_err, 1e-5);
    }
  }
  // More ranks than latent rows is refused, naming the most that can share them.
  plan::ParallelConfig p;
  p.ulysses_degree = 4;
  const auto failures = test::run_ranks(p, [&](int r, parallel::Mesh& mesh) {
    const auto exchange = parallel::row_exchange(mesh.world());
    const models::RowShare share{exchange.get(), r, 4};
    vae->encode(picture, &share);
  });
  for (const auto& failure : failures) EXPECT_NE(failure.find("use at most 3 ranks"), std::string::npos) << failure;
}
