#include "gui/main_window.h"

#include <QCloseEvent>
#include <QDateTime>
#include <QDir>
#include <QScrollArea>
#include <QSettings>
#include <QShortcut>
#include <QSplitter>
#include <QStandardPaths>
#include <QVBoxLayout>

#include "plan/job_file.h"
#include "workers/launch/paths.h"

namespace studio::gui {

MainWindow::MainWindow(const QString& data_dir)
    : data_dir_(data_dir.isEmpty() ? QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) : data_dir) {
  setWindowTitle(tr("DiT Studio"));
  compose = new ComposePanel;
  parallel = new ParallelPanel;
  generate_button = new QPushButton(tr("Generate"));
  generate_button->setObjectName("generate");
  cancel_button = new QPushButton(tr("Cancel"));
  cancel_button->setEnabled(false);
  reason = new QLabel;
  reason->setObjectName("reason");
  reason->setWordWrap(true);
  reason->setStyleSheet("color: #c0392b;");

  auto* left = new QWidget;
  auto* left_layout = new QVBoxLayout(left);
  left_layout->addWidget(compose);
  left_layout->addWidget(parallel);
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(generate_button);
  buttons->addWidget(cancel_button);
  left_layout->addLayout(buttons);
  left_layout->addWidget(reason);
  left_layout->addStretch();
  auto* scroll = new QScrollArea;
  scroll->setWidget(left);
  scroll->setWidgetResizable(true);
  scroll->setMinimumWidth(430);

  run_view = new RunView;
  player = new Player;
  history = new History;
  tabs = new QTabWidget;
  tabs->addTab(run_view, tr("Run"));
  tabs->addTab(player, tr("Player"));
  tabs->addTab(history, tr("History"));
  auto* split = new QSplitter;
  split->setObjectName("split");
  split->addWidget(scroll);
  split->addWidget(tabs);
  split->setStretchFactor(1, 1);
  setCentralWidget(split);

  QString error;
  if (!history->open(data_dir_ + "/history.sqlite", &error)) reason->setText(error);
  connect(compose, &ComposePanel::changed, this, [this] { validate(); });
  connect(parallel, &ParallelPanel::changed, this, [this] { validate(); });
  connect(generate_button, &QPushButton::clicked, this, [this] { generate(); });
  connect(cancel_button, &QPushButton::clicked, this, [this] { cancel(); });
  connect(&runner_, &JobRunner::message, this, &MainWindow::on_message);
  connect(&runner_, &JobRunner::note, this, [this](const QString& line) { run_view->status->setText(line); });
  connect(&runner_, &JobRunner::finished, this, &MainWindow::on_finished);
  connect(history, &History::reopen, this, [this](const RunRecord& r) {
    const auto f = plan::job_file_from_json(r.settings.toStdString(), "history");
    compose->set_job(f.job);
    parallel->set_config(f.parallel);
  });
  connect(history, &History::rerun, this, [this](const RunRecord& r) {
    const auto f = plan::job_file_from_json(r.settings.toStdString(), "history");
    compose->set_job(f.job);
    compose->seed_mode->setCurrentIndex(0);  // the same seed: the same clip
    parallel->set_config(f.parallel);
    generate();
  });
  new QShortcut(QKeySequence(Qt::CTRL | Qt::Key_Return), this, [this] { generate(); });
  new QShortcut(QKeySequence(Qt::Key_Escape), this, [this] { cancel(); });
  new QShortcut(QKeySequence(Qt::Key_Space), player, [this] { player->playing() ? player->pause() : player->play(); });

  // The GPUs, from the worker (this program links no LibTorch); the CPU until it answers.
  connect(&list_devices_, &QProcess::finished, this, [this] {
    try {
      parallel->set_devices(workers::parse_devices(list_devices_.readAllStandardOutput().toStdString()));
    } catch (const std::exception& e) {
      run_view->status->setText(QString::fromStdString(e.what()));
    }
  });
  list_devices_.start(QString::fromStdString(workers::worker_program()), {"--list-devices"});
  restore_settings();
  validate();
}

MainWindow::~MainWindow() {
  list_devices_.kill();
  list_devices_.waitForFinished(2000);
}

void MainWindow::restore_settings() {
  QSettings s;
  restoreGeometry(s.value("window/geometry").toByteArray());
  if (auto* split = findChild<QSplitter*>("split")) split->restoreState(s.value("window/split").toByteArray());
  if (s.contains("job/prompt")) {
    compose->prompt->setPlainText(s.value("job/prompt").toString());
    compose->seed->setValue(s.value("job/seed", 42).toInt());
  }
}

void MainWindow::closeEvent(QCloseEvent* e) {
  QSettings s;
  s.setValue("window/geometry", saveGeometry());
  if (auto* split = findChild<QSplitter*>("split")) s.setValue("window/split", split->saveState());
  s.setValue("job/prompt", compose->prompt->toPlainText());
  s.setValue("job/seed", compose->seed->value());
  runner_.cancel();
  e->accept();
}

std::vector<plan::Problem> MainWindow::validate() {
  std::vector<plan::Problem> problems;
  const plan::ModelFolder* model = compose->model();
  if (!model) problems.push_back({"model", compose->model_error().toStdString()});
  plan::JobSpec job = compose->job();
  if (model) {
    plan::apply_model_defaults(job, *model);  // what the widgets leave open (text length)
    if (job.prompt.empty()) problems.push_back({"prompt", "write a prompt: what the clip should show"});
    auto add = [&](const std::vector<plan::Problem>& more) { problems.insert(problems.end(), more.begin(), more.end()); };
    add(plan::validate(job, *model));
    const auto p = parallel->config();
    add(plan::validate_parallel(p, job, *model, parallel->processes(), parallel->memory_gib(), parallel->on_gpus() ? 2 : 4));
    parallel->offer(plan::valid_configs(job, *model, parallel->on_gpus() ? parallel->processes() : std::max(1, p.world_size()), p));
  }
  auto rest = compose->problems().show(problems);
  rest = parallel->problems().show(rest);
  QString text;
  for (const auto& p : rest) text += (text.isEmpty() ? "" : "\n") + QString::fromStdString(p.message);
  if (!problems.empty() && text.isEmpty()) text = tr("Generate is off until the problems shown above are fixed.");
  if (runner_.running()) text = tr("A job is running.");
  reason->setText(text);
  generate_button->setEnabled(problems.empty() && !runner_.running());
  return problems;
}

bool MainWindow::generate() {
  if (!validate().empty() || runner_.running()) return false;
  plan::JobSpec job = compose->job();
  job.seed = compose->next_seed();
  run_folder_ = data_dir_ + "/runs/" + QDateTime::currentDateTime().toString("yyyyMMdd-hhmmss-zzz");
  QDir().mkpath(run_folder_);
  job.output_file = (run_folder_ + "/clip.mp4").toStdString();
  job.device = parallel->on_gpus() ? "cuda" : "cpu";
  if (parallel->on_gpus()) qputenv("CUDA_VISIBLE_DEVICES", parallel->selected_gpus().join(',').toUtf8());
  workers::LaunchPlan lp;
  lp.job = {job, parallel->config()};
  lp.worker_exe = workers::worker_program();
  run_settings_ = QString::fromStdString(plan::to_json(lp.job));
  QString error;
  if (!runner_.start(lp, &error)) {
    reason->setText(error);
    return false;
  }
  run_job_ = job;
  thumbnail_ = {};
  started_ms_ = QDateTime::currentMSecsSinceEpoch();
  run_view->start(lp.job.parallel.world_size());
  player->clear();
  player->set_fps(job.fps);
  player->set_metadata({{"prompt", job.prompt}, {"seed", std::to_string(job.seed)}, {"model", job.model_dir},
                        {"parallel", lp.job.parallel.describe()}, {"generator", "DiT Studio 0.1.0"}});
  tabs->setCurrentWidget(run_view);
  cancel_button->setEnabled(true);
  validate();
  return true;
}

void MainWindow::cancel() { runner_.cancel(); }

pid_t MainWindow::rank_pid(int rank) const {
  const auto& ranks = runner_.ranks();
  return size_t(rank) < ranks.size() && ranks[size_t(rank)].connected ? pid_t(ranks[size_t(rank)].pid) : 0;
}

void MainWindow::on_message(const events::Message& m) {
  run_view->message(m, runner_.ranks());
  if (m.kind != events::Kind::Frame) return;
  const auto pic = events::Picture::parse(m);
  if (pic.video != 0) return;
  const QImage img = QImage(reinterpret_cast<const uchar*>(pic.rgb.data()), pic.width, pic.height, pic.width * 3,
                            QImage::Format_RGB888)
                         .copy();
  player->set_frame(pic.index, img);
  if (thumbnail_.isNull()) thumbnail_ = img.scaledToHeight(96);
}

void MainWindow::on_finished(const workers::Outcome& outcome, const std::vector<workers::RankView>& ranks) {
  run_view->finish(outcome);
  cancel_button->setEnabled(false);
  RunRecord r;
  r.created = QDateTime::currentDateTime().toString(Qt::ISODate);
  r.prompt = QString::fromStdString(run_job_.prompt);
  r.seed = qint64(run_job_.seed);
  r.settings = run_settings_;
  r.status = outcome.exit_code == 0 ? tr("done") : QString::fromStdString(events::error_kind_name(outcome.kind));
  r.folder = run_folder_;
  r.seconds = double(QDateTime::currentMSecsSinceEpoch() - started_ms_) / 1000;
  int steps = 0;
  for (const auto& rank : ranks) {
    r.mean_step_seconds = std::max(r.mean_step_seconds, rank.step > 0 ? rank.total_step_seconds / rank.step : 0.0);
    steps = std::max(steps, rank.step);
    const uint64_t peak = rank.resources.device_peak ? rank.resources.device_peak : rank.resources.host_peak;
    r.peak_gib = std::max(r.peak_gib, double(peak) / (1 << 30));
    r.bytes_moved += qint64(rank.resources.bytes_sent);
  }
  r.thumbnail = thumbnail_;
  history->add(r);
  if (outcome.exit_code == 0 && player->frame_count() > 0) {
    tabs->setCurrentWidget(player);
    player->play();
  }
  validate();
  Q_EMIT run_finished(outcome);
}

}  // namespace studio::gui
