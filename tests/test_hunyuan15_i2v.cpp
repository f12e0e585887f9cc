// HunyuanVideo-1.5 image-to-video as a user runs it: a picture, words, a seed and the folder
// (hunyuan15_i2v_tiny, diffusers 0.42.1's HunyuanVideo15ImageToVideoPipeline) through dit-launch. The size
// comes from the picture's aspect-ratio bucket (no --height or --width), the crop is PIL's to the byte, and
// SigLIP's rows, the VAE encoder's moments, the condition, the final latents and the video match the
// reference in one process and in the parallel mixes the family takes. And what it refuses, by name.
#include <ATen/ops/equal.h>

#include <sstream>

#include "io/weights/tensor_file.h"
#include "mixes.h"
#include "plan/families/hunyuan15_config.h"
#include "plan/job.h"
#include "plan/model_folder.h"
#include "process.h"
#include "support.h"
#include "tensor_support.h"

using namespace studio;

namespace {

const std::string kCase = "hunyuan15_i2v_tiny";

at::Tensor golden(const std::string& name) { return test::golden_tensor(kCase, name); }

test::Args picture_args(const std::string& out) {
  const auto g = test::golden_json(kCase);
  return {"--model", test::golden_case(kCase), "--image", test::golden_case(kCase) + "/" + g["image"].get<std::string>(),
          "--prompt", g["prompt"].get<std::string>(), "--negative_prompt", g["negative_prompt"].get<std::string>(),
          "--seed", std::to_string(int(g["seed"])), "--num_frames", std::to_string(int(g["num_frames"])),
          "--num_inference_steps", std::to_string(int(g["num_inference_steps"])), "--save_tensors", out};
}

}  // namespace

class Hunyuan15PictureThroughDitLaunch : public ::testing::TestWithParam<const char*> {
 protected:
  test::TempDir tmp_;
};

TEST_P(Hunyuan15PictureThroughDitLaunch, from_the_picture_prompt_and_seed) {
  const std::string out = tmp_.path("run.safetensors");
  auto args = picture_args(out);
  std::istringstream flags(GetParam());
  for (std::string w; flags >> w;) args.push_back(w);
  const auto r = test::run(test::bin("dit-launch"), args, 300000);
  ASSERT_EQ(r.code, 0) << r.err;
  io::TensorFile f(out, "run");
  // 112 x 56 pixels: the bucket 80 x 48, the picture scaled to 96 x 48 and 8 columns cut from each side.
  EXPECT_TRUE(at::equal(f.get_int64("image_resized"), test::golden_ids(kCase, "image_resized")));
  for (const char* name : {"image", "siglip_pixel_values", "image_embeds", "vae_encoder_output", "image_latents",
                           "cond_latents", "cond_mask"}) {
    const double err = test::max_abs_diff(f.get(name, -1, ""), golden(name));
    EXPECT_LT(err, 1e-4) << name;
  }
  const double latents = test::max_abs_diff(f.get("final_latents", 5, ""), golden("final_latents"));
  const double video = test::max_abs_diff(f.get("video", 5, ""), golden("video"));
  std::printf("hunyuan15 from a picture %s: image_embeds %.3g, image_latents %.3g, final_latents %.3g, video %.3g\n",
              GetParam(), test::max_abs_diff(f.get("image_embeds", 3, ""), golden("image_embeds")),
              test::max_abs_diff(f.get("image_latents", 5, ""), golden("image_latents")), latents, video);
  EXPECT_LT(latents, test::kRunTolerance);
  EXPECT_LT(video, test::kRunTolerance);
}

INSTANTIATE_TEST_SUITE_P(Mixes, Hunyuan15PictureThroughDitLaunch,
                         ::testing::Values("", "--ulysses_degree 2", "--ring_degree 2 --use_parallel_vae",
                                           "--use_cfg_parallel --ulysses_degree 2",
                                           "--use_cfg_parallel --pipefusion_parallel_degree 2 --warmup_steps 4"),
                         test::flags_name);

TEST(Hunyuan15PictureRefusals, a_picture_where_none_fits_and_none_where_one_must) {
  test::TempDir tmp;
  auto refused = [&](const test::Args& args, std::initializer_list<const char*> parts) {
    const auto r = test::run(test::bin("dit-launch"), args, 60000);
    EXPECT_NE(r.code, 0);
    for (const char* p : parts) EXPECT_TRUE(test::contains(r.err, p)) << p << " not in: " << r.err;
  };
  auto args = picture_args(tmp.path("x.safetensors"));
  // The image-to-video folder without its picture.
  test::Args no_picture;
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i] == "--image") ++i;
    else no_picture.push_back(args[i]);
  refused(no_picture, {"--image", "picture"});
  // A file that is not a picture, named with the flag.
  const std::string bad = tmp.path("not-a-picture.png");
  test::write_file(bad, "this is text");
  auto with_bad = args;
  for (size_t i = 0; i + 1 < with_bad.size(); ++i)
    if (with_bad[i] == "--image") with_bad[i + 1] = bad;
  refused(with_bad, {"--image", "not-a-picture.png"});
  // The text-to-video folder given a picture.
  refused({"--model", test::golden_case("hunyuan15_tiny"), "--image", test::golden_case(kCase) + "/image.png",
           "--prompt", "a lighthouse", "--num_frames", "9", "--num_inference_steps", "1", "--save_tensors",
           tmp.path("y.safetensors")},
          {"--image", "generates from"});
}

// The reference's aspect-ratio buckets (calculate_default_height_width), figures from its own functions: a wide
// picture takes the nearest bucket not wider than it, a tall one the nearest not taller; a size the job gives stays.
TEST(Hunyuan15PictureSize, the_bucket_of_the_pictures_aspect) {
  plan::ModelFolder m = plan::read_model_folder(test::golden_case(kCase));
  auto size = [&](int w, int h) {
    plan::JobSpec job;
    plan::size_from_picture(job, m, w, h);
    return std::pair{job.width, job.height};
  };
  EXPECT_EQ(size(112, 56), std::pair(80, 48));  // target_size 64: the case's
  EXPECT_EQ(size(56, 112), std::pair(48, 80));
  EXPECT_EQ(size(100, 100), std::pair(64, 64));
  auto parts = std::make_shared<plan::Hunyuan15Parts>(m.parts_as<plan::Hunyuan15Parts>());
  parts->transformer.target_size = 640;  // the 480p checkpoints'
  m.parts = parts;
  EXPECT_EQ(size(1280, 720), std::pair(848, 480));
  EXPECT_EQ(size(720, 1280), std::pair(480, 848));
  EXPECT_EQ(size(1024, 1024), std::pair(640, 640));
  parts->transformer.target_size = 960;  // the 720p checkpoints'
  EXPECT_EQ(size(1920, 800), std::pair(1472, 624));
  plan::JobSpec given;
  given.width = 320, given.height = 192;
  plan::size_from_picture(given, m, 1920, 800);
  EXPECT_EQ(std::pair(given.width, given.height), std::pair(320, 192));
}
