// The engine against the reference cases, in one process, through the ordinary loader:
// rope tables and one transformer call to 1e-4, the whole denoising loop to 1e-3.
#include <QtTest>

#include "models/cogvideox_transformer.h"
#include "pipeline/denoise.h"
#include "plan/error.h"
#include "plan/job.h"
#include "sampling/noise.h"
#include "sampling/scheduler.h"
#include "tensor_support.h"

using namespace studio;

class TestGoldens : public QObject {
  Q_OBJECT

  struct Case {
    plan::ModelFolder folder;
    std::shared_ptr<models::CogVideoXTransformer> model;
  };
  static Case load(const std::string& name) {
    Case c;
    c.folder = plan::read_model_folder(test::golden_case(name));
    c.model = models::CogVideoXTransformer::load(c.folder.dir + "/transformer", c.folder.transformer, at::kFloat,
                                                 at::kCPU);
    return c;
  }
  static void add_cases() {
    QTest::addColumn<QString>("name");
    for (const char* n : {"cogvx2b_tiny", "cogvx5b_tiny", "cogvx15_tiny"}) QTest::newRow(n) << QString(n);
  }

 private Q_SLOTS:
  void family_is_read_from_config() {
    QCOMPARE(plan::read_model_folder(test::golden_case("cogvx2b_tiny")).transformer.family(), plan::Family::CogVideoX_2B);
    QCOMPARE(plan::read_model_folder(test::golden_case("cogvx5b_tiny")).transformer.family(), plan::Family::CogVideoX_5B);
    QCOMPARE(plan::read_model_folder(test::golden_case("cogvx15_tiny")).transformer.family(), plan::Family::CogVideoX_15);
  }

  void rope_tables_data() {
    QTest::addColumn<QString>("name");
    QTest::newRow("cogvx5b_tiny") << QString("cogvx5b_tiny");
    QTest::newRow("cogvx15_tiny") << QString("cogvx15_tiny");
  }
  void rope_tables() {
    QFETCH(QString, name);
    auto c = load(name.toStdString());
    auto lat = test::golden_tensor(name.toStdString(), "latents_init");
    auto pos = c.model->positions(c.model->token_grid(lat.size(1), lat.size(3), lat.size(4)));
    const double cos_err = test::max_abs_diff(pos.rope_cos, test::golden_tensor(name.toStdString(), "rope_cos"));
    const double sin_err = test::max_abs_diff(pos.rope_sin, test::golden_tensor(name.toStdString(), "rope_sin"));
    qInfo("rope max error: cos %.3g, sin %.3g", cos_err, sin_err);
    QVERIFY2(cos_err < 1e-4, qPrintable(QString("rope_cos max error %1").arg(cos_err)));
    QVERIFY2(sin_err < 1e-4, qPrintable(QString("rope_sin max error %1").arg(sin_err)));
  }

  void step0_output_data() { add_cases(); }
  void step0_output() {
    QFETCH(QString, name);
    const std::string n = name.toStdString();
    auto c = load(n);
    auto hidden = test::golden_tensor(n, "step0_hidden_states");
    auto text = test::golden_tensor(n, "step0_encoder_hidden_states");
    io::TensorFile f(test::golden_case(n) + "/golden.safetensors", "golden");
    auto t = f.get_int64("step0_timestep");
    auto pos = c.model->positions(c.model->token_grid(hidden.size(1), hidden.size(3), hidden.size(4)));
    auto out = c.model->forward(hidden, text, t, pos);
    const double err = test::max_abs_diff(out, test::golden_tensor(n, "step0_output"));
    qInfo("step0_output max error %.3g", err);
    QVERIFY2(err < 1e-4, qPrintable(QString("step0_output max error %1").arg(err)));
  }

  void final_latents_data() { add_cases(); }
  void final_latents() {
    QFETCH(QString, name);
    const std::string n = name.toStdString();
    auto c = load(n);
    auto g = test::golden_json(n);
    pipeline::DenoiseInputs in;
    in.prompt_embeds = test::golden_tensor(n, "prompt_embeds");
    in.negative_prompt_embeds = test::golden_tensor(n, "negative_prompt_embeds");
    in.latents = test::golden_tensor(n, "latents_init");
    in.num_inference_steps = g["num_inference_steps"];
    in.guidance_scale = g["guidance_scale"];
    in.use_dynamic_cfg = g["use_dynamic_cfg"];
    std::unique_ptr<sampling::NoiseSource> noise;
    io::TensorFile gf(test::golden_case(n) + "/golden.safetensors", "golden");
    if (gf.has("scheduler_noise"))
      noise = std::make_unique<sampling::RecordedNoise>(gf.get("scheduler_noise", 6, ""));
    else
      noise = std::make_unique<sampling::SeededNoise>(0);  // DDIM draws none
    int calls = 0;
    pipeline::Hooks hooks;
    hooks.on_step = [&](int step, int total, double seconds, const at::Tensor& latents) {
      QCOMPARE(latents.sizes(), in.latents.sizes());
      QCOMPARE(step, ++calls);
      QCOMPARE(total, in.num_inference_steps);
      QVERIFY(seconds >= 0);
    };
    auto out = pipeline::denoise(*c.model, c.folder.scheduler, in, noise.get(), hooks);
    QCOMPARE(calls, in.num_inference_steps);
    const double err = test::max_abs_diff(out, test::golden_tensor(n, "final_latents"));
    qInfo("final_latents max error %.3g", err);
    QVERIFY2(err < 1e-3, qPrintable(QString("final_latents max error %1").arg(err)));
  }

  void latent_geometry_matches_reference() {
    // The reference's latents_init shape is what the plan derives from the job.
    for (const char* n : {"cogvx2b_tiny", "cogvx5b_tiny", "cogvx15_tiny"}) {
      auto folder = plan::read_model_folder(test::golden_case(n));
      auto g = test::golden_json(n);
      plan::JobSpec job;
      job.height = g["height"];
      job.width = g["width"];
      job.num_frames = g["num_frames"];
      job.prompt_embeds_file = test::golden_case(n) + "/golden.safetensors";
      plan::apply_model_defaults(job, folder);
      QVERIFY(plan::validate(job, folder).empty());
      auto geo = plan::latent_geometry(job, folder);
      auto lat = test::golden_tensor(n, "latents_init");
      QCOMPARE(std::vector<int64_t>({1, geo.padded_frames, geo.channels, geo.height, geo.width}), lat.sizes().vec());
    }
  }

  void cancel_stops_before_the_next_step() {
    auto c = load("cogvx2b_tiny");
    pipeline::DenoiseInputs in;
    in.prompt_embeds = test::golden_tensor("cogvx2b_tiny", "prompt_embeds");
    in.negative_prompt_embeds = test::golden_tensor("cogvx2b_tiny", "negative_prompt_embeds");
    in.latents = test::golden_tensor("cogvx2b_tiny", "latents_init");
    in.num_inference_steps = 4;
    bool cancel = false;
    int steps = 0;
    pipeline::Hooks hooks;
    hooks.stop_requested = [&] { return cancel; };
    hooks.on_step = [&](int step, int, double, const at::Tensor&) {
      steps = step;
      if (step == 2) cancel = true;
    };
    sampling::SeededNoise noise(0);
    QVERIFY_THROWS_EXCEPTION(studio::Cancelled, pipeline::denoise(*c.model, c.folder.scheduler, in, &noise, hooks));
    QCOMPARE(steps, 2);
  }

  void dynamic_guidance_follows_the_timestep_value() {
    // t = 999 of 4 steps: base (4 - 999) / 4 is negative, as upstream keeps it.
    const double g = sampling::guidance_at(6.0, true, 999, 4);
    QCOMPARE(g, 1 + 6.0 * (1 - std::cos(M_PI * std::pow(-248.75, 5.0))) / 2);
    QCOMPARE(sampling::guidance_at(6.0, false, 999, 4), 6.0);
  }

  void trailing_timesteps() {
    auto folder = plan::read_model_folder(test::golden_case("cogvx2b_tiny"));
    sampling::Scheduler s4(folder.scheduler, 4);
    QCOMPARE(s4.timesteps(), std::vector<int64_t>({999, 749, 499, 249}));
    sampling::Scheduler s50(folder.scheduler, 50);
    QCOMPARE(s50.timesteps().front(), int64_t(999));
    QCOMPARE(s50.timesteps()[1], int64_t(979));
    QCOMPARE(s50.timesteps().back(), int64_t(19));
    QCOMPARE(s50.alpha_cumprod(999), 0.0);  // zero terminal SNR
  }
};

QTEST_APPLESS_MAIN(TestGoldens)
#include "test_goldens.moc"
