#include "gui/run/job_runner.h"

#include <atomic>
#include <condition_variable>
#include <future>
#include <mutex>
#include <optional>
#include <thread>

extern char** environ;

namespace studio::gui {

namespace {

constexpr int kPollMs = 50;  // how soon a cancel is acted on

// One poll of the ranks; what went wrong in the launcher itself, or "".
std::string poll_safely(workers::Supervisor& sup, int ms) {
  try {
    sup.poll(ms);
    return {};
  } catch (const std::exception& e) {
    return std::string("the launcher failed: ") + e.what();
  }
}

// Whether the ranks' worker refused --serve: exit status 2 with its usage line, which lacks the flag.
bool refused_serve(const workers::Supervisor& sup) {
  if (sup.outcome().exit_code != 2) return false;
  for (const auto& r : sup.ranks())
    for (const auto& line : r.log_tail)
      if (line.find("usage: dit-worker --job FILE |") != std::string::npos) return true;
  return false;
}

// Why ranks that were waiting ended, once the Supervisor has stopped them all and named the one that failed.
std::string ended_why(workers::Supervisor& sup, const std::string& broke) {
  if (!broke.empty()) return broke;
  try {
    for (int i = 0; i < 200 && sup.poll(50); ++i) {  // the others stopped, the failed one named: 10 s at most
    }
  } catch (const std::exception& e) {
    return std::string("the launcher failed: ") + e.what();
  }
  return sup.outcome().message.empty() ? "a rank exited" : sup.outcome().message;
}

// A job for ranks that wait for one.
struct NextJob {
  plan::JobFile job;
  QString frames_folder;
};

// What ranks that stay can run: the same program, model, device and parallel configuration, started with the
// same environment (the GPUs it shows them, the variables that set their threads).
std::string serving_key(const workers::LaunchPlan& p) {
  std::string key = p.worker_exe + "\n" + p.job.job.model_dir + "\n" + p.job.job.device + "\n" +
                    plan::to_json({{}, p.job.parallel}) + "\n" + std::to_string(p.run.collective_timeout_s) + "\n" +
                    std::to_string(p.run.heartbeat_timeout_s) + "\n";
  for (char** e = environ; *e; ++e) key += std::string(*e) + "\n";
  return key;
}

}  // namespace

struct JobRunner::Session {
  std::thread thread;
  std::string serves;            // serving_key of its ranks
  std::atomic<bool> stay{false};  // its ranks were started to stay between jobs
  std::atomic<bool> cancel{false}, quit{false};
  std::mutex mutex;  // guards what follows
  std::condition_variable wake;
  std::optional<NextJob> next;
  bool waiting = false;  // the ranks wait for a job: start() may hand one over
};

JobRunner::JobRunner(QObject* parent) : QObject(parent) {}

JobRunner::~JobRunner() { stop_session(); }

void JobRunner::release() {
  if (!busy_) stop_session();
}

void JobRunner::stop_session() {
  if (!session_) return;
  {
    std::lock_guard<std::mutex> lock(session_->mutex);
    session_->quit = true;  // the Supervisor's destructor, on the session's thread, kills and reaps the ranks
  }
  session_->wake.notify_all();
  session_->thread.join();
  session_.reset();
}

void JobRunner::keep_ranks(bool on) {
  keep_ranks_ = on;
  if (!on) release();
}

void JobRunner::post_to_gui(std::function<void()> f) {
  QMetaObject::invokeMethod(this, std::move(f), Qt::QueuedConnection);
}

bool JobRunner::start(const workers::LaunchPlan& plan, QString* error, const QString& frames_folder) {
  if (busy_) {
    *error = tr("a job is already running");
    return false;
  }
  const auto reset_ranks = [&] {
    ranks_.clear();
    for (int r = 0; r < plan.job.parallel.world_size(); ++r) ranks_.push_back(workers::RankView{r});
  };
  if (session_ && keep_ranks_ && session_->serves == serving_key(plan)) {
    std::unique_lock<std::mutex> lock(session_->mutex);
    if (session_->waiting) {
      session_->next = NextJob{plan.job, frames_folder};
      session_->waiting = false;
      session_->cancel = false;  // the last job's; a cancel of this one may come before its thread wakes
      lock.unlock();
      session_->wake.notify_all();
      reset_ranks();
      busy_ = true;
      return true;
    }
  }
  release();  // ranks for another configuration, or ones that have ended
  auto session = std::make_unique<Session>();
  workers::LaunchPlan first = plan;
  session->serves = serving_key(plan);
  first.serve = keep_ranks_ && plan.run.nnodes <= 1 && !load_each_run_.count(session->serves) &&
                !cannot_serve_.count(plan.worker_exe);
  session->stay = first.serve;
  std::promise<std::string> spawned;
  auto started = spawned.get_future();
  Session* s = session.get();
  session->thread = std::thread([this, s, first, frames_folder, spawned = std::move(spawned)]() mutable {
    if (serve(s, first, frames_folder, &spawned)) return;
    s->stay = false;
    post_to_gui([this, exe = first.worker_exe] {
      cannot_serve_.insert(exe);
      Q_EMIT note(tr("%1 does not keep its ranks between runs (it is older than --serve): each run starts its own")
                      .arg(QString::fromStdString(exe)));
    });
    first.serve = false;
    serve(s, first, frames_folder, nullptr);
  });
  const std::string why = started.get();
  if (!why.empty()) {
    session->thread.join();
    *error = QString::fromStdString(why);
    return false;
  }
  reset_ranks();
  session_ = std::move(session);
  busy_ = true;
  return true;
}

// The session's thread: starts the ranks, runs the first job, and while they stay, each job handed over.
// `this` is touched only through queued calls, which Qt drops if the runner is gone by then.
bool JobRunner::serve(Session* s, workers::LaunchPlan plan, QString frames_folder, std::promise<std::string>* spawned) {
  const auto post = [this](auto f) { post_to_gui(std::move(f)); };
  auto encoder = std::make_unique<FrameEncoder>(frames_folder);
  workers::Supervisor* self = nullptr;
  workers::Supervisor sup(
      plan,
      [&](const events::Message& m) {
        if (s->quit) return;
        const int rank = events::rank_of(m);
        const auto& ranks = self->ranks();
        const workers::RankView view = size_t(rank) < ranks.size() ? ranks[size_t(rank)] : workers::RankView{-1};
        if (m.kind == events::Kind::Preview || m.kind == events::Kind::Frame) {
          RunPicture p = decode_picture(m);  // the Supervisor has checked it
          encoder->save(p);
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
        if (!s->quit) post([this, line] { Q_EMIT note(QString::fromStdString(line)); });
      });
  self = &sup;
  try {
    sup.start();
  } catch (const std::exception& e) {
    if (spawned) spawned->set_value(e.what());
    else post([this, why = std::string(e.what())] { end({1, -1, events::ErrorKind::Internal, why}, {}, false); });
    return true;
  }
  if (spawned) spawned->set_value({});
  for (;;) {
    workers::Outcome broken;
    try {
      bool cancelled = false;
      while (!s->quit && sup.poll(kPollMs)) {
        if (s->cancel && !cancelled) {
          cancelled = true;
          sup.cancel();
        }
      }
    } catch (const std::exception& e) {  // the Supervisor's destructor stops the ranks
      broken = {1, -1, events::ErrorKind::Internal, std::string("the launcher failed: ") + e.what()};
    }
    if (s->quit) return true;
    if (plan.serve && refused_serve(sup)) return false;
    encoder->wait();  // the run's frames are on disk before anyone hears it ended
    if (encoder->failures() > 0)
      post([this, n = encoder->failures(), folder = encoder->folder()] {
        Q_EMIT note(n == 1 ? tr("One frame could not be saved as PNG in %1").arg(folder)
                           : tr("%1 frames could not be saved as PNG in %2").arg(n).arg(folder));
      });
    const bool stay = !broken.exit_code && sup.idle();
    {
      std::lock_guard<std::mutex> lock(s->mutex);
      s->waiting = stay;
    }
    post([this, outcome = broken.exit_code ? broken : sup.outcome(), ranks = sup.ranks(), stay] {
      end(outcome, ranks, stay);
    });
    if (!stay) return true;
    // Waiting: the ranks are watched (one that dies ends them all) until a job is handed over or the runner quits.
    std::optional<NextJob> next;
    while (!next) {
      std::unique_lock<std::mutex> lock(s->mutex);
      s->wake.wait_for(lock, std::chrono::milliseconds(kPollMs), [&] { return s->quit || s->next.has_value(); });
      if (s->quit) return true;
      if (s->next) {
        next = std::move(s->next);
        s->next.reset();
        break;
      }
      lock.unlock();
      const std::string broke = poll_safely(sup, 0);
      lock.lock();
      if ((!sup.idle() || !broke.empty()) && !s->next) {
        s->waiting = false;  // start() starts new ranks from here on
        lock.unlock();
        post([this, why = "the ranks kept from the last run ended: " + ended_why(sup, broke)] {
          Q_EMIT note(QString::fromStdString(why));
        });
        return true;
      }
    }
    encoder = std::make_unique<FrameEncoder>(next->frames_folder);
    std::string broke;
    if (sup.idle()) try {
        sup.run_next(next->job);
        continue;
      } catch (const std::exception& e) {
        broke = e.what();
      }
    // They ended just as the job came: it fails, and the next start starts new ranks.
    post([this, why = "the ranks kept from the last run ended before this job (" + ended_why(sup, broke) +
                      "); run it again: it starts new ones",
          ranks = sup.ranks()] { end({1, -1, events::ErrorKind::Internal, why}, ranks, false); });
    return true;
  }
}

void JobRunner::cancel() {
  if (session_ && busy_) session_->cancel = true;
}

void JobRunner::deliver(const events::Message& m, const workers::RankView& rank) {
  if (size_t(rank.rank) < ranks_.size()) ranks_[size_t(rank.rank)] = rank;
  Q_EMIT message(m);
}

void JobRunner::end(workers::Outcome outcome, const std::vector<workers::RankView>& ranks, bool ranks_stay) {
  // Out of memory with the model kept: the configuration may fit only by letting it go after each run.
  if (session_ && session_->stay && outcome.exit_code && outcome.kind == events::ErrorKind::OutOfMemory) {
    load_each_run_.insert(session_->serves);
    outcome.message += "\nThe ranks kept the model loaded between runs (Settings > Keep the model loaded between "
                       "runs); the next runs of this model and configuration load it for each run instead, leaving "
                       "its memory to the text encoders and the VAE.";
  }
  if (session_ && !ranks_stay) {
    session_->thread.join();  // it has posted its last: done, or about to return
    session_.reset();
  }
  busy_ = false;
  if (!keep_ranks_) release();  // switched off while the job ran
  ranks_ = ranks;
  Q_EMIT finished(outcome, ranks_);
}

}  // namespace studio::gui
