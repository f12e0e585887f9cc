// A configuration sweep: the same job under each valid parallel configuration for the selected devices
// (all of them checked; uncheck the ones not wanted), run one after another from the queue, then a table and a bar chart of time per step, total time, peak
// memory per rank and bytes moved, the fastest highlighted and one click to adopt it.
#pragma once
#include <QPushButton>
#include <QTableWidget>
#include <QWidget>

#include <optional>
#include <vector>

#include "gui/history.h"
#include "plan/parallel.h"

class QCustomPlot;

namespace studio::gui {

class SweepView : public QWidget {
  Q_OBJECT
 public:
  explicit SweepView(QWidget* parent = nullptr);
  // Lists the configurations, checked, for the user to choose among before running.
  void start(const std::vector<plan::ParallelConfig>& configs);
  // The rows checked when the sweep is run; their status becomes "queued", the others "skipped".
  std::vector<int> take_checked();
  const plan::ParallelConfig& config(int row) const { return configs_[size_t(row)]; }
  // The run of row `row` ended; `ok` when it completed.
  void record(int row, const RunRecord& r, bool ok);
  std::optional<plan::ParallelConfig> fastest() const;

  QTableWidget* table;
  QCustomPlot* chart;
  QPushButton *run, *adopt;

 Q_SIGNALS:
  void adopted(const studio::plan::ParallelConfig& p);
  void run_requested();

 private:
  std::vector<plan::ParallelConfig> configs_;
  std::vector<std::optional<double>> step_seconds_;
};

}  // namespace studio::gui
