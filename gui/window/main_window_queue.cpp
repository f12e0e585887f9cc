// The queue and the running job: Generate adds the current settings (with the seed the seed mode gives)
// and starts them when nothing runs; queued jobs can be reordered and removed; Cancel stops the running
// one and the queue goes on. What the ranks say reaches the run view and the Player from here.
#include <QAbstractSpinBox>
#include <QApplication>
#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QMessageBox>
#include <QShortcut>
#include <QSpinBox>
#include <QTimer>
#include <QVBoxLayout>

#include "gui/window/main_window.h"
#include "gui/compose/output_settings.h"
#include "gui/results/run_info.h"
#include "plan/family.h"
#include "plan/field_labels.h"
#include "plan/job_file.h"

namespace studio::gui {

QWidget* MainWindow::build_queue() {
  auto* left = new QWidget;
  auto* left_layout = new QVBoxLayout(left);
  left_layout->setContentsMargins(0, 0, 0, 0);
  queue_list_ = new QListWidget;
  queue_list_->setObjectName("queue");
  queue_list_->setMaximumHeight(90);
  auto* queue_buttons = new QHBoxLayout;
  auto* up = new QPushButton(tr("Up"));
  auto* down = new QPushButton(tr("Down"));
  auto* remove = new QPushButton(tr("Remove"));
  resume_button_ = new QPushButton(tr("Resume"));
  resume_button_->setObjectName("resume_queue");
  resume_button_->setToolTip(tr("Start the first queued job again, once what stopped the queue is fixed"));
  for (auto* b : {up, down, remove, resume_button_}) queue_buttons->addWidget(b);
  queue_note_ = new QLabel;
  queue_note_->setObjectName("queue_note");
  queue_note_->setWordWrap(true);
  queue_note_->setStyleSheet("color: #c0392b");
  left_layout->addWidget(new QLabel(tr("Queue")));
  left_layout->addWidget(queue_list_);
  left_layout->addWidget(queue_note_);
  left_layout->addLayout(queue_buttons);
  auto move = [this](int by) {
    const int i = queue_list_->currentRow(), j = i + by;
    if (i < 0 || j < 0 || j >= int(queue_.size())) return;
    std::swap(queue_[size_t(i)], queue_[size_t(j)]);
    show_queue();
    queue_list_->setCurrentRow(j);
  };
  connect(up, &QPushButton::clicked, this, [move] { move(-1); });
  connect(down, &QPushButton::clicked, this, [move] { move(1); });
  connect(remove, &QPushButton::clicked, this, [this] {
    const int i = queue_list_->currentRow();
    if (i < 0 || i >= int(queue_.size())) return;
    if (in_sweep_shown(queue_[size_t(i)])) sweep_view_->removed(queue_[size_t(i)].sweep_row);
    queue_.erase(queue_.begin() + i);
    if (i == 0) paused_.clear();  // the job that could not start is gone
    show_queue();
    start_next();
  });
  connect(resume_button_, &QPushButton::clicked, this, [this] {
    // A worker that is no longer there (uninstalled) may have been replaced in Devices: the first job takes the
    // one chosen now. Any other worker stays the job's: its configuration was checked for it.
    if (!queue_.empty() && !QFileInfo(queue_.front().worker).isExecutable()) queue_.front().worker = worker_->current();
    if (!queue_.empty() && !queue_.front().unread.isEmpty()) read_pictures(queue_.front());  // put right meanwhile
    paused_.clear();
    start_next();
  });
  show_queue();
  return left;
}

void MainWindow::connect_queue() {
  connect(generate_button_, &QPushButton::clicked, this, [this] { generate(); });
  connect(cancel_button_, &QPushButton::clicked, this, [this] { cancel(); });
  connect(&runner_, &JobRunner::message, this, &MainWindow::on_message);
  connect(&runner_, &JobRunner::picture, this, &MainWindow::on_picture);
  connect(&runner_, &JobRunner::note, this, [this](const QString& line) {
    run_view_->status->setText(line);
    run_view_->log->note(line);
  });
  connect(&runner_, &JobRunner::finished, this, &MainWindow::on_finished);
  new QShortcut(QKeySequence(Qt::CTRL | Qt::Key_Return), this, [this] { generate(); });
  // Esc stops a run only from the run view (not while typing in a field), and asks first.
  new QShortcut(QKeySequence(Qt::Key_Escape), run_view_, [this] {
    if (confirm_stop(tr("Stop it? What it made so far is kept in History."))) cancel();
  }, Qt::WidgetWithChildrenShortcut);
}

std::optional<MainWindow::Queued> MainWindow::make_job(const plan::ParallelConfig& p) {
  if (!validate().empty()) return std::nullopt;
  plan::JobFile f{compose_->job(), p};
  f.job.seed = compose_->next_seed();
  return queued(f);
}

MainWindow::Queued MainWindow::queued(plan::JobFile job, const QString& pictures_from) const {
  Queued q;
  q.job = std::move(job);
  q.pictures_from = pictures_from;
  q.job.job.device = parallel_->device();
  // The devices and the worker chosen now, not when the job's turn comes: its configuration was checked for them.
  if (parallel_->on_gpus()) q.gpus = parallel_->selected_gpus().join(',');
  q.worker = worker_->current();
  read_pictures(q);
  return q;
}

void MainWindow::read_pictures(Queued& q) {
  // The pictures as they are now, which the compose column showed: a file changed before the job's turn changes
  // nothing (small files; a sweep's jobs share one copy of each). Run again reads the copies its run kept.
  QStringList unread;
  for (size_t i = 0; i < std::size(kInputPictures); ++i) {
    q.pictures[i].clear();
    const QString named = QString::fromStdString(q.job.job.*kInputPictures[i].path);
    if (named.isEmpty()) continue;
    const QString kept = kept_picture(q.pictures_from, kInputPictures[i]);
    QFile file(kept.isEmpty() ? named : kept);
    if (file.open(QIODevice::ReadOnly)) q.pictures[i] = file.readAll();
    const QString label = QString::fromStdString(plan::field_label(kInputPictures[i].field));
    if (file.error() != QFileDevice::NoError)
      unread << tr("%1 %2 could not be read when the job was queued (%3).")
                    .arg(label, file.fileName(), file.errorString());
    else if (q.pictures[i].isEmpty())
      unread << tr("%1 %2 was empty (0 bytes) when the job was queued.").arg(label, file.fileName());
  }
  q.unread = unread.join(' ');
}

bool MainWindow::generate() {
  // A number being typed that its field cannot take ("0" steps) leaves the field's value as it was: Ctrl+Return
  // would run that one, unseen. The focused field is the only one that can hold such text.
  if (auto* field = qobject_cast<QAbstractSpinBox*>(QApplication::focusWidget()); field && !field->hasAcceptableInput()) {
    QString range;
    if (const auto* whole = qobject_cast<QSpinBox*>(field))
      range = tr(" (%1 to %2)").arg(whole->minimum()).arg(whole->maximum());
    if (const auto* number = qobject_cast<QDoubleSpinBox*>(field))
      range = tr(" (%1 to %2)").arg(number->minimum()).arg(number->maximum());
    const QString label = QString::fromStdString(plan::field_label(field->objectName().toStdString()));
    reason_->setText(tr("%1: \"%2\" is not a value it takes%3; finish it, or leave the field to put back the last "
                        "one.")
                         .arg(label.isEmpty() ? tr("A field") : label, field->text(), range));
    return false;
  }
  auto q = make_job(parallel_->config());
  if (!q) return false;
  enqueue(*q);
  return true;
}

void MainWindow::enqueue(const Queued& q) {
  queue_.push_back(q);
  paused_.clear();  // Generate is a request to run: the first queued job is tried again
  show_queue();
  start_next();
}

void MainWindow::show_queue() {
  queue_list_->clear();
  for (const auto& q : queue_)
    queue_list_->addItem(QString("%1 — seed %2 — %3")
                             .arg(QString::fromStdString(q.job.job.prompt).left(40))
                             .arg(q.job.job.seed)
                             .arg(QString::fromStdString(q.job.parallel.describe())));
  queue_note_->setText(paused_.isEmpty() ? QString()
                                         : tr("Paused: the first job could not start. %1 Fix it (a worker that is "
                                              "gone: choose another), then Resume; or Remove the job.")
                                               .arg(paused_));
  queue_note_->setVisible(!paused_.isEmpty());
  resume_button_->setEnabled(!paused_.isEmpty() && !queue_.empty());
}

void MainWindow::start_next() {
  if (runner_.running() || queue_.empty() || !paused_.isEmpty()) return (void)validate();
  // A job that cannot start stays first in the queue, which waits (paused_) for the user to fix what stopped it:
  // the jobs queued are the user's work, never dropped for a folder unmounted meanwhile.
  const auto pause = [this](const QString& why) {
    paused_ = why;
    show_queue();
    validate();
    reason_->setText(why);  // where Generate's reasons are, until the next edit; the queue keeps saying it
  };
  Queued q = queue_.front();
  if (!q.unread.isEmpty()) return pause(q.unread);  // Resume reads the pictures again
  const QString root = output_root(data_dir_);
  if (const QString why = check_output_root(root, q.job.job); !why.isEmpty())
    return pause(why);  // before any rank starts: the true reason, in the window's words
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
  workers::LaunchPlan lp;
  lp.job = q.job;
  // The pictures as they were queued are kept in the run's folder and the run reads them: a re-run and the Player
  // keep them, whatever becomes of the user's files, which the run's record names.
  for (size_t i = 0; i < std::size(kInputPictures); ++i) {
    std::string& path = lp.job.job.*kInputPictures[i].path;
    if (path.empty()) continue;
    const QString suffix = QFileInfo(QString::fromStdString(path)).suffix();
    QFile copy(run_folder_ + "/" + kInputPictures[i].kept + (suffix.isEmpty() ? "" : "." + suffix));
    if (!copy.open(QIODevice::WriteOnly) || copy.write(q.pictures[i]) != q.pictures[i].size() || !copy.flush()) {
      const QString why = tr("%1 %2 could not be kept in the run's folder %3 (%4).")
                              .arg(QString::fromStdString(plan::field_label(kInputPictures[i].field)),
                                   QString::fromStdString(path), run_folder_, copy.errorString());
      QDir(run_folder_).removeRecursively();
      return pause(why);
    }
    path = copy.fileName().toStdString();
  }
  lp.visible_gpus = q.gpus.toStdString();  // the ranks' alone: the studio's environment stays as it is
  lp.worker_exe = q.worker.toStdString();
  QString error;
  if (!runner_.start(lp, &error, run_folder_ + "/frames")) {
    QDir(run_folder_).removeRecursively();
    return pause(error);
  }
  queue_.pop_front();
  show_queue();
  current_ = q;
  if (in_sweep_shown(q)) sweep_view_->started(q.sweep_row);
  steps_.clear();
  thumbnail_ = {};
  player_taken_ = false;
  started_ms_ = QDateTime::currentMSecsSinceEpoch();
  const auto& job = q.job.job;
  run_view_->start(q.job.parallel.world_size(), tr("\"%1\", seed %2, %3")
                                                    .arg(QString::fromStdString(job.prompt).left(60))
                                                    .arg(job.seed)
                                                    .arg(QString::fromStdString(q.job.parallel.describe())),
                   q.job.job.num_frames);
  if (q.sweep_row < 0) tabs_->setCurrentWidget(run_view_);
  cancel_button_->setEnabled(true);
  validate();
}

void MainWindow::cancel() { runner_.cancel(); }

bool MainWindow::confirm_stop(const QString& why, bool ask_anyway) {
  if (!runner_.running()) return true;
  const auto& ranks = runner_.ranks();
  const int done = ranks.empty() ? 0 : ranks.front().step, total = ranks.empty() ? 0 : ranks.front().total;
  if (done < 1 && !ask_anyway) return true;  // nothing made yet: nothing to lose
  const auto said = [why](int step, int steps) { return tr("The run has done %1 of %2 steps. %3").arg(step).arg(steps).arg(why); };
  QMessageBox box(QMessageBox::Question, tr("A run is in progress"), said(done, total),
                  QMessageBox::Yes | QMessageBox::No, this);
  box.setObjectName("confirm_stop");
  box.button(QMessageBox::Yes)->setText(tr("Stop the run"));
  box.button(QMessageBox::No)->setText(tr("Keep running"));
  box.setDefaultButton(QMessageBox::No);
  // The count follows the run while the question is open; a run that ends meanwhile closes it (nothing is
  // left to stop).
  QTimer follow;
  connect(&follow, &QTimer::timeout, &box, [this, &box, &said] {
    if (!runner_.running()) return box.done(QMessageBox::Yes);
    if (const auto& ranks = runner_.ranks(); !ranks.empty()) box.setText(said(ranks.front().step, ranks.front().total));
  });
  follow.start(200);
  return box.exec() == QMessageBox::Yes;
}

pid_t MainWindow::rank_pid(int rank) const {
  const auto& ranks = runner_.ranks();
  return size_t(rank) < ranks.size() && ranks[size_t(rank)].connected ? pid_t(ranks[size_t(rank)].pid) : 0;
}

void MainWindow::on_message(const events::Message& m) {
  run_view_->message(m, runner_.ranks());
  if (m.kind == events::Kind::Progress) {
    const auto p = events::Progress::parse(m);
    steps_[p.rank].push_back({double(p.step), p.seconds, double(p.resources.in_use()) / (1 << 30)});
  }
}

// Decoded, and saved as PNG in the run's frames/, on the job's thread (JobRunner).
void MainWindow::on_picture(const RunPicture& pic) {
  run_view_->show_picture(pic);
  if (!pic.frame || pic.video != 0) return;
  const QImage& img = pic.image;
  if (thumbnail_.isNull()) thumbnail_ = img.scaledToHeight(96);
  // The Player keeps the run it shows until this one has a frame, then follows it; a run the user opens in it
  // after that stays (this run's frames are on disk, in History when it ends).
  if (!player_taken_) {
    player_taken_ = true;
    player_->begin(run_folder_, current_.job, tr("\"%1\", seed %2, saved in %3")
                                                  .arg(QString::fromStdString(current_.job.job.prompt).left(80))
                                                  .arg(current_.job.job.seed)
                                                  .arg(run_folder_));
  }
  if (player_->source() == run_folder_) player_->set_frame(pic.index, img);
}

}  // namespace studio::gui
