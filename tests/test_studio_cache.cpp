// The compose column's step cache, offscreen with the real window, worker and demo models: the fidelity/speed
// slider's ends and its default mark for each method and family, a typed threshold moving the slider, and
// MagCache: its message when the model has no ratios yet, "Calibrate now" running the demo model uncached to
// write them, and the MagCache run that then uses them (its history settings carry the method and the file);
// the step-time plot marking a Wan step where either guidance branch's call reused the cache. With
// STUDIO_SCREENSHOTS=DIR it saves the compose column with MagCache's ratios there (step-cache.png).
#undef QT_NO_KEYWORDS  // qcustomplot.h, included through the GUI, uses Qt's keywords
#include <QFile>
#include <QScrollArea>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include "gui/window/main_window.h"
#include "gui/run/run_view.h"
#include "qcustomplot.h"
#include "plan/mag_ratios.h"
#include "workers/launch/paths.h"

#include "studio_support.h"

using namespace studio;
using namespace studio::gui;
using namespace studio::test;

class TestStudioCache : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;

 private Q_SLOTS:
  void initTestCase() {
    start_studio_suite("DiT Studio cache tests");
  }

  void the_slider_runs_from_exact_to_faster_than_the_default() {
    ComposePanel c;
    for (const auto& dir : {workers::demo_model_dir(), workers::demo_flux_dir()}) {
      c.set_model_dir(QString::fromStdString(dir));
      QVERIFY(c.model());
      auto* f = c.cache_field;
      QCOMPARE(f->method->currentIndex(), int(StepCacheField::Off));
      QVERIFY(!f->slider->isEnabled() && !f->threshold->isEnabled());
      for (int m : {StepCacheField::FirstBlock, StepCacheField::TeaCache, StepCacheField::MagCache}) {
        f->slider->setValue(StepCacheField::kPositions);  // the method's choice puts it back on the mark
        f->method->setCurrentIndex(m);
        plan::JobSpec defaults;
        defaults.use_fbcache = m == StepCacheField::FirstBlock;
        defaults.use_teacache = m == StepCacheField::TeaCache;
        defaults.use_magcache = m == StepCacheField::MagCache;
        const double d = plan::cache_threshold(defaults, *c.model());
        qInfo("%s, %s: default %g", dir.c_str(), qPrintable(f->method->currentText()), d);
        QCOMPARE(f->slider->value(), StepCacheField::kDefaultPosition);
        QCOMPARE(f->threshold->value(), d);
        QCOMPARE(c.job().cache_threshold, d);
        // The fidelity end is exact: the threshold says 0, and so does the job.
        f->slider->setValue(0);
        QCOMPARE(f->threshold->value(), 0.0);
        QCOMPARE(f->threshold->text(), QString("0.000"));
        QCOMPARE(c.job().cache_threshold, 0.0);
        // The speed end reuses more than the default; the mapping rises all the way.
        f->slider->setValue(StepCacheField::kPositions);
        QVERIFY2(f->threshold->value() > d, qPrintable(QString::number(f->threshold->value())));
        for (int p = 1; p <= StepCacheField::kPositions; ++p)
          QVERIFY(StepCacheField::threshold_at(p, d) > StepCacheField::threshold_at(p - 1, d));
        // A threshold typed in moves the slider; one past the speed end leaves it there.
        f->threshold->setValue(d / 2);
        QCOMPARE(f->slider->value(), StepCacheField::kDefaultPosition / 2);
        f->threshold->setValue(d * 50);
        QCOMPARE(f->slider->value(), StepCacheField::kPositions);
        QCOMPARE(c.job().cache_threshold, d * 50);
      }
      f->method->setCurrentIndex(StepCacheField::Off);
      QVERIFY(std::isnan(c.job().cache_threshold) && !c.job().use_magcache);
    }
  }

  void magcache_without_ratios_says_how_to_get_them() {
    MainWindow w(tmp_.path() + "/no_ratios");
    w.show();
    wait_for_devices(w);
    w.compose_panel().prompt->setPlainText("a paper boat");
    w.compose_panel().steps->setValue(7);  // a step count nothing was calibrated for
    w.compose_panel().step_cache->setCurrentIndex(StepCacheField::MagCache);
    QVERIFY(w.compose_panel().cache_field->calibrate_button->isVisible());
    QVERIFY(!generate_button(w)->isEnabled());
    const QString said = w.compose_panel().problems().text("magcache_ratios");
    qInfo("%s", qPrintable(said));
    QVERIFY2(said.startsWith("MagCache needs MagCache ratios") && !said.contains("--"), qPrintable(said));
    QVERIFY2(w.compose_panel().cache_field->ratios_label->text().contains("No ratios for this model at 7 steps"),
             qPrintable(w.compose_panel().cache_field->ratios_label->text()));
  }

  void calibrate_now_then_magcache_uses_the_ratios() {
    MainWindow w(tmp_.path() + "/calibrate");
    w.show();
    wait_for_devices(w);
    w.compose_panel().prompt->setPlainText("a paper boat drifts on a pond");
    w.compose_panel().frames->setValue(9);
    w.compose_panel().steps->setValue(6);
    const QString file = StepCacheField::ratios_file_for(w.compose_panel().model_edit->text(), 6);
    QFile::remove(file);
    w.compose_panel().step_cache->setCurrentIndex(StepCacheField::MagCache);
    QVERIFY(!generate_button(w)->isEnabled());
    QSignalSpy spy(&w, &MainWindow::run_finished);
    w.compose_panel().cache_field->calibrate_button->click();  // an uncached run of this job that writes them
    QCOMPARE(wait_for_run(spy, 120000), 0);
    QVERIFY2(QFile::exists(file), qPrintable(file));
    const auto ratios = plan::read_mag_ratios(file.toStdString());
    QCOMPARE(ratios.steps, 6);
    QCOMPARE(int(ratios.ratios.size()), 5);
    {
      const auto calibration = w.history().runs();
      QVERIFY(!calibration.empty());
      const QString s = calibration.front().settings;
      QVERIFY2(s.contains("magcache_calibrate") && s.contains(QFileInfo(file).fileName()), qPrintable(s));
    }
    // MagCache now reads them, says which file, and can run.
    QVERIFY2(w.compose_panel().cache_field->ratios_label->text().contains(QFileInfo(file).fileName()),
             qPrintable(w.compose_panel().cache_field->ratios_label->text()));
    QCOMPARE(QString::fromStdString(w.compose_panel().job().magcache_ratios), file);
    QVERIFY2(generate_button(w)->isEnabled(), qPrintable(reason(w)->text()));
    w.compose_panel().sampling_group->ensurePolished();
    w.compose_panel().findChild<QScrollArea*>("settings")->ensureWidgetVisible(w.compose_panel().cache_field);
    shoot_sizes(&w, "step-cache");
    QVERIFY2(w.generate(), qPrintable(reason(w)->text()));
    QCOMPARE(wait_for_run(spy, 120000), 0);
    const auto runs = w.history().runs();
    QCOMPARE(int(runs.size()), 2);
    const auto newest = std::max_element(runs.begin(), runs.end(), [](auto& a, auto& b) { return a.id < b.id; });
    const QString settings = newest->settings;
    QVERIFY2(settings.contains("\"use_magcache\": true") || settings.contains("\"use_magcache\":true"),
             qPrintable(settings));
    QVERIFY2(settings.contains(file), qPrintable(settings));
    // Another step count has no ratios of its own yet.
    w.compose_panel().steps->setValue(5);
    QVERIFY(!generate_button(w)->isEnabled());
    w.compose_panel().steps->setValue(6);
    QVERIFY(generate_button(w)->isEnabled());
  }

  void a_step_with_any_reused_branch_is_marked() {
    // Wan calls the transformer once per guidance branch, each deciding on its own: a step is marked
    // when either call reused the cache, not only when both did.
    RunView v;
    v.start(1, "wan");
    std::vector<workers::RankView> ranks(1);
    ranks[0].cached = true;
    ranks[0].calls_per_step = 2;
    const int full_calls[] = {2, 1, 0, 2};  // both ran, one branch reused, both reused, both ran
    for (int step = 1; step <= 4; ++step) {
      events::Progress p;
      p.step = step, p.total = 4, p.seconds = 0.5, p.calls = 2, p.full = full_calls[step - 1];
      v.message(p.make(), ranks);
    }
    QVERIFY(v.reused_steps != nullptr);
    QCOMPARE(v.reused_steps->dataCount(), 2);
    QCOMPARE(v.reused_steps->data()->at(0)->key, 2.0);
    QCOMPARE(v.reused_steps->data()->at(1)->key, 3.0);
  }
};

QTEST_MAIN(TestStudioCache)
#include "test_studio_cache.moc"
