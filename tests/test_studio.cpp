// The studio's window, offscreen, with real workers: live validation and its messages, the valid
// configurations one click away, a 2-rank run of the demo model watched to the end (progress, frames,
// player, export read back by libavformat, history), and a killed rank that leaves the window usable.
// With STUDIO_SCREENSHOTS=DIR it also saves a picture of each view there (docs/screenshots).
#undef QT_NO_KEYWORDS  // qcustomplot.h, included through the GUI, uses Qt's keywords
#include <QMenu>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include <csignal>

#include "gui/main_window.h"
#include "video/clip_writer.h"

using namespace studio;
using namespace studio::gui;

Q_DECLARE_METATYPE(studio::workers::Outcome)

namespace {

void shoot(QWidget* w, const QString& name) {
  const QByteArray dir = qgetenv("STUDIO_SCREENSHOTS");
  if (dir.isEmpty()) return;
  QTest::qWait(200);
  w->window()->grab().save(QString::fromUtf8(dir) + "/" + name + ".png");
}

// Waits for the window's run to end; the outcome's exit code, or -1 on timeout.
int wait_for_run(MainWindow& w, QSignalSpy& spy, int ms) {
  if (spy.isEmpty() && !spy.wait(ms)) return -1;
  return spy.takeFirst().at(0).value<workers::Outcome>().exit_code;
}

}  // namespace

class TestStudio : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;

 private Q_SLOTS:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    qputenv("DIT_STUDIO_BIN_DIR", STUDIO_BIN_DIR);  // dit-worker and the demo model, from the build tree
    QCoreApplication::setOrganizationName("DiT Studio tests");
    qRegisterMetaType<workers::Outcome>();
  }

  void validation_speaks_by_the_field_and_gates_generate() {
    MainWindow w(tmp_.path() + "/a");
    w.compose->prompt->setPlainText("");
    QVERIFY(!w.generate_button->isEnabled());
    QVERIFY(w.compose->problems().text("prompt").contains("write a prompt"));
    w.compose->prompt->setPlainText("a paper boat");
    QVERIFY2(w.generate_button->isEnabled(), qPrintable(w.reason->text()));
    w.compose->height->setValue(200);
    QVERIFY(!w.generate_button->isEnabled());
    QVERIFY2(w.compose->problems().text("height").contains("--height 200: must be a positive multiple of 16"),
             qPrintable(w.compose->problems().text("height")));
    w.compose->height->setValue(192);
    QVERIFY(w.generate_button->isEnabled());
    // The demo model has 2 layers: 3 PipeFusion stages cannot be.
    w.parallel->pipefusion->setValue(3);
    QVERIFY(!w.generate_button->isEnabled());
    QVERIFY2(w.parallel->problems().text("pipefusion_parallel_degree").contains("the model has 2 layers"),
             qPrintable(w.parallel->problems().text("pipefusion_parallel_degree")));
    // One click on a valid configuration fixes it.
    auto actions = w.parallel->suggestions->menu()->actions();
    QVERIFY(!actions.isEmpty());
    actions.first()->trigger();
    QVERIFY2(w.generate_button->isEnabled(), qPrintable(w.reason->text()));
    QCOMPARE(w.parallel->problems().text("pipefusion_parallel_degree"), QString());
    shoot(&w, "compose");
  }

  void a_two_rank_run_is_watched_to_the_end() {
    MainWindow w(tmp_.path() + "/b");
    w.resize(1280, 860);
    w.show();
    w.compose->prompt->setPlainText("a paper boat drifts on a pond");
    w.compose->frames->setValue(9);
    w.compose->steps->setValue(3);
    w.parallel->ulysses->setValue(2);
    QSignalSpy spy(&w, &MainWindow::run_finished);
    QVERIFY2(w.generate(), qPrintable(w.reason->text()));
    QVERIFY(!w.generate_button->isEnabled());  // one job at a time
    QTest::qWait(3000);
    shoot(&w, "run");
    const int code = wait_for_run(w, spy, 120000);
    QVERIFY2(code == 0, qPrintable(w.run_view->status->text()));
    QCOMPARE(w.run_view->bars.size(), size_t(2));
    for (auto* bar : w.run_view->bars) QCOMPARE(bar->value(), 100);
    QCOMPARE(w.player->frame_count(), 9);
    QVERIFY(!w.player->screen->pixmap().isNull());
    QVERIFY(w.player->playing());
    shoot(&w, "player");
    QString error;
    const QString clip = tmp_.path() + "/exported.webm";
    QVERIFY2(w.player->export_to(clip, &error), qPrintable(error));
    const auto probe = video::probe_clip(clip.toStdString());
    QCOMPARE(probe.frames, 9);
    QCOMPARE(probe.width, 288);
    QCOMPARE(probe.metadata.at("prompt"), std::string("a paper boat drifts on a pond"));
    const auto runs = w.history->runs();
    QCOMPARE(runs.size(), size_t(1));
    QCOMPARE(runs[0].status, QString("done"));
    QVERIFY(!runs[0].thumbnail.isNull());
    QVERIFY(runs[0].mean_step_seconds > 0);
    QVERIFY(QFile::exists(runs[0].folder + "/clip.mp4"));
    w.tabs->setCurrentWidget(w.history);
    shoot(&w, "history");
    // The history survives the window, and a run can be deleted with its files.
    MainWindow again(tmp_.path() + "/b");
    QCOMPARE(again.history->runs().size(), size_t(1));
    QVERIFY(again.history->remove(runs[0].id));
    QVERIFY(!QDir(runs[0].folder).exists());
  }

  void a_killed_rank_is_named_and_the_window_lives_on() {
    MainWindow w(tmp_.path() + "/c");
    w.compose->prompt->setPlainText("a paper boat");
    w.compose->frames->setValue(9);
    w.compose->steps->setValue(1000);
    w.parallel->ring->setValue(2);
    QSignalSpy spy(&w, &MainWindow::run_finished);
    QVERIFY(w.generate());
    pid_t victim = 0;
    QTRY_VERIFY_WITH_TIMEOUT((victim = w.rank_pid(1)) > 0, 60000);
    QTRY_VERIFY_WITH_TIMEOUT(w.run_view->bars[1]->value() > 0 || w.running(), 60000);
    QTest::qWait(1500);  // into the denoising steps
    ::kill(victim, SIGKILL);
    QCOMPARE(wait_for_run(w, spy, 30000), 128 + SIGKILL);
    QVERIFY2(w.run_view->status->text().contains(QString("rank 1 (pid %1").arg(victim)), qPrintable(w.run_view->status->text()));
    QVERIFY(w.run_view->status->text().contains("was killed by signal 9"));
    QVERIFY(w.generate_button->isEnabled());  // usable again
    QCOMPARE(w.history->runs().front().status, QString("crash"));
  }
};

QTEST_MAIN(TestStudio)
#include "test_studio.moc"
