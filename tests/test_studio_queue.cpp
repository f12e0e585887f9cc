// The queue and the runs it starts, offscreen with the real window, worker and demo model on the CPU: a job that
// cannot start waits first in the queue (paused, the reason kept beside it) until the user fixes it and resumes
// or removes it, never dropped; Run again queues an old run's job with its seed and leaves the compose column as
// the user had it; a number typed that its field cannot take stops Ctrl+Return, saying why; a run decoding while
// the user plays another run leaves the Player to that run, and Space plays or pauses the Player unless the
// focused control uses Space itself; quitting with jobs waiting asks first.
#undef QT_NO_KEYWORDS  // qcustomplot.h, included through the GUI, uses Qt's keywords
#include <QCheckBox>
#include <QFile>
#include <QMessageBox>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "gui/compose/output_settings.h"
#include "gui/window/main_window.h"
#include "plan/job_file.h"

#include "studio_support.h"

using namespace studio;
using namespace studio::gui;
using namespace studio::test;

namespace {

QLabel* queue_note(QWidget& w) { return named<QLabel>(w, "queue_note"); }
QPushButton* resume(QWidget& w) { return named<QPushButton>(w, "resume_queue"); }

void short_job(MainWindow& w, const QString& prompt, int frames = 9) {
  w.compose_panel().prompt->setPlainText(prompt);
  w.compose_panel().frames->setValue(frames);
  w.compose_panel().steps->setValue(2);
}

// The settings History keeps for run `r`.
plan::JobSpec job_of(const RunRecord& r) {
  return plan::job_file_from_json(r.settings.toStdString(), "history", plan::UnknownKeys::Skipped).job;
}

}  // namespace

class TestStudioQueue : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;

 private Q_SLOTS:
  void initTestCase() { start_studio_suite("DiT Studio queue tests"); }

  void a_job_that_cannot_start_waits_first_in_the_queue() {
    MainWindow w(tmp_.path() + "/paused");
    w.show();
    wait_for_devices(w);
    QVERIFY(queue_note(w)->isHidden());
    QVERIFY(!resume(w)->isEnabled());
    // The output folder gone (an unmounted disk): two jobs queued, neither can start.
    const QString gone = tmp_.path() + "/unmounted";
    set_output_root(gone);
    short_job(w, "a paper boat");
    QVERIFY2(w.generate(), qPrintable(reason(w)->text()));
    short_job(w, "a lighthouse at dusk");
    QVERIFY2(w.generate(), qPrintable(reason(w)->text()));
    QVERIFY(!w.running());
    QCOMPARE(w.queued(), 2);
    QCOMPARE(queue_list(w)->count(), 2);
    const QString said = queue_note(w)->text();
    QVERIFY2(!queue_note(w)->isHidden() && said.startsWith("Paused: the first job could not start.") &&
                 said.contains(gone) && said.contains("does not exist") && said.contains("Resume"),
             qPrintable(said));
    QVERIFY(resume(w)->isEnabled());
    // An edit elsewhere rewrites the reason under Generate; the queue still says why it waits.
    w.compose_panel().prompt->setPlainText("a kite");
    QCOMPARE(queue_note(w)->text(), said);
    // Resume while nothing is fixed: the same.
    resume(w)->click();
    QVERIFY(!w.running());
    QCOMPARE(w.queued(), 2);
    // The first removed: the next is tried, and waits for the same reason.
    queue_list(w)->setCurrentRow(0);
    for (auto* b : w.findChildren<QPushButton*>())
      if (b->text() == "Remove") b->click();
    QCOMPARE(w.queued(), 1);
    QVERIFY(!w.running());
    QVERIFY2(queue_note(w)->text().contains("does not exist"), qPrintable(queue_note(w)->text()));
    // The disk back: Resume runs it, as it was queued.
    QVERIFY(QDir().mkpath(gone));
    QSignalSpy spy(&w, &MainWindow::run_finished);
    resume(w)->click();
    QVERIFY(w.running());
    QVERIFY(queue_note(w)->isHidden());
    QVERIFY(!resume(w)->isEnabled());
    QCOMPARE(wait_for_run(spy, 120000), 0);
    QCOMPARE(w.queued(), 0);
    QCOMPARE(int(w.history().runs().size()), 1);
    QCOMPARE(QString::fromStdString(job_of(w.history().runs().front()).prompt), QString("a lighthouse at dusk"));
    QVERIFY(w.history().runs().front().folder.startsWith(gone));
    set_output_root({});
  }

  // The chosen worker gone (uninstalled) when the job's turn comes: the queue waits; another worker chosen,
  // Resume runs the job with it. Quitting with a job waiting asks first.
  void a_worker_that_cannot_start_waits_for_another() {
    MainWindow w(tmp_.path() + "/worker");
    w.show();
    wait_for_devices(w);
    const QString real = w.worker_picker().current();
    QTemporaryDir other;
    const QString link = other.path() + "/dit-worker";
    QVERIFY(QFile::link(real, link));
    QVERIFY(w.worker_picker().add(link));
    QTRY_VERIFY_WITH_TIMEOUT(!w.worker_picker().build->text().startsWith("asking"), 120000);
    wait_for_devices(w);
    QVERIFY(QFile::remove(link));
    short_job(w, "a paper boat");
    QVERIFY2(w.generate(), qPrintable(reason(w)->text()));
    QVERIFY(!w.running());
    QCOMPARE(w.queued(), 1);
    QVERIFY2(queue_note(w)->text().contains(link), qPrintable(queue_note(w)->text()));
    // Quitting now would drop it: asked, and "Stay" keeps the window and the job.
    bool asked = false;
    answer_next("confirm_quit", QMessageBox::No, &asked);
    w.close();
    QVERIFY(asked && w.isVisible());
    QCOMPARE(w.queued(), 1);
    QVERIFY(w.worker_picker().add(real));
    QTRY_VERIFY_WITH_TIMEOUT(!w.worker_picker().build->text().startsWith("asking"), 120000);
    QSignalSpy spy(&w, &MainWindow::run_finished);
    resume(w)->click();
    QVERIFY(w.running());
    QCOMPARE(wait_for_run(spy, 120000), 0);
    QCOMPARE(int(w.history().runs().size()), 1);
  }

  // Closing just after Generate (the run not at its first step: nothing of it to lose) still asks, for the job
  // queued behind it.
  void closing_before_the_first_step_asks_for_the_queue() {
    MainWindow w(tmp_.path() + "/closing");
    w.show();
    wait_for_devices(w);
    short_job(w, "a paper boat");
    w.compose_panel().steps->setValue(200);
    QSignalSpy spy(&w, &MainWindow::run_finished);
    QVERIFY2(w.generate(), qPrintable(reason(w)->text()));
    QVERIFY2(w.generate(), qPrintable(reason(w)->text()));
    QVERIFY(w.running());
    QCOMPARE(w.queued(), 1);
    bool asked = false;
    answer_next("confirm_stop", QMessageBox::No, &asked);
    w.close();
    QVERIFY(asked && w.isVisible());
    QCOMPARE(w.queued(), 1);
    queue_list(w)->setCurrentRow(0);
    for (auto* b : w.findChildren<QPushButton*>())
      if (b->text() == "Remove") b->click();
    w.cancel();
    QCOMPARE(wait_for_run(spy, 60000), 130);
  }

  void run_again_keeps_the_draft_and_a_decoding_run_leaves_the_player_alone() {
    MainWindow w(tmp_.path() + "/again");
    w.resize(1280, 800);
    w.show();
    wait_for_devices(w);
    QSignalSpy spy(&w, &MainWindow::run_finished);
    short_job(w, "a paper boat");
    w.compose_panel().seed_mode->setCurrentIndex(0);
    w.compose_panel().seed->setValue(4242);
    QVERIFY2(w.generate(), qPrintable(reason(w)->text()));
    QCOMPARE(wait_for_run(spy, 120000), 0);
    const RunRecord first = w.history().runs().front();
    QCOMPARE(first.seed, qint64(4242));

    // A draft in the compose column, random seeds: Run again queues the old job, and the draft stays.
    w.compose_panel().prompt->setPlainText("a draft not yet run");
    w.compose_panel().steps->setValue(7);
    w.compose_panel().seed_mode->setCurrentIndex(1);
    w.history().select({first.id});
    w.history().rerun_button->click();
    QVERIFY(w.running());
    QCOMPARE(w.compose_panel().prompt->toPlainText(), QString("a draft not yet run"));
    QCOMPARE(w.compose_panel().steps->value(), 7);
    QCOMPARE(w.compose_panel().seed_mode->currentIndex(), 1);
    // Played while the run denoises: its frames, when they come, leave the Player to the run chosen.
    w.history().play_button->click();
    QTRY_VERIFY_WITH_TIMEOUT(!w.player().opening(), 30000);
    QCOMPARE(w.player().source(), first.folder);
    QCOMPARE(wait_for_run(spy, 120000), 0);
    QCOMPARE(w.player().source(), first.folder);
    const RunRecord again = w.history().runs().front();
    QVERIFY(again.id != first.id);
    QCOMPARE(again.seed, qint64(4242));
    QCOMPARE(again.prompt, QString("a paper boat"));
    QCOMPARE(job_of(again).num_inference_steps, 2);

    // A number typed that the field cannot take: Ctrl+Return runs nothing, and says why.
    w.activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(&w));
    w.compose_panel().steps->setFocus();
    w.compose_panel().steps->selectAll();
    QTest::keyClicks(w.compose_panel().steps, "0");
    QCOMPARE(w.compose_panel().steps->text(), QString("0"));
    QTest::keyClick(&w, Qt::Key_Return, Qt::ControlModifier);
    QVERIFY(!w.running());
    QVERIFY2(reason(w)->text().startsWith("Steps: \"0\" is not a value it takes (1 to 1000)"), qPrintable(reason(w)->text()));
    w.compose_panel().prompt->setFocus();  // leaving the field puts its last value back
    QCOMPARE(w.compose_panel().steps->value(), 7);

    // A run of 25 frames (decoded in batches): once its first frame is in the Player, the user plays the
    // first run there. The rest of its frames do not take the Player back.
    short_job(w, "a lighthouse at dusk", 25);
    QVERIFY2(w.generate(), qPrintable(reason(w)->text()));
    QTRY_VERIFY_WITH_TIMEOUT(w.player().source() != first.folder && w.player().source() != again.folder, 120000);
    QVERIFY(w.running());  // still decoding: what follows is what this case is about
    w.history().select({first.id});
    w.history().play_button->click();
    QTRY_VERIFY_WITH_TIMEOUT(!w.player().opening(), 30000);
    QCOMPARE(w.player().source(), first.folder);
    QCOMPARE(wait_for_run(spy, 120000), 0);
    QCOMPARE(w.player().source(), first.folder);
    QCOMPARE(w.player().frame_count(), 9);
    for (int i = 0; i < w.player().frame_count(); ++i) QVERIFY2(!w.player().frame(i).isNull(), qPrintable(QString::number(i)));
    QCOMPARE(tabs(w)->currentWidget(), static_cast<QWidget*>(&w.player()));
    // The run itself, played from History: every frame.
    const RunRecord third = w.history().runs().front();
    w.history().select({third.id});
    w.history().play_button->click();
    QTRY_VERIFY_WITH_TIMEOUT(!w.player().opening(), 30000);
    QCOMPARE(w.player().frame_count(), 25);
    for (int i = 0; i < 25; ++i) QVERIFY2(!w.player().frame(i).isNull(), qPrintable(QString::number(i)));

    // Space: the focused check box takes it; elsewhere in the Player it plays and pauses.
    w.player().pause();
    w.player().loop->setFocus();
    const bool looped = w.player().loop->isChecked();
    QTest::keyClick(w.player().loop, Qt::Key_Space);
    QCOMPARE(w.player().loop->isChecked(), !looped);
    QVERIFY(!w.player().playing());
    QTest::keyClick(w.player().screen, Qt::Key_Space);
    QVERIFY(w.player().playing());
    QTest::keyClick(w.player().screen, Qt::Key_Space);
    QVERIFY(!w.player().playing());
  }
};

QTEST_MAIN(TestStudioQueue)
#include "test_studio_queue.moc"
