// The studio's window, offscreen, with real workers: live validation and its messages, the valid
// configurations one click away, a 2-rank run of the demo model watched to the end (progress, frames,
// player, export read back by libavformat, history), and a killed rank that leaves the window usable. What a
// session keeps and how it ends: test_studio_session.
// With STUDIO_SCREENSHOTS=DIR it also saves a picture of each view there (docs/screenshots).
#undef QT_NO_KEYWORDS  // qcustomplot.h, included through the GUI, uses Qt's keywords
#include <QMenu>
#include <QMessageBox>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTimer>
#include <QtTest>

#include <cmath>
#include <csignal>

#include "gui/window/main_window.h"
#include "qcustomplot.h"
#include "video/clip_writer.h"
#include "video/image_writer.h"
#include "workers/launch/paths.h"

#include "studio_support.h"
#include "support.h"

using namespace studio;
using namespace studio::gui;
using namespace studio::test;

class TestStudio : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;

 private Q_SLOTS:
  void initTestCase() {
    start_studio_suite("DiT Studio tests");
  }

  void validation_speaks_by_the_field_and_gates_generate() {
    MainWindow w(tmp_.path() + "/a");
    w.resize(1280, 860);
    w.show();
    // The devices come from `dit-worker --list-devices`: on this machine, the CPU and its cores.
    QTRY_VERIFY_WITH_TIMEOUT(w.parallel_panel().devices->item(0)->text().contains(" cores"), 120000);
    // A first start fills every setting from the model's family: CogVideoX's 50 steps and guidance 6.
    QCOMPARE(w.compose_panel().steps->value(), 50);
    QCOMPARE(w.compose_panel().guidance->value(), 6.0);
    for (const char* blank : {"", "  \n\t "}) {  // spaces and newlines are no prompt either
      w.compose_panel().prompt->setPlainText(blank);
      QVERIFY(!generate_button(w)->isEnabled());
      QVERIFY(w.compose_panel().problems().text("prompt").contains("write a prompt"));
    }
    w.compose_panel().prompt->setPlainText("a paper boat");
    QVERIFY2(generate_button(w)->isEnabled(), qPrintable(reason(w)->text()));
    w.compose_panel().height->setValue(200);
    QVERIFY(!generate_button(w)->isEnabled());
    QVERIFY2(w.compose_panel().problems().text("height").contains("Height 200: must be a positive multiple of 16"),
             qPrintable(w.compose_panel().problems().text("height")));
    w.compose_panel().height->setValue(192);
    QVERIFY(generate_button(w)->isEnabled());
    // The demo model has 2 layers: 3 PipeFusion stages cannot be.
    w.parallel_panel().pipefusion->setValue(3);
    QVERIFY(!generate_button(w)->isEnabled());
    QVERIFY2(w.parallel_panel().problems().text("pipefusion_parallel_degree").contains("the model has 2 layers"),
             qPrintable(w.parallel_panel().problems().text("pipefusion_parallel_degree")));
    // One click on a valid configuration fixes it.
    auto actions = w.parallel_panel().suggestions->menu()->actions();
    QVERIFY(!actions.isEmpty());
    actions.first()->trigger();
    QVERIFY2(generate_button(w)->isEnabled(), qPrintable(reason(w)->text()));
    QCOMPARE(w.parallel_panel().problems().text("pipefusion_parallel_degree"), QString());
    // The family's presets: a draft of half the size and frames, then back to the model's defaults.
    QVERIFY(w.compose_panel().preset->count() >= 2);  // the model's size, a draft, other shapes
    Q_EMIT w.compose_panel().preset->activated(1);
    QCOMPARE(w.compose_panel().width->value(), 144);
    QCOMPARE(w.compose_panel().height->value(), 96);
    QCOMPARE(w.compose_panel().frames->value(), 13);
    QCOMPARE(w.compose_panel().steps->value(), 20);
    QVERIFY2(generate_button(w)->isEnabled(), qPrintable(reason(w)->text()));
    Q_EMIT w.compose_panel().preset->activated(0);
    QCOMPARE(w.compose_panel().width->value(), 288);
    QCOMPARE(w.compose_panel().frames->value(), 25);
    QCOMPARE(w.compose_panel().steps->value(), 50);
    // The family and sampler come from the folder's configs; a folder that is not a model is explained.
    QVERIFY2(w.compose_panel().family->text().contains("CogVideoX") &&
                 w.compose_panel().family->text().contains("DDIM"),
             qPrintable(w.compose_panel().family->text()));
    const QString demo = w.compose_panel().model_edit->text();
    w.compose_panel().set_model_dir(tmp_.path());
    QVERIFY(!generate_button(w)->isEnabled());
    QVERIFY2(w.compose_panel().problems().text("model").contains("model_index.json"),
             qPrintable(w.compose_panel().problems().text("model")));
    w.compose_panel().set_model_dir(demo);
    QVERIFY(generate_button(w)->isEnabled());
    shoot(&w, "compose");
  }

  void step_cache_is_a_choice_with_its_rules() {
    MainWindow w(tmp_.path() + "/cache");
    w.show();
    QTRY_VERIFY_WITH_TIMEOUT(w.parallel_panel().devices->item(0)->text().contains(" cores"), 120000);
    w.compose_panel().prompt->setPlainText("a paper boat");
    // Off by default; its threshold waits until it is on, at diffusers' default.
    QCOMPARE(w.compose_panel().step_cache->currentIndex(), 0);
    QVERIFY(!w.compose_panel().cache_threshold->isEnabled());
    QVERIFY(!w.compose_panel().job().use_fbcache && !w.compose_panel().job().use_teacache);
    QVERIFY(std::isnan(w.compose_panel().job().cache_threshold));
    // Each method starts from its default: TeaCache's for CogVideoX, then First-Block Cache's.
    w.compose_panel().step_cache->setCurrentIndex(2);
    QVERIFY(w.compose_panel().cache_threshold->isEnabled());
    QVERIFY(w.compose_panel().job().use_teacache && !w.compose_panel().job().use_fbcache);
    QCOMPARE(w.compose_panel().job().cache_threshold, 0.1);
    w.compose_panel().step_cache->setCurrentIndex(1);
    QCOMPARE(w.compose_panel().job().cache_threshold, 0.05);
    w.compose_panel().cache_threshold->setValue(0.2);
    QVERIFY(w.compose_panel().job().use_fbcache && !w.compose_panel().job().use_teacache);
    QCOMPARE(w.compose_panel().job().cache_threshold, 0.2);
    QVERIFY2(generate_button(w)->isEnabled(), qPrintable(reason(w)->text()));
    // PipeFusion cannot take it: said next to the cache, and Generate waits.
    w.parallel_panel().pipefusion->setValue(2);
    QVERIFY(!generate_button(w)->isEnabled());
    QVERIFY2(w.compose_panel().problems().text("use_fbcache").contains("First-Block Cache with PipeFusion stages 2"),
             qPrintable(w.compose_panel().problems().text("use_fbcache")));
    w.parallel_panel().pipefusion->setValue(1);
    QVERIFY2(generate_button(w)->isEnabled(), qPrintable(reason(w)->text()));
    // A job read back (history, presets) keeps it.
    const auto kept = w.compose_panel().job();
    w.compose_panel().step_cache->setCurrentIndex(0);
    w.compose_panel().set_job(kept);
    QVERIFY(w.compose_panel().step_cache->currentIndex() == 1 && w.compose_panel().cache_threshold->isEnabled());
    QCOMPARE(w.compose_panel().cache_threshold->value(), 0.2);
    Q_EMIT w.compose_panel().preset->activated(1);
    QVERIFY(w.compose_panel().job().use_fbcache);
  }

  void a_cached_run_marks_the_steps_it_reused() {
    MainWindow w(tmp_.path() + "/cached_run");
    w.show();
    w.compose_panel().prompt->setPlainText("a paper boat drifts on a pond");
    w.compose_panel().frames->setValue(9);
    w.compose_panel().steps->setValue(10);
    QSignalSpy spy(&w, &MainWindow::run_finished);
    QVERIFY2(w.generate(), qPrintable(reason(w)->text()));  // first without the cache, to compare with
    QCOMPARE(wait_for_run(spy, 120000), 0);
    QVERIFY(w.run_view().reused_steps == nullptr);
    w.compose_panel().step_cache->setCurrentIndex(1);
    w.compose_panel().cache_threshold->setValue(2);  // the demo model's random blocks change a lot from step to step
    QVERIFY2(w.generate(), qPrintable(reason(w)->text()));
    QCOMPARE(wait_for_run(spy, 120000), 0);
    QVERIFY(w.run_view().reused_steps != nullptr);
    const int reused = w.run_view().reused_steps->dataCount();
    QVERIFY2(reused > 0 && reused < 10, qPrintable(QString::number(reused)));  // the first step always runs
    // The rank's line counts them too.
    QString lines;
    for (const auto* l : w.run_view().findChildren<QLabel*>()) lines += l->text() + "\n";
    QVERIFY2(lines.contains(QString("reused %1").arg(reused)), qPrintable(lines));
    QCOMPARE(w.run_view().step_plot->graph(1)->name(), QString("reused (step cache)"));
    // Side by side with the uncached run of the same seed: how far the cache moved the frames.
    w.history().table->selectAll();
    w.history().compare_button->click();
    QTRY_VERIFY_WITH_TIMEOUT(!w.compare_view().loading(), 30000);
    QVERIFY2(w.compare_view().psnr_db > 0 && std::isfinite(w.compare_view().psnr_db),
             qPrintable(w.compare_view().difference->text()));
    QVERIFY2(w.compare_view().difference->text().contains("PSNR"), qPrintable(w.compare_view().difference->text()));
    bool highlighted = false;  // the cache is among the settings that differ
    for (int i = 0; i < w.compare_view().settings->rowCount(); ++i)
      highlighted |= w.compare_view().settings->item(i, 0)->data(Qt::UserRole) == "use_fbcache" &&
                     w.compare_view().settings->item(i, 1)->text() != w.compare_view().settings->item(i, 2)->text();
    QVERIFY(highlighted);
  }

  void about_says_what_the_worker_was_built_with() {
    MainWindow w(tmp_.path() + "/about");
    QVERIFY(w.about_text().contains("DiT Studio " STUDIO_VERSION));
    // The worker's own --version line, from the device list it prints when the window opens.
    QTRY_VERIFY_WITH_TIMEOUT(w.about_text().contains("dit-worker " STUDIO_VERSION " (LibTorch "), 120000);
  }

  void a_worker_added_is_listed_and_runs_the_jobs() {
    // A worker of our own, as an unpacked archive: a script that notes each start and runs the real one.
    const QString archive = tmp_.path() + "/unpacked-worker", note = tmp_.path() + "/worker-started.txt";
    QVERIFY(QDir().mkpath(archive + "/bin"));
    QFile script(archive + "/bin/dit-worker");
    QVERIFY(script.open(QIODevice::WriteOnly));
    script.write(QString("#!/bin/sh\necho \"$0 $*\" >> '%1'\nexec '%2' \"$@\"\n")
                     .arg(note, QString(test::build_bin_dir()) + "/dit-worker")
                     .toUtf8());
    script.close();
    script.setPermissions(QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
    QSettings().remove("worker");  // what an earlier run of this test added
    {
      MainWindow w(tmp_.path() + "/worker");
      QTRY_VERIFY_WITH_TIMEOUT(w.worker_picker().build->text().startsWith("dit-worker " STUDIO_VERSION " (LibTorch "),
                               120000);
      QCOMPARE(w.worker_picker().workers->count(), 1);  // the one beside the studio
      QVERIFY(!w.worker_picker().add(tmp_.path() + "/nothing-here"));
      QVERIFY2(w.worker_picker().build->text().contains("nothing-here: no executable dit-worker there"),
               qPrintable(w.worker_picker().build->text()));
      QVERIFY(w.worker_picker().add(archive));
      QCOMPARE(w.worker_picker().workers->count(), 2);
      QCOMPARE(w.worker_picker().current(), archive + "/bin/dit-worker");
      // It is asked for the devices (its build line shown), then runs the job.
      QTRY_VERIFY_WITH_TIMEOUT(w.worker_picker().build->text().startsWith("dit-worker " STUDIO_VERSION), 120000);
      QTRY_VERIFY_WITH_TIMEOUT(QFile::exists(note), 5000);
      QVERIFY(w.about_text().contains(archive + "/bin/dit-worker"));
      QFile::remove(note);
      w.compose_panel().prompt->setPlainText("a paper boat");
      w.compose_panel().frames->setValue(9);
      w.compose_panel().steps->setValue(1);
      QSignalSpy spy(&w, &MainWindow::run_finished);
      QVERIFY2(w.generate(), qPrintable(reason(w)->text()));
      QCOMPARE(wait_for_run(spy, 120000), 0);
      QFile started(note);
      QVERIFY(started.open(QIODevice::ReadOnly));
      QVERIFY(started.readAll().contains("/bin/dit-worker --job"));
      w.close();
    }
    // The choice is kept: the next session starts with it.
    MainWindow again(tmp_.path() + "/worker");
    QCOMPARE(again.worker_picker().current(), archive + "/bin/dit-worker");
    again.worker_picker().workers->setCurrentIndex(1);
    QCOMPARE(again.worker_picker().current(), QString(test::build_bin_dir()) + "/dit-worker");
    QSettings().remove("worker");  // the other tests run the worker beside the studio
  }

  void a_two_rank_run_is_watched_to_the_end() {
    MainWindow w(tmp_.path() + "/b");
    w.resize(1280, 860);
    w.show();
    w.compose_panel().prompt->setPlainText("a paper boat drifts on a pond");
    w.compose_panel().frames->setValue(9);
    w.compose_panel().steps->setValue(3);
    w.parallel_panel().ulysses->setValue(2);
    QSignalSpy spy(&w, &MainWindow::run_finished);
    QVERIFY2(w.generate(), qPrintable(reason(w)->text()));
    QVERIFY(w.running());
    QVERIFY2(w.run_view().status->text().contains("seed 42"), qPrintable(w.run_view().status->text()));
    // While it runs, the same job with ring attention instead goes into the queue.
    QCOMPARE(generate_button(w)->text(), QString("Add to queue"));
    w.parallel_panel().ulysses->setValue(1);
    w.parallel_panel().ring->setValue(2);
    QVERIFY(w.generate());
    QCOMPARE(w.queued(), 1);
    QTest::qWait(3000);
    shoot(&w, "run");
    const int code = wait_for_run(spy, 120000);
    QVERIFY2(code == 0, qPrintable(w.run_view().status->text()));
    QCOMPARE(wait_for_run(spy, 120000), 0);  // the queued one
    QCOMPARE(w.run_view().bars.size(), size_t(2));
    for (auto* bar : w.run_view().bars) QCOMPARE(bar->value(), 100);
    QCOMPARE(w.player().frame_count(), 9);
    QVERIFY(!w.player().screen->pixmap().isNull());
    QString error;
    const QString clip = tmp_.path() + "/exported.webm";
    QVERIFY2(export_as(w.player(), clip, &error) == clip, qPrintable(error));
    const auto probe = video::probe_clip(clip.toStdString());
    QCOMPARE(probe.frames, 9);
    QCOMPARE(probe.width, 288);
    QCOMPARE(probe.metadata.at("prompt"), std::string("a paper boat drifts on a pond"));
    QVERIFY(w.player().playing());
    shoot(&w, "player");
    const auto runs = w.history().runs();
    QCOMPARE(runs.size(), size_t(2));
    for (const auto& r : runs) {
      QCOMPARE(r.status, QString("done"));
      QVERIFY(!r.thumbnail.isNull());
      QVERIFY(r.mean_step_seconds > 0);
      QVERIFY(QFile::exists(r.folder + "/clip.mp4"));
    }
    tabs(w)->setCurrentWidget(&w.history());
    shoot(&w, "history");
    // Compare the two: the parallel settings differ, the frames do not (beyond rounding to 8 bits).
    w.history().table->selectAll();
    w.history().compare_button->click();
    QTRY_VERIFY_WITH_TIMEOUT(!w.compare_view().loading(), 30000);
    QCOMPARE(tabs(w)->currentWidget(), static_cast<QWidget*>(&w.compare_view()));
    QVERIFY2(w.compare_view().max_difference >= 0 && w.compare_view().max_difference <= 1,
             qPrintable(w.compare_view().difference->text()));
    bool highlighted = false;
    for (int i = 0; i < w.compare_view().settings->rowCount(); ++i)
      if (w.compare_view().settings->item(i, 0)->data(Qt::UserRole) == "ring_degree")
        highlighted = w.compare_view().settings->item(i, 1)->background().color() != QColor(Qt::white) &&
                      w.compare_view().settings->item(i, 1)->background().style() != Qt::NoBrush;
    QVERIFY(highlighted);
    qInfo("%s", qPrintable(w.compare_view().difference->text()));
    shoot(&w, "compare");
    // The history survives the window, and a run can be deleted with its files.
    MainWindow again(tmp_.path() + "/b");
    QCOMPARE(again.history().runs().size(), size_t(2));
    QVERIFY(again.history().remove(runs[0].id));
    QVERIFY(!QDir(runs[0].folder).exists());
  }

  void an_image_model_composes_runs_and_keeps_an_image() {
    MainWindow w(tmp_.path() + "/i");
    w.resize(1280, 860);
    w.show();
    w.compose_panel().set_model_dir(QString::fromStdString(workers::demo_flux_dir()));
    // FLUX.1's fields and defaults: no frames, fps or negative prompt; T5's own prompt; 28 steps, guidance 3.5,
    // FluxPipeline's 128 latent pixels (256 x 256 with the demo's 2x VAE).
    QVERIFY2(w.compose_panel().family->text().contains("FLUX.1") &&
                 w.compose_panel().family->text().contains("FlowMatchEuler"),
             qPrintable(w.compose_panel().family->text()));
    QVERIFY(!w.compose_panel().frames->isVisible() && !w.compose_panel().fps->isVisible());
    QVERIFY(!w.compose_panel().negative_prompt->isVisible() && !w.compose_panel().dynamic_cfg->isVisible());
    QVERIFY(w.compose_panel().prompt_2->isVisible());
    // Laid out, not only visible: Qt 6.4 gave it no height when it was shown after the negative prompt was hidden.
    QTRY_VERIFY(w.compose_panel().prompt_2->height() > 0);
    QCOMPARE(w.compose_panel().steps->value(), 28);
    QCOMPARE(w.compose_panel().guidance->value(), 3.5);
    QCOMPARE(w.compose_panel().width->value(), 256);
    QCOMPARE(w.compose_panel().width->singleStep(), 4);  // the demo VAE's 2x times the 2x2 packing
    QVERIFY2(!w.compose_panel().preset->itemText(0).contains("frames"),
             qPrintable(w.compose_panel().preset->itemText(0)));
    // FLUX.1 has no classifier-free guidance: CFG parallel is refused in the studio's words too.
    w.compose_panel().prompt->setPlainText("a red kite over the dunes");
    w.parallel_panel().cfg->setChecked(true);
    QVERIFY(!generate_button(w)->isEnabled());
    QVERIFY2(w.parallel_panel().problems().text("use_cfg_parallel").contains("no classifier-free guidance"),
             qPrintable(w.parallel_panel().problems().text("use_cfg_parallel")));
    w.parallel_panel().cfg->setChecked(false);
    w.compose_panel().prompt_2->setText("a red kite, wide shot, golden light");
    w.compose_panel().steps->setValue(3);
    w.compose_panel().width->setValue(128);
    w.compose_panel().height->setValue(96);
    w.parallel_panel().ulysses->setValue(2);
    QVERIFY2(generate_button(w)->isEnabled(), qPrintable(reason(w)->text()));
    QSignalSpy spy(&w, &MainWindow::run_finished);
    QVERIFY2(w.generate(), qPrintable(reason(w)->text()));
    QCOMPARE(wait_for_run(spy, 120000), 0);
    // The result is one picture, shown without clip controls, exported with its settings.
    QVERIFY(w.player().image_mode());
    QCOMPARE(w.player().frame_count(), 1);
    QVERIFY(!w.player().screen->pixmap().isNull());
    QVERIFY(!w.player().slider->isVisible() && !w.player().play_button->isVisible());
    QCOMPARE(w.player().frame(0).width(), 128);
    QCOMPARE(w.player().frame(0).height(), 96);
    QString error;
    const QString png = tmp_.path() + "/kite.png";
    QVERIFY2(export_as(w.player(), png, &error) == png, qPrintable(error));
    const auto probe = video::probe_image(png.toStdString());
    QCOMPARE(probe.width, 128);
    QVERIFY2(QString::fromStdString(probe.parameters).contains("a red kite over the dunes"), probe.parameters.c_str());
    // Every setting too, as the JSON beside it has them; the parameters text says the dtype asked for.
    const auto settings = nlohmann::json::parse(probe.settings);
    QCOMPARE(QString::fromStdString(settings.value("prompt", "")), QString("a red kite over the dunes"));
    QVERIFY(settings.contains("seed") && settings.contains("settings"));
    QVERIFY2(QString::fromStdString(probe.parameters).contains("Dtype: "), probe.parameters.c_str());
    QVERIFY2(!export_as(w.player(), tmp_.path() + "/kite.webp", &error).isEmpty(), qPrintable(error));
    QCOMPARE(video::probe_image((tmp_.path() + "/kite.webp").toStdString()).codec, std::string("webp"));
    // A WebP holds them in its XMP.
    const auto in_webp = nlohmann::json::parse(video::probe_image((tmp_.path() + "/kite.webp").toStdString()).settings);
    QCOMPARE(QString::fromStdString(in_webp.value("prompt", "")), QString("a red kite over the dunes"));
    shoot(&w, "image");
    const auto runs = w.history().runs();
    QCOMPARE(runs.size(), size_t(1));
    QVERIFY(QFile::exists(runs[0].folder + "/image.png"));
    QVERIFY(!QFile::exists(runs[0].folder + "/clip.mp4"));
    QVERIFY(!runs[0].thumbnail.isNull());
    QVERIFY(runs[0].settings.contains("a red kite, wide shot"));  // prompt_2 kept to reopen or rerun
    // The same image with Ring instead of Ulysses, compared: the settings differ, the pictures do not.
    w.parallel_panel().ulysses->setValue(1);
    w.parallel_panel().ring->setValue(2);
    QVERIFY2(w.generate(), qPrintable(reason(w)->text()));
    QCOMPARE(wait_for_run(spy, 120000), 0);
    QCOMPARE(w.history().runs().size(), size_t(2));
    w.history().table->selectAll();
    w.history().compare_button->click();
    QTRY_VERIFY_WITH_TIMEOUT(!w.compare_view().loading(), 30000);
    QCOMPARE(tabs(w)->currentWidget(), static_cast<QWidget*>(&w.compare_view()));
    QVERIFY2(w.compare_view().max_difference >= 0 && w.compare_view().max_difference <= 1,
             qPrintable(w.compare_view().difference->text()));
    // Back to the run view (Compare takes the whole width) and the clip model: its own fields and defaults
    // return.
    tabs(w)->setCurrentWidget(&w.run_view());
    w.compose_panel().set_model_dir(QString::fromStdString(workers::demo_model_dir()));
    QVERIFY(w.compose_panel().frames->isVisible() && w.compose_panel().negative_prompt->isVisible());
    QTRY_VERIFY(w.compose_panel().negative_prompt->height() > 0 && w.compose_panel().frames->height() > 0);
    QVERIFY(!w.compose_panel().prompt_2->isVisible());
    QCOMPARE(w.compose_panel().steps->value(), 50);
    QCOMPARE(w.compose_panel().guidance->value(), 6.0);
    QCOMPARE(w.compose_panel().frames->value(), 25);
    QSettings().clear();
  }

  // Wan2.2 from a complete folder (the wan22_tiny reference): its fields and defaults, the second expert's
  // guidance, 480p and 720p presets; then a short two-rank clip, previewed while it denoises.
  void a_wan_model_composes_and_runs_its_two_experts() {
    const QString goldens = QString::fromStdString(test::goldens_dir());
    MainWindow w(tmp_.path() + "/wan");
    w.resize(1280, 860);
    w.show();
    w.compose_panel().set_model_dir(goldens + "/wan22_tiny");
    QVERIFY2(w.compose_panel().family->text().contains("Wan2.2") && w.compose_panel().family->text().contains("UniPC"),
             qPrintable(w.compose_panel().family->text()));
    QVERIFY(w.compose_panel().frames->isVisible() && w.compose_panel().negative_prompt->isVisible());
    QVERIFY(w.compose_panel().guidance_2->isVisible());
    QVERIFY(!w.compose_panel().dynamic_cfg->isVisible() && !w.compose_panel().prompt_2->isVisible());
    QCOMPARE(w.compose_panel().width->value(), 832);
    QCOMPARE(w.compose_panel().height->value(), 480);
    QCOMPARE(w.compose_panel().frames->value(), 81);
    QCOMPARE(w.compose_panel().fps->value(), 16);
    QCOMPARE(w.compose_panel().steps->value(), 50);
    QCOMPARE(w.compose_panel().guidance->value(), 4.0);
    QCOMPARE(w.compose_panel().guidance_2->value(), 4.0);
    QVERIFY(w.compose_panel().preset->count() >= 3);
    QVERIFY2(w.compose_panel().preset->itemText(1).contains("720p") &&
                 w.compose_panel().preset->itemText(1).contains("1280 x 720"),
             qPrintable(w.compose_panel().preset->itemText(1)));
    w.compose_panel().prompt->setPlainText("A red fox runs through the snowy forest");
    w.compose_panel().guidance_2->setValue(3.0);
    w.compose_panel().width->setValue(96);
    w.compose_panel().height->setValue(64);
    w.compose_panel().frames->setValue(9);
    w.compose_panel().steps->setValue(3);
    w.parallel_panel().ulysses->setValue(2);
    QCOMPARE(w.compose_panel().job().guidance_scale_2, 3.0);
    QVERIFY2(generate_button(w)->isEnabled(), qPrintable(reason(w)->text()));
    QSignalSpy spy(&w, &MainWindow::run_finished);
    QVERIFY2(w.generate(), qPrintable(reason(w)->text()));
    QCOMPARE(wait_for_run(spy, 120000), 0);
    QVERIFY(!w.player().image_mode());
    QCOMPARE(w.player().frame_count(), 9);
    QCOMPARE(w.player().frame(0).width(), 96);
    QCOMPARE(w.player().frame(0).height(), 64);
    const auto runs = w.history().runs();
    QCOMPARE(runs.size(), size_t(1));
    QVERIFY(QFile::exists(runs[0].folder + "/clip.mp4"));
    QVERIFY2(runs[0].settings.contains("guidance_scale_2"), qPrintable(runs[0].settings));
    // A model with one transformer hides the field again and leaves it out of the job.
    w.compose_panel().set_model_dir(goldens + "/wan21_tiny");
    QVERIFY(!w.compose_panel().guidance_2->isVisible());
    QVERIFY(std::isnan(w.compose_panel().job().guidance_scale_2));
    QSettings().clear();
  }

  // A damaged history database is named where the history is shown; the window still composes and runs.
  // A run whose stored settings were damaged is refused by name when reopened.
  void a_damaged_history_is_named_and_the_window_lives_on() {
    const QString dir = tmp_.path() + "/damaged";
    QDir().mkpath(dir);
    QFile db(dir + "/history.sqlite");
    QVERIFY(db.open(QIODevice::WriteOnly));
    db.write(QByteArray(4096, 'x'));
    db.close();
    MainWindow w(dir);
    QVERIFY2(w.history().notice->text().contains("history.sqlite") &&
                 w.history().notice->text().contains("not a database"),
             qPrintable(w.history().notice->text()));
    w.compose_panel().prompt->setPlainText("a paper boat");
    QVERIFY2(generate_button(w)->isEnabled(), qPrintable(reason(w)->text()));

    MainWindow fine(tmp_.path() + "/settings");
    RunRecord broken;
    broken.prompt = "a paper boat";
    broken.settings = R"({"height": "tall"})";
    broken.id = fine.history().add(broken);
    Q_EMIT fine.history().reopen(broken);
    QVERIFY2(reason(fine)->text().contains("'height'") && reason(fine)->text().contains("history"),
             qPrintable(reason(fine)->text()));
  }

  void a_sweep_runs_the_chosen_configurations_and_adopts_the_fastest() {
    MainWindow w(tmp_.path() + "/s");
    w.resize(1280, 860);
    w.show();
    w.compose_panel().prompt->setPlainText("a paper boat");
    w.compose_panel().frames->setValue(9);
    w.compose_panel().steps->setValue(2);
    w.parallel_panel().ulysses->setValue(2);
    QSignalSpy spy(&w, &MainWindow::run_finished);
    QVERIFY(w.sweep());
    const int rows = w.sweep_view().table->rowCount();
    QVERIFY(rows >= 3);  // 2 processes: Ulysses 2, Ring 2, CFG 2, PipeFusion 2
    // A subset: the last configuration is left out.
    w.sweep_view().table->item(rows - 1, 0)->setCheckState(Qt::Unchecked);
    w.sweep_view().run->click();
    // The first runs; the others wait their turn.
    QCOMPARE(w.sweep_view().table->item(0, 1)->text(), QString("running"));
    QCOMPARE(w.sweep_view().table->item(1, 1)->text(), QString("queued"));
    for (int i = 0; i < rows - 1; ++i) QCOMPARE(wait_for_run(spy, 120000), 0);
    QVERIFY(!w.running());
    for (int i = 0; i < rows - 1; ++i) QCOMPARE(w.sweep_view().table->item(i, 1)->text(), QString("done"));
    QCOMPARE(w.sweep_view().table->item(rows - 1, 1)->text(), QString("skipped"));
    const auto best = w.sweep_view().fastest();
    QVERIFY(best.has_value());
    shoot(&w, "sweep");
    w.parallel_panel().set_config(plan::ParallelConfig{});
    w.sweep_view().adopt->click();
    QVERIFY(w.parallel_panel().config() == *best);
    const QString said = w.sweep_view().adopted_note->text();  // and it says so
    QVERIFY2(said.contains(QString::fromStdString(best->describe())) && said.contains("GPUs and parallelism"),
             qPrintable(said));
  }

  void a_killed_rank_is_named_and_the_window_lives_on() {
    MainWindow w(tmp_.path() + "/c");
    w.compose_panel().prompt->setPlainText("a paper boat");
    w.compose_panel().frames->setValue(9);
    w.compose_panel().steps->setValue(1000);
    w.parallel_panel().ring->setValue(2);
    QSignalSpy spy(&w, &MainWindow::run_finished);
    QVERIFY(w.generate());
    pid_t victim = 0;
    QTRY_VERIFY_WITH_TIMEOUT((victim = w.rank_pid(1)) > 0, 120000);
    QTRY_VERIFY_WITH_TIMEOUT(w.run_view().bars[1]->value() > 0, 120000);  // into the denoising steps
    ::kill(victim, SIGKILL);
    QCOMPARE(wait_for_run(spy, 30000), 128 + SIGKILL);
    QVERIFY2(w.run_view().status->text().contains(QString("rank 1 (pid %1").arg(victim)),
             qPrintable(w.run_view().status->text()));
    QVERIFY(w.run_view().status->text().contains("was killed by signal 9"));
    QVERIFY(generate_button(w)->isEnabled());  // usable again
    QCOMPARE(generate_button(w)->text(), QString("Generate"));
    QCOMPARE(w.history().runs().front().status, QString("crash"));
  }
};

QTEST_MAIN(TestStudio)
#include "test_studio.moc"
