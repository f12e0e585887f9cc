// Runs one job's ranks from the GUI thread: the launcher's Supervisor, polled by a timer so that the
// window never blocks on a rank. (The ranks' parent-death signal is tied to the thread that forks them,
// so they are started from the GUI thread, which lives as long as the window.)
#pragma once
#include <QObject>
#include <QTimer>

#include <memory>

#include "workers/launch/supervisor.h"

namespace studio::gui {

class JobRunner : public QObject {
  Q_OBJECT
 public:
  explicit JobRunner(QObject* parent = nullptr);
  ~JobRunner() override;
  // Starts the ranks; false (with `error` set) when they cannot be started.
  bool start(const workers::LaunchPlan& plan, QString* error);
  void cancel();
  bool running() const { return supervisor_ != nullptr; }
  const std::vector<workers::RankView>& ranks() const;

 Q_SIGNALS:
  void message(const studio::events::Message& m);
  void note(const QString& line);
  void finished(const studio::workers::Outcome& outcome, const std::vector<studio::workers::RankView>& ranks);

 private:
  void tick();
  std::unique_ptr<workers::Supervisor> supervisor_;
  QTimer timer_;
};

}  // namespace studio::gui
