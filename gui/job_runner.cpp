#include "gui/job_runner.h"

namespace studio::gui {

JobRunner::JobRunner(QObject* parent) : QObject(parent) {
  timer_.setInterval(30);
  connect(&timer_, &QTimer::timeout, this, &JobRunner::tick);
}

JobRunner::~JobRunner() = default;  // the Supervisor kills and reaps whatever still runs

bool JobRunner::start(const workers::LaunchPlan& plan, QString* error) {
  if (supervisor_) {
    *error = "a job is already running";
    return false;
  }
  auto s = std::make_unique<workers::Supervisor>(
      plan, [this](const events::Message& m) { Q_EMIT message(m); },
      [this](const std::string& line) { Q_EMIT note(QString::fromStdString(line)); });
  try {
    s->start();
  } catch (const std::exception& e) {
    *error = QString::fromStdString(e.what());
    return false;
  }
  supervisor_ = std::move(s);
  timer_.start();
  return true;
}

void JobRunner::cancel() {
  if (supervisor_) supervisor_->cancel();
}

const std::vector<workers::RankView>& JobRunner::ranks() const {
  static const std::vector<workers::RankView> none;
  return supervisor_ ? supervisor_->ranks() : none;
}

void JobRunner::tick() {
  if (!supervisor_ || supervisor_->poll(0)) return;
  timer_.stop();
  auto done = std::move(supervisor_);
  Q_EMIT finished(done->outcome(), done->ranks());
}

}  // namespace studio::gui
