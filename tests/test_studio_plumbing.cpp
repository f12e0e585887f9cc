// The studio's plumbing, offscreen, with real workers: each rank's live output in the log pane (filtered
// by rank, a killed rank's lines highlighted, kept in the run's folder), the GUI thread never stalled by
// a run (the Supervisor and the PNG encoding on threads of their own), a rank that cannot be spawned
// reported at once, and the output folder chosen in Settings and checked before a job starts with the
// true reason: missing, not a folder, a read-only mount, no space (plan/output_folder.h, the launcher's
// check too).
//
// The read-only and full folders are real mounts: main() moves this test into a private mount namespace
// (as root, or in a user namespace of its own) before any thread starts; where neither is allowed those
// cases fall back to a read-only file system the machine already has (/sys in most containers) or skip.
// With STUDIO_SCREENSHOTS=DIR it saves the run view with its log, and the Settings dialog, there.
#undef QT_NO_KEYWORDS  // qcustomplot.h, included through the GUI, uses Qt's keywords
#include <QDialogButtonBox>
#include <QElapsedTimer>
#include <QProcess>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTimer>
#include <QtTest>

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <csignal>
#include <fstream>
#include <set>

#include "gui/run/job_runner.h"
#include "gui/run/run_view.h"
#include "gui/window/main_window.h"
#include "gui/compose/output_settings.h"
#include "plan/job_file.h"
#include "plan/model_folder.h"
#include "plan/output_folder.h"

#include "studio_support.h"
#include "support.h"

using namespace studio;
using namespace studio::gui;
using namespace studio::test;

namespace {

bool g_private_mounts = false;  // main() got this process a mount namespace of its own

bool write_file(const char* path, const std::string& text) {
  std::ofstream f(path);
  return bool(f << text);
}

// Before any thread exists (a user namespace needs a single-threaded process).
bool enter_private_mount_namespace() {
  const uid_t uid = ::getuid();
  const gid_t gid = ::getgid();
  if (::unshare(CLONE_NEWNS) != 0) {
    if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) return false;
    write_file("/proc/self/setgroups", "deny");
    if (!write_file("/proc/self/uid_map", "0 " + std::to_string(uid) + " 1") ||
        !write_file("/proc/self/gid_map", "0 " + std::to_string(gid) + " 1"))
      return false;
  }
  return ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0;  // nothing leaks out
}

bool mount_read_only(const QString& dir) {
  const QByteArray d = dir.toUtf8();
  return g_private_mounts && ::mount(d.constData(), d.constData(), nullptr, MS_BIND, nullptr) == 0 &&
         ::mount(nullptr, d.constData(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY, nullptr) == 0;
}

bool mount_small_tmpfs(const QString& dir, const char* size) {
  return g_private_mounts && ::mount("tmpfs", dir.toUtf8().constData(), "tmpfs", 0, size) == 0;
}

// A read-only file system this machine already has, for when no mount can be made.
QString existing_read_only_folder() {
  for (const char* dir : {"/sys", "/proc/sys", "/sys/fs/cgroup"}) {
    struct statvfs fs {};
    if (::statvfs(dir, &fs) == 0 && (fs.f_flag & ST_RDONLY)) return dir;
  }
  return {};
}

QStringList shown_lines(const LogPane& log) { return log.text->toPlainText().split('\n', Qt::SkipEmptyParts); }

}  // namespace

class TestStudioPlumbing : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;

 private Q_SLOTS:
  void initTestCase() {
    start_studio_suite("DiT Studio plumbing tests");
    qInfo("private mount namespace: %s", g_private_mounts ? "yes" : "no (read-only cases use the machine's own)");
  }

  void the_log_shows_each_rank_and_filters_and_the_gui_thread_never_stalls() {
    const QString runs = tmp_.path() + "/chosen-runs";
    QVERIFY(QDir().mkpath(runs));
    MainWindow w(tmp_.path() + "/log");
    w.resize(1280, 800);
    w.show();
    {  // the output folder, chosen in Settings and kept
      SettingsDialog settings(tmp_.path() + "/log", &w);
      settings.output_folder->setText(runs);
      QVERIFY2(settings.folder_state->text().contains("free"), qPrintable(settings.folder_state->text()));
      settings.show();
      shoot(&settings, "settings");
      settings.accept();
      QCOMPARE(settings.result(), int(QDialog::Accepted));
    }
    QCOMPARE(QSettings().value("output/folder").toString(), runs);
    QCOMPARE(output_root(tmp_.path() + "/log"), runs);
    w.compose_panel().prompt->setPlainText("a paper boat drifts on a pond");
    w.compose_panel().frames->setValue(9);
    w.compose_panel().steps->setValue(4);
    w.compose_panel().width->setValue(576);  // larger frames than the default, for the PNG encoding
    w.compose_panel().height->setValue(384);
    w.parallel_panel().ulysses->setValue(2);
    // The GUI thread's longest gap between ticks of a short timer, from the start to the end of the run, less
    // the time it spent ready but waiting for a core (the kernel's schedstat): what the studio did, or was
    // blocked on, without returning to its event loop. A busy machine's waits for a core say nothing of it.
    QElapsedTimer clock;
    const auto waited_for_a_core_ms = [] {  // 0 where the kernel keeps no schedstat: plain wall time then
      std::ifstream f("/proc/thread-self/schedstat");
      uint64_t on_cpu_ns = 0, waiting_ns = 0;
      f >> on_cpu_ns >> waiting_ns;
      return qint64(waiting_ns / 1000000);
    };
    qint64 last = 0, last_waited = waited_for_a_core_ms(), longest = 0, longest_at = 0, longest_wall = 0;
    QTimer ticker;
    ticker.setInterval(10);
    connect(&ticker, &QTimer::timeout, this, [&] {
      const qint64 now = clock.elapsed(), waited = waited_for_a_core_ms();
      const qint64 gap = (now - last) - (waited - last_waited);
      if (gap > longest) longest = gap, longest_at = now;
      longest_wall = std::max(longest_wall, now - last);
      last = now, last_waited = waited;
    });
    QSignalSpy spy(&w, &MainWindow::run_finished);
    clock.start();
    ticker.start();
    QVERIFY2(w.generate(), qPrintable(reason(w)->text()));
    QVERIFY2(w.running(), qPrintable(reason(w)->text()));
    QCOMPARE(wait_for_run(spy, 180000), 0);
    ticker.stop();
    qInfo("the GUI thread's longest stall during a 2-rank run of %lld ms: %lld ms not waiting for a core, ending at "
          "%lld ms (longest wall-clock gap %lld ms)",
          clock.elapsed(), longest, longest_at, longest_wall);
    QVERIFY2(longest < 1500, qPrintable(QString("the GUI thread stalled for %1 ms").arg(longest)));

    auto* log = w.run_view().log;
    std::set<int> ranks;
    for (const auto& l : log->lines()) ranks.insert(l.rank);
    QVERIFY2(ranks.count(0) && ranks.count(1), qPrintable(log->text->toPlainText()));
    QCOMPARE(log->rank_filter->count(), 3);  // all, rank 0, rank 1
    const QStringList all = shown_lines(*log);
    QVERIFY(all.size() >= 2);
    for (int rank : {0, 1}) {
      log->show_rank(rank);
      const QStringList lines = shown_lines(*log);
      QVERIFY(!lines.isEmpty());
      QVERIFY(lines.size() < all.size());
      for (const auto& line : lines) QVERIFY2(line.startsWith(QString("[rank %1] ").arg(rank)), qPrintable(line));
    }
    log->show_rank(-1);
    QCOMPARE(shown_lines(*log).size(), all.size());
    for (const auto& l : log->lines()) QVERIFY2(!l.failure, qPrintable(l.text));  // nothing failed
    // The run went to the chosen folder with its frames (encoded off the GUI thread) and its log.
    const auto run = w.history().runs().front();
    QVERIFY2(run.folder.startsWith(runs + "/"), qPrintable(run.folder));
    QCOMPARE(QDir(run.folder + "/frames").entryList({"*.png"}).size(), 9);
    QCOMPARE(QImage(run.folder + "/frames/0008.png").size(), QSize(576, 384));
    QVERIFY(QFile::exists(run.folder + "/log.txt"));
    log->toggle->setChecked(true);
    tabs(w)->setCurrentWidget(&w.run_view());
    shoot(&w, "run-log-1280x800");
    QSettings().remove("output/folder");
  }

  void cleanupTestCase() {  // the test's mounts, so that its folder can go
    for (const char* dir : {"/read-only", "/small"}) ::umount2((tmp_.path() + dir).toUtf8().constData(), MNT_DETACH);
  }

  void a_killed_rank_s_lines_are_highlighted_and_kept() {
    MainWindow w(tmp_.path() + "/killed");
    w.resize(1920, 1080);
    w.show();
    w.compose_panel().prompt->setPlainText("a paper boat");
    w.compose_panel().frames->setValue(9);
    w.compose_panel().steps->setValue(1000);
    w.parallel_panel().ring->setValue(2);
    QSignalSpy spy(&w, &MainWindow::run_finished);
    QVERIFY2(w.generate(), qPrintable(reason(w)->text()));
    pid_t victim = 0;
    QTRY_VERIFY_WITH_TIMEOUT((victim = w.rank_pid(1)) > 0, 120000);
    QTRY_VERIFY_WITH_TIMEOUT(w.run_view().bars[1]->value() > 0, 120000);  // into the denoising steps
    ::kill(victim, SIGKILL);
    QCOMPARE(wait_for_run(spy, 30000), 128 + SIGKILL);
    auto* log = w.run_view().log;
    QVERIFY(log->expanded());  // opened to show the failure
    int rank1_marked = 0, rank0_marked = 0, launcher_marked = 0;
    for (const auto& l : log->lines()) {
      if (!l.failure) continue;
      rank1_marked += l.rank == 1;
      rank0_marked += l.rank == 0;
      launcher_marked += l.rank < 0 && l.text.contains("was killed by signal 9");
    }
    QVERIFY2(rank1_marked > 0, qPrintable(log->text->toPlainText()));
    QCOMPARE(rank0_marked, 0);  // it only lost its peer
    QCOMPARE(launcher_marked, 1);
    QVERIFY(log->text->document()->toHtml().contains("#fadbd8"));  // drawn highlighted
    // The rows show how each rank ended, the killed one in red; none is left at "starting".
    QString rows;
    for (const auto* l : w.run_view().findChildren<QLabel*>())
      if (l->text().startsWith("rank ")) rows += l->text() + "\n";
    QVERIFY2(rows.contains("rank 1  killed at step") && !rows.contains("starting"), qPrintable(rows));
    shoot(&w, "run-log-1920x1080");
    // Kept in the run's folder: loaded again, the same lines are marked.
    const auto run = w.history().runs().front();
    QVERIFY2(QFile::exists(run.folder + "/log.txt"), qPrintable(run.folder));
    LogPane again;
    QCOMPARE(again.toggle->text(), QString("Log (0 lines)"));  // labelled before any line, as after a restart
    QVERIFY(again.load(run.folder + "/log.txt"));
    int marked_again = 0;
    for (const auto& l : again.lines()) marked_again += l.failure;
    QCOMPARE(marked_again, rank1_marked + launcher_marked);
    // The next run's status is no longer drawn as that failure was.
    QVERIFY(!w.run_view().status->styleSheet().isEmpty());
    w.compose_panel().steps->setValue(1);
    QVERIFY2(w.generate(), qPrintable(reason(w)->text()));
    QVERIFY2(w.run_view().status->text().startsWith("Running"), qPrintable(w.run_view().status->text()));
    QCOMPARE(w.run_view().status->styleSheet(), QString());
    QCOMPARE(wait_for_run(spy, 120000), 0);
  }

  // While a rank decodes, its row counts the frames that have come, and its bar follows them, rather than
  // staying at "100%, step 4/4" for the decode's whole time.
  void decoding_shows_the_frames_as_they_come() {
    RunView view;
    view.start(1, "a paper boat", 9);
    workers::RankView r;
    r.rank = 0;
    r.step = r.total = 4;
    r.phase = "decoding";
    view.message(events::Phase{0, "decoding"}.make(), {r});
    RunPicture frame;
    frame.frame = true;
    frame.index = 4;  // the fifth frame of the first video
    frame.image = QImage(8, 8, QImage::Format_RGB888);
    view.show_picture(frame);
    QString row;
    for (const auto* l : view.findChildren<QLabel*>())
      if (l->text().startsWith("rank 0")) row = l->text();
    QVERIFY2(row.contains("decoding") && row.contains("frame 5/9"), qPrintable(row));
    QCOMPARE(view.bars.at(0)->value(), 55);
  }

  // A decode that hands its frames over only at its end (one batch, or tiles) still moves the bar: the parts
  // the rank says it has done (tiles, batches of frames, the decoder's levels).
  void decoding_in_one_batch_shows_its_parts() {
    RunView view;
    view.start(1, "a paper boat", 9);
    workers::RankView r;
    r.rank = 0;
    r.step = r.total = 4;
    r.phase = "decoding";
    r.phase_part = 3, r.phase_parts = 12;
    r.resources.host_rss = uint64_t(5) << 30;  // as the part's phase event told the supervisor
    r.resources.host_peak = uint64_t(7) << 30;
    view.message(events::Phase{0, "decoding", 3, 12, r.resources}.make(), {r});
    QString row;
    for (const auto* l : view.findChildren<QLabel*>())
      if (l->text().startsWith("rank 0")) row = l->text();
    QVERIFY2(row.contains("decoding") && row.contains("25%") && !row.contains("step 4/4"), qPrintable(row));
    QVERIFY2(row.contains("memory 5.0 GiB (peak 7.0 GiB)"), qPrintable(row));
    QCOMPARE(view.bars.at(0)->value(), 25);
    view.show();
    shoot_sizes(&view, "run-decoding");
  }

  // After a run the ranks stay with the transformer loaded: the next run of the same configuration takes them
  // (and says so), another configuration starts new ones, and Settings > Keep the model loaded, off, ends them.
  void the_ranks_stay_for_the_next_run_and_go_when_told() {
    MainWindow w(tmp_.path() + "/kept");
    w.compose_panel().prompt->setPlainText("a paper boat");
    w.compose_panel().frames->setValue(5);
    w.compose_panel().steps->setValue(2);
    w.parallel_panel().ring->setValue(2);
    QSignalSpy spy(&w, &MainWindow::run_finished);
    const auto run = [&] {
      if (!w.generate()) return -1;
      return wait_for_run(spy, 180000);
    };
    const auto alive = [](pid_t pid) { return pid > 0 && ::kill(pid, 0) == 0; };
    QCOMPARE(run(), 0);
    const pid_t first[] = {w.rank_pid(0), w.rank_pid(1)};
    QVERIFY(alive(first[0]) && alive(first[1]));
    w.compose_panel().seed->setValue(w.compose_panel().seed->value() + 1);
    QCOMPARE(run(), 0);
    QCOMPARE(w.rank_pid(0), first[0]);
    QCOMPARE(w.rank_pid(1), first[1]);
    QVERIFY2(w.run_view().log->text->toPlainText().contains("the transformer is kept from the last run"),
             qPrintable(w.run_view().log->text->toPlainText()));
    // Another parallel configuration: new ranks, and the kept ones gone.
    w.parallel_panel().ring->setValue(1);
    w.parallel_panel().ulysses->setValue(2);
    QCOMPARE(run(), 0);
    const pid_t second[] = {w.rank_pid(0), w.rank_pid(1)};
    QVERIFY(second[0] != first[0] && second[1] != first[1]);
    QVERIFY(!alive(first[0]) && !alive(first[1]));
    QVERIFY(!w.run_view().log->text->toPlainText().contains("kept from the last run"));
    auto* keep = w.findChild<QAction*>("keep_loaded");
    QVERIFY(keep && keep->isChecked());
    keep->setChecked(false);
    QVERIFY(!alive(second[0]) && !alive(second[1]));
    keep->setChecked(true);  // as the next test expects the setting
  }

  // Out of memory with the model kept between runs: the run says so, and that configuration then loads the model
  // for each run (the second run's failure no longer blames the kept model).
  void out_of_memory_with_the_model_kept_then_loads_it_for_each_run() {
    qputenv("DIT_WORKER_MEMORY_LIMIT_MB", "0:0");  // rank 0's next allocation after the first step fails
    struct Unset {
      ~Unset() { qunsetenv("DIT_WORKER_MEMORY_LIMIT_MB"); }
    } unset;  // whatever becomes of the test, the next ones run without the fault
    MainWindow w(tmp_.path() + "/oom");
    w.compose_panel().prompt->setPlainText("a paper boat");
    w.compose_panel().frames->setValue(5);
    w.compose_panel().steps->setValue(2);
    QSignalSpy spy(&w, &MainWindow::run_finished);
    const QString kept = "The ranks kept the model loaded between runs";
    QVERIFY2(w.generate(), qPrintable(reason(w)->text()));
    QCOMPARE(wait_for_run(spy, 180000), 4);
    QVERIFY2(w.run_view().status->text().contains(kept), qPrintable(w.run_view().status->text()));
    QVERIFY2(w.generate(), qPrintable(reason(w)->text()));
    QCOMPARE(wait_for_run(spy, 180000), 4);
    QVERIFY2(!w.run_view().status->text().contains(kept), qPrintable(w.run_view().status->text()));
  }

  // A dit-worker older than --serve (a script answering the flag as that worker's usage check did): the job runs
  // on ranks of its own, said once, and the next job starts its own ranks at once.
  void a_worker_older_than_serve_runs_each_job_on_its_own_ranks() {
    const QString dir = tmp_.path() + "/old-worker", job = dir + "/job.json", script = dir + "/dit-worker";
    QVERIFY(QDir().mkpath(dir));
    QCOMPARE(QProcess::execute(QString::fromStdString(test::bin("dit-launch")),
                               {"--prompt", "a paper boat", "--num_frames", "5", "--num_inference_steps", "2",
                                "--output", dir + "/clip.mp4", "--write_job", job}),
             0);
    test::write_file(script.toStdString(),
                     "#!/bin/sh\nif [ \"$3\" = --serve ]; then\n  echo 'dit-worker: usage: dit-worker --job FILE | "
                     "--calibrate DTYPE | --list-devices | --version | --help' >&2\n  exit 2\nfi\nexec " +
                         test::bin("dit-worker") + " \"$@\"\n");
    QVERIFY(QFile::setPermissions(script, QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner));
    workers::LaunchPlan lp;
    lp.job = plan::job_file_from_json(test::read_file(job.toStdString()), job.toStdString());
    lp.worker_exe = script.toStdString();
    JobRunner runner;
    QSignalSpy finished(&runner, &JobRunner::finished), notes(&runner, &JobRunner::note);
    for (int run = 0; run < 2; ++run) {
      QString error;
      QVERIFY2(runner.start(lp, &error), qPrintable(error));
      QVERIFY(!finished.isEmpty() || finished.wait(180000));
      const auto outcome = finished.takeFirst().at(0).value<workers::Outcome>();
      QVERIFY2(outcome.exit_code == 0, outcome.message.c_str());
      QVERIFY(!runner.holds_ranks());  // they ended with the job
    }
    int said = 0;
    for (const auto& n : notes) said += n.at(0).toString().contains("is older than --serve");
    QCOMPARE(said, 1);
  }

  void a_rank_that_cannot_be_spawned_fails_the_start_at_once() {
    JobRunner runner;
    workers::LaunchPlan lp;
    lp.job.job.model_dir = "/nowhere";
    lp.worker_exe = tmp_.path().toStdString() + "/no-such-dit-worker";
    QString error;
    QVERIFY(!runner.start(lp, &error));
    QVERIFY2(error.contains("cannot start rank 0") && error.contains("No such file or directory"), qPrintable(error));
    QVERIFY(!runner.running());
  }

  void the_output_folder_is_checked_before_a_job_starts_with_the_true_reason() {
    // Missing, and not a folder.
    const QString missing = tmp_.path() + "/not-made";
    QCOMPARE(plan::check_folder(missing.toStdString()).state, plan::FolderState::Missing);
    QFile file(tmp_.path() + "/a-file");
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.close();
    QCOMPARE(plan::check_folder(file.fileName().toStdString()).state, plan::FolderState::NotFolder);
    QVERIFY(plan::check_folder(tmp_.path().toStdString()).ok());

    // Read-only: a read-only bind mount of a folder that exists (root passes access(W_OK) there).
    QString read_only = tmp_.path() + "/read-only";
    QVERIFY(QDir().mkpath(read_only));
    if (!mount_read_only(read_only)) read_only = existing_read_only_folder();
    if (read_only.isEmpty()) QSKIP("no private mount namespace and no read-only file system to test with");
    qInfo("read-only folder: %s", qPrintable(read_only));
    const auto c = plan::check_folder(read_only.toStdString());
    QCOMPARE(c.state, plan::FolderState::ReadOnly);

    MainWindow w(tmp_.path() + "/checked");
    w.compose_panel().prompt->setPlainText("a paper boat");
    w.compose_panel().frames->setValue(9);
    w.compose_panel().steps->setValue(2);
    // The launcher's check of the same job: the flag wording, the same truth.
    auto job = w.compose_panel().job();
    job.output_file = (read_only + "/clip.mp4").toStdString();
    std::string output_problem;
    for (const auto& p : plan::validate(job, plan::read_model_folder(job.model_dir)))
      if (p.field == "output") output_problem = p.message;
    QVERIFY2(output_problem.find("is on a read-only file system") != std::string::npos &&
                 output_problem.find("does not exist") == std::string::npos,
             output_problem.c_str());
    job.output_file = (missing + "/clip.mp4").toStdString();
    output_problem.clear();
    for (const auto& p : plan::validate(job, plan::read_model_folder(job.model_dir)))
      if (p.field == "output") output_problem = p.message;
    QVERIFY2(output_problem.find("does not exist") != std::string::npos, output_problem.c_str());

    // The window: the job does not start, and says why in its own words.
    const int runs_before = int(w.history().runs().size());
    for (const auto& [folder, words] : {std::pair{read_only, QString("is on a read-only file system")},
                                        std::pair{missing, QString("does not exist: create it, or choose another")}}) {
      set_output_root(folder);
      QVERIFY2(w.generate(), qPrintable(reason(w)->text()));
      QVERIFY(!w.running());
      QVERIFY2(reason(w)->text().contains(words) && reason(w)->text().contains("Settings"),
               qPrintable(reason(w)->text()));
      QVERIFY(!reason(w)->text().contains("--output"));
    }
    QCOMPARE(int(w.history().runs().size()), runs_before);  // nothing started, nothing recorded
    QVERIFY(w.run_view().bars.empty());                     // no rank rows left at "starting"
    // Settings refuses the folder with the same reason.
    SettingsDialog settings(tmp_.path() + "/checked");
    settings.output_folder->setText(read_only);
    settings.accept();
    QCOMPARE(settings.result(), int(QDialog::Rejected));
    QVERIFY2(settings.folder_state->text().contains("read-only file system"), qPrintable(settings.folder_state->text()));

    // No space: a 64 KiB file system cannot take the run's frames.
    const QString small = tmp_.path() + "/small";
    QVERIFY(QDir().mkpath(small));
    if (!mount_small_tmpfs(small, "size=64k")) QSKIP("no private mount namespace for a small tmpfs");
    QCOMPARE(plan::check_folder(small.toStdString(), 1 << 20).state, plan::FolderState::NoSpace);
    set_output_root(small);
    QVERIFY(w.generate());
    QVERIFY(!w.running());
    QVERIFY2(reason(w)->text().contains("free, less than the") && reason(w)->text().contains("free some space"),
             qPrintable(reason(w)->text()));
    set_output_root({});
  }
};

int main(int argc, char** argv) {
  g_private_mounts = enter_private_mount_namespace();
  QApplication app(argc, argv);
  TestStudioPlumbing t;
  return QTest::qExec(&t, argc, argv);
}

#include "test_studio_plumbing.moc"
