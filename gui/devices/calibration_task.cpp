#include "gui/devices/calibration_task.h"

#include "plan/error.h"
#include "workers/launch/calibration.h"

namespace studio::gui {

CalibrationTask::CalibrationTask(QObject* parent) : QObject(parent) {
  qRegisterMetaType<plan::Calibration>();
  // Connected first, so that whoever listens sees the task as no longer running.
  connect(this, &CalibrationTask::measured, this, [this] { running_ = false; });
  connect(this, &CalibrationTask::failed, this, [this] { running_ = false; });
}

CalibrationTask::~CalibrationTask() {
  stop_ = true;  // the ranks measuring are ended: the window closes at once
  if (thread_.joinable()) thread_.join();
}

void CalibrationTask::start(const std::string& worker, const workers::Devices& devices, int ranks,
                            const std::string& dtype) {
  if (thread_.joinable()) thread_.join();  // the last one has emitted its ending: it is ending
  running_ = true;
  thread_ = std::thread([this, worker, devices, ranks, dtype] {
    try {
      std::string busy;
      const auto c = workers::calibration_for(worker, devices, ranks, dtype, false, nullptr, &busy, &stop_);
      Q_EMIT measured(c, QString::fromStdString(busy));
    } catch (const Cancelled&) {
      // the task is being destroyed: no one is left to tell
    } catch (const std::exception& e) {
      Q_EMIT failed(QString::fromStdString(e.what()));
    }
  });
}

}  // namespace studio::gui
