// Work that would freeze the window (reading a run's frames, comparing them) done on a thread of its own, its
// result handed to the GUI thread. Only the latest asked for counts: a new start() supersedes the one under way,
// whose result is dropped, and work that asks `go_on` between its pieces stops at the next one.
#pragma once
#include <QObject>

#include <atomic>
#include <functional>
#include <thread>

namespace studio::gui {

class LatestTask : public QObject {
 public:
  // Runs on the thread; returns what to do with its result on the GUI thread (nothing when it throws).
  using Work = std::function<std::function<void()>(const std::function<bool()>& go_on)>;
  explicit LatestTask(QObject* parent);
  ~LatestTask() override;  // drops the work under way and waits for its next `go_on`

  // Waits for the work under way to reach its next `go_on` (one piece at most), then starts `work`.
  void start(Work work);
  void drop();  // the work under way, if any, is no longer wanted
  bool busy() const { return busy_; }  // started and not yet handed over nor dropped

 private:
  std::thread thread_;
  std::atomic<quint64> latest_{0};
  bool busy_ = false;  // touched on the GUI thread only
};

}  // namespace studio::gui
