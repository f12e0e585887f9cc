#include "gui/results/sweep_view.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QVBoxLayout>

#include <cmath>

#include "gui/results/run_info.h"
#include "plan/family.h"
#include "qcustomplot.h"

namespace studio::gui {

namespace {

const QColor kMeasured(31, 119, 180), kPredicted(174, 199, 232), kFastest(44, 160, 44);

QString ratio_text(double r) { return QString::number(r, 'g', 2) + "x"; }

QCPBars* bars(QCustomPlot* chart, const QString& name, const QColor& colour, double width) {
  auto* b = new QCPBars(chart->xAxis, chart->yAxis);
  b->setName(name);
  b->setWidth(width);
  b->setPen(QPen(colour.darker(130)));
  b->setBrush(colour);
  return b;
}

}  // namespace

SweepView::SweepView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  table = new QTableWidget(0, Columns);
  table->setObjectName("sweep");
  table->setHorizontalHeaderLabels({tr("configuration"), tr("status"), tr("s/step"), tr("predicted\ns/step"),
                                    tr("predicted /\nmeasured"), tr("total s"), tr("peak GiB\nper rank"),
                                    tr("MB moved\nper rank")});
  table->horizontalHeaderItem(PredictedStep)
      ->setToolTip(tr("The cost model's seconds per step for this configuration, from the devices' calibration "
                      "(docs/cost-model.md)"));
  table->horizontalHeaderItem(Ratio)->setToolTip(
      tr("Predicted over measured seconds per step: below 1, the model was optimistic"));
  table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  // The numbers as wide as they need, the names in what is left (elided, whole in their tooltips).
  table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table->horizontalHeader()->setSectionResizeMode(Name, QHeaderView::Stretch);
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
  // The legend in a row of its own under the title, never over the bars.
  chart->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
  chart->legend->setBorderPen(Qt::NoPen);
  chart->axisRect()->insetLayout()->take(chart->legend);
  chart->plotLayout()->insertRow(1);
  chart->plotLayout()->addElement(1, 0, chart->legend);
  chart->plotLayout()->setRowStretchFactor(1, 0.001);
  chart->xAxis->setLabel(tr("configuration"));
  chart->xAxis->setTickLength(0, 0);
  layout->addWidget(chart, 1);
  model_error = new QLabel;
  model_error->setObjectName("model_error");
  model_error->setWordWrap(true);
  model_error->setToolTip(tr("The cost model's seconds per step against the measured ones, over the runs done "
                             "(docs/cost-model.md says what it counts and leaves out)"));
  model_error->hide();
  layout->addWidget(model_error);
  connect(metric, qOverload<int>(&QComboBox::currentIndexChanged), this, &SweepView::draw_chart);
  run = new QPushButton(tr("Run the checked configurations"));
  run->setEnabled(false);
  layout->addWidget(run);
  connect(run, &QPushButton::clicked, this, &SweepView::run_requested);
  adopt = new QPushButton(tr("Use the fastest configuration"));
  adopt->setEnabled(false);
  layout->addWidget(adopt);
  adopted_note = new QLabel;
  adopted_note->setObjectName("adopted_note");
  adopted_note->setWordWrap(true);
  layout->addWidget(adopted_note);
  connect(adopt, &QPushButton::clicked, this, [this] {
    if (auto f = fastest()) {
      Q_EMIT adopted(*f);
      adopted_note->setText(tr("%1 is now the configuration in \"GPUs and parallelism\"; Generate runs with it.")
                                .arg(QString::fromStdString(f->describe())));
    }
  });
  draw_chart();
}

void SweepView::start(const std::vector<plan::ParallelConfig>& configs, const std::vector<plan::Prediction>& predicted) {
  configs_ = configs;
  adopted_note->clear();
  done_.assign(configs.size(), std::nullopt);
  predicted_.assign(configs.size(), std::nullopt);
  table->setRowCount(int(configs.size()));
  for (int i = 0; i < int(configs.size()); ++i) {
    auto* name = new QTableWidgetItem(
        QString("%1: %2").arg(short_label(configs[size_t(i)]), QString::fromStdString(configs[size_t(i)].describe())));
    name->setFlags(name->flags() | Qt::ItemIsUserCheckable);
    name->setCheckState(Qt::Checked);
    name->setToolTip(name->text());
    table->setItem(i, Name, name);
    table->setItem(i, Status, new QTableWidgetItem(tr("ready")));
    for (int c = Step; c < Columns; ++c) table->setItem(i, c, new QTableWidgetItem);
  }
  show_predictions(predicted);
  adopt->setEnabled(false);
  run->setEnabled(!configs.empty());
}

void SweepView::show_predictions(const std::vector<plan::Prediction>& predicted) {
  for (int i = 0; i < table->rowCount(); ++i) {
    auto* p = table->item(i, PredictedStep);
    if (predicted.size() == configs_.size()) {
      const auto& r = predicted[size_t(i)];
      predicted_[size_t(i)] = r.seconds_per_step;
      p->setText(QString::number(r.seconds_per_step, 'f', 3));
      p->setForeground(palette().text());
      p->setToolTip(tr("compute %1 s, communication %2 s, pipeline bubble %3 s per step; peak %4 GiB per rank%5")
                        .arg(r.compute_s, 0, 'g', 3).arg(r.communication_s, 0, 'g', 3).arg(r.bubble_s, 0, 'g', 3)
                        .arg(r.peak_bytes_per_rank / plan::kGiB, 0, 'f', 2)
                        .arg(r.fits ? QString() : tr(" (does not fit: %1)").arg(QString::fromStdString(r.reason))));
      show_ratio(i);
    } else if (!predicted_[size_t(i)]) {
      p->setText(tr("not calibrated"));
      p->setForeground(QColor(128, 128, 128));
      p->setToolTip(tr("The devices have not been measured for the cost model: \"Auto\" (GPUs and parallelism) "
                       "measures them in seconds, and the predictions appear here when it is done."));
    }
  }
  draw_chart();
  show_model_error();
}

void SweepView::show_ratio(int row) {
  const auto& p = predicted_[size_t(row)];
  const auto& r = done_[size_t(row)];
  if (p && r && r->mean_step_seconds > 0) table->item(row, Ratio)->setText(ratio_text(*p / r->mean_step_seconds));
}

std::vector<int> SweepView::take_checked() {
  std::vector<int> rows;
  for (int i = 0; i < table->rowCount(); ++i) {
    const bool on = table->item(i, Name)->checkState() == Qt::Checked;
    table->item(i, Status)->setText(on ? tr("queued") : tr("skipped"));
    if (on) rows.push_back(i);
  }
  run->setEnabled(false);
  return rows;
}

void SweepView::started(int row) {
  if (row >= 0 && row < table->rowCount()) table->item(row, Status)->setText(tr("running"));
}

void SweepView::removed(int row) {
  if (row >= 0 && row < table->rowCount()) table->item(row, Status)->setText(tr("removed from the queue"));
}

void SweepView::record(int row, const RunRecord& r, bool ok) {
  if (row < 0 || row >= int(configs_.size())) return;
  table->item(row, Status)->setText(ok ? tr("done") : r.status);
  if (ok) {
    done_[size_t(row)] = r;
    table->item(row, Step)->setText(QString::number(r.mean_step_seconds, 'f', 3));
    show_ratio(row);
    table->item(row, Total)->setText(QString::number(r.seconds, 'f', 1));
    table->item(row, Peak)->setText(QString::number(r.peak_gib, 'f', 2));
    table->item(row, Moved)->setText(QString::number(double(r.bytes_moved) / 1e6, 'f', 1));
  }
  // The fastest so far stands out, in the table and the chart.
  const auto best = fastest();
  for (int i = 0; i < int(configs_.size()); ++i) {
    const bool is_best = best && configs_[size_t(i)] == *best;
    for (int c = 0; c < Columns; ++c) {
      QFont f = table->item(i, c)->font();
      f.setBold(is_best);
      table->item(i, c)->setFont(f);
      table->item(i, c)->setBackground(is_best ? QColor(200, 240, 200) : QColor(Qt::white));
    }
  }
  draw_chart();
  show_model_error();
  adopt->setEnabled(best.has_value());
}

void SweepView::draw_chart() {
  const auto best = fastest();
  const bool per_step = metric->currentIndex() <= 0;
  bar_labels.clear();
  bar_values.clear();
  predicted_ticks.clear();
  predicted_values.clear();
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
    if (per_step && predicted_[size_t(i)]) {
      predicted_ticks << ticks.back();
      predicted_values << *predicted_[size_t(i)];
    }
  }
  // With predictions, each measured bar and its prediction side by side around the label.
  const bool pairs = !predicted_ticks.isEmpty();
  const double width = pairs ? 0.36 : 0.6, shift = pairs ? 0.19 : 0;
  auto shifted = [](QVector<double> keys, double by) {
    for (double& k : keys) k += by;
    return keys;
  };
  chart->clearPlottables();
  bars(chart, tr("measured"), kMeasured, width)->setData(shifted(ticks, -shift), bar_values);
  bars(chart, tr("the fastest per step (measured)"), kFastest, width)->setData(shifted(best_tick, -shift), best_value);
  if (pairs)
    bars(chart, tr("predicted by the cost model"), kPredicted, width)
        ->setData(shifted(predicted_ticks, shift), predicted_values);
  chart->legend->setVisible(!ticks.isEmpty());
  QSharedPointer<QCPAxisTickerText> text(new QCPAxisTickerText);
  text->addTicks(ticks, bar_labels);
  chart->xAxis->setTicker(text);
  chart->xAxis->setTickLabelRotation(0);
  chart->xAxis->setRange(0.4, std::max<double>(1, ticks.size()) + 0.6);
  double top = 0;
  for (const auto* values : {&bar_values, &predicted_values})
    for (double v : *values) top = std::max(top, v);
  chart->yAxis->setRange(0, top > 0 ? top * 1.15 : 1);
  chart->yAxis->setLabel(metric->currentText());
  static_cast<QCPTextElement*>(chart->plotLayout()->element(0, 0))
      ->setText(ticks.isEmpty() ? tr("The bars appear as the configurations finish")
                                : tr("%1 by configuration").arg(metric->currentText()));
  chart->replot();
}

void SweepView::show_model_error() {
  double lo = INFINITY, hi = 0, fastest_predicted = INFINITY;
  int runs = 0;
  size_t predicted_best = 0;
  for (size_t i = 0; i < configs_.size(); ++i) {
    if (!done_[i] || !predicted_[i] || done_[i]->mean_step_seconds <= 0) continue;
    const double ratio = *predicted_[i] / done_[i]->mean_step_seconds;
    lo = std::min(lo, ratio);
    hi = std::max(hi, ratio);
    ++runs;
    if (*predicted_[i] < fastest_predicted) {
      fastest_predicted = *predicted_[i];
      predicted_best = i;
    }
  }
  const auto best = fastest();
  model_error->setVisible(runs >= 2 && best);
  if (runs < 2 || !best) return;
  const QString measured = short_label(*best), predicted = short_label(configs_[predicted_best]);
  model_error->setText(tr("Predicted within %1-%2 of measured seconds per step; %3")
                           .arg(QString::number(lo, 'g', 2), ratio_text(hi),
                                configs_[predicted_best] == *best
                                    ? tr("predicted fastest and measured fastest: %1").arg(measured)
                                    : tr("predicted fastest: %1, measured fastest: %2").arg(predicted, measured)));
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
