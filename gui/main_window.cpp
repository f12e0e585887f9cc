#include "gui/main_window.h"

#include <QCloseEvent>
#include <QDateTime>
#include <QJsonArray>
#include <QJsonDocument>
#include <QMenuBar>
#include <QMessageBox>
#include <QDir>
#include <QScrollArea>
#include <QSettings>
#include <QShortcut>
#include <QSplitter>
#include <QStandardPaths>
#include <QVBoxLayout>

#include <algorithm>

#include "plan/error.h"
#include "plan/family.h"
#include "plan/job_check.h"
#include "plan/job_file.h"
#include "gui/results_wiring.h"
#include "gui/output_settings.h"

namespace studio::gui {

MainWindow::MainWindow(const QString& data_dir)
    : data_dir_(data_dir.isEmpty() ? QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) : data_dir) {
  setWindowTitle(tr("DiT Studio"));
  compose = new ComposePanel;
  parallel = new ParallelPanel;
  worker = new WorkerPicker;
  generate_button = new QPushButton(tr("Generate"));
  generate_button->setObjectName("generate");
  sweep_button = new QPushButton(tr("Sweep configurations"));
  sweep_button->setToolTip(tr("Run this job under every valid parallel configuration and compare them"));
  cancel_button = new QPushButton(tr("Cancel"));
  cancel_button->setEnabled(false);
  reason = new QLabel;
  reason->setObjectName("reason");
  reason->setWordWrap(true);
  reason->setStyleSheet("color: #c0392b;");

  // The left column (compose_panel.h): the prompt, then these actions, never scrolled; the groups below.
  auto* actions = new QWidget;
  auto* actions_layout = new QVBoxLayout(actions);
  actions_layout->setContentsMargins(8, 0, 0, 4);
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(generate_button, 1);
  buttons->addWidget(sweep_button);
  buttons->addWidget(cancel_button);
  actions_layout->addLayout(buttons);
  actions_layout->addWidget(reason);
  compose->set_actions(actions);
  auto* gpus = new QWidget;
  auto* gpus_layout = new QVBoxLayout(gpus);
  gpus_layout->setContentsMargins(0, 0, 0, 0);
  gpus_layout->addWidget(worker);
  gpus_layout->addWidget(parallel);
  worker->workers->setObjectName("worker");
  auto* gpu_group = compose->add_group(tr("GPUs and parallelism"), gpus, false);
  connect(parallel, &ParallelPanel::changed, gpu_group, [this, gpu_group] {  // the configuration, even closed
    gpu_group->header->setText(tr("GPUs and parallelism: %1").arg(QString::fromStdString(parallel->config().describe())));
  });
  compose->add_decoding_row(parallel->parallel_vae);
  auto* left = new QWidget;
  auto* left_layout = new QVBoxLayout(left);
  left_layout->setContentsMargins(0, 0, 0, 0);
  queue_list = new QListWidget;
  queue_list->setObjectName("queue");
  queue_list->setMaximumHeight(90);
  auto* queue_buttons = new QHBoxLayout;
  auto* up = new QPushButton(tr("Up"));
  auto* down = new QPushButton(tr("Down"));
  auto* remove = new QPushButton(tr("Remove"));
  for (auto* b : {up, down, remove}) queue_buttons->addWidget(b);
  left_layout->addWidget(new QLabel(tr("Queue")));
  left_layout->addWidget(queue_list);
  left_layout->addLayout(queue_buttons);
  auto move = [this](int by) {
    const int i = queue_list->currentRow(), j = i + by;
    if (i < 0 || j < 0 || j >= int(queue_.size())) return;
    std::swap(queue_[size_t(i)], queue_[size_t(j)]);
    show_queue();
    queue_list->setCurrentRow(j);
  };
  connect(up, &QPushButton::clicked, this, [move] { move(-1); });
  connect(down, &QPushButton::clicked, this, [move] { move(1); });
  connect(remove, &QPushButton::clicked, this, [this] {
    const int i = queue_list->currentRow();
    if (i < 0 || i >= int(queue_.size())) return;
    queue_.erase(queue_.begin() + i);
    show_queue();
  });
  compose->add_below(left);
  compose->finish_settings();
  compose->setMinimumWidth(430);

  run_view = new RunView;
  run_view->setFocusPolicy(Qt::ClickFocus);  // a click in the run view gives Esc its meaning there
  player = new Player;
  history = new History;
  compare_view = new CompareView;
  sweep_view = new SweepView;
  tabs = new QTabWidget;
  tabs->addTab(run_view, tr("Run"));
  tabs->addTab(player, tr("Player"));
  tabs->addTab(history, tr("History"));
  tabs->addTab(compare_view, tr("Compare"));
  tabs->addTab(sweep_view, tr("Sweep"));
  models_view = new ModelsView;
  tabs->addTab(models_view, tr("Models"));
  connect(models_view, &ModelsView::use, compose, &ComposePanel::set_model_dir);
  auto* split = new QSplitter;
  split->setObjectName("split");
  split->addWidget(compose);
  split->addWidget(tabs);
  split->setStretchFactor(1, 1);
  auto* central = new QWidget;  // the settings and the tabs, the recent results along the bottom
  auto* column = new QVBoxLayout(central);
  column->setContentsMargins(0, 0, 0, 0);
  column->addWidget(split, 1);
  column->addWidget(recent = new RecentStrip(history, central));
  setCentralWidget(central);

  QString error;
  if (!history->open(data_dir_ + "/history.sqlite", &error)) reason->setText(error);
  connect(compose, &ComposePanel::changed, this, [this] { validate(); });
  connect(compose, &ComposePanel::calibrate_requested, this, [this] { generate(); });  // MagCache's ratios
  connect(parallel, &ParallelPanel::changed, this, [this] { validate(); });
  connect(parallel, &ParallelPanel::devices_changed, this, [this] {
    if (compose->model()) parallel->fit_to_devices(compose->job(), *compose->model());
  });
  connect(generate_button, &QPushButton::clicked, this, [this] { generate(); });
  connect(sweep_button, &QPushButton::clicked, this, [this] { sweep(); });
  connect(sweep_view, &SweepView::run_requested, this, &MainWindow::run_sweep);
  connect(sweep_view, &SweepView::adopted, this, [this](const plan::ParallelConfig& p) { parallel->set_config(p); });
  connect(parallel, &ParallelPanel::auto_done, this, [this] {
    if (sweep_job_) sweep_view->show_predictions(parallel->predictions(sweep_view->configs(), sweep_job_->first, sweep_job_->second));
  });
  connect(history, &History::compare, this, [this](const RunRecord& a, const RunRecord& b) {
    compare_view->compare(a, b);
    tabs->setCurrentWidget(compare_view);
  });
  connect_results(this);
  connect(cancel_button, &QPushButton::clicked, this, [this] { cancel(); });
  connect(&runner_, &JobRunner::message, this, &MainWindow::on_message);
  connect(&runner_, &JobRunner::picture, this, &MainWindow::on_picture);
  connect(&runner_, &JobRunner::note, this, [this](const QString& line) {
    run_view->status->setText(line);
    run_view->log->note(line);
  });
  connect(&runner_, &JobRunner::finished, this, &MainWindow::on_finished);
  // A run's settings come back from the history database, which may have been damaged or edited.
  auto settings_of = [this](const RunRecord& r) -> std::optional<plan::JobFile> {
    try {
      return plan::job_file_from_json(r.settings.toStdString(), "the history's settings of run " + std::to_string(r.id));
    } catch (const InputError& e) {
      reason->setText(QString::fromStdString(e.what()));
      return std::nullopt;
    }
  };
  connect(history, &History::reopen, this, [this, settings_of](const RunRecord& r) {
    const auto f = settings_of(r);
    if (!f) return;
    compose->set_job(f->job);
    parallel->set_config(f->parallel);
  });
  connect(history, &History::rerun, this, [this, settings_of](const RunRecord& r) {
    const auto f = settings_of(r);
    if (!f) return;
    compose->set_job(f->job);
    compose->seed_mode->setCurrentIndex(0);  // the same seed: the same clip
    parallel->set_config(f->parallel);
    generate();
  });
  new QShortcut(QKeySequence(Qt::CTRL | Qt::Key_Return), this, [this] { generate(); });
  // Esc stops a run only from the run view (not while typing in a field), and asks first.
  new QShortcut(QKeySequence(Qt::Key_Escape), run_view, [this] {
    if (confirm_stop(tr("Stop it? What it made so far is kept in History."))) cancel();
  }, Qt::WidgetWithChildrenShortcut);
  new QShortcut(QKeySequence(Qt::Key_Space), player, [this] { player->playing() ? player->pause() : player->play(); });

  // The GPUs, from the worker (this program links no LibTorch); the CPU until it answers.
  connect(&list_devices_, &QProcess::finished, this, [this] {
    try {
      const auto devices = workers::parse_devices(list_devices_.readAllStandardOutput().toStdString());
      worker_build_ = QString::fromStdString(devices.build);
      parallel->set_devices(devices);
      worker->set_build(worker_build_);
    } catch (const std::exception& e) {
      worker_build_.clear();
      worker->set_build(QString::fromStdString(e.what()));
    }
    Q_EMIT devices_listed();
  });
  connect(&list_devices_, &QProcess::errorOccurred, this, [this](QProcess::ProcessError e) {
    if (e != QProcess::FailedToStart) return;
    worker_build_.clear();
    worker->set_build(tr("%1 cannot be started: %2").arg(list_devices_.program(), list_devices_.errorString()));
    Q_EMIT devices_listed();
  });
  connect(worker, &WorkerPicker::chosen, this, [this] { list_devices(); });
  list_devices();
  auto* settings = menuBar()->addMenu(tr("&Settings"))->addAction(tr("&Output folder…"));
  settings->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Comma));
  connect(settings, &QAction::triggered, this, [this] { SettingsDialog(data_dir_, this).exec(); });
  auto* about = menuBar()->addMenu(tr("&Help"))->addAction(tr("&About DiT Studio"));
  connect(about, &QAction::triggered, this, [this] { QMessageBox::about(this, tr("About DiT Studio"), about_text()); });
  restore_settings();
  validate();
}

void MainWindow::list_devices() {
  {
    const QSignalBlocker quiet(&list_devices_);  // the one asked before is no longer the answer
    list_devices_.kill();
    list_devices_.waitForFinished(2000);
  }
  worker_build_.clear();
  parallel->set_worker(worker->current());  // it measures the devices for Auto, too
  list_devices_.start(worker->current(), {"--list-devices"});
}

MainWindow::~MainWindow() {
  list_devices_.kill();
  list_devices_.waitForFinished(2000);
}

void MainWindow::restore_settings() {
  QSettings s;
  restoreGeometry(s.value("window/geometry").toByteArray());
  if (auto* split = findChild<QSplitter*>("split")) split->restoreState(s.value("window/split").toByteArray());
  if (!s.contains("job/last")) return;
  try {  // the settings of the last session, as a job file
    const auto f = plan::job_file_from_json(s.value("job/last").toString().toStdString(), "settings");
    compose->set_job(f.job);
    parallel->set_config(f.parallel);
  } catch (const std::exception&) {  // from an older version: start from the defaults
  }
}

void MainWindow::closeEvent(QCloseEvent* e) {
  if (runner_.running() && !closing_) {
    const QString queued = queue_.empty() ? QString() : tr(" The %n queued job(s) will not run.", "", int(queue_.size()));
    if (!confirm_stop(tr("Stop it and quit? What it made so far is kept in History.") + queued)) return e->ignore();
    // Stop the ranks and close once the run is recorded (on_finished), so that nothing is lost.
    closing_ = true;
    queue_.clear();
    cancel();
    return e->ignore();
  }
  QSettings s;
  s.setValue("window/geometry", saveGeometry());
  if (auto* split = findChild<QSplitter*>("split")) s.setValue("window/split", split->saveState());
  s.setValue("job/last", QString::fromStdString(plan::to_json({compose->job(), parallel->config()})));
  runner_.cancel();
  e->accept();
}

std::vector<plan::Problem> MainWindow::validate() {
  std::vector<plan::Problem> problems;
  const plan::ModelFolder* model = compose->model();
  if (!model) problems.push_back({"model", compose->model_error().toStdString()});
  plan::JobSpec job = compose->job();
  if (model) {
    const auto p = parallel->config();
    const auto more = plan::check_job(job, p, *model, {parallel->processes(), parallel->memory_gib(), parallel->on_gpus()});
    problems.insert(problems.end(), more.begin(), more.end());
    parallel->offer(plan::valid_configs(job, *model, parallel->on_gpus() ? parallel->processes() : std::max(1, p.world_size()), p),
                    &job, model);
  }
  auto rest = compose->show_problems(problems);  // in the window's words; a missing prompt as a hint
  rest = parallel->show_problems(rest);
  QString text;
  for (const auto& p : rest) text += (text.isEmpty() ? "" : "\n") + QString::fromStdString(p.message);
  const bool only_prompt = compose->prompt_missing() &&
                           std::all_of(problems.begin(), problems.end(), [](const auto& p) { return p.field == "prompt"; });
  // A missing prompt is said in grey under it (and on Generate's tooltip), not as an error.
  if (!problems.empty() && text.isEmpty() && !only_prompt)
    text = tr("Generate is off until the problems shown in the settings are fixed.");
  generate_button->setToolTip(problems.empty() ? tr("Ctrl+Return") : only_prompt ? tr("Write a prompt to generate") : text);
  reason->setText(text);
  generate_button->setEnabled(problems.empty());
  generate_button->setText(runner_.running() ? tr("Add to queue") : tr("Generate"));
  sweep_button->setEnabled(problems.empty());
  return problems;
}

std::optional<MainWindow::Queued> MainWindow::make_job(const plan::ParallelConfig& p) {
  if (!validate().empty()) return std::nullopt;
  Queued q;
  q.job.job = compose->job();
  q.job.job.seed = compose->next_seed();
  q.job.job.device = parallel->on_gpus() ? "cuda" : "cpu";
  q.job.parallel = p;
  return q;
}

bool MainWindow::generate() {
  auto q = make_job(parallel->config());
  if (!q) return false;
  enqueue(*q);
  return true;
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

void MainWindow::enqueue(const Queued& q) {
  queue_.push_back(q);
  show_queue();
  start_next();
}

void MainWindow::show_queue() {
  queue_list->clear();
  for (const auto& q : queue_)
    queue_list->addItem(QString("%1 — seed %2 — %3")
                            .arg(QString::fromStdString(q.job.job.prompt).left(40))
                            .arg(q.job.job.seed)
                            .arg(QString::fromStdString(q.job.parallel.describe())));
}

void MainWindow::start_next() {
  QString not_started;  // why the last job taken could not start (validate() below rewrites `reason`)
  while (!runner_.running() && !queue_.empty()) {
    Queued q = queue_.front();
    queue_.pop_front();
    show_queue();
    const QString root = output_root(data_dir_);
    if (const QString why = check_output_root(root, q.job.job); !why.isEmpty()) {
      not_started = why;  // before any rank starts: the true reason, in the window's words
      continue;
    }
    run_folder_ = root + "/" + QDateTime::currentDateTime().toString("yyyyMMdd-hhmmss-zzz");
    QDir().mkpath(run_folder_ + "/frames");
    // A clip or an image, as the model's family makes (the folder was read when the job was checked).
    bool clip = true;
    try {
      clip = plan::rules_of(plan::read_model_folder(q.job.job.model_dir)).makes_video();
    } catch (const std::exception&) {
      // the run reports the folder's problem itself
    }
    q.job.job.output_file = (run_folder_ + (clip ? "/clip.mp4" : "/image.png")).toStdString();
    if (parallel->on_gpus()) qputenv("CUDA_VISIBLE_DEVICES", parallel->selected_gpus().join(',').toUtf8());
    workers::LaunchPlan lp;
    lp.job = q.job;
    lp.worker_exe = worker->current().toStdString();
    QString error;
    if (!runner_.start(lp, &error, run_folder_ + "/frames")) {
      not_started = error;
      QDir(run_folder_).removeRecursively();
      continue;
    }
    current_ = q;
    steps_.clear();
    thumbnail_ = {};
    started_ms_ = QDateTime::currentMSecsSinceEpoch();
    const auto& job = q.job.job;
    run_view->start(q.job.parallel.world_size(), tr("\"%1\", seed %2, %3")
                                                     .arg(QString::fromStdString(job.prompt).left(60))
                                                     .arg(job.seed)
                                                     .arg(QString::fromStdString(q.job.parallel.describe())));
    if (q.sweep_row < 0) tabs->setCurrentWidget(run_view);
    cancel_button->setEnabled(true);
  }
  validate();
  if (!not_started.isEmpty()) reason->setText(not_started);
}

void MainWindow::cancel() { runner_.cancel(); }

bool MainWindow::confirm_stop(const QString& why) {
  if (!runner_.running()) return true;
  const auto& ranks = runner_.ranks();
  const int done = ranks.empty() ? 0 : ranks.front().step, total = ranks.empty() ? 0 : ranks.front().total;
  if (done < 1) return true;  // nothing made yet: nothing to lose
  QMessageBox box(QMessageBox::Question, tr("A run is in progress"),
                  tr("The run has done %1 of %2 steps. %3").arg(done).arg(total).arg(why),
                  QMessageBox::Yes | QMessageBox::No, this);
  box.setObjectName("confirm_stop");
  box.button(QMessageBox::Yes)->setText(tr("Stop the run"));
  box.button(QMessageBox::No)->setText(tr("Keep running"));
  box.setDefaultButton(QMessageBox::No);
  return box.exec() == QMessageBox::Yes;
}

QString MainWindow::about_text() const {
  return tr("DiT Studio %1\nGenerates images and video clips with Diffusion Transformers.\n\nWorker: %2\n%3")
      .arg(STUDIO_VERSION, worker_build_.isEmpty() ? tr("asking dit-worker...") : worker_build_, worker->current());
}

pid_t MainWindow::rank_pid(int rank) const {
  const auto& ranks = runner_.ranks();
  return size_t(rank) < ranks.size() && ranks[size_t(rank)].connected ? pid_t(ranks[size_t(rank)].pid) : 0;
}

void MainWindow::on_message(const events::Message& m) {
  run_view->message(m, runner_.ranks());
  if (m.kind == events::Kind::Progress) {
    const auto p = events::Progress::parse(m);
    steps_[p.rank].push_back({double(p.step), p.seconds, double(p.resources.in_use()) / (1 << 30)});
  }
}

// Decoded, and saved as PNG in the run's frames/, on the job's thread (JobRunner).
void MainWindow::on_picture(const RunPicture& pic) {
  run_view->show_picture(pic);
  if (!pic.frame || pic.video != 0) return;
  const QImage& img = pic.image;
  if (player->source() != run_folder_)  // the Player keeps the run it shows until this one has a frame
    player->begin(run_folder_, current_.job, tr("\"%1\", seed %2, saved in %3")
                                                 .arg(QString::fromStdString(current_.job.job.prompt).left(80))
                                                 .arg(current_.job.job.seed)
                                                 .arg(run_folder_));
  player->set_frame(pic.index, img);
  if (thumbnail_.isNull()) thumbnail_ = img.scaledToHeight(96);
}

void MainWindow::on_finished(const workers::Outcome& outcome, const std::vector<workers::RankView>& ranks) {
  run_view->finish(outcome, ranks);
  // The run's log stays in its folder; a failed run keeps its folder for it.
  if (outcome.kind != events::ErrorKind::Cancelled || !QDir(run_folder_ + "/frames").isEmpty())
    run_view->log->save(run_folder_ + "/log.txt");
  cancel_button->setEnabled(false);
  RunRecord r;
  r.created = QDateTime::currentDateTime().toString(Qt::ISODate);
  r.prompt = QString::fromStdString(current_.job.job.prompt);
  r.seed = qint64(current_.job.job.seed);
  r.settings = QString::fromStdString(plan::to_json(current_.job));
  QJsonArray per_rank;
  for (const auto& [rank, steps] : steps_) {
    QJsonArray a;
    for (const auto& s : steps) a.append(QJsonArray{s[0], s[1], s[2]});
    per_rank.append(a);
  }
  r.steps = QString::fromUtf8(QJsonDocument(per_rank).toJson(QJsonDocument::Compact));
  r.status = outcome.exit_code == 0 ? tr("done") : QString::fromStdString(events::error_kind_name(outcome.kind));
  if (closing_) r.status = tr("interrupted");
  // A run stopped before it made anything leaves no empty folder behind.
  if (QDir(run_folder_).entryList(QDir::Files | QDir::NoDotAndDotDot).isEmpty() &&
      QDir(run_folder_ + "/frames").isEmpty()) {
    QDir(run_folder_).removeRecursively();
  }
  r.folder = QDir(run_folder_).exists() ? run_folder_ : QString();
  r.seconds = double(QDateTime::currentMSecsSinceEpoch() - started_ms_) / 1000;
  for (const auto& rank : ranks) {
    r.mean_step_seconds = std::max(r.mean_step_seconds, rank.mean_step_seconds());
    const uint64_t peak = rank.resources.device_peak ? rank.resources.device_peak : rank.resources.host_peak;
    r.peak_gib = std::max(r.peak_gib, double(peak) / (1 << 30));
    r.bytes_moved += qint64(rank.resources.bytes_sent);
  }
  r.thumbnail = thumbnail_;
  history->add(r);
  if (current_.sweep_row >= 0) sweep_view->record(current_.sweep_row, r, outcome.exit_code == 0);
  if (outcome.exit_code == 0 && player->source() == run_folder_ && current_.sweep_row < 0 && queue_.empty()) {
    tabs->setCurrentWidget(player);
    if (!player->image_mode()) player->play();
  }
  Q_EMIT run_finished(outcome);
  if (closing_) {
    close();
    return;
  }
  start_next();
}

}  // namespace studio::gui
