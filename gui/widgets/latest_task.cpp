#include "gui/widgets/latest_task.h"

namespace studio::gui {

LatestTask::LatestTask(QObject* parent) : QObject(parent) {}

LatestTask::~LatestTask() {
  ++latest_;
  if (thread_.joinable()) thread_.join();
}

void LatestTask::drop() {
  ++latest_;
  busy_ = false;
}

void LatestTask::start(Work work) {
  const quint64 mine = ++latest_;
  if (thread_.joinable()) thread_.join();
  busy_ = true;
  thread_ = std::thread([this, mine, work = std::move(work)] {
    std::function<void()> hand_over = [] {};
    try {
      hand_over = work([this, mine] { return latest_ == mine; });
    } catch (const std::exception&) {
      // Out of memory reading a long clip, say: nothing to show, and the task is no longer busy.
    }
    if (latest_ != mine) return;
    // Queued with this object as context: dropped with it when it is gone before the GUI thread gets there.
    QMetaObject::invokeMethod(this, [this, mine, hand_over = std::move(hand_over)] {
      if (latest_ != mine) return;
      busy_ = false;
      hand_over();
    }, Qt::QueuedConnection);
  });
}

}  // namespace studio::gui
