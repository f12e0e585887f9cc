// The studio's window: compose and parallel settings on the left, validated on every edit by
// engine/plan; the run, the player and the history on the right. Generate starts the ranks through the
// same Supervisor as dit-launch; the window stays responsive and outlives any rank.
#pragma once
#include <sys/types.h>

#include <QLabel>
#include <QMainWindow>
#include <QProcess>
#include <QPushButton>
#include <QTabWidget>

#include "gui/compose_panel.h"
#include "gui/history.h"
#include "gui/job_runner.h"
#include "gui/parallel_panel.h"
#include "gui/player.h"
#include "gui/run_view.h"

namespace studio::gui {

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  // `data_dir`: where runs and the history live (default: the user's data folder).
  explicit MainWindow(const QString& data_dir = {});
  ~MainWindow() override;

  // Validates the current settings, shows each problem by its field, and enables Generate only when
  // there are none. Returns the problems.
  std::vector<plan::Problem> validate();
  bool generate();  // false (with the reason shown) when the settings cannot run
  void cancel();
  bool running() const { return runner_.running(); }
  // The pid a rank reported in its hello (0 until then).
  pid_t rank_pid(int rank) const;

  ComposePanel* compose;
  ParallelPanel* parallel;
  RunView* run_view;
  Player* player;
  History* history;
  QTabWidget* tabs;
  QPushButton *generate_button, *cancel_button;
  QLabel* reason;

 Q_SIGNALS:
  void run_finished(const studio::workers::Outcome& outcome);

 protected:
  void closeEvent(QCloseEvent* e) override;

 private:
  void on_message(const events::Message& m);
  void on_finished(const workers::Outcome& outcome, const std::vector<workers::RankView>& ranks);
  void restore_settings();
  JobRunner runner_;
  QProcess list_devices_;
  QString data_dir_, run_folder_, run_settings_;
  plan::JobSpec run_job_;
  QImage thumbnail_;
  qint64 started_ms_ = 0;
};

}  // namespace studio::gui
