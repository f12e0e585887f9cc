// The sweep: the current job under each valid configuration for the selected devices, listed in the Sweep
// tab with the cost model's predictions, the checked ones run through the queue, the fastest adopted with
// one click.
#include "gui/main_window.h"

namespace studio::gui {

void MainWindow::connect_sweep() {
  connect(sweep_button, &QPushButton::clicked, this, [this] { sweep(); });
  connect(sweep_view, &SweepView::run_requested, this, &MainWindow::run_sweep);
  connect(sweep_view, &SweepView::adopted, this, [this](const plan::ParallelConfig& p) { parallel->set_config(p); });
  connect(parallel, &ParallelPanel::auto_done, this, [this] {
    if (sweep_job_) sweep_view->show_predictions(parallel->predictions(sweep_view->configs(), sweep_job_->first, sweep_job_->second));
  });
}

bool MainWindow::sweep() {
  auto base = make_job(parallel->config());
  if (!base || !compose->model()) return false;
  const auto p = parallel->config();
  const int processes = parallel->on_gpus() ? parallel->processes() : p.world_size();
  auto configs = plan::valid_configs(base->job.job, *compose->model(), processes, p);
  if (configs.empty()) return reason->setText(tr("No valid configuration for %1 processes.").arg(processes)), false;
  sweep_view->start(configs, parallel->predictions(configs, base->job.job, *compose->model()));
  sweep_base_ = base;
  sweep_job_ = {base->job.job, *compose->model()};
  tabs->setCurrentWidget(sweep_view);
  return true;
}

void MainWindow::run_sweep() {
  if (!sweep_base_) return;
  for (int row : sweep_view->take_checked()) {
    Queued q = *sweep_base_;
    q.job.parallel = sweep_view->config(row);
    q.sweep_row = row;
    enqueue(q);
  }
  sweep_base_.reset();
}

}  // namespace studio::gui
