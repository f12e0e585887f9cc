// The studio's window: compose and parallel settings on the left, validated on every edit by
// engine/plan; the run, the player and the history on the right. Generate starts the ranks through the
// same Supervisor as dit-launch; the window stays responsive and outlives any rank.
//
// Cut by concern, as OBS cuts OBSBasic: main_window.cpp builds the window and checks and keeps the
// settings; main_window_queue.cpp runs the jobs one after another; main_window_sweep.cpp runs one job
// under each valid configuration; main_window_devices.cpp asks the chosen worker for the devices;
// main_window_results.cpp records each run and wires History, the Player and Compare.
#pragma once
#include <sys/types.h>

#include <QAction>
#include <QLabel>
#include <QMainWindow>
#include <QProcess>
#include <QPushButton>
#include <QTabWidget>

#include <QListWidget>

#include <array>
#include <deque>
#include <optional>
#include <map>

#include "gui/results/compare_view.h"
#include "gui/compose/compose_panel.h"
#include "gui/results/sweep_view.h"
#include "plan/job_file.h"
#include "gui/results/history.h"
#include "gui/models/models_view.h"
#include "gui/run/job_runner.h"
#include "gui/devices/parallel_panel.h"
#include "gui/results/player.h"
#include "gui/results/recent_strip.h"
#include "gui/run/run_view.h"
#include "gui/devices/worker_picker.h"

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
  // Adds the current settings to the queue (started at once when nothing runs); false (with the reason
  // shown) when they cannot run.
  bool generate();
  // Lists the valid configurations for the selected devices in the Sweep tab, for running the checked
  // ones with the current job (its "Run" button, or run_sweep()).
  bool sweep();
  void run_sweep();
  void cancel();  // the running job; the queue goes on
  // Asks before stopping a run past its first step (Esc in the run view, closing the window); true when
  // there is nothing to lose or the user said to stop. `why`: what stopping would do.
  // `ask_anyway`: also before the first step (when something else would be lost with it).
  bool confirm_stop(const QString& why, bool ask_anyway = false);
  int queued() const { return int(queue_.size()); }
  bool running() const { return runner_.running(); }
  // The pid a rank reported in its hello (0 until then).
  pid_t rank_pid(int rank) const;
  // The About box's text: the studio's version and what the worker was built with (LibTorch, CUDA, NCCL).
  QString about_text() const;

  // The window's parts, for driving it as a user would (tests). The buttons, the reason under them, the
  // queue and the tabs are found by their object names: "generate", "sweep_configs", "cancel", "reason",
  // "queue", "queue_note", "resume_queue", "tabs".
  ComposePanel& compose_panel() { return *compose_; }
  ParallelPanel& parallel_panel() { return *parallel_; }
  WorkerPicker& worker_picker() { return *worker_; }
  RunView& run_view() { return *run_view_; }
  Player& player() { return *player_; }
  History& history() { return *history_; }
  CompareView& compare_view() { return *compare_view_; }
  SweepView& sweep_view() { return *sweep_view_; }
  ModelsView& models_view() { return *models_view_; }
  RecentStrip& recent_strip() { return *recent_; }

 Q_SIGNALS:
  void run_finished(const studio::workers::Outcome& outcome);
  void devices_listed();  // the worker answered --list-devices (or failed to)

 protected:
  void closeEvent(QCloseEvent* e) override;
  void keyPressEvent(QKeyEvent* e) override;

 private:
  // main_window.cpp: the layout, the menus, the settings checked on every edit and kept between sessions.
  // The Memory group's line: whether the job fits the chosen devices, and the ways of keeping the weights that would.
  void show_fit(const plan::JobSpec& job, const plan::ParallelConfig& p, const plan::ModelFolder& model);
  void build_compose_column();
  void build_tabs();
  void build_menus();
  void connect_settings();
  void restore_settings();
  // main_window_queue.cpp: the queue and the job running.
  struct Queued {
    plan::JobFile job;
    int sweep_row = -1;  // its row in the sweep table, for a sweep's runs
    int sweep = 0;       // which sweep (sweep_), so that an older sweep's runs leave a newer one's table alone
    QString gpus;        // CUDA_VISIBLE_DEVICES for its ranks ("" on the CPU)
    QString worker;      // the dit-worker that runs it
    std::optional<std::pair<qint64, plan::JobFile>> again_of;  // Run again: the run (id, job) it repeats
    // Its pictures' bytes as they were when it was queued (kInputPictures' order), kept in its run's folder when it
    // starts; `unread` says why one could not be read. Run again reads them from the copies `pictures_from` (the
    // run repeated) kept, its job still naming the user's files.
    std::array<QByteArray, 2> pictures;
    QString unread, pictures_from;
  };
  QWidget* build_queue();
  void connect_queue();
  // The compose column's job checked, with the seed its seed mode gives next.
  std::optional<Queued> make_job(const plan::ParallelConfig& p);
  // `job` to queue, on the devices and with the worker chosen now, its pictures read (from the copies in
  // `pictures_from` where it keeps them).
  Queued queued(plan::JobFile job, const QString& pictures_from = {}) const;
  static void read_pictures(Queued& q);  // fills q.pictures and q.unread
  // What stops `job` under `p` on these devices (the checks Generate makes, beyond the compose column's own);
  // fills its open sizes from the model.
  std::vector<plan::Problem> job_problems(plan::JobSpec& job, const plan::ParallelConfig& p,
                                          const plan::ModelFolder& model) const;
  void enqueue(const Queued& q);
  void start_next();
  void show_queue();
  bool in_sweep_shown(const Queued& q) const { return q.sweep_row >= 0 && q.sweep == sweep_; }
  void on_message(const events::Message& m);
  void on_picture(const RunPicture& p);
  // main_window_sweep.cpp
  void connect_sweep();
  // main_window_devices.cpp
  void build_devices_group();
  void connect_devices();
  void list_devices();  // asks the chosen worker for the devices (and what it was built with)
  // main_window_results.cpp
  void connect_results();
  void on_finished(const workers::Outcome& outcome, const std::vector<workers::RankView>& ranks);

  ComposePanel* compose_;
  ParallelPanel* parallel_;
  WorkerPicker* worker_;
  RunView* run_view_;
  Player* player_;
  History* history_;
  CompareView* compare_view_;
  SweepView* sweep_view_;
  ModelsView* models_view_;
  RecentStrip* recent_;  // the latest results along the bottom
  QListWidget* queue_list_;
  QLabel* queue_note_;           // why the queue waits ("queue_note")
  QPushButton* resume_button_;   // tries the first queued job again ("resume_queue")
  QTabWidget* tabs_;
  QPushButton *generate_button_, *sweep_button_, *cancel_button_;
  QLabel* reason_;

  std::deque<Queued> queue_;
  QString paused_;  // why the first queued job could not start; the queue waits while it is said
  Queued current_;
  std::optional<Queued> sweep_base_;
  int sweep_ = 0;  // the sweep the Sweep tab shows, counted from 1
  // The listed sweep's job and model, for its predictions when "Auto" measures the devices after it.
  std::optional<std::pair<plan::JobSpec, plan::ModelFolder>> sweep_job_;
  std::map<int, std::vector<std::array<double, 3>>> steps_;  // rank -> (step, seconds, memory GiB)
  JobRunner runner_;
  QProcess list_devices_;
  QString worker_build_;  // from the device list; empty until the worker answers
  QString data_dir_, run_folder_;
  bool closing_ = false;  // the window closes once the stopped run is recorded
  QAction* keep_loaded_ = nullptr;  // Settings > Keep the model loaded between runs
  QImage thumbnail_;
  bool player_taken_ = false;  // the running job has begun showing its frames in the Player
  qint64 started_ms_ = 0;
};

}  // namespace studio::gui
