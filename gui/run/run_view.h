// A running job, rank by rank: a progress bar with step, time per step, ETA and phase for each rank;
// plots of step time and memory per rank over the run (the slowest rank drawn thick, its row in bold);
// the bytes each rank moved; the latest latent preview, then the decoded frames as they arrive.
#pragma once
#include <QImage>
#include <QLabel>
#include <QProgressBar>
#include <QWidget>

#include <vector>

#include "gui/run/frame_encoder.h"
#include "gui/run/log_pane.h"
#include "workers/events/messages.h"
#include "workers/launch/supervisor.h"

class QCustomPlot;
class QCPGraph;
class QGridLayout;

namespace studio::gui {

class StepPlots;

class RunView : public QWidget {
  Q_OBJECT
 public:
  explicit RunView(QWidget* parent = nullptr);
  // `what`: the job in a few words (prompt, seed); `frames`: what the decode makes of each video (0: unknown).
  void start(int ranks, const QString& what, int frames = 0);
  void message(const events::Message& m, const std::vector<workers::RankView>& ranks);
  // A step's preview or a decoded frame (decoded off the GUI thread: JobRunner::picture).
  void show_picture(const RunPicture& p);
  // The outcome, and every rank's row as it ended (a failure shown on its rows, none left at "starting").
  void finish(const workers::Outcome& outcome, const std::vector<workers::RankView>& ranks = {});

  std::vector<QProgressBar*> bars;
  QLabel* preview;
  QLabel* status;
  LogPane* log;  // each rank's output, below the plots
  StepPlots* plots;  // step time and memory per rank (step_plots.*)
  QCustomPlot* step_plot;
  QCustomPlot* memory_plot;
  // On step_plot, rank 0's steps that reused the step cache (made at the first one; null before).
  QCPGraph* reused_steps = nullptr;

 private:
  void update_rank(const workers::RankView& r);
  QGridLayout* grid_;
  std::vector<QLabel*> labels_;
  std::vector<workers::RankView> last_;  // each rank as last shown
  int frames_ = 0, decoded_ = 0;         // the first video's frames, and how many of them have come
};

}  // namespace studio::gui
