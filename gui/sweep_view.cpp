#include "gui/sweep_view.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QVBoxLayout>

#include "gui/run_info.h"
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
  table->horizontalHeader()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
  table->setWordWrap(false);
  layout->addWidget(table);
  auto* chart_bar = new QHBoxLayout;
  chart_bar->addWidget(new QLabel(tr("Chart:")));
  metric = new QComboBox;
  metric->setObjectName("sweep_metric");
  metric->addItems({tr("seconds per step"), tr("total seconds"), tr("peak memory per rank (GiB)"),
                    tr("data moved per rank (MB)")});
  metric->setToolTip(tr("What the bars show; lower is better for each"));
  chart_bar->addWidget(metric);
  chart_bar->addStretch();
  layout->addLayout(chart_bar);
  chart = new QCustomPlot;
  chart->setObjectName("sweep_chart");
  chart->setMinimumHeight(220);
  chart->plotLayout()->insertRow(0);
  chart->plotLayout()->addElement(0, 0, new QCPTextElement(chart, QString(), QFont(font().family(), 10, QFont::Bold)));
  chart->xAxis->setLabel(tr("configuration"));
  chart->xAxis->setTickLength(0, 0);
  layout->addWidget(chart, 1);
  connect(metric, qOverload<int>(&QComboBox::currentIndexChanged), this, &SweepView::draw_chart);
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
  draw_chart();
}

void SweepView::start(const std::vector<plan::ParallelConfig>& configs) {
  configs_ = configs;
  done_.assign(configs.size(), std::nullopt);
  table->setRowCount(int(configs.size()));
  for (int i = 0; i < int(configs.size()); ++i) {
    auto* name = new QTableWidgetItem(
        QString("%1: %2").arg(short_label(configs[size_t(i)]), QString::fromStdString(configs[size_t(i)].describe())));
    name->setFlags(name->flags() | Qt::ItemIsUserCheckable);
    name->setCheckState(Qt::Checked);
    table->setItem(i, 0, name);
    table->setItem(i, 1, new QTableWidgetItem(tr("ready")));
    for (int c = 2; c < 6; ++c) table->setItem(i, c, new QTableWidgetItem);
  }
  draw_chart();
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
    done_[size_t(row)] = r;
    table->item(row, 2)->setText(QString::number(r.mean_step_seconds, 'f', 3));
    table->item(row, 3)->setText(QString::number(r.seconds, 'f', 1));
    table->item(row, 4)->setText(QString::number(r.peak_gib, 'f', 2));
    table->item(row, 5)->setText(QString::number(double(r.bytes_moved) / 1e6, 'f', 1));
  }
  // The fastest so far stands out, in the table and the chart.
  const auto best = fastest();
  for (int i = 0; i < int(configs_.size()); ++i) {
    const bool is_best = best && configs_[size_t(i)] == *best;
    for (int c = 0; c < 6; ++c) {
      QFont f = table->item(i, c)->font();
      f.setBold(is_best);
      table->item(i, c)->setFont(f);
      table->item(i, c)->setBackground(is_best ? QColor(200, 240, 200) : QColor(Qt::white));
    }
  }
  draw_chart();
  adopt->setEnabled(best.has_value());
}

void SweepView::draw_chart() {
  const auto best = fastest();
  bar_labels.clear();
  bar_values.clear();
  QVector<double> ticks, best_tick, best_value;
  for (int i = 0; i < int(configs_.size()); ++i) {
    const auto& r = done_[size_t(i)];
    if (!r) continue;
    const double values[] = {r->mean_step_seconds, r->seconds, r->peak_gib, double(r->bytes_moved) / 1e6};
    ticks << ticks.size() + 1;
    bar_values << values[std::max(0, metric->currentIndex())];
    bar_labels << short_label(configs_[size_t(i)]);
    if (best && configs_[size_t(i)] == *best) {
      best_tick << ticks.back();
      best_value << bar_values.back();
    }
  }
  chart->clearPlottables();
  auto* bars = new QCPBars(chart->xAxis, chart->yAxis);
  bars->setWidth(0.6);
  bars->setPen(QPen(QColor(31, 119, 180).darker(130)));
  bars->setBrush(QColor(31, 119, 180));
  bars->setData(ticks, bar_values);
  auto* fastest_bar = new QCPBars(chart->xAxis, chart->yAxis);  // the fastest, in green over its bar
  fastest_bar->setWidth(0.6);
  fastest_bar->setPen(QPen(QColor(44, 160, 44).darker(130)));
  fastest_bar->setBrush(QColor(44, 160, 44));
  fastest_bar->setData(best_tick, best_value);
  QSharedPointer<QCPAxisTickerText> text(new QCPAxisTickerText);
  text->addTicks(ticks, bar_labels);
  chart->xAxis->setTicker(text);
  chart->xAxis->setTickLabelRotation(0);
  chart->xAxis->setRange(0.4, std::max<double>(1, ticks.size()) + 0.6);
  double top = 0;
  for (double v : bar_values) top = std::max(top, v);
  chart->yAxis->setRange(0, top > 0 ? top * 1.15 : 1);
  chart->yAxis->setLabel(metric->currentText());
  static_cast<QCPTextElement*>(chart->plotLayout()->element(0, 0))
      ->setText(ticks.isEmpty() ? tr("The bars appear as the configurations finish")
                                : tr("%1 by configuration (green: the fastest per step)").arg(metric->currentText()));
  chart->replot();
}

std::optional<plan::ParallelConfig> SweepView::fastest() const {
  std::optional<plan::ParallelConfig> best;
  double t = 0;
  for (size_t i = 0; i < configs_.size(); ++i)
    if (done_[i] && (!best || done_[i]->mean_step_seconds < t)) {
      best = configs_[i];
      t = done_[i]->mean_step_seconds;
    }
  return best;
}

}  // namespace studio::gui
