// The devices: which dit-worker runs the jobs (the picker), the GPUs it lists (this program links no
// LibTorch; the CPU until it answers), the parallel settings fitted to them, and the About box with what the
// worker was built with.
#include <QVBoxLayout>

#include "gui/window/main_window.h"

namespace studio::gui {

void MainWindow::build_devices_group() {
  auto* gpus = new QWidget;
  auto* gpus_layout = new QVBoxLayout(gpus);
  gpus_layout->setContentsMargins(0, 0, 0, 0);
  gpus_layout->addWidget(worker_);
  gpus_layout->addWidget(parallel_);
  worker_->workers->setObjectName("worker");
  auto* gpu_group = compose_->add_group(tr("GPUs and parallelism"), gpus, false);
  connect(parallel_, &ParallelPanel::changed, gpu_group, [this, gpu_group] {  // the configuration, even closed
    gpu_group->header->setText(tr("GPUs and parallelism: %1").arg(QString::fromStdString(parallel_->config().describe())));
  });
  compose_->add_decoding_row(parallel_->parallel_vae);
}

void MainWindow::connect_devices() {
  connect(parallel_, &ParallelPanel::devices_changed, this, [this] {
    if (compose_->model()) parallel_->refit(compose_->job(), *compose_->model());
  });
  connect(compose_, &ComposePanel::model_loaded, this, [this] {
    if (compose_->model()) parallel_->refit(compose_->job(), *compose_->model());
  });
  connect(&list_devices_, &QProcess::finished, this, [this] {
    try {
      const auto devices = workers::parse_devices(list_devices_.readAllStandardOutput().toStdString());
      worker_build_ = QString::fromStdString(devices.build);
      parallel_->set_devices(devices);
      worker_->set_build(worker_build_);
    } catch (const std::exception& e) {
      worker_build_.clear();
      worker_->set_build(QString::fromStdString(e.what()));
    }
    Q_EMIT devices_listed();
  });
  connect(&list_devices_, &QProcess::errorOccurred, this, [this](QProcess::ProcessError e) {
    if (e != QProcess::FailedToStart) return;
    worker_build_.clear();
    worker_->set_build(tr("%1 cannot be started: %2").arg(list_devices_.program(), list_devices_.errorString()));
    Q_EMIT devices_listed();
  });
  connect(worker_, &WorkerPicker::chosen, this, [this] { list_devices(); });
  list_devices();
}

void MainWindow::list_devices() {
  {
    const QSignalBlocker quiet(&list_devices_);  // the one asked before is no longer the answer
    list_devices_.kill();
    list_devices_.waitForFinished(2000);
  }
  worker_build_.clear();
  parallel_->set_worker(worker_->current());  // it measures the devices for Auto, too
  list_devices_.start(worker_->current(), {"--list-devices"});
}

QString MainWindow::about_text() const {
  return tr("DiT Studio %1\nGenerates images and video clips with Diffusion Transformers.\n\nWorker: %2\n%3")
      .arg(STUDIO_VERSION, worker_build_.isEmpty() ? tr("asking dit-worker...") : worker_build_, worker_->current());
}

}  // namespace studio::gui
