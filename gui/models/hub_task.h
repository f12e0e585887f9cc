// One Hub operation at a time, a download or a verify, on its own thread: progress, notes and the ending
// come to the GUI thread as queued signals, so that the window never waits on the network or on hashing.
#pragma once
#include <QObject>
#include <QString>

#include <atomic>
#include <thread>

#include "hub/cache.h"
#include "hub/download.h"

Q_DECLARE_METATYPE(studio::hub::Progress)

namespace studio::gui {

class HubTask : public QObject {
  Q_OBJECT
 public:
  enum Ending { Done, Failed, Stopped };
  explicit HubTask(QObject* parent = nullptr);
  ~HubTask() override;  // stops a running task and waits for its thread

  bool running() const { return running_; }
  // Fetches what the engine reads of `repo_id` into the cache `settings` name (resuming what is there).
  void download(const hub::HubSettings& settings, const QString& repo_id);
  // Hashes every file of the cached snapshot of `repo_id`'s main branch again.
  void verify(const QString& cache_dir, const QString& repo_id);
  // Ends the task soon with Stopped; a download's .incomplete files stay, to be resumed.
  void stop() { cancel_ = true; }

 Q_SIGNALS:
  void progress(const studio::hub::Progress& p);
  void note(const QString& line);
  // `message`: what was done, or why not; `snapshot`: the folder a download filled.
  void finished(int ending, const QString& message, const QString& snapshot);

 private:
  template <class F>
  void start(F&& work);
  std::thread thread_;
  std::atomic<bool> cancel_{false};
  bool running_ = false;  // touched on the GUI thread only
};

}  // namespace studio::gui
