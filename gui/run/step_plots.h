// The run view's plots: seconds per step and memory per rank over the steps of a run, side by side and
// growing with the window. Each rank has its own colour from a palette that stays readable on white;
// steps are whole-number ticks and the y-axes start at zero; the plots stay hidden until the first step
// and start empty (ranges too) with each run.
#pragma once
#include <QColor>
#include <QLabel>
#include <QWidget>

class QCustomPlot;
class QCPGraph;

namespace studio::gui {

class StepPlots : public QWidget {
  Q_OBJECT
 public:
  explicit StepPlots(QWidget* parent = nullptr);
  void start(int ranks);  // empties and hides both plots, one graph per rank
  void add(int rank, int step, double seconds, double memory_gib);
  // Marks rank 0's step as one that reused the step cache; the marks' graph (made at the first mark).
  QCPGraph* mark_reused(int step, double seconds);
  void set_slowest(int rank);  // drawn thick
  bool has_data() const { return has_data_; }

  QCustomPlot* step_plot;
  QCustomPlot* memory_plot;
  QLabel* waiting;  // in place of the plots until there is data

 private:
  void rescale();
  int ranks_ = 0;
  QCPGraph* reused_ = nullptr;
  bool has_data_ = false;
};

// Rank r's colour: distinct hues of even strength (no pale ones).
QColor rank_colour(int r);
// A plot over the steps: its title on top, the legend in a row below it, whole-number step ticks.
QCustomPlot* make_step_plot(const QString& title, const QString& y_label);
// Steps as whole-number ticks and the value axis from zero, with headroom above the data.
void integer_steps_from_zero(QCustomPlot* p);

}  // namespace studio::gui
