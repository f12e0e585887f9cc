#include "gui/sweep_view.h"

#include <QHeaderView>
#include <QVBoxLayout>

#include "qcustomplot.h"

namespace studio::gui {

SweepView::SweepView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  table = new QTableWidget(0, 6);
  table->setObjectName("sweep");
  table->setHorizontalHeaderLabels({tr("configuration"), tr("status"), tr("s/step"), tr("total s"), tr("peak GiB/rank"),
                                    tr("MB moved/rank")});
  table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table->horizontalHeader()->setStretchLastSection(true);
  layout->addWidget(table);
  chart = new QCustomPlot;
  chart->setMinimumHeight(180);
  chart->yAxis->setLabel(tr("seconds per step"));
  chart->xAxis->setTickLabelRotation(20);
  layout->addWidget(chart);
  run = new QPushButton(tr("Run the checked configurations"));
  run->setEnabled(false);
  layout->addWidget(run);
  connect(run, &QPushButton::clicked, this, &SweepView::run_requested);
  adopt = new QPushButton(tr("Use the fastest configuration"));
  adopt->setEnabled(false);
  layout->addWidget(adopt);
  connect(adopt, &QPushButton::clicked, this, [this] {
    if (auto f = fastest()) Q_EMIT adopted(*f);
  });
}

void SweepView::start(const std::vector<plan::ParallelConfig>& configs) {
  configs_ = configs;
  step_seconds_.assign(configs.size(), std::nullopt);
  table->setRowCount(int(configs.size()));
  for (int i = 0; i < int(configs.size()); ++i) {
    auto* name = new QTableWidgetItem(QString::fromStdString(configs[size_t(i)].describe()));
    name->setFlags(name->flags() | Qt::ItemIsUserCheckable);
    name->setCheckState(Qt::Checked);
    table->setItem(i, 0, name);
    table->setItem(i, 1, new QTableWidgetItem(tr("ready")));
    for (int c = 2; c < 6; ++c) table->setItem(i, c, new QTableWidgetItem);
  }
  chart->clearPlottables();
  chart->replot();
  adopt->setEnabled(false);
  run->setEnabled(!configs.empty());
}

std::vector<int> SweepView::take_checked() {
  std::vector<int> rows;
  for (int i = 0; i < table->rowCount(); ++i) {
    const bool on = table->item(i, 0)->checkState() == Qt::Checked;
    table->item(i, 1)->setText(on ? tr("queued") : tr("skipped"));
    if (on) rows.push_back(i);
  }
  run->setEnabled(false);
  return rows;
}

void SweepView::record(int row, const RunRecord& r, bool ok) {
  if (row < 0 || row >= int(configs_.size())) return;
  table->item(row, 1)->setText(ok ? tr("done") : r.status);
  if (ok) {
    step_seconds_[size_t(row)] = r.mean_step_seconds;
    table->item(row, 2)->setText(QString::number(r.mean_step_seconds, 'f', 3));
    table->item(row, 3)->setText(QString::number(r.seconds, 'f', 1));
    table->item(row, 4)->setText(QString::number(r.peak_gib, 'f', 2));
    table->item(row, 5)->setText(QString::number(double(r.bytes_moved) / 1e6, 'f', 1));
  }
  // The fastest so far stands out, in the table and the chart.
  const auto best = fastest();
  QVector<double> ticks, values;
  QVector<QString> labels;
  for (int i = 0; i < int(configs_.size()); ++i) {
    const bool is_best = best && configs_[size_t(i)] == *best;
    for (int c = 0; c < 6; ++c) {
      QFont f = table->item(i, c)->font();
      f.setBold(is_best);
      table->item(i, c)->setFont(f);
      table->item(i, c)->setBackground(is_best ? QColor(200, 240, 200) : QColor(Qt::white));
    }
    if (!step_seconds_[size_t(i)]) continue;
    ticks << ticks.size() + 1;
    values << *step_seconds_[size_t(i)];
    labels << QString::fromStdString(configs_[size_t(i)].flags());
  }
  chart->clearPlottables();
  auto* bars = new QCPBars(chart->xAxis, chart->yAxis);
  bars->setData(ticks, values);
  QSharedPointer<QCPAxisTickerText> text(new QCPAxisTickerText);
  text->addTicks(ticks, labels);
  chart->xAxis->setTicker(text);
  chart->rescaleAxes();
  chart->yAxis->setRangeLower(0);
  chart->xAxis->setRange(0, ticks.size() + 1);
  chart->replot();
  adopt->setEnabled(best.has_value());
}

std::optional<plan::ParallelConfig> SweepView::fastest() const {
  std::optional<plan::ParallelConfig> best;
  double t = 0;
  for (size_t i = 0; i < configs_.size(); ++i)
    if (step_seconds_[i] && (!best || *step_seconds_[i] < t)) {
      best = configs_[i];
      t = *step_seconds_[i];
    }
  return best;
}

}  // namespace studio::gui
