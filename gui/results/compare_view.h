// Two runs side by side, across the window's whole width: their settings by name (those that differ
// first and highlighted; identical ones and the output file, different for every run, hidden unless
// asked), step time and memory of both plotted together, their frames played in sync with a third
// picture of their absolute difference, and, when seed and model are the same, the numerical difference
// of their frames (RGB8 levels, from the lossless frames each run keeps, and their PSNR): how a user
// proves that a parallel configuration changes nothing, or sees how far a step cache moved the result.
#pragma once
#include <QCheckBox>
#include <QLabel>
#include <QPushButton>
#include <QSlider>
#include <QTableWidget>
#include <QTimer>
#include <QWidget>

#include <functional>
#include <vector>

#include "gui/results/history.h"
#include "gui/widgets/latest_task.h"

class QCustomPlot;

namespace studio::gui {

class CompareView : public QWidget {
  Q_OBJECT
 public:
  explicit CompareView(QWidget* parent = nullptr);
  // Shows the settings and steps of both at once; their frames and difference once read on a thread (loading()).
  void compare(const RunRecord& a, const RunRecord& b);
  bool loading() const { return loader_->busy(); }
  void show_frame(int i);
  void show_rows();  // hides the identical and always-different settings unless show_all is checked

  QTableWidget* settings;  // column 0: the setting's name, its job-file key in Qt::UserRole
  QCheckBox* show_all;
  QCustomPlot* plot;         // seconds per step of both runs
  QCustomPlot* memory_plot;  // memory per step of both runs
  QLabel *left, *right, *difference_image, *difference;
  QSlider* slider;
  QPushButton* play_button;
  // The frames' largest and mean absolute difference in RGB8 levels (-1 when not comparable).
  int max_difference = -1;
  double mean_difference = -1;
  double psnr_db = -1;  // infinite when identical

 private:
  struct Comparison {
    std::vector<QImage> a, b;
    int max_difference = -1;  // -1: not comparable
    double mean_difference = -1, psnr_db = -1;
  };
  // On the loader's thread: the difference of two runs' frames when they should be the same.
  static Comparison compare_frames(std::vector<QImage> a, std::vector<QImage> b, bool same_seed_and_model,
                                   const std::function<bool()>& go_on);
  void show_comparison(Comparison c);
  void resizeEvent(QResizeEvent* e) override;
  LatestTask* loader_;
  std::vector<QImage> a_, b_;
  QStringList gone_;  // the runs compared whose folders are gone
  QTimer timer_;
};

// The frames a run kept (PNG, in order) in its folder, each scaled to fit in `fit` when it is valid; with
// `go_on`, asked before each frame, an empty list as soon as it says no (a load on a thread no longer wanted).
std::vector<QImage> load_frames(const QString& run_folder, QSize fit = {}, const std::function<bool()>& go_on = {});

// |a - b| per channel (RGB8), scaled by `gain` (clamped at 255); null unless both have the same size.
QImage difference_of(const QImage& a, const QImage& b, int gain);

}  // namespace studio::gui
