// Runs a job's ranks on a thread of their own: the launcher's Supervisor (its socket, the ranks'
// pipes, their exits) is polled there, and what it hears comes to the GUI thread through queued calls,
// so that the window never waits on a rank and a slow handler in the window never delays the intake.
// The thread lives as long as its ranks (their parent-death signal is tied to the thread that started
// them). Pictures are decoded there and the frames saved as PNGs beside it (frame_encoder.h).
// With keep_ranks (the default) the ranks stay after a job that ended well, holding the transformer, and the
// next job of the same model, device and parallel configuration runs on them (dit-worker --serve): a change of
// prompt, seed, size or LoRA strengths loads no weights. Another configuration, a failure or a cancel ends them;
// a configuration that ran out of memory with them kept runs with the model loaded for each run from then on.
#pragma once
#include <QObject>

#include <functional>
#include <future>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "gui/run/frame_encoder.h"
#include "workers/launch/supervisor.h"

namespace studio::gui {

class JobRunner : public QObject {
  Q_OBJECT
 public:
  explicit JobRunner(QObject* parent = nullptr);
  ~JobRunner() override;  // stops the job: its ranks are killed and reaped
  // Starts the ranks (waiting only until they are spawned); false (with `error` set) when they cannot
  // be. `frames_folder`: where video 0's frames are saved as NNNN.png ("" saves none).
  bool start(const workers::LaunchPlan& plan, QString* error, const QString& frames_folder = {});
  void cancel();
  bool running() const { return busy_; }
  // Whether ranks stay between jobs; off ends any that wait now.
  void keep_ranks(bool on);
  // Ends ranks waiting for a job (their memory goes back); none while a job runs.
  void release();
  bool holds_ranks() const { return session_ != nullptr; }
  // Every rank as of the last event delivered to the GUI thread (after the end: as it ended).
  const std::vector<workers::RankView>& ranks() const { return ranks_; }

 Q_SIGNALS:
  // Every event, on the GUI thread; a Preview or a Frame comes without its pixels (see picture()).
  void message(const studio::events::Message& m);
  void picture(const studio::gui::RunPicture& p);
  void note(const QString& line);
  void finished(const studio::workers::Outcome& outcome, const std::vector<studio::workers::RankView>& ranks);

 private:
  struct Session;
  void post_to_gui(std::function<void()> f);  // a queued call, dropped if the runner is gone by then
  void stop_session();  // its ranks killed and reaped, even mid-job
  // False when the worker refused --serve (one older than it): the caller runs the job again without.
  bool serve(Session* s, workers::LaunchPlan plan, QString frames_folder, std::promise<std::string>* spawned);
  void deliver(const events::Message& m, const workers::RankView& rank);
  void end(workers::Outcome outcome, const std::vector<workers::RankView>& ranks, bool ranks_stay);
  std::unique_ptr<Session> session_;
  bool busy_ = false, keep_ranks_ = true;
  std::set<std::string> load_each_run_;  // configurations (serving_key) that ran out of memory with ranks kept
  std::set<std::string> cannot_serve_;   // dit-worker programs older than --serve
  std::vector<workers::RankView> ranks_;
};

}  // namespace studio::gui
