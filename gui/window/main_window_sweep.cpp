// The sweep: the current job under each valid configuration for the selected devices, listed in the Sweep
// tab with the cost model's predictions, the checked ones run through the queue, the fastest adopted with
// one click.
#include "gui/window/main_window.h"

namespace studio::gui {

void MainWindow::connect_sweep() {
  connect(sweep_button_, &QPushButton::clicked, this, [this] { sweep(); });
  connect(sweep_view_, &SweepView::run_requested, this, &MainWindow::run_sweep);
  connect(sweep_view_, &SweepView::adopted, this, [this](const plan::ParallelConfig& p) { parallel_->set_config(p); });
  connect(parallel_, &ParallelPanel::auto_done, this, [this] {
    if (sweep_job_) sweep_view_->show_predictions(parallel_->predictions(sweep_view_->configs(), sweep_job_->first, sweep_job_->second));
  });
}

bool MainWindow::sweep() {
  auto base = make_job(parallel_->config());
  if (!base || !compose_->model()) return false;
  const auto p = parallel_->config();
  const int processes = parallel_->on_gpus() ? parallel_->processes() : p.world_size();
  auto configs = plan::valid_configs(base->job.job, *compose_->model(), processes, p);
  if (configs.empty()) return reason_->setText(tr("No valid configuration for %1 processes.").arg(processes)), false;
  sweep_view_->start(configs, parallel_->predictions(configs, base->job.job, *compose_->model()));
  sweep_base_ = base;
  ++sweep_;
  sweep_job_ = {base->job.job, *compose_->model()};
  tabs_->setCurrentWidget(sweep_view_);
  return true;
}

void MainWindow::run_sweep() {
  if (!sweep_base_) return;
  for (int row : sweep_view_->take_checked()) {
    Queued q = *sweep_base_;
    q.job.parallel = sweep_view_->config(row);
    q.sweep_row = row;
    q.sweep = sweep_;
    enqueue(q);
  }
  sweep_base_.reset();
}

}  // namespace studio::gui
