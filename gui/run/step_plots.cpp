#include "gui/run/step_plots.h"

#include <QHBoxLayout>
#include <QVBoxLayout>

#include "qcustomplot.h"

namespace studio::gui {

QCustomPlot* make_step_plot(const QString& title, const QString& y_label) {
  auto* p = new QCustomPlot;
  p->setMinimumHeight(180);
  p->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
  p->plotLayout()->insertRow(0);
  p->plotLayout()->addElement(0, 0, new QCPTextElement(p, title, QFont(p->font().family(), 10, QFont::Bold)));
  p->xAxis->setLabel(QObject::tr("step"));
  p->yAxis->setLabel(y_label);
  // The legend in a row of its own under the title, never over the lines.
  p->legend->setVisible(true);
  p->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
  p->legend->setWrap(6);
  p->legend->setBorderPen(Qt::NoPen);
  p->axisRect()->insetLayout()->take(p->legend);
  p->plotLayout()->insertRow(1);
  p->plotLayout()->addElement(1, 0, p->legend);
  p->plotLayout()->setRowStretchFactor(1, 0.001);
  QSharedPointer<QCPAxisTickerFixed> steps(new QCPAxisTickerFixed);
  steps->setTickStep(1);
  steps->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
  p->xAxis->setTicker(steps);
  return p;
}

QColor rank_colour(int r) {
  static const QColor palette[] = {QColor(31, 119, 180), QColor(214, 39, 40),  QColor(44, 160, 44),
                                   QColor(148, 103, 189), QColor(255, 127, 14), QColor(23, 190, 207),
                                   QColor(140, 86, 75),  QColor(227, 119, 194)};
  return palette[r % 8];
}

void integer_steps_from_zero(QCustomPlot* p) {
  p->rescaleAxes();
  const QCPRange x = p->xAxis->range();
  p->xAxis->setRange(std::floor(x.lower) - 0.5, std::ceil(x.upper) + 0.5);
  const double top = p->yAxis->range().upper;
  p->yAxis->setRange(0, top > 0 ? top * 1.15 : 1);
}

StepPlots::StepPlots(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  waiting = new QLabel(tr("Seconds per step and memory of each rank are plotted here from the first step."));
  waiting->setObjectName("plots_waiting");
  waiting->setStyleSheet("color: palette(mid)");
  layout->addWidget(waiting);
  auto* row = new QHBoxLayout;
  step_plot = make_step_plot(tr("Time per step"), tr("seconds"));
  step_plot->setObjectName("step_plot");
  memory_plot = make_step_plot(tr("Memory in use"), tr("GiB"));
  memory_plot->setObjectName("memory_plot");
  row->addWidget(step_plot);
  row->addWidget(memory_plot);
  layout->addLayout(row, 1);
  start(0);
}

void StepPlots::start(int ranks) {
  ranks_ = ranks;
  reused_ = nullptr;  // clearGraphs() deletes it
  has_data_ = false;
  for (auto* p : {step_plot, memory_plot}) {
    p->clearGraphs();
    for (int r = 0; r < ranks; ++r) {
      p->addGraph()->setName(tr("rank %1").arg(r));
      p->graph(r)->setPen(QPen(rank_colour(r), 2));
      p->graph(r)->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, 5));
    }
    p->legend->setVisible(ranks > 1);
    p->xAxis->setRange(0, 1);
    p->yAxis->setRange(0, 1);
    p->hide();
    p->replot();
  }
  waiting->show();
}

void StepPlots::add(int rank, int step, double seconds, double memory_gib) {
  if (rank < 0 || rank >= ranks_) return;
  step_plot->graph(rank)->addData(step, seconds);
  memory_plot->graph(rank)->addData(step, memory_gib);
  if (!has_data_) {
    has_data_ = true;
    waiting->hide();
    step_plot->show();
    memory_plot->show();
  }
  rescale();
}

QCPGraph* StepPlots::mark_reused(int step, double seconds) {
  if (!reused_) {
    reused_ = step_plot->addGraph();
    reused_->setName(tr("reused (step cache)"));
    reused_->setLineStyle(QCPGraph::lsNone);
    reused_->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, Qt::black, Qt::white, 8));
    step_plot->legend->setVisible(true);
  }
  reused_->addData(step, seconds);
  return reused_;
}

void StepPlots::set_slowest(int rank) {
  for (int r = 0; r < ranks_; ++r) step_plot->graph(r)->setPen(QPen(rank_colour(r), r == rank && ranks_ > 1 ? 3.5 : 2));
}

void StepPlots::rescale() {
  for (auto* p : {step_plot, memory_plot}) {
    integer_steps_from_zero(p);
    p->replot();
  }
}

}  // namespace studio::gui
