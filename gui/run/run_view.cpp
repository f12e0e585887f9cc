#include "gui/run/run_view.h"

#include <QFileInfo>
#include <QGridLayout>
#include <QVBoxLayout>

#include <algorithm>

#include "gui/run/step_plots.h"
#include "plan/human_bytes.h"
#include "qcustomplot.h"

namespace studio::gui {

namespace {

// "Done in T s (A before the first step, B denoising, C decoding): FILES", from the rank that wrote the result
// (before the first step: encoding the words and pictures, and loading the transformer).
QString done_text(const std::vector<workers::RankView>& ranks) {
  for (const auto& r : ranks) {
    if (!r.done || r.done->outputs.empty()) continue;
    const auto& d = *r.done;
    QStringList files;
    for (const auto& f : d.outputs) files << QFileInfo(QString::fromStdString(f)).fileName();
    return QObject::tr("Done in %1 s (%2 before the first step, %3 denoising, %4 decoding): %5")
        .arg(d.seconds_loading + d.seconds_denoising + d.seconds_decoding, 0, 'f', 1)
        .arg(d.seconds_loading, 0, 'f', 1)
        .arg(d.seconds_denoising, 0, 'f', 1)
        .arg(d.seconds_decoding, 0, 'f', 1)
        .arg(files.join(", "));
  }
  return QObject::tr("Done.");
}

}  // namespace

RunView::RunView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  status = new QLabel(tr("No job yet: write a prompt and press Generate (Ctrl+Return)."));
  status->setObjectName("run_status");
  status->setWordWrap(true);
  layout->addWidget(status);
  grid_ = new QGridLayout;
  layout->addLayout(grid_);
  preview = new QLabel;
  preview->setObjectName("preview");
  preview->setMinimumSize(288, 192);
  preview->setAlignment(Qt::AlignCenter);
  layout->addWidget(preview, 1);
  plots = new StepPlots;
  step_plot = plots->step_plot;
  memory_plot = plots->memory_plot;
  layout->addWidget(plots, 1);
  log = new LogPane;
  layout->addWidget(log);
}

void RunView::start(int ranks, const QString& what, int frames) {
  for (auto* w : bars) w->deleteLater();
  for (auto* w : labels_) w->deleteLater();
  bars.clear();
  labels_.clear();
  last_.clear();
  frames_ = frames;
  decoded_ = 0;
  reused_steps = nullptr;
  plots->start(ranks);
  log->start(ranks);
  for (int r = 0; r < ranks; ++r) {
    auto* bar = new QProgressBar;
    bar->setObjectName(QString("rank_progress_%1").arg(r));
    bar->setRange(0, 100);
    bar->setValue(0);
    auto* label = new QLabel(tr("rank %1 starting").arg(r));
    grid_->addWidget(bar, r, 0);
    grid_->addWidget(label, r, 1);
    bars.push_back(bar);
    labels_.push_back(label);
  }
  status->setText(ranks == 1 ? tr("Running %1 on one rank…").arg(what)
                             : tr("Running %1 on %2 ranks…").arg(what).arg(ranks));
  status->setStyleSheet("");  // the last run's failure said in red is over
  preview->clear();
}

void RunView::update_rank(const workers::RankView& r) {
  if (size_t(r.rank) >= bars.size()) return;
  if (last_.size() <= size_t(r.rank)) last_.resize(size_t(r.rank) + 1);
  last_[size_t(r.rank)] = r;
  if (r.total > 0) bars[size_t(r.rank)]->setValue(100 * r.step / r.total);
  if (r.done) bars[size_t(r.rank)]->setValue(100);
  QString text = tr("rank %1  %2").arg(r.rank).arg(QString::fromStdString(r.phase));
  // While it decodes (the steps are all done), its progress is the decode's: the parts it counts (tiles,
  // batches of frames, the decoder's levels), and the frames that have come.
  if (r.phase == "decoding" && (r.phase_parts > 0 || (frames_ > 0 && decoded_ > 0)) && !r.done) {
    if (r.phase_parts > 0) {
      bars[size_t(r.rank)]->setValue(100 * r.phase_part / r.phase_parts);
      text += tr("  %1%").arg(100 * r.phase_part / r.phase_parts);
    } else {
      bars[size_t(r.rank)]->setValue(100 * decoded_ / frames_);
    }
    if (frames_ > 0 && decoded_ > 0) text += tr("  frame %1/%2").arg(decoded_).arg(frames_);
  } else if (r.total > 0) {
    text += tr("  step %1/%2  %3 s/step").arg(r.step).arg(r.total).arg(r.step_seconds, 0, 'f', 2);
    if (r.step > 0 && r.step < r.total)
      text += tr("  ETA %1 s").arg(r.eta_seconds(), 0, 'f', 0);
    if (r.cached) text += tr("  reused %1").arg(r.reused_calls);
  }
  const auto& m = r.resources;
  if (m.in_use()) {  // a GPU's allocation or the process's resident memory, the decode's too
    text += tr("  memory %1").arg(QString::fromStdString(plan::human_bytes(m.in_use())));
    const uint64_t peak = m.device_allocated ? m.device_peak : m.host_peak;
    if (r.phase_parts > 0 && peak > m.in_use())  // sampled between the decode's parts: its peak so far too
      text += tr(" (peak %1)").arg(QString::fromStdString(plan::human_bytes(peak)));
  }
  if (r.resources.bytes_sent)
    text += tr("  moved %1").arg(QString::fromStdString(plan::human_bytes(r.resources.bytes_sent + r.resources.bytes_received)));
  labels_[size_t(r.rank)]->setText(text);
}

void RunView::message(const events::Message& m, const std::vector<workers::RankView>& ranks) {
  const int rank = m.body.value("rank", -1);
  if (rank >= 0 && size_t(rank) < ranks.size()) update_rank(ranks[size_t(rank)]);
  if (m.kind == events::Kind::Progress && size_t(rank) < bars.size()) {
    const auto p = events::Progress::parse(m);
    if (rank == 0 && p.full >= 0 && p.full < p.calls)  // a step that reused the cache: a mark on its point
      reused_steps = plots->mark_reused(p.step, p.seconds);
    plots->add(rank, p.step, p.seconds, double(p.resources.in_use()) / (1 << 30));
    // The slowest rank so far stands out.
    int slowest = 0;
    for (size_t r = 0; r < ranks.size(); ++r)
      if (ranks[r].total_step_seconds > ranks[size_t(slowest)].total_step_seconds) slowest = int(r);
    for (int r = 0; r < int(labels_.size()); ++r) {
      QFont f = labels_[size_t(r)]->font();
      f.setBold(r == slowest && ranks.size() > 1);
      labels_[size_t(r)]->setFont(f);
    }
    plots->set_slowest(slowest);
  }
  if (m.kind == events::Kind::Log || m.kind == events::Kind::Error) log->add(m);
}

void RunView::show_picture(const RunPicture& p) {
  preview->setPixmap(QPixmap::fromImage(p.image).scaled(preview->size(), Qt::KeepAspectRatio,
                                                        p.frame ? Qt::SmoothTransformation : Qt::FastTransformation));
  if (p.frame && p.video == 0) {
    decoded_ = std::max(decoded_, p.index + 1);
    if (size_t(p.rank) < last_.size()) update_rank(last_[size_t(p.rank)]);
  }
}

void RunView::finish(const workers::Outcome& outcome, const std::vector<workers::RankView>& ranks) {
  status->setText(outcome.exit_code == 0 ? done_text(ranks) : QString::fromStdString(outcome.message));
  status->setStyleSheet(outcome.exit_code == 0 || outcome.kind == events::ErrorKind::Cancelled ? "" : "color: #c0392b;");
  for (const auto& r : ranks) {
    if (size_t(r.rank) >= labels_.size()) continue;
    update_rank(r);
    if (outcome.exit_code == 0) continue;
    auto* label = labels_[size_t(r.rank)];
    // How it ended, where (no ETA left): a cancel the user asked for is no rank's failure.
    const QString ended = outcome.kind == events::ErrorKind::Cancelled ? tr("cancelled") : QString::fromStdString(r.phase);
    if (r.phase != "starting")
      label->setText(tr("rank %1  %2 at step %3/%4").arg(r.rank).arg(ended).arg(r.step).arg(r.total));
    if (r.rank == outcome.failed_rank) {
      label->setStyleSheet("color: #c0392b;");
    } else if (r.phase == "starting") {
      const QString why = outcome.kind == events::ErrorKind::Cancelled ? tr("cancelled")
                          : outcome.failed_rank >= 0 ? tr("rank %1 failed").arg(outcome.failed_rank)
                                                     : QString::fromStdString(outcome.message).section('\n', 0, 0);
      label->setText(tr("rank %1  not started: %2").arg(r.rank).arg(why));
      label->setStyleSheet("color: #7f8c8d;");
    }
  }
  log->finish(outcome, ranks);
}

}  // namespace studio::gui
