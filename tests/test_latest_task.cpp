// LatestTask (gui/widgets/latest_task.h): work on a thread of its own, its result handed to the GUI thread; only the
// latest asked for counts. Real threads, real event loop: a newer start supersedes the one under way (its result
// dropped, its work stopped at its next go_on), drop() leaves nothing to hand over, and an owner destroyed while the
// work runs waits for it and is never called back.
#include <QThread>
#include <QtTest>

#include <atomic>

#include "gui/widgets/latest_task.h"

using studio::gui::LatestTask;

namespace {

// Work that runs until it is told to go no further (go_on) or released, then hands over `name`.
LatestTask::Work until_released(std::atomic<bool>& started, std::atomic<bool>& release, QStringList& handed,
                                const QString& name) {
  return [&started, &release, &handed, name](const std::function<bool()>& go_on) -> std::function<void()> {
    started = true;
    while (!release && go_on()) QThread::msleep(1);
    return [&handed, name] {
      // On the GUI thread, as widgets need.
      handed << (QThread::currentThread() == qApp->thread() ? name : name + " off the GUI thread");
    };
  };
}

}  // namespace

class TestLatestTask : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void a_newer_start_supersedes_the_one_under_way() {
    QObject owner;
    auto* task = new LatestTask(&owner);
    std::atomic<bool> started{false}, release{false}, second_started{false}, second_release{true};
    QStringList handed;
    task->start(until_released(started, release, handed, "first"));
    QTRY_VERIFY(started);
    task->start(until_released(second_started, second_release, handed, "second"));  // stops the first's loop
    QVERIFY(task->busy());
    QTRY_VERIFY(!task->busy());
    QTest::qWait(50);  // a stale hand-over, had one been queued, would have run by now
    QCOMPARE(handed, QStringList{"second"});
  }

  void a_drop_hands_nothing_over() {
    QObject owner;
    auto* task = new LatestTask(&owner);
    std::atomic<bool> started{false}, release{false};
    QStringList handed;
    task->start(until_released(started, release, handed, "dropped"));
    QTRY_VERIFY(started);
    task->drop();
    QVERIFY(!task->busy());
    release = true;
    QTest::qWait(50);
    QVERIFY(handed.isEmpty());
  }

  void an_owner_gone_while_the_work_runs_is_not_called_back() {
    auto* owner = new QObject;
    auto* task = new LatestTask(owner);
    std::atomic<bool> started{false}, release{false};
    QStringList handed;
    task->start(until_released(started, release, handed, "orphan"));
    QTRY_VERIFY(started);
    delete owner;  // the work sees go_on false at once; the task waits for it
    QTest::qWait(50);
    QVERIFY(handed.isEmpty());
  }
};

QTEST_MAIN(TestLatestTask)
#include "test_latest_task.moc"
