// A configuration sweep: the same job under each valid parallel configuration for the selected devices
// (all of them checked; uncheck the ones not wanted), run one after another from the queue, then a table
// of time per step, total time, peak memory per rank and bytes moved, and a bar chart of the metric
// chosen, each bar under its short name (U2, R2, U2xR2, PF2x2, CFG, DP2); the fastest highlighted and
// one click to adopt it. Beside each measured time per step, the cost model's prediction (when the devices
// have been calibrated: plan/cost_model.h), and once two runs are done, how far off it was.
#pragma once
#include <QComboBox>
#include <QLabel>
#include <QPushButton>
#include <QTableWidget>
#include <QWidget>

#include <optional>
#include <vector>

#include "gui/results/history.h"
#include "plan/cost_model.h"
#include "plan/parallel.h"

class QCustomPlot;

namespace studio::gui {

class SweepView : public QWidget {
  Q_OBJECT
 public:
  explicit SweepView(QWidget* parent = nullptr);
  enum Column { Name, Status, Step, PredictedStep, Ratio, Total, Peak, Moved, Columns };
  // Lists the configurations, checked, for the user to choose among before running; `predicted`: each
  // one's prediction in the same order, or none when the devices are not calibrated.
  void start(const std::vector<plan::ParallelConfig>& configs, const std::vector<plan::Prediction>& predicted = {});
  // Each row's prediction, in the order of the rows (a sweep listed before the devices were measured gets
  // them once "Auto" has); an empty list leaves the rows that have none saying "not calibrated".
  void show_predictions(const std::vector<plan::Prediction>& predicted);
  const std::vector<plan::ParallelConfig>& configs() const { return configs_; }
  // The rows checked when the sweep is run; their status becomes "queued", the others "skipped".
  std::vector<int> take_checked();
  const plan::ParallelConfig& config(int row) const { return configs_[size_t(row)]; }
  // The run of row `row` started (its status says "running"), or was taken out of the queue before it did.
  void started(int row);
  void removed(int row);
  // The run of row `row` ended; `ok` when it completed.
  void record(int row, const RunRecord& r, bool ok);
  std::optional<plan::ParallelConfig> fastest() const;
  void draw_chart();  // the chosen metric of the runs done

  // The chart's bars: the short labels and values of the runs done, in table order.
  QStringList bar_labels;
  QVector<double> bar_values;
  // For seconds per step, the cost model's beside them (where predicted): their positions and values.
  QVector<double> predicted_ticks, predicted_values;

  QTableWidget* table;
  QCustomPlot* chart;
  QComboBox* metric;  // seconds per step, total seconds, peak GiB per rank, MB moved per rank
  QLabel* model_error;  // "Predicted within 0.86-1.36x of measured; ..." once two predicted runs are done
  QPushButton *run, *adopt;
  QLabel* adopted_note;  // what "Use the fastest" set, once clicked

 Q_SIGNALS:
  void adopted(const studio::plan::ParallelConfig& p);
  void run_requested();

 private:
  std::vector<plan::ParallelConfig> configs_;
  std::vector<std::optional<RunRecord>> done_;
  std::vector<std::optional<double>> predicted_;  // seconds per step, by row
  void show_model_error();
  void show_ratio(int row);  // predicted / measured, once the row has both
};

}  // namespace studio::gui
