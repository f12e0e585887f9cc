// The parallel panel's Auto and the sweep's predictions, offscreen with the real window, worker and demo
// model on the CPU with 2 processes, in a cache folder of its own (so that the devices are really measured by
// `dit-worker --calibrate` ranks): a calibration that fails is said below the fields and changes nothing, and
// a sweep without one says "not calibrated"; Auto measures the devices on a thread (the button says so
// meanwhile), caches the figures, chooses the first fitting configuration of the cost model's ranking
// (computed here from the cached file) and lists every valid one with its predicted s/step and GiB per rank,
// fastest first; a sweep of two configurations shows each one's prediction before it runs, and after the
// runs the measured time beside it and the model's error over both. With STUDIO_SCREENSHOTS=DIR it saves the
// Auto menu (auto-menu.png) and the sweep's predicted-beside-measured (sweep-predicted.png) at 1280 x 800.
// A measurement made on a busy machine is said below the fields until Auto measures again.
#undef QT_NO_KEYWORDS  // qcustomplot.h, included through the GUI, uses Qt's keywords
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMenu>
#include <QPainter>
#include <QRegularExpression>
#include <QScrollArea>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <memory>

#include "gui/devices/calibration_task.h"
#include "gui/widgets/collapsible.h"
#include "gui/window/main_window.h"
#include "gui/results/run_info.h"
#include "plan/family.h"
#include "qcustomplot.h"

#include "process.h"
#include "studio_support.h"

using namespace studio;
using namespace studio::gui;
using namespace studio::test;

namespace {

// A short job on 2 CPU processes, at the demo model's own 25 frames: at fewer, a step's fixed work (which
// the cost model does not count) is most of it, and the screenshot would show that rather than the model.
void two_process_job(MainWindow& w) {
  w.compose_panel().prompt->setPlainText("a paper boat");
  w.compose_panel().frames->setValue(25);
  w.compose_panel().steps->setValue(4);
  w.parallel_panel().ulysses->setValue(2);
  QVERIFY2(generate_button(w)->isEnabled(), qPrintable(reason(w)->text()));
}

// The GPUs-and-parallelism group opened and scrolled to, so that the panel is seen.
void show_parallel_panel(MainWindow& w) {
  for (QWidget* p = &w.parallel_panel(); p; p = p->parentWidget())
    if (auto* group = qobject_cast<Collapsible*>(p)) group->set_open(true);
  QTest::qWait(200);  // laid out again
  w.compose_panel().findChild<QScrollArea*>("settings")->ensureWidgetVisible(w.parallel_panel().auto_pick, 50, 250);
}

// The window with the valid-configurations menu open over it, as DIR/NAME.png (a menu is a window of its own).
void shoot_menu(MainWindow& w, QMenu* menu, const QString& name) {
  const QByteArray dir = qgetenv("STUDIO_SCREENSHOTS");
  if (dir.isEmpty()) return;
  show_parallel_panel(w);
  QTest::qWait(200);
  menu->popup(w.parallel_panel().suggestions->mapToGlobal(QPoint(0, w.parallel_panel().suggestions->height())));
  QTest::qWait(300);
  QPixmap shot = w.grab();
  QPainter(&shot).drawPixmap(w.mapFromGlobal(menu->pos()), menu->grab());
  shot.save(QString::fromUtf8(dir) + "/" + name + ".png");
  menu->hide();
}

plan::Calibration read_calibration(const QString& file) {
  QFile f(file);
  if (!f.open(QIODevice::ReadOnly)) return {};
  const QJsonObject cal = QJsonDocument::fromJson(f.readAll()).object()["calibration"].toObject();
  return plan::calibration_from_json(QJsonDocument(cal).toJson().toStdString(), file.toStdString());
}

double number_before(const QString& text, const QString& unit) {
  const auto m = QRegularExpression("([0-9.eE+-]+) " + QRegularExpression::escape(unit)).match(text);
  return m.hasMatch() ? m.captured(1).toDouble() : -1;
}

}  // namespace

class TestStudioAuto : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;

  QString cache_dir() const { return tmp_.path() + "/cache/dit-studio"; }
  qint64 measured_ms_ = 0;  // a whole measurement of the devices, as Auto made it

 private Q_SLOTS:
  void initTestCase() {
    qputenv("XDG_CACHE_HOME", (tmp_.path() + "/cache").toUtf8());  // measured here, whatever the user's cache holds
    start_studio_suite("DiT Studio auto tests");
  }

  void a_failed_calibration_is_said_and_changes_nothing() {
    MainWindow w(tmp_.path() + "/failed");
    w.show();
    wait_for_devices(w);
    two_process_job(w);
    const auto before = w.parallel_panel().config();
    w.parallel_panel().set_worker(tmp_.path() + "/no-such-folder/dit-worker");
    QSignalSpy done(&w.parallel_panel(), &ParallelPanel::auto_done);
    w.parallel_panel().auto_pick->click();
    QVERIFY(w.parallel_panel().measuring());
    QVERIFY(!w.parallel_panel().auto_pick->isEnabled());
    QVERIFY(done.wait(180000));
    const QString said = w.parallel_panel().problems().text("auto");
    qInfo("%s", qPrintable(said));
    QVERIFY2(said.startsWith("Auto could not rank the configurations: measuring the devices failed") &&
                 said.contains("no-such-folder"),
             qPrintable(said));
    QVERIFY(w.parallel_panel().config() == before);
    QCOMPARE(w.parallel_panel().auto_pick->text(), QString("Auto"));
    QVERIFY(w.parallel_panel().auto_pick->isEnabled());
    QVERIFY(QDir(cache_dir()).entryList({"calibration-*.json"}).isEmpty());
    // Nothing measured: the sweep still starts, and its predicted column says why it is empty.
    QVERIFY(w.sweep());
    QVERIFY(w.sweep_view().table->rowCount() >= 2);
    for (int i = 0; i < w.sweep_view().table->rowCount(); ++i) {
      const auto* p = w.sweep_view().table->item(i, SweepView::PredictedStep);
      QCOMPARE(p->text(), QString("not calibrated"));
      QVERIFY2(p->toolTip().contains("\"Auto\""), qPrintable(p->toolTip()));
    }
  }

  void auto_measures_the_devices_and_the_sweep_shows_predicted_beside_measured() {
    MainWindow w(tmp_.path() + "/auto");
    w.resize(1280, 800);
    w.show();
    wait_for_devices(w);
    two_process_job(w);
    const plan::JobSpec job = w.compose_panel().job();
    const plan::ModelFolder model = *w.compose_panel().model();
    const auto before = w.parallel_panel().config();
    const auto valid = plan::valid_configs(job, model, 2, before);
    QVERIFY(valid.size() >= 2);
    auto* menu = w.parallel_panel().suggestions->menu();
    for (auto* a : menu->actions()) QVERIFY2(!a->text().contains("s/step"), qPrintable(a->text()));

    // A sweep listed before the devices are measured: no predictions yet.
    QVERIFY(w.sweep());
    for (int i = 0; i < w.sweep_view().table->rowCount(); ++i)
      QCOMPARE(w.sweep_view().table->item(i, SweepView::PredictedStep)->text(), QString("not calibrated"));

    // Auto: measured on a thread, the button saying so meanwhile.
    QSignalSpy done(&w.parallel_panel(), &ParallelPanel::auto_done);
    QElapsedTimer measuring;
    measuring.start();
    w.parallel_panel().auto_pick->click();
    QVERIFY(w.parallel_panel().measuring());
    QCOMPARE(w.parallel_panel().auto_pick->text(), QString("Measuring the devices…"));
    QVERIFY(!w.parallel_panel().auto_pick->isEnabled());
    QVERIFY(done.wait(180000));
    measured_ms_ = measuring.elapsed();
    QCOMPARE(w.parallel_panel().problems().text("auto"), QString());
    QCOMPARE(w.parallel_panel().auto_pick->text(), QString("Auto"));
    const QStringList files = QDir(cache_dir()).entryList({"calibration-*.json"});
    QCOMPARE(files.size(), 1);
    const plan::Calibration cal = read_calibration(cache_dir() + "/" + files.front());
    QCOMPARE(cal.ranks, 2);
    QVERIFY(cal.gemm_flops_per_s > 0 && cal.link_bytes_per_s > 0);

    // The cost model's ranking, computed here: Auto chose its first fitting entry.
    const int b = plan::bytes_per_value(job, false);
    std::vector<plan::Prediction> ranked;
    for (const auto& p : valid) ranked.push_back(plan::predict(p, job, model, cal, b));
    std::stable_sort(ranked.begin(), ranked.end(), [](const auto& x, const auto& y) {
      return x.fits != y.fits ? x.fits : x.total_s < y.total_s;
    });
    for (const auto& r : ranked)
      qInfo("%s: %.4f s/step, %.1f s in all, %.2f GiB per rank%s", r.config.describe().c_str(), r.seconds_per_step,
            r.total_s, r.peak_bytes_per_rank / plan::kGiB, r.fits ? "" : " (does not fit)");
    // The sweep listed before has its predictions now.
    for (int i = 0; i < w.sweep_view().table->rowCount(); ++i)
      QCOMPARE(w.sweep_view().table->item(i, SweepView::PredictedStep)->text(),
               QString::number(plan::predict(w.sweep_view().config(i), job, model, cal, b).seconds_per_step, 'f', 3));
    const auto first = std::find_if(ranked.begin(), ranked.end(), [](const auto& r) { return r.fits; });
    QVERIFY(first != ranked.end());
    plan::ParallelConfig expected = first->config;
    expected.use_parallel_vae = before.use_parallel_vae;
    QVERIFY2(w.parallel_panel().config() == expected, w.parallel_panel().config().describe().c_str());

    // The menu: every valid configuration with its prediction, fastest first.
    const auto actions = menu->actions();
    QCOMPARE(actions.size(), qsizetype(valid.size()));
    double last = 0;
    for (auto* a : actions) {
      qInfo("menu: %s", qPrintable(a->text()));
      QVERIFY2(a->text().contains(" s/step") && a->text().contains(" GiB per rank"), qPrintable(a->text()));
      const double s = number_before(a->text(), "s/step");
      QVERIFY2(s > 0 && s >= last, qPrintable(a->text()));
      last = s;
    }
    shoot_menu(w, menu, "auto-menu");

    // A sweep of two configurations: each one's prediction before it runs.
    QSignalSpy runs(&w, &MainWindow::run_finished);
    QVERIFY(w.sweep());
    auto* v = &w.sweep_view();
    auto* t = v->table;
    std::vector<double> predicted;
    for (int i = 0; i < t->rowCount(); ++i) {
      const auto p = plan::predict(v->config(i), job, model, cal, b);
      QCOMPARE(t->item(i, SweepView::PredictedStep)->text(), QString::number(p.seconds_per_step, 'f', 3));
      predicted.push_back(p.seconds_per_step);
      if (i >= 2) t->item(i, SweepView::Name)->setCheckState(Qt::Unchecked);
    }
    v->run->click();
    for (int i = 0; i < 2; ++i) QCOMPARE(wait_for_run(runs, 120000), 0);

    // After the runs: measured beside predicted, their ratio, and the model's error over both.
    double lo = INFINITY, hi = 0;
    QString lo_text, hi_text;
    for (int i = 0; i < 2; ++i) {
      QCOMPARE(t->item(i, SweepView::Status)->text(), QString("done"));
      const double measured = t->item(i, SweepView::Step)->text().toDouble();
      const QString ratio = t->item(i, SweepView::Ratio)->text();
      qInfo("%s: predicted %.4f s/step, measured %.3f, %s", qPrintable(t->item(i, SweepView::Name)->text()),
            predicted[size_t(i)], measured, qPrintable(ratio));
      QVERIFY(measured > 0);
      QVERIFY2(ratio.endsWith("x"), qPrintable(ratio));
      const double r = ratio.chopped(1).toDouble();
      // The ratio is shown to two significant digits and the step to three decimals: the bound is their
      // rounding, nothing more.
      const double last_digit = std::pow(10.0, std::floor(std::log10(r)) - 1);
      const double rounding = last_digit / 2 + r * 0.0005 / measured + 1e-9;
      QVERIFY2(std::abs(r - predicted[size_t(i)] / measured) <= rounding, qPrintable(ratio));
      if (r < lo) lo = r, lo_text = ratio.chopped(1);
      if (r > hi) hi = r, hi_text = ratio;
    }
    const auto best_measured = *v->fastest();
    const int best_predicted = predicted[0] <= predicted[1] ? 0 : 1;
    QVERIFY(v->model_error->isVisible());
    const QString error = v->model_error->text();
    qInfo("%s", qPrintable(error));
    QVERIFY2(error.startsWith(QString("Predicted within %1-%2 of measured").arg(lo_text, hi_text)), qPrintable(error));
    const QString measured_name = short_label(best_measured), predicted_name = short_label(v->config(best_predicted));
    QVERIFY2(v->config(best_predicted) == best_measured
                 ? error.endsWith("predicted fastest and measured fastest: " + measured_name)
                 : error.endsWith(QString("predicted fastest: %1, measured fastest: %2").arg(predicted_name, measured_name)),
             qPrintable(error));
    // The chart: each measured bar with its prediction beside it, the legend saying which is which.
    QCOMPARE(v->bar_values.size(), 2);
    QCOMPARE(v->predicted_values.size(), 2);
    QCOMPARE(v->predicted_values[0], predicted[0]);
    QCOMPARE(v->predicted_values[1], predicted[1]);
    QVERIFY(v->chart->legend->visible());
    QVERIFY(v->chart->plottable(v->chart->plottableCount() - 1)->name().contains("predicted"));
    tabs(w)->setCurrentWidget(v);
    shoot(&w, "sweep-predicted");
    // Other metrics have no prediction; the fastest is adopted as before.
    v->metric->setCurrentIndex(1);
    QVERIFY(v->predicted_values.isEmpty());
    v->metric->setCurrentIndex(0);
    v->adopt->click();
    QVERIFY(w.parallel_panel().config() == best_measured);
  }

  // The window closed while its ranks measure the devices: they are ended, not waited for, and none is left.
  void closing_while_measuring_leaves_no_rank() {
    QTemporaryDir empty_cache;  // nothing cached: Auto measures
    qputenv("XDG_CACHE_HOME", empty_cache.path().toUtf8());
    const auto ranks = [] {  // this process's dit-worker --calibrate children
      int n = 0;
      for (const pid_t child : test::children_of(pid_t(QCoreApplication::applicationPid()))) {
        QFile cmdline(QString("/proc/%1/cmdline").arg(child));
        n += cmdline.open(QIODevice::ReadOnly) && cmdline.readAll().contains("--calibrate");
      }
      return n;
    };
    QElapsedTimer closing;
    {
      auto w = std::make_unique<MainWindow>(tmp_.path() + "/closing");
      w->show();
      wait_for_devices(*w);
      two_process_job(*w);
      w->parallel_panel().auto_pick->click();
      QVERIFY(w->parallel_panel().measuring());
      QTRY_COMPARE_WITH_TIMEOUT(ranks(), 2, 60000);
      closing.start();
    }
    // Ended, not waited for: far sooner than a whole measurement (the case above timed one).
    qInfo("a whole measurement: %lld ms; the window closed in %lld ms", measured_ms_, closing.elapsed());
    if (measured_ms_ > 0) QVERIFY(closing.elapsed() < measured_ms_ / 2);
    QCOMPARE(ranks(), 0);
    // Ended, not finished: a measurement waited for to its end would be cached.
    QVERIFY(QDir(empty_cache.path() + "/dit-studio").entryList({"calibration-*.json"}).isEmpty());
    qputenv("XDG_CACHE_HOME", (tmp_.path() + "/cache").toUtf8());
  }

  // A machine busy while it was measured (other work on its cores) cannot be made on demand: the panel's own
  // calibration task hands it the figures and the note, as it does after such a measurement.
  void a_busy_measurement_is_said_until_auto_measures_again() {
    MainWindow w(tmp_.path() + "/busy");
    w.show();
    wait_for_devices(w);
    two_process_job(w);
    auto* task = w.parallel_panel().findChild<CalibrationTask*>();
    QVERIFY(task);
    plan::Calibration cal;
    cal.ranks = w.parallel_panel().config().world_size();
    cal.dtype = plan::calibration_dtype(w.compose_panel().job(), false);
    cal.gemm_flops_per_s = cal.gemm_flops_per_s_all = cal.attention_flops_per_s = cal.attention_flops_per_s_all = 1e10;
    cal.memory_bytes_per_s = cal.memory_bytes_per_s_all = cal.link_bytes_per_s = 1e9;
    cal.op_seconds = 9e-4;
    Q_EMIT task->measured(cal, "the machine was busy (a small operation took 900 us)");
    QString said = w.parallel_panel().problems().text("auto");
    QVERIFY2(said.contains("The devices were measured while the machine was busy (a small operation took 900 us): "
                           "Auto's choice may be far off, and the figures were not kept. Click Auto again"),
             qPrintable(said));
    QVERIFY2(!said.contains("--calibrate"), qPrintable(said));  // the studio's words, not the launcher's
    // Auto again measures again (or takes the figures an earlier case cached), not the busy ones: the note goes.
    const bool cached = !QDir(cache_dir()).entryList({"calibration-*.json"}).isEmpty();
    QSignalSpy done(&w.parallel_panel(), &ParallelPanel::auto_done);
    w.parallel_panel().auto_pick->click();
    QCOMPARE(w.parallel_panel().measuring(), !cached);
    QVERIFY(done.count() > 0 || done.wait(180000));
    said = w.parallel_panel().problems().text("auto");
    QVERIFY2(!said.contains("while the machine was busy (a small operation took 900 us)"), qPrintable(said));
  }
};

QTEST_MAIN(TestStudioAuto)
#include "test_studio_auto.moc"
