// A rank's side of the event protocol. With DIT_EVENTS (set by dit-launch or the studio) it connects,
// says hello with DIT_EVENTS_TOKEN, sends a heartbeat every second from a thread of its own, and listens
// for Cancel; when that connection closes, the program that started the rank is gone, and the rank stops.
// Without DIT_EVENTS (plain torchrun, srun, mpirun) every report is a plain line on stderr instead.
// Torch-free: the caller turns tensors into pictures.
#pragma once
#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "workers/events/channel.h"
#include "workers/events/messages.h"

namespace studio::workers {

// This process's resident memory now and at its peak (/proc/self/status), in bytes.
events::Resources host_resources();
// Starts the process's resident peak afresh (/proc/self/clear_refs), for a rank's next job.
void reset_host_peak();

class RankReporter {
 public:
  RankReporter(int rank, int world_size, const std::string& device);
  ~RankReporter();
  RankReporter(const RankReporter&) = delete;
  RankReporter& operator=(const RankReporter&) = delete;

  bool connected() const { return conn_ != nullptr; }
  // A Cancel arrived, or the launcher's connection closed.
  bool cancel_requested() const { return cancel_.load(); }

  // `part` of `parts` done within the phase, where it counts them (the decode's tiles or batches).
  void phase(const std::string& name, int part = 0, int parts = 0,
             const std::optional<events::Resources>& resources = std::nullopt);
  void progress(const events::Progress& p);
  void picture(events::Kind kind, const events::Picture& p);
  void log(const std::string& line);
  void done(const events::Done& d);
  void error(events::ErrorKind kind, const std::string& message);
  // A rank serving several jobs: waits for the launcher's next job (its job file's text); none once the
  // launcher has closed the connection or sent Cancel, or `stop` says so (a signal).
  std::optional<std::string> next_job(const std::function<bool()>& stop);

 private:
  void start_threads();
  void send(const events::Message& m);
  void listen();

  int rank_;
  std::unique_ptr<events::Connection> conn_;
  std::mutex send_mutex_;
  std::atomic<bool> cancel_{false}, stopping_{false};
  std::mutex jobs_mutex_;
  std::condition_variable jobs_arrived_;
  std::deque<std::string> jobs_;
  bool closed_ = false;  // under jobs_mutex_
  std::thread heartbeat_, listener_;
};

}  // namespace studio::workers
