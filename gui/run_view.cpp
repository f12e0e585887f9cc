#include "gui/run_view.h"

#include <QGridLayout>
#include <QVBoxLayout>

#include "qcustomplot.h"

namespace studio::gui {

namespace {

QCustomPlot* plot(const QString& y_label) {
  auto* p = new QCustomPlot;
  p->setMinimumHeight(150);
  p->xAxis->setLabel(QObject::tr("step"));
  p->yAxis->setLabel(y_label);
  p->legend->setVisible(true);
  return p;
}

QColor rank_colour(int r) { return QColor::fromHsv((r * 67) % 360, 200, 200); }

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
  step_plot = plot(tr("seconds per step"));
  memory_plot = plot(tr("memory (GiB)"));
  auto* plots = new QHBoxLayout;
  plots->addWidget(step_plot);
  plots->addWidget(memory_plot);
  layout->addLayout(plots);
}

void RunView::start(int ranks, const QString& what) {
  for (auto* w : bars) w->deleteLater();
  for (auto* w : labels_) w->deleteLater();
  bars.clear();
  labels_.clear();
  reused_steps = nullptr;  // clearGraphs() deletes it
  for (auto* p : {step_plot, memory_plot}) {
    p->clearGraphs();
    for (int r = 0; r < ranks; ++r) {
      p->addGraph()->setName(tr("rank %1").arg(r));
      p->graph(r)->setPen(QPen(rank_colour(r), 1.5));
    }
    p->replot();
  }
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
  status->setText(tr("Running %1 on %2 rank(s)…").arg(what).arg(ranks));
  preview->clear();
}

void RunView::update_rank(const workers::RankView& r) {
  if (size_t(r.rank) >= bars.size()) return;
  if (r.total > 0) bars[size_t(r.rank)]->setValue(100 * r.step / r.total);
  if (r.done) bars[size_t(r.rank)]->setValue(100);
  QString text = tr("rank %1  %2").arg(r.rank).arg(QString::fromStdString(r.phase));
  if (r.total > 0) {
    text += tr("  step %1/%2  %3 s/step").arg(r.step).arg(r.total).arg(r.step_seconds, 0, 'f', 2);
    if (r.step > 0 && r.step < r.total)
      text += tr("  ETA %1 s").arg(r.eta_seconds(), 0, 'f', 0);
    if (r.cached) text += tr("  reused %1").arg(r.reused_calls);
  }
  if (r.resources.bytes_sent)
    text += tr("  moved %1 MB").arg(double(r.resources.bytes_sent + r.resources.bytes_received) / 1e6, 0, 'f', 1);
  labels_[size_t(r.rank)]->setText(text);
}

void RunView::message(const events::Message& m, const std::vector<workers::RankView>& ranks) {
  const int rank = m.body.value("rank", -1);
  if (rank >= 0 && size_t(rank) < ranks.size()) update_rank(ranks[size_t(rank)]);
  if (m.kind == events::Kind::Progress && size_t(rank) < bars.size()) {
    const auto p = events::Progress::parse(m);
    step_plot->graph(rank)->addData(p.step, p.seconds);
    memory_plot->graph(rank)->addData(p.step, double(p.resources.in_use()) / (1 << 30));
    if (rank == 0 && p.full >= 0 && p.full < p.calls) {  // a step that reused the cache: a mark on its point
      if (!reused_steps) {
        reused_steps = step_plot->addGraph();
        reused_steps->setName(tr("reused (step cache)"));
        reused_steps->setLineStyle(QCPGraph::lsNone);
        reused_steps->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, Qt::black, Qt::white, 7));
      }
      reused_steps->addData(p.step, p.seconds);
    }
    // The slowest rank so far stands out.
    int slowest = 0;
    for (size_t r = 0; r < ranks.size(); ++r)
      if (ranks[r].total_step_seconds > ranks[size_t(slowest)].total_step_seconds) slowest = int(r);
    for (int r = 0; r < int(labels_.size()); ++r) {
      QFont f = labels_[size_t(r)]->font();
      f.setBold(r == slowest && ranks.size() > 1);
      labels_[size_t(r)]->setFont(f);
      step_plot->graph(r)->setPen(QPen(rank_colour(r), r == slowest ? 3 : 1.5));
    }
    for (auto* plot : {step_plot, memory_plot}) {
      plot->rescaleAxes();
      plot->replot();
    }
  }
  if (m.kind == events::Kind::Preview || m.kind == events::Kind::Frame) {
    preview->setPixmap(QPixmap::fromImage(to_image(events::Picture::parse(m))).scaled(preview->size(), Qt::KeepAspectRatio,
                                                              m.kind == events::Kind::Preview ? Qt::FastTransformation
                                                                                              : Qt::SmoothTransformation));
  }
}

QImage to_image(const events::Picture& p) {
  return QImage(reinterpret_cast<const uchar*>(p.rgb.data()), p.width, p.height, p.width * 3, QImage::Format_RGB888)
      .copy();  // the QImage above only borrows the message's bytes
}

void RunView::finish(const workers::Outcome& outcome) {
  status->setText(outcome.exit_code == 0 ? tr("Done.") : QString::fromStdString(outcome.message));
  status->setStyleSheet(outcome.exit_code == 0 || outcome.kind == events::ErrorKind::Cancelled ? "" : "color: #c0392b;");
}

}  // namespace studio::gui
