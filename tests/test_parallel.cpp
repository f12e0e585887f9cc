// Every parallel mix against the reference cases: one transformer call (step0_output, 1e-4) with ranks as
// threads over real Gloo sockets, and the whole run (final_latents and the video decoded by every rank with
// --use_parallel_vae, 1e-3) through dit-launch with ranks as processes. Data parallel: each video equal to its one-process run.
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>


#include "parallel/parallel_model.h"
#include "tensor_support.h"
#include "rank_threads.h"

using namespace studio;

namespace {

struct Mix {
  const char* name;
  plan::ParallelConfig p;
};

std::vector<Mix> mixes() {
  auto make = [](int u, int r, bool cfg, int pf = 1) {
    plan::ParallelConfig p;
    p.ulysses_degree = u;
    p.ring_degree = r;
    p.use_cfg_parallel = cfg;
    p.pipefusion_parallel_degree = pf;
    p.num_pipeline_patch = pf > 1 ? 2 : 1;
    return p;
  };
  return {{"ulysses2", make(2, 1, false)}, {"ulysses3", make(3, 1, false)},    {"ulysses4", make(4, 1, false)},
          {"ring2", make(1, 2, false)},    {"ring3", make(1, 3, false)},       {"ring4", make(1, 4, false)},
          {"ulysses2_ring2", make(2, 2, false)}, {"cfg2_ulysses2", make(2, 1, true)}, {"cfg2_ring3", make(1, 3, true)},
          {"pipefusion2", make(1, 1, false, 2)}, {"pipefusion2_ulysses2", make(2, 1, false, 2)}};
}

void add_rows() {
  QTest::addColumn<QString>("name");
  QTest::addColumn<int>("mix");
  const auto all = mixes();
  for (const char* c : {"cogvx2b_tiny", "cogvx5b_tiny", "cogvx15_tiny"})
    for (size_t i = 0; i < all.size(); ++i)
      QTest::newRow((std::string(c) + "/" + all[i].name).c_str()) << QString(c) << int(i);
}

}  // namespace

class TestParallel : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;

 private Q_SLOTS:
  void step0_output_in_every_mix_data() { add_rows(); }
  void step0_output_in_every_mix() {
    QFETCH(QString, name);
    QFETCH(int, mix);
    const std::string n = name.toStdString();
    const auto p = mixes()[size_t(mix)].p;
    auto folder = plan::read_model_folder(test::golden_case(n));
    auto model = models::CogVideoXTransformer::load(folder.dir + "/transformer", folder.transformer, at::kFloat, at::kCPU);
    auto hidden = test::golden_tensor(n, "step0_hidden_states");
    auto text = test::golden_tensor(n, "step0_encoder_hidden_states");
    auto t = io::TensorFile(test::golden_case(n) + "/golden.safetensors", "g").get_int64("step0_timestep");
    auto want = test::golden_tensor(n, "step0_output");
    const auto pos = model->positions(model->token_grid(hidden.size(1), hidden.size(3), hidden.size(4)));
    const int world = p.world_size();
    std::vector<double> err(size_t(world), 1e30);
    const auto failure = test::run_ranks(p, [&](int r, parallel::Mesh& mesh) {
      parallel::ParallelTransformer call(*model, mesh);
      err[size_t(r)] = test::max_abs_diff(call(hidden, text, t, pos), want);
    });
    for (int r = 0; r < world; ++r) {
      QVERIFY2(failure[size_t(r)].empty(), failure[size_t(r)].c_str());
      QVERIFY2(err[size_t(r)] < 1e-4, qPrintable(QString("rank %1: step0_output max error %2").arg(r).arg(err[size_t(r)])));
    }
    qInfo("%s: step0_output max error %.3g on %d ranks", qPrintable(QTest::currentDataTag()),
          *std::max_element(err.begin(), err.end()), world);
  }

  void final_latents_through_dit_launch_data() { add_rows(); }
  void final_latents_through_dit_launch() {
    QFETCH(QString, name);
    QFETCH(int, mix);
    const std::string n = name.toStdString();
    auto g = test::golden_json(n);
    auto p = mixes()[size_t(mix)].p;
    p.warmup_steps = g["num_inference_steps"];  // PipeFusion: warm-up covering every step is exact
    p.use_parallel_vae = true;                  // and every rank decodes a band of rows
    const QString c = QString::fromStdString(test::golden_case(n)), file = c + "/golden.safetensors";
    const QString out = tmp_.path() + "/" + QString(QTest::currentDataTag()).replace('/', '_') + ".safetensors";
    QStringList args{"--model", c, "--height", QString::number(int(g["height"])), "--width",
                     QString::number(int(g["width"])), "--num_frames", QString::number(int(g["num_frames"])),
                     "--num_inference_steps", QString::number(int(g["num_inference_steps"])), "--guidance_scale",
                     QString::number(double(g["guidance_scale"])), "--prompt_embeds", file, "--latents", file,
                     "--save_tensors", out};
    if (g["use_dynamic_cfg"]) args << "--use_dynamic_cfg";
    if (g["scheduler"] == "CogVideoXDPMScheduler") args << "--sampler_noise" << file;
    args << QString::fromStdString(p.flags()).split(' ');
    QProcess proc;
    proc.start(QString(STUDIO_BIN_DIR) + "/dit-launch", args);
    QVERIFY(proc.waitForFinished(180000));
    const QString err = proc.readAllStandardError();
    QVERIFY2(proc.exitCode() == 0, qPrintable(err));
    QVERIFY(err.contains(QString("starting %1 ranks").arg(p.world_size())));
    const double e = test::max_abs_diff(io::TensorFile(out.toStdString(), "t").get("final_latents", 5, ""),
                                        test::golden_tensor(n, "final_latents"));
    const double v = test::max_abs_diff(io::TensorFile(out.toStdString(), "t").get("video", 5, ""),
                                        test::golden_tensor(n, "video"));
    qInfo("%s: final_latents max error %.3g, video (parallel VAE) %.3g", qPrintable(QTest::currentDataTag()), e, v);
    QVERIFY(e < 1e-3);
    QVERIFY(v < 1e-3);
  }

  void data_parallel_videos_equal_their_one_process_runs() {
    const QString c = QString::fromStdString(test::golden_case("cogvx5b_tiny"));
    const QStringList base{"--model", c, "--num_inference_steps", "3", "--prompt_embeds", c + "/golden.safetensors"};
    auto run = [&](const QStringList& extra, const QString& out) {
      QProcess proc;
      proc.start(QString(STUDIO_BIN_DIR) + "/dit-launch", base + extra + QStringList{"--save_tensors", out});
      proc.waitForFinished(180000);
      return proc.exitCode() == 0 ? QString() : QString(proc.readAllStandardError());
    };
    const QString both = tmp_.path() + "/dp.safetensors", a = tmp_.path() + "/s7.safetensors",
                  b = tmp_.path() + "/s8.safetensors";
    QString e = run({"--seed", "7", "--num_videos_per_prompt", "2", "--data_parallel_degree", "2"}, both);
    QVERIFY2(e.isEmpty(), qPrintable(e));
    QVERIFY(run({"--seed", "7"}, a).isEmpty());
    QVERIFY(run({"--seed", "8"}, b).isEmpty());
    auto get = [](const QString& f) { return io::TensorFile(f.toStdString(), "t").get("final_latents", 5, ""); };
    const auto dp = get(both);
    QCOMPARE(dp.size(0), int64_t(2));
    const double e0 = test::max_abs_diff(dp.narrow(0, 0, 1), get(a)), e1 = test::max_abs_diff(dp.narrow(0, 1, 1), get(b));
    qInfo("data parallel: video 0 max error %.3g, video 1 %.3g against their one-process runs", e0, e1);
    QVERIFY(e0 < 1e-5 && e1 < 1e-5);
  }
};

QTEST_GUILESS_MAIN(TestParallel)
#include "test_parallel.moc"
