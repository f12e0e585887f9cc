#include "gui/run/job_runner.h"

#include <atomic>
#include <future>
#include <thread>

namespace studio::gui {

struct JobRunner::Job {
  std::thread thread;
  std::atomic<bool> cancel{false}, quit{false};
};

namespace {

constexpr int kPollMs = 50;  // how soon a cancel is acted on

}  // namespace

JobRunner::JobRunner(QObject* parent) : QObject(parent) {}

JobRunner::~JobRunner() {
  if (!job_) return;
  job_->quit = true;  // the Supervisor's destructor, on the job's thread, kills and reaps the ranks
  job_->thread.join();
}

bool JobRunner::start(const workers::LaunchPlan& plan, QString* error, const QString& frames_folder) {
  if (job_) {
    *error = tr("a job is already running");
    return false;
  }
  auto job = std::make_unique<Job>();
  std::promise<std::string> spawned;
  auto started = spawned.get_future();
  Job* j = job.get();
  // Everything below runs on the job's thread; `this` is touched only through queued calls, which Qt
  // drops if the runner is gone by then.
  job->thread = std::thread([this, j, plan, frames_folder, spawned = std::move(spawned)]() mutable {
    const auto post = [this](auto f) { QMetaObject::invokeMethod(this, std::move(f), Qt::QueuedConnection); };
    FrameEncoder encoder(frames_folder);
    workers::Supervisor* self = nullptr;
    workers::Supervisor sup(
        plan,
        [&](const events::Message& m) {
          if (j->quit) return;
          const int rank = events::rank_of(m);
          const auto& ranks = self->ranks();
          const workers::RankView view = size_t(rank) < ranks.size() ? ranks[size_t(rank)] : workers::RankView{-1};
          if (m.kind == events::Kind::Preview || m.kind == events::Kind::Frame) {
            RunPicture p = decode_picture(m);  // the Supervisor has checked it
            encoder.save(p);
            events::Message light{m.kind, m.body, {}};
            post([this, light, view, p] {
              deliver(light, view);
              Q_EMIT picture(p);
            });
          } else {
            post([this, m, view] { deliver(m, view); });
          }
        },
        [&](const std::string& line) {
          if (!j->quit) post([this, line] { Q_EMIT note(QString::fromStdString(line)); });
        });
    self = &sup;
    try {
      sup.start();
    } catch (const std::exception& e) {
      spawned.set_value(e.what());
      return;
    }
    spawned.set_value({});
    workers::Outcome broken;
    try {
      bool cancelled = false;
      while (!j->quit && sup.poll(kPollMs)) {
        if (j->cancel && !cancelled) {
          cancelled = true;
          sup.cancel();
        }
      }
    } catch (const std::exception& e) {  // the Supervisor's destructor stops the ranks
      broken = {1, -1, events::ErrorKind::Internal, std::string("the launcher failed: ") + e.what()};
    }
    if (j->quit) return;
    encoder.wait();  // the run's frames are on disk before anyone hears it ended
    if (encoder.failures() > 0)
      post([this, n = encoder.failures(), folder = encoder.folder()] {
        Q_EMIT note(tr("%n frame(s) could not be saved as PNG in %1", "", n).arg(folder));
      });
    post([this, outcome = broken.exit_code ? broken : sup.outcome(), ranks = sup.ranks()] { end(outcome, ranks); });
  });
  const std::string why = started.get();
  if (!why.empty()) {
    job->thread.join();
    *error = QString::fromStdString(why);
    return false;
  }
  ranks_.clear();
  for (int r = 0; r < plan.job.parallel.world_size(); ++r) ranks_.push_back(workers::RankView{r});
  job_ = std::move(job);
  return true;
}

void JobRunner::cancel() {
  if (job_) job_->cancel = true;
}

void JobRunner::deliver(const events::Message& m, const workers::RankView& rank) {
  if (size_t(rank.rank) < ranks_.size()) ranks_[size_t(rank.rank)] = rank;
  Q_EMIT message(m);
}

void JobRunner::end(const workers::Outcome& outcome, const std::vector<workers::RankView>& ranks) {
  if (job_) job_->thread.join();  // it has posted its last: done, or about to return
  job_.reset();
  ranks_ = ranks;
  Q_EMIT finished(outcome, ranks_);
}

}  // namespace studio::gui
