// engine/plan: model folders read from their configs, and jobs checked against them (no LibTorch).
#include "plan/error.h"
#include "plan/job.h"
#include "plan/job_file.h"
#include "plan/families/cogvideox_config.h"
#include "plan/families/flux_config.h"
#include "support.h"

using namespace studio;
using nlohmann::json;

namespace {

class ModelFolder : public ::testing::Test {
 protected:
  test::TempDir tmp_;
  int n_ = 0;
  // A writable copy of a reference folder, with transformer/config.json edited.
  std::string copy_with(const std::function<void(json&)>& edit_transformer) {
    const std::string dir = tmp_.path("m" + std::to_string(n_++));
    test::copy_tree(test::golden_case("cogvx2b_tiny"), dir);
    test::edit_json(dir + "/transformer/config.json", edit_transformer);
    return dir;
  }
  // The published configs of the real checkpoints differ from the tiny ones only in these fields.
  static void real_2b(json& j) {
    j.update({{"num_attention_heads", 30}, {"attention_head_dim", 64}, {"in_channels", 16}, {"out_channels", 16},
              {"time_embed_dim", 512}, {"text_embed_dim", 4096}, {"num_layers", 30}, {"sample_width", 90},
              {"sample_height", 60}, {"sample_frames", 49}, {"max_text_seq_length", 226}});
  }
};

TEST_F(ModelFolder, reads_reference_folder) {
  auto m = plan::read_model_folder(test::golden_case("cogvx5b_tiny"));
  EXPECT_EQ(m.variant.id, "cogvideox-5b");
  const auto& c = m.parts_as<plan::CogVideoXParts>();
  EXPECT_EQ(c.transformer.num_attention_heads, 4);
  EXPECT_EQ(c.transformer.inner_dim(), 64);
  EXPECT_TRUE(c.transformer.use_rotary_positional_embeddings);
  EXPECT_EQ(c.scheduler.kind, plan::CogVideoXSampler::DPM);
  EXPECT_EQ(c.scheduler.snr_shift_scale, 1.0);  // values read from the config: the same double as the literal
  ASSERT_TRUE(c.vae);
  EXPECT_EQ(c.vae->spatial_compression, 8);
  EXPECT_EQ(c.vae->scaling_factor, 1.15258426);
  EXPECT_FALSE(m.text_encoder);
  auto t5 = plan::read_model_folder(test::golden_case("cogvx2b_t5_tiny"));
  ASSERT_TRUE(t5.text_encoder && t5.has_tokenizer);
  EXPECT_EQ(t5.text_encoder->d_model, 32);
  EXPECT_EQ(t5.text_encoder->num_heads, 4);
}

TEST_F(ModelFolder, real_checkpoint_geometry) {
  // CogVideoX-2b at 480 x 720, 49 frames: 13 latent frames, 17,550 video tokens.
  auto m = plan::read_model_folder(copy_with(real_2b));
  EXPECT_EQ(m.variant.id, "cogvideox-2b");
  plan::JobSpec job;
  job.prompt_embeds_file = "embeds.safetensors";
  plan::apply_model_defaults(job, m);
  EXPECT_EQ(job.height, 480);
  EXPECT_EQ(job.width, 720);
  EXPECT_EQ(job.num_frames, 49);
  EXPECT_EQ(job.fps, 8);
  EXPECT_TRUE(plan::validate(job, m).empty());
  auto g = plan::latent_geometry(job, m);
  EXPECT_EQ(g.frames, 13);
  EXPECT_EQ(g.latent_tokens, int64_t(17550));
  // CogVideoX1.5-5B at 768 x 1360, 81 frames: 21 latent frames padded to 22, 44,880 tokens.
  auto m15 = plan::read_model_folder(copy_with([](json& j) {
    real_2b(j);
    j.update({{"num_attention_heads", 48}, {"num_layers", 42}, {"patch_size_t", 2}, {"patch_bias", false},
              {"use_rotary_positional_embeddings", true}, {"sample_height", 300}, {"sample_width", 300},
              {"sample_frames", 81}, {"ofs_embed_dim", nullptr}, {"use_learned_positional_embeddings", false}});
  }));
  EXPECT_EQ(m15.variant.id, "cogvideox-1.5");
  plan::JobSpec j15;
  j15.height = 768;
  j15.width = 1360;
  j15.num_frames = 81;
  j15.prompt_embeds_file = "embeds.safetensors";
  plan::apply_model_defaults(j15, m15);
  EXPECT_EQ(j15.fps, 16);
  EXPECT_TRUE(plan::validate(j15, m15).empty());
  auto g15 = plan::latent_geometry(j15, m15);
  EXPECT_EQ(g15.frames, 21);
  EXPECT_EQ(g15.padded_frames, 22);
  EXPECT_EQ(g15.pad_frames(), 1);
  EXPECT_EQ(g15.latent_tokens, int64_t(44880));
}

TEST_F(ModelFolder, missing_folder) {
  EXPECT_TRUE(test::throws_with<InputError>([] { plan::read_model_folder("/nonexistent/model"); },
                                            {"/nonexistent/model", "not a folder", "model_index.json"}));
}

TEST_F(ModelFolder, missing_model_index) {
  const std::string dir = copy_with([](json&) {});
  std::filesystem::remove(dir + "/model_index.json");
  EXPECT_TRUE(test::throws_with<InputError>([&] { plan::read_model_folder(dir); },
                                            {"no model_index.json", "not a model folder", "transformer/", "Models tab",
                                             "dit-models download"}));
}

TEST_F(ModelFolder, unsupported_fields_are_named) {
  EXPECT_TRUE(test::throws_with<InputError>(
      [&] { plan::read_model_folder(copy_with([](json& j) { j["ofs_embed_dim"] = 512; })); },
      {"config.json", "'ofs_embed_dim'", "512", "must equal time_embed_dim"}));
  EXPECT_TRUE(test::throws_with<InputError>(
      [&] { plan::read_model_folder(copy_with([](json& j) { j["activation_fn"] = "relu"; })); },
      {"'activation_fn'", "\"relu\"", "gelu-approximate"}));
  EXPECT_TRUE(test::throws_with<InputError>(
      [&] { plan::read_model_folder(copy_with([](json& j) { j["use_learned_positional_embeddings"] = true; })); },
      {"'use_learned_positional_embeddings'", "not supported without use_rotary_positional_embeddings"}));
  EXPECT_TRUE(test::throws_with<InputError>(
      [&] { plan::read_model_folder(copy_with([](json& j) { j["in_channels"] = 24; })); },
      {"'in_channels'", "24", "twice it (image-to-video"}));
}

TEST_F(ModelFolder, wrong_types_are_named) {
  EXPECT_TRUE(test::throws_with<InputError>(
      [&] { plan::read_model_folder(copy_with([](json& j) { j["num_layers"] = "two"; })); },
      {"transformer/config.json", "'num_layers'", "\"two\"", "an integer"}));
  EXPECT_TRUE(test::throws_with<InputError>(
      [&] { plan::read_model_folder(copy_with([](json& j) { j["num_attention_heads"] = 0; })); },
      {"'num_attention_heads' = 0 must be 1 to 1024"}));
}

// Values from a hostile or broken config are bounded before any size is made from them: nothing wraps.
TEST_F(ModelFolder, values_beyond_any_real_model_are_refused_before_they_can_wrap) {
  EXPECT_TRUE(test::throws_with<InputError>(
      [&] { plan::read_model_folder(copy_with([](json& j) { j["attention_head_dim"] = 1000000000; })); },
      {"transformer/config.json", "'attention_head_dim' = 1000000000 must be 1 to 1024"}));
  EXPECT_TRUE(test::throws_with<InputError>(
      [&] { plan::read_model_folder(copy_with([](json& j) { j["num_layers"] = 4294967298; })); },
      {"'num_layers' = 4294967298 must be 1 to 1024"}));
  EXPECT_TRUE(test::throws_with<InputError>(
      [&] { plan::read_model_folder(copy_with([](json& j) { j["freq_shift"] = 18446744073709551615ull; })); },
      {"'freq_shift'", "18446744073709551615", "expected an integer"}));
  const std::string dir = tmp_.path("flux");
  test::copy_tree(test::golden_case("flux_tiny"), dir);
  test::edit_json(dir + "/vae/config.json", [](json& j) { j["block_out_channels"] = {32, 32, 32, 32, 32, 32, 32, 32, 32}; });
  EXPECT_TRUE(test::throws_with<InputError>([&] { plan::read_model_folder(dir); },
                                            {"vae/config.json", "'block_out_channels'", "more than 8 entries"}));
  test::edit_json(dir + "/vae/config.json", [](json& j) { j["block_out_channels"] = {32, 4000000000ll}; });
  EXPECT_TRUE(test::throws_with<InputError>([&] { plan::read_model_folder(dir); },
                                            {"'block_out_channels'", "positive integers"}));
}

// The job file the studio writes and a hand-written one for dit-worker: types and ranges checked alike.
TEST_F(ModelFolder, job_files_are_checked_as_configs_are) {
  EXPECT_TRUE(test::throws_with<InputError>([] { plan::job_file_from_json(R"({"height": 1e12})", "job.json"); },
                                            {"job.json", "'height'", "expected an integer"}));
  EXPECT_TRUE(test::throws_with<InputError>([] { plan::job_file_from_json(R"({"height": 10000000000})", "job.json"); },
                                            {"'height'", "10000000000", "expected an integer"}));
  EXPECT_TRUE(test::throws_with<InputError>([] { plan::job_file_from_json(R"({"seed": -1})", "job.json"); },
                                            {"'seed'", "-1"}));
  EXPECT_TRUE(test::throws_with<InputError>([] { plan::job_file_from_json("[1]", "job.json"); },
                                            {"job.json", "JSON object"}));
  const auto f = plan::job_file_from_json(R"({"height": 64, "prompt_2": "kite", "guidance_scale": null})", "job.json");
  EXPECT_EQ(f.job.height, 64);
  EXPECT_EQ(f.job.prompt_2, "kite");
  EXPECT_TRUE(std::isnan(f.job.guidance_scale));
}

TEST_F(ModelFolder, unsupported_sampler) {
  const std::string dir = copy_with([](json&) {});
  test::edit_json(dir + "/scheduler/scheduler_config.json", [](json& j) { j["prediction_type"] = "epsilon"; });
  EXPECT_TRUE(test::throws_with<InputError>([&] { plan::read_model_folder(dir); },
                                            {"scheduler_config.json", "'prediction_type'", "v_prediction"}));
  test::edit_json(dir + "/scheduler/scheduler_config.json", [](json& j) { j["_class_name"] = "EulerScheduler"; });
  EXPECT_TRUE(test::throws_with<InputError>([&] { plan::read_model_folder(dir); },
                                            {"EulerScheduler", "CogVideoXDDIMScheduler"}));
}

TEST_F(ModelFolder, job_problems_name_flag_value_and_fix) {
  auto m = plan::read_model_folder(test::golden_case("cogvx2b_tiny"));
  plan::JobSpec job;
  plan::apply_model_defaults(job, m);
  ASSERT_EQ(plan::validate(job, m).size(), size_t(1));
  EXPECT_EQ(plan::validate(job, m)[0].field, std::string("prompt"));
  job.prompt_embeds_file = "embeds.safetensors";
  EXPECT_TRUE(plan::validate(job, m).empty());
  job.height = 500;
  job.num_frames = 10;
  job.num_inference_steps = 0;
  job.guidance_scale = -1;
  auto p = plan::validate(job, m);
  ASSERT_EQ(p.size(), size_t(4));
  EXPECT_EQ(p[0].field, std::string("height"));
  EXPECT_TRUE(test::contains(p[0].message, "--height 500")) << p[0].message;
  EXPECT_TRUE(test::contains(p[0].message, "496 or 512 would work")) << p[0].message;
  EXPECT_EQ(p[1].field, std::string("num_frames"));
  EXPECT_TRUE(test::contains(p[1].message, "4k+1")) << p[1].message;
  EXPECT_TRUE(test::contains(p[1].message, "9 or 13 would work")) << p[1].message;
  EXPECT_EQ(p[2].field, std::string("num_inference_steps"));
  EXPECT_EQ(p[3].field, std::string("guidance_scale"));
}

}  // namespace

TEST_F(ModelFolder, reads_a_flux_folder_and_its_defaults) {
  auto m = plan::read_model_folder(test::golden_case("flux_tiny"));
  EXPECT_EQ(m.variant.id, "flux-dev");
  const auto& f = m.parts_as<plan::FluxParts>();
  ASSERT_TRUE(f.vae);
  EXPECT_EQ(f.transformer.num_layers, 1);
  EXPECT_EQ(f.transformer.num_single_layers, 2);
  EXPECT_EQ(f.transformer.axes_dims_rope, (std::vector<int>{4, 6, 6}));
  EXPECT_TRUE(f.scheduler.use_dynamic_shifting);
  EXPECT_EQ(f.vae->shift_factor, 0.1159);
  EXPECT_EQ(m.vae_scale_spatial(), 8);
  plan::JobSpec job;
  plan::apply_model_defaults(job, m);  // FluxPipeline's: 1024 x 1024, 28 steps, guidance 3.5, 512 text tokens
  EXPECT_EQ(job.height, 1024);
  EXPECT_EQ(job.width, 1024);
  EXPECT_EQ(job.num_inference_steps, 28);
  EXPECT_EQ(job.guidance_scale, 3.5);
  EXPECT_EQ(job.max_sequence_length, 512);
  job.height = 64, job.width = 96;
  const auto g = plan::latent_geometry(job, m);
  EXPECT_FALSE(g.has_frames);
  EXPECT_EQ(g.shape(1), (std::vector<int64_t>{1, 16, 8, 12}));
  EXPECT_EQ(g.latent_tokens, 24);
  // schnell: no guidance embedding, 4 steps, guidance 0.
  const std::string dir = tmp_.path("schnell");
  test::copy_tree(test::golden_case("flux_tiny"), dir);
  test::edit_json(dir + "/transformer/config.json", [](json& j) { j["guidance_embeds"] = false; });
  auto s = plan::read_model_folder(dir);
  EXPECT_EQ(s.variant.id, "flux-schnell");
  plan::JobSpec quick;
  plan::apply_model_defaults(quick, s);
  EXPECT_EQ(quick.num_inference_steps, 4);
  EXPECT_EQ(quick.guidance_scale, 0.0);
}

TEST_F(ModelFolder, flux_configs_that_cannot_run_are_named) {
  const std::string dir = tmp_.path("flux");
  test::copy_tree(test::golden_case("flux_tiny"), dir);
  test::edit_json(dir + "/transformer/config.json", [](json& j) { j["axes_dims_rope"] = {4, 6, 8}; });
  EXPECT_TRUE(test::throws_with<InputError>([&] { plan::read_model_folder(dir); },
                                            {"transformer/config.json", "'axes_dims_rope'", "[4,6,8]",
                                             "attention_head_dim 16"}));
  test::edit_json(dir + "/transformer/config.json", [](json& j) { j["axes_dims_rope"] = {4, 6, 6}; });
  test::edit_json(dir + "/vae/config.json", [](json& j) { j["latent_channels"] = 8; });
  EXPECT_TRUE(test::throws_with<InputError>([&] { plan::read_model_folder(dir); },
                                            {"latent_channels 8", "in_channels 64", "2x2 packing"}));
}

// A FLUX.1 folder from words: CLIP in tokenizer/ and text_encoder/, T5 in the _2 folders; encoders whose
// widths do not fit the transformer are named with the fields that disagree.
TEST_F(ModelFolder, flux_text_encoders_are_read_from_their_folders) {
  auto m = plan::read_model_folder(test::golden_case("flux_words_tiny"));
  const auto& f = m.parts_as<plan::FluxParts>();
  ASSERT_TRUE(f.clip && m.text_encoder);
  EXPECT_TRUE(f.has_clip_tokenizer);
  EXPECT_TRUE(m.has_tokenizer);
  EXPECT_TRUE(m.can_encode_words());
  EXPECT_EQ(f.clip->hidden_size, 32);
  EXPECT_EQ(f.clip->eos_token_id, 2);
  EXPECT_EQ(m.text_encoder->d_model, 32);
  EXPECT_EQ(m.t5_part(), "text_encoder_2");
  EXPECT_EQ(plan::missing_text_parts(m), "");

  const std::string dir = tmp_.path("words");
  test::copy_tree(test::golden_case("flux_words_tiny"), dir);
  std::filesystem::remove(dir + "/tokenizer_2/spiece.model");
  std::filesystem::remove(dir + "/text_encoder/config.json");
  auto lacking = plan::read_model_folder(dir);
  EXPECT_FALSE(lacking.can_encode_words());
  EXPECT_EQ(plan::missing_text_parts(lacking), "no text_encoder/ (CLIP), no tokenizer_2/ (T5's spiece.model)");
  plan::JobSpec job;
  job.prompt = "a boat";
  plan::apply_model_defaults(job, lacking);
  bool named = false;
  for (const auto& p : plan::validate(job, lacking))
    named = named || (p.field == "prompt" && test::contains(p.message, "no text_encoder/ (CLIP)") &&
                      test::contains(p.message, "black-forest-labs/FLUX.1-dev"));
  EXPECT_TRUE(named);

  test::write_file(dir + "/text_encoder/config.json",
                   test::read_file(test::golden_case("flux_words_tiny") + "/text_encoder/config.json"));
  test::edit_json(dir + "/text_encoder/config.json", [](json& j) { j["hidden_size"] = 48; });
  EXPECT_TRUE(test::throws_with<InputError>([&] { plan::read_model_folder(dir); },
                                            {"text_encoder/config.json", "hidden_size 48", "pooled_projection_dim 32"}));
  test::edit_json(dir + "/text_encoder/config.json", [](json& j) { j["hidden_size"] = 32; j["hidden_act"] = "relu"; });
  EXPECT_TRUE(test::throws_with<InputError>([&] { plan::read_model_folder(dir); }, {"'hidden_act'", "\"relu\"", "quick_gelu"}));
  test::edit_json(dir + "/text_encoder/config.json", [](json& j) { j["hidden_act"] = "quick_gelu"; });
  test::edit_json(dir + "/text_encoder_2/config.json", [](json& j) { j["d_model"] = 64; });
  EXPECT_TRUE(test::throws_with<InputError>([&] { plan::read_model_folder(dir); },
                                            {"text_encoder_2/config.json", "d_model 64", "joint_attention_dim 32"}));
}
