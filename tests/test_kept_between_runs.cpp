// What a worker serving several runs keeps (pipeline/run_job.h's KeptBetweenRuns), in one process on
// cogvx2b_t5_tiny, whose T5 embeddings and video diffusers 0.32.2 recorded. The prompt embeddings: the same words
// reuse the last run's; a change that reaches the encoders (a text, the text length, the negative branch, an
// encoder's file rewritten, the strength of a LoRA that changes one) encodes again. Memory: a text encoder, a
// decode or a picture encode (cogvx5b_i2v_tiny) that runs out of memory beside a kept transformer lets it go and
// runs again, as a fresh run would, drawing the same noise.
#include <gtest/gtest.h>

#include <ATen/ops/equal.h>
#include <ATen/ops/randn.h>

#include <chrono>
#include <filesystem>
#include <limits>

#include "compat/cpu_tensor_budget.h"
#include "io/weights/tensor_file.h"
#include "parallel/mesh.h"
#include "pipeline/embeddings.h"
#include "pipeline/kept_embeddings.h"
#include "pipeline/making_room.h"
#include "pipeline/outputs.h"
#include "pipeline/run_job.h"
#include "plan/error.h"
#include "plan/family.h"
#include "sampling/noise.h"
#include "text/encode/encoder_room.h"
#include "tensor_support.h"

using namespace studio;

namespace {

const std::string kCase = "cogvx2b_t5_tiny";

plan::JobSpec case_job(const plan::ModelFolder& model, const std::string& name = kCase) {
  const auto g = test::golden_json(name);
  plan::JobSpec job;
  job.model_dir = model.dir;
  job.prompt = g["prompt"];
  job.max_sequence_length = g["max_sequence_length"];
  job.guidance_scale = g["guidance_scale"];
  job.height = g["height"], job.width = g["width"];
  if (g.contains("num_frames")) job.num_frames = g["num_frames"];  // an image model's case has none
  plan::rules_of(model).apply_defaults(job, model);
  return job;
}

// One run's embeddings, and whether they were the kept ones.
struct Encoded {
  pipeline::Embeddings e;
  bool reused = false;
  std::string said;
};

Encoded encode(const plan::JobSpec& job, const plan::ModelFolder& model, pipeline::KeptEmbeddings* kept,
               const std::function<bool()>& make_room = {}) {
  Encoded out;
  auto mesh = parallel::Mesh::single();
  out.e = pipeline::prompt_embeddings(job, model, *mesh, at::kFloat, at::kCPU, [&](const std::string& line) {
    out.said += line + "\n";
    if (line.find("the prompt embeddings are kept from the last run") != std::string::npos) out.reused = true;
  }, kept, make_room);
  return out;
}

}  // namespace

TEST(KeptEmbeddings, the_same_words_reuse_the_last_runs_and_other_words_encode_again) {
  test::TempDir tmp;
  test::copy_tree(test::golden_case(kCase), tmp.path("model"));
  const auto model = plan::read_model_folder(tmp.path("model"));
  pipeline::KeptEmbeddings kept;
  auto job = case_job(model);

  const auto first = encode(job, model, &kept);
  EXPECT_FALSE(first.reused);
  EXPECT_LT(test::max_abs_diff(first.e.prompt, test::golden_tensor(kCase, "prompt_embeds")), test::kCallTolerance);
  EXPECT_LT(test::max_abs_diff(first.e.negative, test::golden_tensor(kCase, "negative_prompt_embeds")),
            test::kCallTolerance);

  // What only the transformer and the sampler see: nothing is encoded, and the embeddings are the same.
  job.seed = 7, job.num_inference_steps = 2, job.guidance_scale = 3.5;
  const auto second = encode(job, model, &kept);
  EXPECT_TRUE(second.reused) << second.said;
  EXPECT_TRUE(at::equal(second.e.prompt, first.e.prompt));
  EXPECT_TRUE(at::equal(second.e.negative, first.e.negative));
  ASSERT_EQ(second.e.record.size(), first.e.record.size()) << "--save_tensors records the same ids";

  // Each change that reaches the encoders encodes again, and the next run with it reuses that.
  const auto encodes_again = [&](const char* what, const std::function<void(plan::JobSpec&)>& change) {
    change(job);
    const auto once = encode(job, model, &kept), twice = encode(job, model, &kept);
    EXPECT_FALSE(once.reused) << what;
    EXPECT_TRUE(twice.reused) << what;
    return once.e;
  };
  const auto other = encodes_again("another prompt", [](plan::JobSpec& j) { j.prompt = "A dog runs on a beach."; });
  EXPECT_GT(test::max_abs_diff(other.prompt, first.e.prompt), 1e-3);
  encodes_again("a negative prompt", [](plan::JobSpec& j) { j.negative_prompt = "blurry"; });
  encodes_again("another text length", [](plan::JobSpec& j) { j.max_sequence_length = 8; });
  const auto unguided = encodes_again("no guidance", [](plan::JobSpec& j) { j.guidance_scale = 1; });
  EXPECT_EQ(unguided.prompt.size(1), 8);
  encodes_again("the text encoder rewritten", [&](plan::JobSpec&) {
    for (const auto& f : std::filesystem::directory_iterator(tmp.path("model/text_encoder")))
      std::filesystem::last_write_time(f.path(), std::filesystem::last_write_time(f.path()) + std::chrono::seconds(5));
  });
}

// FLUX.1 applies a LoRA's text-encoder modules to CLIP and T5 (lora_te1_ here): a strength change of such a file
// changes the embeddings and encodes again; one of a file for the transformer alone does not.
TEST(KeptEmbeddings, a_strength_change_encodes_again_where_the_lora_changes_a_text_encoder) {
  test::TempDir tmp;
  const std::string te = tmp.path("te.safetensors"), m = "lora_te1_text_model_encoder_layers_0_self_attn_q_proj.";
  io::save_tensors(te, {{m + "lora_down.weight", at::randn({4, 32})}, {m + "lora_up.weight", at::randn({32, 4})}});
  const std::string transformer_only = test::golden_case("flux_lora_tiny") + "/lora_peft.safetensors";
  auto model = plan::read_model_folder(test::golden_case("flux_words_tiny"));
  const auto job = case_job(model, "flux_words_tiny");
  pipeline::KeptEmbeddings kept;
  const auto with = [&](std::vector<plan::LoraUse> loras) {
    model.loras = std::move(loras);
    return encode(job, model, &kept);
  };
  const auto plain = with({{transformer_only, 1.0}});
  EXPECT_FALSE(plain.reused);
  EXPECT_TRUE(with({{transformer_only, 0.4}}).reused);
  const auto a = with({{transformer_only, 0.4}, {te, 1.0}});
  EXPECT_FALSE(a.reused);
  const auto b = with({{transformer_only, 0.4}, {te, 0.5}});
  EXPECT_FALSE(b.reused);
  EXPECT_GT(test::max_abs_diff(a.e.pooled, b.e.pooled), 1e-4) << "CLIP's LoRA strength changes the pooled vector";
  EXPECT_TRUE(with({{transformer_only, 0.9}, {te, 0.5}}).reused);
}

TEST(MakingRoom, an_encoder_out_of_memory_beside_a_kept_transformer_lets_it_go_and_encodes_again) {
  const auto model = plan::read_model_folder(test::golden_case(kCase));
  const auto job = case_job(model);
  // Every CPU tensor from here on counts against a budget far too small for T5.
  compat::limit_cpu_tensor_memory(1024, "the test's budget");
  int asked = 0;
  const auto room = encode(job, model, nullptr, [&] {
    ++asked;
    compat::limit_cpu_tensor_memory(std::numeric_limits<size_t>::max() / 2, "the room made");
    return true;
  });
  EXPECT_EQ(asked, 1);
  EXPECT_NE(room.said.find("out of memory encoding the texts beside the transformer kept from the last run"),
            std::string::npos)
      << room.said;
  EXPECT_LT(test::max_abs_diff(room.e.prompt, test::golden_tensor(kCase, "prompt_embeds")), test::kCallTolerance);

  // Nothing kept to let go: the run fails as it would have, out of memory.
  compat::limit_cpu_tensor_memory(1024, "the test's budget");
  try {
    encode(job, model, nullptr, [] { return false; });
    ADD_FAILURE() << "encoded within 1 KiB";
  } catch (const std::exception& e) {
    EXPECT_TRUE(is_out_of_memory(e.what())) << e.what();
  }
  compat::limit_cpu_tensor_memory(std::numeric_limits<size_t>::max() / 2, "the test's end");
}

// The decode: room made, it decodes again at full size (the reference's video, not a tiled one); no room to make,
// it decodes in tiles as before.
TEST(MakingRoom, a_decode_out_of_memory_beside_a_kept_transformer_lets_it_go_and_decodes_again_whole) {
  const auto model = plan::read_model_folder(test::golden_case(kCase));
  auto job = case_job(model);
  job.save_tensors_file = "decoded.safetensors";  // asks for the video back; nothing is written by decode_and_write
  const auto decode = [&](const std::function<bool()>& make_room, std::string& said) {
    auto mesh = parallel::Mesh::single();
    pipeline::JobResult r;
    r.final_latents = test::golden_tensor(kCase, "final_latents");
    // The VAE loads first; once it says it decodes, every tensor counts against a budget far too small.
    return pipeline::decode_and_write(job, model, *mesh, {}, at::kFloat, at::kCPU, r, [&](const std::string& line) {
      said += line + "\n";
      if (line.rfind("decoding ", 0) == 0) compat::limit_cpu_tensor_memory(1024, "the test's budget");
    }, make_room);
  };
  std::string said;
  int asked = 0;
  const auto video = decode([&] {
    ++asked;
    compat::limit_cpu_tensor_memory(std::numeric_limits<size_t>::max() / 2, "the room made");
    return true;
  }, said);
  EXPECT_EQ(asked, 1);
  EXPECT_NE(said.find("out of memory decoding beside the transformer kept from the last run"), std::string::npos)
      << said;
  EXPECT_EQ(said.find("in tiles"), std::string::npos) << said;
  EXPECT_LT(test::max_abs_diff(video, test::golden_tensor(kCase, "video")), test::kRunTolerance);

  said.clear();
  try {
    decode([] { return false; }, said);
    ADD_FAILURE() << "decoded within 1 KiB";
  } catch (const std::exception& e) {
    EXPECT_TRUE(is_out_of_memory(e.what())) << e.what();
  }
  EXPECT_NE(said.find("decoding again in tiles"), std::string::npos) << said;
  compat::limit_cpu_tensor_memory(std::numeric_limits<size_t>::max() / 2, "the test's end");
}

// A part that draws from the run's generators and runs out of memory after drawing (CogVideoX's picture encode
// samples the VAE's posterior) draws the same again on its second try: the run stays the seed's.
TEST(MakingRoom, a_second_try_draws_what_the_first_drew) {
  sampling::SeededNoise noise(5, 2), fresh(5, 2);
  (void)noise.draw({2, 3}), (void)fresh.draw({2, 3});  // the run has drawn before the part
  int tries = 0, asked = 0;
  std::string said;
  const auto drawn = pipeline::again_with_room(
      [&] {
        auto d = noise.draw({2, 4});
        if (++tries == 1) throw std::runtime_error("CUDA out of memory. Tried to allocate 2.00 GiB");
        return d;
      },
      noise, [&] { return ++asked == 1; }, "encoding the pictures", "they are encoded again",
      [&](const std::string& line) { said += line; });
  EXPECT_EQ(tries, 2);
  EXPECT_EQ(asked, 1);
  EXPECT_TRUE(at::equal(drawn, fresh.draw({2, 4})));
  EXPECT_TRUE(at::equal(noise.draw({2, 1}), fresh.draw({2, 1}))) << "the draws after it go on from the same state";
  EXPECT_NE(said.find("out of memory encoding the pictures beside the transformer kept from the last run (CUDA out "
                      "of memory. Tried to allocate 2.00 GiB); it is let go, and they are encoded again"),
            std::string::npos)
      << said;
  // Nothing to let go: the error is the run's.
  tries = 0;
  EXPECT_THROW(pipeline::again_with_room(
                   [&] {
                     noise.draw({2, 4});
                     throw std::runtime_error("CUDA out of memory.");
                     return 0;
                   },
                   noise, [] { return false; }, "encoding the pictures", "again", [](const std::string&) {}),
               std::runtime_error);
}

// While a RoomForEncoders lives, the innermost one's make_room is what choose_device asks; none once it is gone.
TEST(MakingRoom, encoders_ask_the_innermost_room_maker) {
  EXPECT_FALSE(text::RoomForEncoders::make_room());
  int outer = 0, inner = 0;
  {
    text::RoomForEncoders a([&] { return ++outer > 0; });
    {
      text::RoomForEncoders b([&] { return ++inner < 0; });
      EXPECT_FALSE(text::RoomForEncoders::make_room());
    }
    EXPECT_TRUE(text::RoomForEncoders::make_room());
  }
  EXPECT_FALSE(text::RoomForEncoders::make_room());
  EXPECT_EQ(outer, 1);
  EXPECT_EQ(inner, 1);
}

// A served run whose picture encoder runs out of memory beside the kept transformer lets it go, encodes again,
// loads the transformer again and makes the run it would have made.
TEST(MakingRoom, a_picture_encode_out_of_memory_beside_a_kept_transformer_makes_the_same_run) {
  const std::string name = "cogvx5b_i2v_tiny";
  const auto g = test::golden_json(name);
  auto job = test::picture_job(name);
  const auto model = plan::read_model_folder(job.model_dir);
  job.prompt = g["prompt"], job.seed = g["seed"], job.num_inference_steps = g["num_inference_steps"];
  job.guidance_scale = g["guidance_scale"], job.use_dynamic_cfg = g["use_dynamic_cfg"];
  plan::rules_of(model).apply_defaults(job, model);
  auto mesh = parallel::Mesh::single();
  pipeline::KeptBetweenRuns kept;
  std::string said;
  const auto run = [&](const std::function<void(const std::string&)>& also) {
    said.clear();
    return pipeline::run_job(job, model, *mesh, {}, [&](const std::string& line) {
      said += line + "\n";
      also(line);
    }, &kept).final_latents;
  };
  const auto first = run([](const std::string&) {});
  EXPECT_LT(test::max_abs_diff(first, test::golden_tensor(name, "final_latents")), test::kRunTolerance);
  bool failed_once = false;
  const auto second = run([&](const std::string& line) {
    if (!failed_once && line.rfind("encoding the picture", 0) == 0 && line.find("VAE") != std::string::npos)
      failed_once = true, compat::limit_cpu_tensor_memory(1024, "the test's budget");  // the first try fails
    if (line.rfind("out of memory encoding the pictures", 0) == 0)
      compat::limit_cpu_tensor_memory(std::numeric_limits<size_t>::max() / 2, "the room made");
  });
  EXPECT_NE(said.find("out of memory encoding the pictures beside the transformer kept from the last run"),
            std::string::npos) << said;
  EXPECT_EQ(said.find("the transformer is kept from the last run"), std::string::npos) << said;
  EXPECT_TRUE(at::equal(second, first)) << test::max_abs_diff(second, first);
}
