// Two runs side by side: the settings that differ highlighted, step time and memory of both plotted
// together, their frames played in sync, and, when seed and model are the same, the numerical difference
// of their frames (RGB8 levels, from the lossless frames each run keeps, and their PSNR): how a user proves
// that a parallel configuration changes nothing, or sees how far a step cache moved the result.
#pragma once
#include <QLabel>
#include <QSlider>
#include <QTableWidget>
#include <QTimer>
#include <QWidget>

#include <vector>

#include "gui/history.h"

class QCustomPlot;

namespace studio::gui {

class CompareView : public QWidget {
  Q_OBJECT
 public:
  explicit CompareView(QWidget* parent = nullptr);
  void compare(const RunRecord& a, const RunRecord& b);

  QTableWidget* settings;
  QCustomPlot* plot;         // seconds per step of both runs
  QCustomPlot* memory_plot;  // memory per step of both runs
  QLabel *left, *right, *difference;
  QSlider* slider;
  // The frames' largest and mean absolute difference in RGB8 levels (-1 when not comparable).
  int max_difference = -1;
  double mean_difference = -1;
  double psnr_db = -1;  // infinite when identical

 private:
  void show_frame(int i);
  std::vector<QImage> a_, b_;
  QTimer timer_;
};

// The frames a run kept (PNG, in order) in its folder.
std::vector<QImage> load_frames(const QString& run_folder);

}  // namespace studio::gui
