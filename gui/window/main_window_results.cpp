// The results: each finished run recorded in the History (its settings, steps, time, memory, thumbnail),
// then shown in the Player; History's Play and Export load a run into the Player, Reopen and Run again
// bring its settings back, Compare takes the window's whole width; an export is confirmed in the status bar.
#include <QDateTime>
#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QKeyEvent>
#include <QSplitter>
#include <QStatusBar>

#include <algorithm>

#include "gui/results/run_info.h"
#include "gui/window/main_window.h"
#include "plan/error.h"
#include "plan/field_labels.h"
#include "plan/job_file.h"

namespace studio::gui {

void MainWindow::connect_results() {
  QString error;
  if (!history_->open(data_dir_ + "/history.sqlite", &error)) reason_->setText(error);
  connect(history_, &History::compare, this, [this](const RunRecord& a, const RunRecord& b) {
    compare_view_->compare(a, b);
    tabs_->setCurrentWidget(compare_view_);
  });
  // The Player reads a run's frames on a thread: what the user asked for happens once they are read.
  auto open = [this](const RunRecord& r, std::function<void()> then) {
    history_->status->setText(tr("Opening run %1…").arg(r.id));
    player_->open_run(r, [this, then] {
      history_->status->clear();
      tabs_->setCurrentWidget(player_);
      player_taken_ = runner_.running();  // a run going on leaves the Player to the one the user chose
      then();
    }, [this](const QString& why) { history_->status->setText(why); });
  };
  connect(history_, &History::play, this, [this, open](const RunRecord& r) {
    open(r, [this] {
      if (!player_->image_mode()) player_->play();
    });
  });
  connect(history_, &History::export_run, this, [this, open](const RunRecord& r) {
    if (player_->exporting())  // the Player keeps the run it writes: the refusal says why, nothing else changes
      return player_->export_dialog();
    open(r, [this] { player_->export_dialog(); });
  });
  // A run deleted in the History (its folder in the trash) leaves the Player: nothing there to export from.
  connect(history_, &History::refreshed, this, [this] {
    const QString shown = player_->source();
    if (shown.isEmpty() || QDir(shown).exists() || (runner_.running() && shown == run_folder_)) return;
    player_->clear();
    player_->title->setText(tr("The run shown here was deleted (%1); Undo in the History brings it back.").arg(shown));
  });
  connect(player_, &Player::exported, this,
          [this](const QString& path) { statusBar()->showMessage(tr("Exported to %1").arg(path)); });
  connect(player_, &Player::export_failed, this,
          [this](const QString& why) { statusBar()->showMessage(tr("Export failed: %1").arg(why)); });
  // Compare shows two runs side by side: the settings panel steps aside while it is shown.
  connect(tabs_, &QTabWidget::currentChanged, this, [this] {
    if (auto* split = findChild<QSplitter*>("split")) split->widget(0)->setVisible(tabs_->currentWidget() != compare_view_);
  });
  // A run's settings come back from the history database, which may have been damaged or edited.
  auto settings_of = [this](const RunRecord& r) -> std::optional<plan::JobFile> {
    try {
      return plan::job_file_from_json(r.settings.toStdString(), "the history's settings of run " + std::to_string(r.id),
                                      plan::UnknownKeys::Skipped);
    } catch (const InputError& e) {
      reason_->setText(QString::fromStdString(e.what()));
      return std::nullopt;
    }
  };
  connect(history_, &History::reopen, this, [this, settings_of](const RunRecord& r) {
    auto f = settings_of(r);
    if (!f) return;
    use_kept_pictures(f->job, r.folder, false);  // the user's own files while they last
    compose_->set_job(f->job);
    parallel_->set_config(f->parallel);
  });
  // Run again queues the run's job as it was, with its seed, checked as Generate checks a job; the compose column
  // keeps what the user has there.
  connect(history_, &History::rerun, this, [this, settings_of](const RunRecord& r) {
    const auto f = settings_of(r);
    if (!f) return;
    plan::JobFile job = *f;
    job.job.output_file.clear();  // a new run folder's, when it starts
    auto q = queued(job, r.folder);  // the pictures the run read; its record names the user's files again
    std::vector<plan::Problem> problems;
    try {
      plan::JobSpec checked = q.job.job;  // queued as it was, its open sizes left to the run
      use_kept_pictures(checked, r.folder, true);  // checked as it will run
      problems = job_problems(checked, q.job.parallel, plan::read_model_folder(q.job.job.model_dir));
    } catch (const InputError& e) {
      problems.push_back({"model", e.what()});
    }
    if (!problems.empty()) {
      QString why = QString::fromStdString(plan::in_window_words(problems.front().message));
      if (!why.endsWith('.')) why += '.';
      reason_->setText(tr("Run %1 cannot run again as it was: %2 Open its settings to change them.").arg(r.id).arg(why));
      return;
    }
    q.again_of = {r.id, *f};  // its LoRAs' hashes compared with these when it ends
    enqueue(q);
  });
}

// Space plays or pauses the Player while it is shown, unless the control with the focus uses Space itself (a
// button, a check box, a text field): their key events reach the window only when they leave them unhandled.
void MainWindow::keyPressEvent(QKeyEvent* e) {
  if (e->key() == Qt::Key_Space && e->modifiers() == Qt::NoModifier && tabs_->currentWidget() == player_) {
    player_->playing() ? player_->pause() : player_->play();
    return;
  }
  QMainWindow::keyPressEvent(e);
}

void MainWindow::on_finished(const workers::Outcome& outcome, const std::vector<workers::RankView>& ranks) {
  run_view_->finish(outcome, ranks);
  // Run again: the same seed, yet maybe not the same clip; say why.
  if (current_.again_of)
    for (const QString& file : changed_loras(current_.again_of->second, current_.job))
      run_view_->log->note(tr("The LoRA %1 has changed since run %2 (its SHA-256 differs): this run used it as it is "
                              "now.").arg(file).arg(current_.again_of->first));
  // The run's log stays in its folder; a failed run keeps its folder for it.
  if (outcome.kind != events::ErrorKind::Cancelled || !QDir(run_folder_ + "/frames").isEmpty())
    run_view_->log->save(run_folder_ + "/log.txt");
  cancel_button_->setEnabled(false);
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
  history_->add(r);
  if (in_sweep_shown(current_)) sweep_view_->record(current_.sweep_row, r, outcome.exit_code == 0);
  if (outcome.exit_code == 0 && player_->source() == run_folder_ && current_.sweep_row < 0 && queue_.empty()) {
    tabs_->setCurrentWidget(player_);
    if (!player_->image_mode()) player_->play();
  }
  Q_EMIT run_finished(outcome);
  if (closing_) {
    close();
    return;
  }
  start_next();
}

}  // namespace studio::gui
