// The studio's parallel settings, offscreen with the real window, worker and demo models: defaults valid for
// the devices, the CPU's refusal of more processes than cores (unless oversubscribed) and of more memory than it
// has, the settings re-derived when a model or device change leaves them unable to run (saying what changed),
// and the Memory group's fit with the ways of keeping the weights that would make a model fit. With
// STUDIO_SCREENSHOTS=DIR it saves those views at 1280 x 800 and 1920 x 1080 there.
#undef QT_NO_KEYWORDS  // qcustomplot.h, included through the GUI, uses Qt's keywords
#include <QCheckBox>
#include <QListWidget>
#include <QMenu>
#include <QScrollArea>
#include <QTemporaryDir>
#include <QtTest>

#include <thread>

#include "gui/window/main_window.h"
#include "plan/family.h"
#include "plan/parallel_defaults.h"
#include "workers/launch/paths.h"

#include "studio_support.h"
#include "support.h"

using namespace studio;
using namespace studio::gui;
using namespace studio::test;

namespace {

workers::Devices gpus(int n) {
  workers::Devices d;
  for (int i = 0; i < n; ++i) d.gpus.push_back({i, "Test GPU", uint64_t(80) << 30, uint64_t(80) << 30});
  return d;
}

}  // namespace

class TestStudioParallel : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;

 private Q_SLOTS:
  void initTestCase() {
    start_studio_suite("DiT Studio parallel tests");
  }

  void parallel_defaults_are_valid_for_the_devices() {
    for (const auto& dir : {workers::demo_model_dir(), workers::demo_flux_dir()}) {
      const auto model = plan::read_model_folder(dir);
      plan::JobSpec job;
      job.model_dir = dir;
      job.prompt = "a paper boat";
      plan::apply_model_defaults(job, model);
      for (int n : {1, 2, 4}) {
        const auto p = plan::default_parallel(job, model, n);
        const auto problems = plan::validate_parallel(p, job, model, n);
        QVERIFY2(problems.empty(), qPrintable(QString::fromStdString(
                                       p.describe() + ": " + (problems.empty() ? "" : problems.front().message))));
        QCOMPARE(p.world_size(), n);
        // The rule: CFG when the family guides with two branches, then Ulysses over the 4 heads.
        const bool cfg = plan::rules_of(model).classifier_free() && n > 1;
        QCOMPARE(p.use_cfg_parallel, cfg);
        QCOMPARE(p.ulysses_degree, cfg ? n / 2 : n);
      }
    }
    // The window on 4 GPUs starts from the default for 4; unchecking two gives the default for 2.
    MainWindow w(tmp_.path() + "/gpus");
    w.show();
    wait_for_devices(w);
    w.compose_panel().prompt->setPlainText("a paper boat");
    w.parallel_panel().set_devices(gpus(4));
    QCOMPARE(w.parallel_panel().config().world_size(), 4);
    QVERIFY(w.parallel_panel().config().use_cfg_parallel);
    QVERIFY2(generate_button(w)->isEnabled(), qPrintable(reason(w)->text()));
    w.parallel_panel().devices->item(3)->setCheckState(Qt::Unchecked);
    w.parallel_panel().devices->item(2)->setCheckState(Qt::Unchecked);
    QCOMPARE(w.parallel_panel().config().world_size(), 2);
    QVERIFY2(generate_button(w)->isEnabled(), qPrintable(reason(w)->text()));
    w.parallel_panel().set_devices(gpus(1));
    QCOMPARE(w.parallel_panel().config().world_size(), 1);
    QVERIFY2(generate_button(w)->isEnabled(), qPrintable(reason(w)->text()));
  }

  // More CPU processes than cores is refused (Generate off) unless Oversubscribe is ticked, which turns it
  // into an amber warning; the valid configurations are listed for the cores; processes whose memory the
  // machine lacks are refused.
  void the_cpu_refuses_more_processes_than_cores_unless_asked() {
    const int cores = int(std::thread::hardware_concurrency());
    QVERIFY(!plan::cpu_processes_problem(cores, cores));
    QVERIFY(plan::cpu_processes_problem(64, cores));
    MainWindow w(tmp_.path() + "/cpu");
    w.show();
    wait_for_devices(w);
    w.compose_panel().prompt->setPlainText("a paper boat");
    QCOMPARE(w.parallel_panel().config().world_size(), 1);  // the CPU starts from one process
    QCOMPARE(w.parallel_panel().problems().text("world_size"), QString());
    QVERIFY(w.parallel_panel().oversubscribe->isVisibleTo(&w.parallel_panel()));
    // A configuration the model takes, for more processes than the cores.
    const plan::ModelFolder* model = w.compose_panel().model();
    QVERIFY(model);
    plan::JobSpec job = w.compose_panel().job();
    plan::apply_model_defaults(job, *model);
    std::vector<plan::ParallelConfig> more;
    int n = cores + 1;
    for (; more.empty() && n <= 64; ++n) more = plan::valid_configs(job, *model, n);
    QVERIFY(!more.empty());
    const QString over = QString("%1 processes").arg(more.front().world_size());
    w.parallel_panel().set_config(more.front());
    const QString error = w.parallel_panel().problems().text("world_size");
    QVERIFY2(error.contains(over + QString(" on a CPU with %1 cores").arg(cores)) &&
                 error.contains("tick Oversubscribe"),
             qPrintable(error));
    auto* label = w.parallel_panel().findChild<QLabel*>("problems_world_size");
    QVERIFY2(!label->text().contains("b9770e"), qPrintable(label->text()));  // red: an error, not a warning
    QVERIFY(!generate_button(w)->isEnabled());
    QVERIFY(w.parallel_panel().isVisible());  // its group opened to say so
    shoot_sizes_showing(&w, label, "compose-oversubscribe");
    // The valid configurations are those of the cores, not of 64 processes.
    const auto actions = w.parallel_panel().suggestions->menu()->actions();
    QVERIFY(!actions.isEmpty());
    for (QAction* a : actions)
      QVERIFY2(!a->text().contains(over) &&
                   (cores == 1 || a->text().contains(QString("(%1 processes)").arg(cores))),
               qPrintable(a->text()));
    w.parallel_panel().oversubscribe->setChecked(true);
    QVERIFY(label->text().contains("b9770e"));  // amber: a warning
    QVERIFY2(generate_button(w)->isEnabled(), qPrintable(reason(w)->text()));
    QVERIFY(w.parallel_panel().suggestions->menu()->actions().front()->text().contains(over));
    w.parallel_panel().oversubscribe->setChecked(false);
    w.parallel_panel().set_config({});
    QCOMPARE(w.parallel_panel().problems().text("world_size"), QString());
    // A machine with too little memory for the processes: refused, saying what they need.
    workers::Devices small;
    small.cpu_cores = cores;
    small.cpu_memory_bytes = uint64_t(1) << 20;
    w.parallel_panel().set_devices(small);
    const QString memory = w.parallel_panel().problems().text("memory");
    QVERIFY2(memory.contains("more than this machine's 0.0 GiB") && memory.contains("use fewer processes"),
             qPrintable(memory));
    QVERIFY(!generate_button(w)->isEnabled());
  }

  // A change of model or devices that the parallel settings cannot run re-derives them from the default
  // for the machine, and says below the fields what it changed and why.
  void a_change_of_model_or_devices_rederives_the_parallel_settings() {
    MainWindow w(tmp_.path() + "/refit");
    w.show();
    wait_for_devices(w);
    w.compose_panel().prompt->setPlainText("a paper boat");
    w.parallel_panel().set_devices(gpus(4));
    plan::ParallelConfig cfg2;
    cfg2.use_cfg_parallel = true;
    cfg2.ulysses_degree = 2;
    w.parallel_panel().set_config(cfg2);  // as Auto chose it for CogVideoX
    QVERIFY2(generate_button(w)->isEnabled(), qPrintable(reason(w)->text()));
    w.compose_panel().set_model_dir(QString::fromStdString(workers::demo_flux_dir()));  // no CFG parallel
    const auto p = w.parallel_panel().config();
    QVERIFY(!p.use_cfg_parallel);
    QCOMPARE(p.world_size(), 4);
    QVERIFY2(generate_button(w)->isEnabled(), qPrintable(reason(w)->text()));
    QString note = w.parallel_panel().problems().text("world_size");
    QVERIFY2(note.contains("Set to " + QString::fromStdString(p.describe())) &&
                 note.contains(QString::fromStdString(cfg2.describe()) + " cannot run here"),
             qPrintable(note));
    shoot_sizes_showing(&w, w.parallel_panel().findChild<QLabel*>("problems_world_size"), "compose-refit");
    w.parallel_panel().ulysses->setValue(2);  // an edit by hand: the note has said its piece
    w.parallel_panel().ring->setValue(2);
    QVERIFY(!w.parallel_panel().problems().text("world_size").contains("Set to"));
    // From four GPUs back to the CPU: Ring 64 with 64 patches does not stay.
    plan::ParallelConfig big;
    big.ring_degree = 4;
    w.parallel_panel().set_config(big);
    w.parallel_panel().set_devices(workers::Devices{});
    workers::Devices cpu;
    cpu.cpu_cores = 2;
    cpu.cpu_memory_bytes = uint64_t(64) << 30;
    w.parallel_panel().set_devices(cpu);
    QCOMPARE(w.parallel_panel().config().world_size(), 1);
    note = w.parallel_panel().problems().text("world_size");
    QVERIFY2(note.contains("Set to") && note.contains("ring 4"), qPrintable(note));
    QVERIFY2(generate_button(w)->isEnabled(), qPrintable(reason(w)->text()));
  }

  // FLUX.1-dev's shape on one small GPU: the Memory group says it does not fit and offers the ways of keeping
  // the weights that would, each with its memory; a click takes one.
  void the_memory_group_says_what_fits() {
    const auto dir = flux_dev_shaped((tmp_.path() + "/flux-dev").toStdString());
    MainWindow w(tmp_.path() + "/memory");
    w.show();
    wait_for_devices(w);
    w.compose_panel().set_model_dir(QString::fromStdString(dir));
    w.compose_panel().prompt->setPlainText("a paper boat");
    workers::Devices d;
    d.gpus.push_back({0, "Test GPU", uint64_t(16) << 30, uint64_t(16) << 30});
    w.parallel_panel().set_devices(d);
    QLabel* fit = w.compose_panel().memory->fit;
    QVERIFY2(fit->text().contains("Does not fit") && fit->text().contains("more than the 16.0 GiB"),
             qPrintable(fit->text()));
    QVERIFY2(fit->text().contains("<a href=\"--quantize fp8\">"), qPrintable(fit->text()));
    QVERIFY(!w.parallel_panel().problems().text("memory").isEmpty());  // and Generate is off for it
    Q_EMIT fit->linkActivated("--quantize fp8");
    QCOMPARE(w.compose_panel().job().quantize, std::string("fp8"));
    QVERIFY2(fit->text().startsWith("Fits: "), qPrintable(fit->text()));
    QCOMPARE(w.parallel_panel().problems().text("memory"), QString());
    // The other fields reach the job, and a job file's come back to them.
    w.compose_panel().memory->offload->setCurrentIndex(1);
    w.compose_panel().memory->text_encoder_device->setCurrentIndex(1);
    auto j = w.compose_panel().job();
    QCOMPARE(j.offload, std::string("blocks"));
    QCOMPARE(j.text_encoder_device, std::string("cpu"));
    QVERIFY(!j.fp8_gemm);
    w.compose_panel().memory->fp8_gemm->setChecked(true);
    QVERIFY(w.compose_panel().job().fp8_gemm);
    j.fp8_gemm = false;
    w.compose_panel().set_job(j);
    QVERIFY(!w.compose_panel().memory->fp8_gemm->isChecked());
    j.quantize.clear();
    j.offload.clear();
    j.transformer_file = dir + "/flux1-dev-Q8_0.gguf";
    w.compose_panel().set_job(j);
    QCOMPARE(w.compose_panel().memory->quantize->currentIndex(), 0);
    QCOMPARE(w.compose_panel().memory->transformer->text().toStdString(), j.transformer_file);
    QVERIFY(!w.compose_panel().memory->transformer_2->isVisibleTo(&w.compose_panel()));  // one expert only
    QVERIFY(w.compose_panel().memory->text_encoder_2->isVisibleTo(&w.compose_panel()));  // FLUX.1's T5
    w.compose_panel().memory->text_encoder_2->setText("/models/t5-v1_1-xxl-encoder-Q8_0.gguf");
    QCOMPARE(w.compose_panel().job().text_encoder_2_file, std::string("/models/t5-v1_1-xxl-encoder-Q8_0.gguf"));
    w.compose_panel().memory->text_encoder_2->clear();
    // On two such GPUs (Ulysses 2), sharding the weights over them is a way too, and a click sets it.
    j.transformer_file.clear();
    w.compose_panel().set_job(j);
    d.gpus.push_back({1, "Test GPU", uint64_t(16) << 30, uint64_t(16) << 30});
    w.parallel_panel().set_devices(d);
    QCOMPARE(w.parallel_panel().config().sp_degree(), 2);
    QVERIFY2(fit->text().contains("<a href=\"--shard_weights\">"), qPrintable(fit->text()));
    Q_EMIT fit->linkActivated("--shard_weights");
    QVERIFY(w.parallel_panel().config().shard_weights);
    QVERIFY(w.parallel_panel().shard_weights->isChecked());
    QVERIFY2(fit->text().startsWith("Fits: "), qPrintable(fit->text()));
    // Or the two GPUs as PipeFusion stages, each holding half the blocks: a click sets the degrees.
    w.parallel_panel().shard_weights->setChecked(false);
    QVERIFY2(fit->text().contains("<a href=\"--pipefusion_parallel_degree 2\">"), qPrintable(fit->text()));
    Q_EMIT fit->linkActivated("--pipefusion_parallel_degree 2");
    QCOMPARE(w.parallel_panel().config().pipefusion_parallel_degree, 2);
    QCOMPARE(w.parallel_panel().config().sp_degree(), 1);
    QVERIFY2(fit->text().startsWith("Fits: "), qPrintable(fit->text()));
  }

};

QTEST_MAIN(TestStudioParallel)
#include "test_studio_parallel.moc"
