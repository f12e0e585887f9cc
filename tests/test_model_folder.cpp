// engine/plan: model folders read from their configs, and jobs checked against them (no LibTorch).
#include <QTemporaryDir>
#include <QtTest>

#include "plan/error.h"
#include "plan/job.h"
#include "plan/model_folder.h"
#include "support.h"

using namespace studio;
using nlohmann::json;

class TestModelFolder : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  int n_ = 0;
  // A writable copy of a reference folder, with transformer/config.json edited.
  std::string copy_with(const std::function<void(json&)>& edit_transformer) {
    const std::string dir = (tmp_.path() + "/m" + QString::number(n_++)).toStdString();
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

 private Q_SLOTS:
  void reads_reference_folder() {
    auto m = plan::read_model_folder(test::golden_case("cogvx5b_tiny"));
    QCOMPARE(m.transformer.num_attention_heads, 4);
    QCOMPARE(m.transformer.inner_dim(), 64);
    QVERIFY(m.transformer.use_rotary_positional_embeddings);
    QCOMPARE(m.scheduler.kind, plan::SamplerKind::DPM);
    QCOMPARE(m.scheduler.snr_shift_scale, 1.0);
    QVERIFY(m.vae);
    QCOMPARE(m.vae->spatial_compression, 8);
    QCOMPARE(m.vae->scaling_factor, 1.15258426);
    QVERIFY(!m.text_encoder);
    auto t5 = plan::read_model_folder(test::golden_case("cogvx2b_t5_tiny"));
    QVERIFY(t5.text_encoder && t5.has_tokenizer);
    QCOMPARE(t5.text_encoder->d_model, 32);
    QCOMPARE(t5.text_encoder->num_heads, 4);
  }

  void real_checkpoint_geometry() {
    // CogVideoX-2b at 480 x 720, 49 frames: 13 latent frames, 17,550 video tokens.
    auto m = plan::read_model_folder(copy_with(real_2b));
    QCOMPARE(m.transformer.family(), plan::Family::CogVideoX_2B);
    plan::JobSpec job;
    job.prompt_embeds_file = "embeds.safetensors";
    plan::apply_model_defaults(job, m);
    QCOMPARE(job.height, 480);
    QCOMPARE(job.width, 720);
    QCOMPARE(job.num_frames, 49);
    QCOMPARE(job.fps, 8);
    QVERIFY(plan::validate(job, m).empty());
    auto g = plan::latent_geometry(job, m);
    QCOMPARE(g.frames, 13);
    QCOMPARE(g.video_tokens, int64_t(17550));
    // CogVideoX1.5-5B at 768 x 1360, 81 frames: 21 latent frames padded to 22, 44,880 tokens.
    auto m15 = plan::read_model_folder(copy_with([](json& j) {
      real_2b(j);
      j.update({{"num_attention_heads", 48}, {"num_layers", 42}, {"patch_size_t", 2}, {"patch_bias", false},
                {"use_rotary_positional_embeddings", true}, {"sample_height", 300}, {"sample_width", 300},
                {"sample_frames", 81}, {"ofs_embed_dim", nullptr}, {"use_learned_positional_embeddings", false}});
    }));
    QCOMPARE(m15.transformer.family(), plan::Family::CogVideoX_15);
    plan::JobSpec j15;
    j15.height = 768;
    j15.width = 1360;
    j15.num_frames = 81;
    j15.prompt_embeds_file = "embeds.safetensors";
    plan::apply_model_defaults(j15, m15);
    QCOMPARE(j15.fps, 16);
    QVERIFY(plan::validate(j15, m15).empty());
    auto g15 = plan::latent_geometry(j15, m15);
    QCOMPARE(g15.frames, 21);
    QCOMPARE(g15.padded_frames, 22);
    QCOMPARE(g15.pad_frames(), 1);
    QCOMPARE(g15.video_tokens, int64_t(44880));
  }

  void missing_folder() {
    QVERIFY(test::throws_with<InputError>([] { plan::read_model_folder("/nonexistent/model"); },
                                          {"/nonexistent/model", "not a folder", "model_index.json"}));
  }

  void missing_model_index() {
    const std::string dir = copy_with([](json&) {});
    std::filesystem::remove(dir + "/model_index.json");
    QVERIFY(test::throws_with<InputError>([&] { plan::read_model_folder(dir); }, {"model_index.json", "file not found"}));
  }

  void unsupported_fields_are_named() {
    QVERIFY(test::throws_with<InputError>(
        [&] { plan::read_model_folder(copy_with([](json& j) { j["ofs_embed_dim"] = 512; })); },
        {"config.json", "'ofs_embed_dim'", "512", "image-to-video"}));
    QVERIFY(test::throws_with<InputError>(
        [&] { plan::read_model_folder(copy_with([](json& j) { j["activation_fn"] = "relu"; })); },
        {"'activation_fn'", "\"relu\"", "gelu-approximate"}));
    QVERIFY(test::throws_with<InputError>(
        [&] { plan::read_model_folder(copy_with([](json& j) { j["use_learned_positional_embeddings"] = true; })); },
        {"'use_learned_positional_embeddings'", "not supported"}));
  }

  void wrong_types_are_named() {
    QVERIFY(test::throws_with<InputError>(
        [&] { plan::read_model_folder(copy_with([](json& j) { j["num_layers"] = "two"; })); },
        {"transformer/config.json", "'num_layers'", "\"two\"", "an integer"}));
    QVERIFY(test::throws_with<InputError>(
        [&] { plan::read_model_folder(copy_with([](json& j) { j["num_attention_heads"] = 0; })); },
        {"'num_attention_heads'", "positive"}));
  }

  void unsupported_sampler() {
    const std::string dir = copy_with([](json&) {});
    test::edit_json(dir + "/scheduler/scheduler_config.json", [](json& j) { j["prediction_type"] = "epsilon"; });
    QVERIFY(test::throws_with<InputError>([&] { plan::read_model_folder(dir); },
                                          {"scheduler_config.json", "'prediction_type'", "v_prediction"}));
    test::edit_json(dir + "/scheduler/scheduler_config.json", [](json& j) { j["_class_name"] = "EulerScheduler"; });
    QVERIFY(test::throws_with<InputError>([&] { plan::read_model_folder(dir); },
                                          {"EulerScheduler", "CogVideoXDDIMScheduler"}));
  }

  void job_problems_name_flag_value_and_fix() {
    auto m = plan::read_model_folder(test::golden_case("cogvx2b_tiny"));
    plan::JobSpec job;
    plan::apply_model_defaults(job, m);
    QCOMPARE(plan::validate(job, m).size(), size_t(1));
    QCOMPARE(plan::validate(job, m)[0].field, std::string("prompt"));
    job.prompt_embeds_file = "embeds.safetensors";
    QVERIFY(plan::validate(job, m).empty());
    job.height = 500;
    job.num_frames = 10;
    job.num_inference_steps = 0;
    job.guidance_scale = -1;
    auto p = plan::validate(job, m);
    QCOMPARE(p.size(), size_t(4));
    QCOMPARE(p[0].field, std::string("height"));
    QVERIFY(p[0].message.find("--height 500") != std::string::npos);
    QVERIFY(p[0].message.find("496 or 512 would work") != std::string::npos);
    QCOMPARE(p[1].field, std::string("num_frames"));
    QVERIFY(p[1].message.find("4k+1") != std::string::npos);
    QVERIFY(p[1].message.find("9 or 13 would work") != std::string::npos);
    QCOMPARE(p[2].field, std::string("num_inference_steps"));
    QCOMPARE(p[3].field, std::string("guidance_scale"));
  }
};

QTEST_APPLESS_MAIN(TestModelFolder)
#include "test_model_folder.moc"
