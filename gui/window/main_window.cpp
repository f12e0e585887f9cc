// The window built: the compose column on the left (its actions, the GPUs group, the queue), the tabs on the
// right, the recent results along the bottom, the menus; and the settings, checked with engine/plan on
// every edit and kept between sessions. Each concern's wiring lives in its main_window_*.cpp.
#include "gui/window/main_window.h"

#include <QCloseEvent>
#include <QMenuBar>
#include <QMessageBox>
#include <QSettings>
#include <QSplitter>
#include <QStandardPaths>
#include <QVBoxLayout>

#include <algorithm>
#include <tuple>

#include "io/safetensors/lora_files.h"
#include "plan/job_check.h"
#include "plan/job_file.h"
#include "gui/compose/output_settings.h"

namespace studio::gui {

MainWindow::MainWindow(const QString& data_dir)
    : data_dir_(data_dir.isEmpty() ? QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) : data_dir) {
  setWindowTitle(tr("DiT Studio"));
  build_compose_column();  // the settings, Generate and the queue
  build_tabs();            // run, player, history, compare, sweep, models; the recent results below
  connect_results();       // opens the history
  connect_settings();
  connect_sweep();
  connect_queue();
  connect_devices();  // and asks the worker for them
  build_menus();
  restore_settings();
  validate();
}

MainWindow::~MainWindow() {
  list_devices_.kill();
  list_devices_.waitForFinished(2000);
}

void MainWindow::build_compose_column() {
  compose_ = new ComposePanel;
  parallel_ = new ParallelPanel;
  worker_ = new WorkerPicker;
  generate_button_ = new QPushButton(tr("Generate"));
  generate_button_->setObjectName("generate");
  sweep_button_ = new QPushButton(tr("Sweep configurations"));
  sweep_button_->setObjectName("sweep_configs");
  sweep_button_->setToolTip(tr("Run this job under every valid parallel configuration and compare them"));
  cancel_button_ = new QPushButton(tr("Cancel"));
  cancel_button_->setObjectName("cancel");
  cancel_button_->setEnabled(false);
  reason_ = new QLabel;
  reason_->setObjectName("reason");
  reason_->setWordWrap(true);
  reason_->setStyleSheet("color: #c0392b;");

  // The left column (compose_panel.h): the prompt, then these actions, never scrolled; the groups below.
  auto* actions = new QWidget;
  auto* actions_layout = new QVBoxLayout(actions);
  actions_layout->setContentsMargins(8, 0, 0, 4);
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(generate_button_, 1);
  buttons->addWidget(sweep_button_);
  buttons->addWidget(cancel_button_);
  actions_layout->addLayout(buttons);
  actions_layout->addWidget(reason_);
  compose_->set_actions(actions);
  build_devices_group();
  compose_->add_below(build_queue());
  compose_->finish_settings();
  compose_->setMinimumWidth(430);
}

void MainWindow::build_tabs() {
  run_view_ = new RunView;
  run_view_->setFocusPolicy(Qt::ClickFocus);  // a click in the run view gives Esc its meaning there
  player_ = new Player;
  history_ = new History;
  compare_view_ = new CompareView;
  sweep_view_ = new SweepView;
  tabs_ = new QTabWidget;
  tabs_->setObjectName("tabs");
  tabs_->addTab(run_view_, tr("Run"));
  tabs_->addTab(player_, tr("Player"));
  tabs_->addTab(history_, tr("History"));
  tabs_->addTab(compare_view_, tr("Compare"));
  tabs_->addTab(sweep_view_, tr("Sweep"));
  models_view_ = new ModelsView;
  tabs_->addTab(models_view_, tr("Models"));
  connect(models_view_, &ModelsView::use, compose_, &ComposePanel::set_model_dir);
  connect(compose_, &ComposePanel::model_offered, this, [this](const QString& repo_id) {
    tabs_->setCurrentWidget(models_view_);
    models_view_->show_known(repo_id);
  });
  connect(models_view_, &ModelsView::use_lora, this, [this](const QString& file) {
    compose_->loras->add(file, 1.0);
    validate();
  });
  connect(models_view_, &ModelsView::use_file, this, [this](const QString& file) {
    compose_->memory->transformer->setText(file);
    compose_->memory_group->set_open(true);
    validate();
  });
  auto* split = new QSplitter;
  split->setObjectName("split");
  split->addWidget(compose_);
  split->addWidget(tabs_);
  split->setStretchFactor(1, 1);
  auto* central = new QWidget;  // the settings and the tabs, the recent results along the bottom
  auto* column = new QVBoxLayout(central);
  column->setContentsMargins(0, 0, 0, 0);
  column->addWidget(split, 1);
  column->addWidget(recent_ = new RecentStrip(history_, central));
  setCentralWidget(central);
}

void MainWindow::build_menus() {
  auto* menu = menuBar()->addMenu(tr("&Settings"));
  auto* settings = menu->addAction(tr("&Output folder…"));
  settings->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Comma));
  connect(settings, &QAction::triggered, this, [this] { SettingsDialog(data_dir_, this).exec(); });
  // The ranks stay after a run with the transformer loaded (gui/run/job_runner.h); off gives its memory back.
  keep_loaded_ = menu->addAction(tr("&Keep the model loaded between runs"));
  keep_loaded_->setObjectName("keep_loaded");
  keep_loaded_->setCheckable(true);
  keep_loaded_->setChecked(true);
  keep_loaded_->setToolTip(tr("A run of the same model, device and parallel settings then starts at once, and a "
                              "change of LoRA strengths loads nothing; the model's memory stays taken in between"));
  connect(keep_loaded_, &QAction::toggled, this, [this](bool on) { runner_.keep_ranks(on); });
  auto* about = menuBar()->addMenu(tr("&Help"))->addAction(tr("&About DiT Studio"));
  connect(about, &QAction::triggered, this, [this] { QMessageBox::about(this, tr("About DiT Studio"), about_text()); });
}

void MainWindow::connect_settings() {
  connect(compose_, &ComposePanel::changed, this, [this] { validate(); });
  connect(compose_->memory, &MemoryGroup::chosen, this,
          [this](const plan::ParallelConfig& config) { parallel_->set_config(config); });
  connect(compose_, &ComposePanel::calibrate_requested, this, [this] { generate(); });  // MagCache's ratios
  connect(parallel_, &ParallelPanel::changed, this, [this] { validate(); });
}

void MainWindow::restore_settings() {
  QSettings s;
  restoreGeometry(s.value("window/geometry").toByteArray());
  if (auto* split = findChild<QSplitter*>("split")) split->restoreState(s.value("window/split").toByteArray());
  // How the seed changes from run to run is the session's, not the job's: a random mode must stay random.
  const int mode = s.value("compose/seed_mode", 0).toInt();
  if (mode >= 0 && mode < compose_->seed_mode->count()) compose_->seed_mode->setCurrentIndex(mode);
  parallel_->oversubscribe->setChecked(s.value("parallel/oversubscribe", false).toBool());
  keep_loaded_->setChecked(s.value("run/keep_loaded", true).toBool());
  if (!s.contains("job/last")) return;
  try {  // the settings of the last session, as a job file
    const auto f =
        plan::job_file_from_json(s.value("job/last").toString().toStdString(), "settings", plan::UnknownKeys::Skipped);
    compose_->set_job(f.job);
    // The LoRAs switched off are the session's, not the job's.
    compose_->loras->add_switched_off(s.value("compose/loras_off").toString().toStdString());
    compose_->loras_2->add_switched_off(s.value("compose/loras_2_off").toString().toStdString());
    parallel_->set_config(f.parallel);
  } catch (const std::exception&) {  // from an older version: start from the defaults
  }
}

void MainWindow::closeEvent(QCloseEvent* e) {
  // Asked once (not again when the window closes itself after a stopped run): what quitting would drop, the run
  // going on, the jobs queued, an export being written.
  if (!closing_) {
    QStringList lost;
    if (!queue_.empty())
      lost << (queue_.size() == 1 ? tr("The queued job will not run.")
                                  : tr("The %1 queued jobs will not run.").arg(queue_.size()));
    if (player_->exporting()) lost << tr("The export being written stops, and nothing of it is kept.");
    const QString dropped = lost.join(' ');
    if (runner_.running()) {
      if (!confirm_stop(tr("Stop it and quit? What it made so far is kept in History.") +
                            (dropped.isEmpty() ? QString() : " " + dropped),
                        !lost.isEmpty()))
        return e->ignore();
      queue_.clear();
      if (runner_.running()) {  // unless it ended while the question was open
        // Stop the ranks and close once the run is recorded (on_finished), so that nothing is lost.
        closing_ = true;
        cancel();
        return e->ignore();
      }
    } else if (!lost.isEmpty()) {
      QMessageBox box(QMessageBox::Question, tr("Quit?"), dropped, QMessageBox::Yes | QMessageBox::No, this);
      box.setObjectName("confirm_quit");
      box.button(QMessageBox::Yes)->setText(tr("Quit"));
      box.button(QMessageBox::No)->setText(tr("Stay"));
      box.setDefaultButton(QMessageBox::No);
      if (box.exec() != QMessageBox::Yes) return e->ignore();
    }
  }
  QSettings s;
  s.setValue("window/geometry", saveGeometry());
  if (auto* split = findChild<QSplitter*>("split")) s.setValue("window/split", split->saveState());
  s.setValue("job/last", QString::fromStdString(plan::to_json({compose_->job(), parallel_->config()})));
  s.setValue("compose/seed_mode", compose_->seed_mode->currentIndex());
  s.setValue("parallel/oversubscribe", parallel_->oversubscribe->isChecked());
  s.setValue("run/keep_loaded", keep_loaded_->isChecked());
  s.setValue("compose/loras_off", QString::fromStdString(compose_->loras->switched_off()));
  s.setValue("compose/loras_2_off", QString::fromStdString(compose_->loras_2->switched_off()));
  runner_.cancel();
  e->accept();
}

void MainWindow::show_fit(const plan::JobSpec& job, const plan::ParallelConfig& p, const plan::ModelFolder& model) {
  const double memory = parallel_->memory_gib();
  const auto choices = plan::storage_choices(p, job, model, plan::bytes_per_value(job, parallel_->on_gpus()), memory);
  std::vector<std::optional<double>> seconds;
  for (const auto& c : choices) {
    const auto predicted = parallel_->predictions({c.config}, c.job, model);
    seconds.push_back(predicted.empty() ? std::nullopt : std::optional(predicted.front().seconds_per_step));
  }
  compose_->memory->show_fit(choices, memory, seconds);
}

std::vector<plan::Problem> MainWindow::job_problems(plan::JobSpec& job, const plan::ParallelConfig& p,
                                                    const plan::ModelFolder& model) const {
  auto out = plan::check_job(job, p, model, {parallel_->processes(), parallel_->memory_gib(), parallel_->on_gpus()});
  io::check_lora_fits(job, model, out);
  const auto machine = parallel_->machine_problems(job, model);
  out.insert(out.end(), machine.begin(), machine.end());
  return out;
}

std::vector<plan::Problem> MainWindow::validate() {
  std::vector<plan::Problem> problems;
  const plan::ModelFolder* model = compose_->model();
  if (!model) problems.push_back({"model", compose_->model_error().toStdString()});
  plan::JobSpec job = compose_->job();
  job.device = parallel_->device();  // as the run will ask: on the CPU, offloaded blocks save no memory
  if (model) {
    const auto p = parallel_->config();
    const auto more = job_problems(job, p, *model);
    problems.insert(problems.end(), more.begin(), more.end());
    parallel_->offer(plan::valid_configs(job, *model, parallel_->offer_processes(), p), &job, model);
    show_fit(job, p, *model);
  }
  // A picture the run would refuse (animated, CMYK, damaged...) as the engine reads it; a missing one the job's
  // check names.
  for (auto [field, path, widget] : {std::tuple{"image", &job.image_file, compose_->image},
                                     std::tuple{"last_image", &job.last_image_file, compose_->last_image}})
    if (!path->empty() && !widget->problem().isEmpty()) problems.push_back({field, widget->problem().toStdString()});
  auto rest = compose_->show_problems(problems);  // in the window's words; a missing prompt as a hint
  rest = parallel_->show_problems(rest);
  QString text;
  for (const auto& p : rest) text += (text.isEmpty() ? "" : "\n") + QString::fromStdString(p.message);
  const bool only_prompt = compose_->prompt_missing() &&
                           std::all_of(problems.begin(), problems.end(), [](const auto& p) { return p.field == "prompt"; });
  // A missing prompt is said in grey under it (and on Generate's tooltip), not as an error.
  if (!problems.empty() && text.isEmpty() && !only_prompt)
    text = tr("Generate is off until the problems shown in the settings are fixed.");
  generate_button_->setToolTip(problems.empty() ? tr("Ctrl+Return") : only_prompt ? tr("Write a prompt to generate") : text);
  reason_->setText(text);
  generate_button_->setEnabled(problems.empty());
  generate_button_->setText(runner_.running() ? tr("Add to queue") : tr("Generate"));
  sweep_button_->setEnabled(problems.empty());
  return problems;
}

}  // namespace studio::gui
