// Measuring the devices for the cost model (`dit-worker --calibrate` on as many ranks as the configuration
// fills: seconds on the CPU, longer with NCCL's start on GPUs) on a thread of its own, cached as the
// launcher caches it (workers/launch/calibration.h); the ending comes to the GUI thread as a queued signal,
// so that the window never waits on it.
#pragma once
#include <QObject>
#include <QString>

#include <atomic>
#include <string>
#include <thread>

#include "plan/cost_model.h"
#include "workers/launch/devices.h"

Q_DECLARE_METATYPE(studio::plan::Calibration)

namespace studio::gui {

class CalibrationTask : public QObject {
  Q_OBJECT
 public:
  explicit CalibrationTask(QObject* parent = nullptr);
  ~CalibrationTask() override;  // ends a running measurement's ranks and waits for them

  bool running() const { return running_; }
  void start(const std::string& worker, const workers::Devices& devices, int ranks, const std::string& dtype);

 Q_SIGNALS:
  // `busy_note`: "" or why the figures may be far off (the machine was busy: they were not cached).
  void measured(const studio::plan::Calibration& c, const QString& busy_note);
  void failed(const QString& why);  // what failed, in the worker's or the cache's words

 private:
  std::thread thread_;
  std::atomic<bool> stop_{false};
  bool running_ = false;  // touched on the GUI thread only
};

}  // namespace studio::gui
