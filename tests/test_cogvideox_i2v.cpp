// CogVideoX image-to-video against cogvx5b_i2v_tiny and cogvx15_i2v_tiny (diffusers 0.35.2's
// CogVideoXImageToVideoPipeline, from words and the picture): the VAE encoder's moments, the posterior drawn
// from the seed before the noise, the picture's latents as the transformer takes them (5B-I2V scaled,
// 1.5-I2V divided and padded to an even frame count), one transformer call (learned positions on top of
// RoPE; the ofs embedding), the picture's encode split by rows, the whole run through dit-launch in one
// process and the parallel mixes, and the step caches with a picture.
#include <sstream>

#include "io/weights/tensor_file.h"
#include "mixes.h"
#include "models/cogvideox/cogvideox_picture_encoder.h"
#include "models/family_runtime.h"
#include "parallel/parallel_vae.h"
#include "plan/families/cogvideox_config.h"
#include "plan/error.h"
#include "plan/job.h"
#include "process.h"
#include "rank_threads.h"
#include "tensor_support.h"
#include "video/picture.h"

using namespace studio;

namespace {

at::Tensor golden(const std::string& c, const std::string& name) { return test::golden_tensor(c, name); }

class CogVideoXPictures : public ::testing::TestWithParam<std::string> {};

// The picture, its moments, the posterior sample and the noise, each from the seed in the reference's order.
TEST_P(CogVideoXPictures, condition_from_the_seed) {
  const std::string c = GetParam();
  const auto folder = plan::read_model_folder(test::golden_case(c));
  const auto job = test::picture_job(c);
  sampling::SeededNoise noise(uint64_t(test::golden_json(c)["seed"]));
  const auto out = models::condition_on_pictures(folder, job, at::kFloat, at::kCPU, noise, [](const std::string&) {});
  std::map<std::string, at::Tensor> got(out.record.begin(), out.record.end());
  EXPECT_EQ(test::max_abs_diff(got.at("image"), golden(c, "image")), 0.0);
  EXPECT_TRUE(at::equal(got.at("image_latent_noise"), golden(c, "image_latent_noise")));
  for (const char* name : {"vae_encoder_output", "image_latents_sampled", "image_latents"}) {
    const double err = test::max_abs_diff(got.at(name), golden(c, name));
    std::printf("%s %s: %.3g\n", c.c_str(), name, err);
    EXPECT_LT(err, test::kCallTolerance) << name;
  }
  // The initial noise is the next draw of the same generator.
  const auto init = golden(c, "latents_init");
  EXPECT_TRUE(at::equal(noise.draw(init.sizes().vec()), init));
}

// One call on the reference's step-0 input: 32 channels, the noise's 16 then the picture's.
TEST_P(CogVideoXPictures, transformer_call) {
  const std::string c = GetParam();
  const auto folder = plan::read_model_folder(test::golden_case(c));
  const auto model = models::load_transformer(folder, at::kFloat, at::kCPU);
  const auto input = golden(c, "step0_hidden_states");
  models::StepInputs in;
  in.latents = input.narrow(2, 0, 16);
  in.condition = input.narrow(2, 16, 16);
  in.text = golden(c, "step0_encoder_hidden_states");
  in.timestep = io::TensorFile(test::golden_case(c) + "/golden.safetensors", "g").get_int64("step0_timestep");
  const double err = test::max_abs_diff(model->forward(in, model->positions(model->token_grid(in.latents))),
                                        golden(c, "step0_output"));
  std::printf("%s step0_output: %.3g\n", c.c_str(), err);
  EXPECT_LT(err, test::kCallTolerance);
  in.condition = at::Tensor();
  EXPECT_THROW(model->forward(in, model->positions(model->token_grid(in.latents))), InputError);
}

// Split by rows over 2 and 3 ranks (threads over real Gloo sockets): each rank encodes its rows (a halo row from
// each neighbour for the convolutions and the stride-2 halving, the whole picture's group statistics) and every
// rank gets the whole picture's moments, as one process's.
TEST_P(CogVideoXPictures, moments_split_by_rows) {
  const std::string c = GetParam();
  const auto folder = plan::read_model_folder(test::golden_case(c));
  const auto encoder = models::CogVideoXPictureEncoder::load(
      folder.dir + "/vae", *folder.parts_as<plan::CogVideoXParts>().vae, at::kFloat, at::kCPU);
  const auto picture = golden(c, "image"), want = golden(c, "vae_encoder_output");
  for (int ranks : {2, 3}) {
    plan::ParallelConfig p;
    p.ulysses_degree = ranks;  // any layout: the encode uses the world group
    std::vector<at::Tensor> got(static_cast<size_t>(ranks));
    for (const auto& failure : test::run_ranks(p, [&](int r, parallel::Mesh& mesh) {
           const auto exchange = parallel::row_exchange(mesh.world());
           const models::RowShare share{exchange.get(), r, ranks};
           got[size_t(r)] = encoder->moments(picture, &share);
         }))
      EXPECT_EQ(failure, "");
    for (int r = 0; r < ranks; ++r) {
      ASSERT_TRUE(got[size_t(r)].defined());
      const double err = test::max_abs_diff(got[size_t(r)], want);
      std::printf("%s moments on rank %d of %d: %.3g\n", c.c_str(), r, ranks, err);
      EXPECT_LT(err, test::kCallTolerance);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, CogVideoXPictures, ::testing::Values("cogvx5b_i2v_tiny", "cogvx15_i2v_tiny"),
                         [](const auto& info) { return info.param; });

// dit-launch from the words, the picture and the seed.
class CogVideoXI2VThroughDitLaunch : public ::testing::TestWithParam<std::tuple<const char*, const char*>> {
 protected:
  test::TempDir tmp_;
};

TEST_P(CogVideoXI2VThroughDitLaunch, from_the_picture) {
  const auto [c, flags] = GetParam();
  const auto g = test::golden_json(c);
  const std::string tensors = tmp_.path("run.safetensors");
  test::Args args{"--model", test::golden_case(c), "--image", test::golden_case(c) + "/image.png", "--prompt",
                  g["prompt"], "--seed", std::to_string(int(g["seed"])), "--height", std::to_string(int(g["height"])),
                  "--width", std::to_string(int(g["width"])), "--num_frames", std::to_string(int(g["num_frames"])),
                  "--num_inference_steps", std::to_string(int(g["num_inference_steps"])), "--guidance_scale",
                  std::to_string(double(g["guidance_scale"])), "--use_dynamic_cfg", "--max_sequence_length",
                  std::to_string(int(g["max_sequence_length"])), "--save_tensors", tensors};
  std::istringstream words(flags);
  for (std::string w; words >> w;) args.push_back(w);
  const auto r = test::run(test::bin("dit-launch"), args, 240000);
  ASSERT_EQ(r.code, 0) << r.err;
  io::TensorFile f(tensors, "run");
  EXPECT_LT(test::max_abs_diff(f.get("image_latents", 5, "").narrow(0, 0, 1), golden(c, "image_latents")), 1e-4);
  const double latents = test::max_abs_diff(f.get("final_latents", 5, "").narrow(0, 0, 1), golden(c, "final_latents"));
  const double video = test::max_abs_diff(f.get("video", 5, "").narrow(0, 0, 1), golden(c, "video"));
  std::printf("%s through dit-launch %s: final_latents %.3g, video %.3g\n", c, flags, latents, video);
  EXPECT_LT(latents, test::kRunTolerance);
  EXPECT_LT(video, test::kRunTolerance);
}

// Each case through one process and the mixes its token and head counts allow.
INSTANTIATE_TEST_SUITE_P(
    Mixes, CogVideoXI2VThroughDitLaunch,
    ::testing::Values(std::tuple{"cogvx5b_i2v_tiny", ""}, std::tuple{"cogvx5b_i2v_tiny", "--ulysses_degree 2 --use_parallel_vae"},
                      std::tuple{"cogvx5b_i2v_tiny", "--use_cfg_parallel --ring_degree 2"},
                      std::tuple{"cogvx5b_i2v_tiny", "--ring_degree 2"},
                      std::tuple{"cogvx5b_i2v_tiny", "--pipefusion_parallel_degree 2 --warmup_steps 5"},
                      std::tuple{"cogvx5b_i2v_tiny", "--data_parallel_degree 2 --num_videos_per_prompt 2"},
                      std::tuple{"cogvx15_i2v_tiny", ""},
                      std::tuple{"cogvx15_i2v_tiny", "--ulysses_degree 2 --ring_degree 2 --use_parallel_vae"},
                      std::tuple{"cogvx15_i2v_tiny", "--pipefusion_parallel_degree 2 --warmup_steps 4"},
                      std::tuple{"cogvx15_i2v_tiny", "--use_cfg_parallel --use_parallel_vae"},
                      std::tuple{"cogvx15_i2v_tiny", "--data_parallel_degree 2 --num_videos_per_prompt 2"}),
    [](const auto& info) {
      return std::string(std::get<0>(info.param)).substr(0, 7) + "_" +
             test::flags_name(::testing::TestParamInfo<const char*>(std::get<1>(info.param), info.index));
    });

// The step caches with a picture: the First-Block Cache and MagCache (calibrated on this model) reuse calls as in
// text-to-video, take the one-process decisions under CFG parallel and Ulysses, and change the result.
TEST(CogVideoXI2VCaches, reuse_alike_in_every_mix) {
  test::TempDir tmp;
  const std::string c = "cogvx5b_i2v_tiny";
  const auto g = test::golden_json(c);
  const test::Args args{"--model", test::golden_case(c), "--image", test::golden_case(c) + "/image.png", "--prompt",
                        g["prompt"], "--seed", std::to_string(int(g["seed"])), "--height",
                        std::to_string(int(g["height"])), "--width", std::to_string(int(g["width"])), "--num_frames",
                        std::to_string(int(g["num_frames"])), "--num_inference_steps", "12"};
  // The run's summary line ("First-Block Cache: 7 of 12 calls reused ..."), and its final latents.
  int runs = 0;
  const auto launch = [&](const test::Args& more, std::string* summary) {
    const std::string out = tmp.path("run" + std::to_string(runs++) + ".safetensors");
    const auto r = test::run(test::bin("dit-launch"), args + more + test::Args{"--save_tensors", out}, 240000);
    EXPECT_EQ(r.code, 0) << r.err;
    const auto end = r.err.find(" calls reused the blocks"), at = r.err.rfind("] ", end);
    *summary = end == std::string::npos ? std::string() : r.err.substr(at + 2, r.err.find('\n', end) - at - 2);
    return io::TensorFile(out, "t").get("final_latents", 5, "");
  };
  std::string none, one, cfg, ulysses;
  const auto plain = launch({}, &none);
  const std::string ratios = tmp.path("ratios.json");
  launch({"--magcache_calibrate", ratios}, &none);
  for (const test::Args& cache : {test::Args{"--use_fbcache", "--cache_threshold", "0.5"},
                                  test::Args{"--use_magcache", "--magcache_ratios", ratios, "--cache_threshold", "100"}}) {
    const auto alone = launch(cache, &one);
    EXPECT_TRUE(test::contains(one, " of 12") && !test::contains(one, ": 0 of 12")) << one;
    const auto split = launch(cache + test::Args{"--use_cfg_parallel"}, &cfg);
    const auto heads = launch(cache + test::Args{"--ulysses_degree", "2"}, &ulysses);
    EXPECT_EQ(cfg, one);
    EXPECT_EQ(ulysses, one);
    EXPECT_LT(test::max_abs_diff(split, alone), test::kRunTolerance) << one;
    EXPECT_LT(test::max_abs_diff(heads, alone), test::kRunTolerance) << one;
    EXPECT_GT(test::max_abs_diff(alone, plain), 1e-4) << one;
  }
}

TEST(CogVideoXI2VFolder, read_and_refused_by_name) {
  const auto m = plan::read_model_folder(test::golden_case("cogvx5b_i2v_tiny"));
  EXPECT_EQ(m.variant.id, "cogvideox-5b-i2v");
  EXPECT_TRUE(plan::rules_of(m).takes_image(m));
  EXPECT_EQ(plan::read_model_folder(test::golden_case("cogvx15_i2v_tiny")).variant.id, "cogvideox-1.5-i2v");
  auto job = test::picture_job("cogvx5b_i2v_tiny");
  job.prompt = "a cat";
  plan::apply_model_defaults(job, m);
  job.height = 80;  // the learned positions cover 64 x 96 only
  job.use_teacache = true;
  const auto problems = plan::validate(job, m);
  std::string all;
  for (const auto& p : problems) all += p.field + ": " + p.message + "\n";
  EXPECT_NE(all.find("height: --height 80: this model's learned positions cover 96 x 64 only; use --height 64"),
            std::string::npos) << all;
  EXPECT_NE(all.find("use_teacache"), std::string::npos) << all;
}

}  // namespace
