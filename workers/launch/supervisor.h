// Starts the ranks of a job on this machine, gathers their events and watches them, for dit-launch and
// the studio alike (torch-free, Qt-free, and never blocking longer than one poll()).
//
// One machine: the ranks are local dit-worker processes in one process group, their events come over a
// Unix socket in a private folder (0700, socket 0600), their stderr through pipes. Several machines: a
// dit-launch runs on each with --nnodes/--node_rank (torchrun's convention); the first machine's listens
// on TCP for every rank's events and checks the job's shared token; every machine supervises its own
// ranks. When a rank fails (exit, signal, error report, silence, lost connection) the others are asked to
// stop, then killed; the outcome names the rank, why, and the last lines of its log.
#pragma once
#include <sys/types.h>

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "plan/job_file.h"
#include "workers/launch/launch_args.h"
#include "workers/events/channel.h"
#include "workers/events/messages.h"

namespace studio::workers {

struct LaunchPlan {
  plan::JobFile job;
  std::string worker_exe;
  std::string visible_gpus;  // the ranks' CUDA_VISIBLE_DEVICES ("": as this process has it)
  RunSettings run;
  int events_port = 0;           // several machines: where the first listens for events (0: master_port + 1)
  std::string token;             // several machines: the job's shared secret; one machine: made here
  double start_timeout_s = 120;  // a rank must say hello within this
  double stop_grace_s = 10;      // asked to stop, a rank gets this long before SIGKILL
  // The ranks stay after a job that ended well, keeping their transformer, and take the next with run_next()
  // (dit-worker --serve; one machine).
  bool serve = false;
  bool hub() const { return run.node_rank == 0; }
  int local_ranks() const { return run.nproc_per_node > 0 ? run.nproc_per_node : job.parallel.world_size(); }
};

// What the launcher knows of one rank of the job.
struct RankView {
  int rank = 0;
  int64_t pid = 0;
  std::string host, device, phase = "starting";
  int phase_part = 0, phase_parts = 0;  // how far into the phase, where it counts parts (events::Phase)
  int step = 0, total = 0;
  double step_seconds = 0, total_step_seconds = 0;
  bool cached = false;    // the job runs with a step cache
  int calls_per_step = 1;  // its transformer calls a step (2 where each guidance branch is its own call)
  int reused_calls = 0;    // calls so far that reused it (with one call a step: steps)
  events::Resources resources;
  bool connected = false, finished = false;
  std::optional<events::Done> done;
  std::deque<std::string> log_tail;  // the last lines it logged or wrote to stderr
  double mean_step_seconds() const { return step > 0 ? total_step_seconds / step : 0; }
  double eta_seconds() const { return mean_step_seconds() * (total - step); }
};

struct Outcome {
  int exit_code = 0;     // 0, or the failing rank's (128 + signal when killed), 130 when cancelled
  int failed_rank = -1;
  events::ErrorKind kind = events::ErrorKind::Internal;
  std::string message;   // for the user: which rank, why, and its last lines
};

class Supervisor {
 public:
  // Every message a rank sent (after the hello checks), and each line of a local rank's stderr as a Log
  // message; `note` hears the launcher's own remarks (a dropped connection, a failure).
  using OnMessage = std::function<void(const events::Message&)>;
  using OnNote = std::function<void(const std::string&)>;
  Supervisor(LaunchPlan plan, OnMessage on_message, OnNote note);
  ~Supervisor();  // kills and reaps whatever still runs, removes the private folder
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  // Throws std::runtime_error when the ranks cannot be started (the ones already started are stopped).
  void start();
  // Waits up to `timeout_ms` for something to happen and handles it; false once the job is over.
  bool poll(int timeout_ms);
  // Serving: the job ended well and every rank waits for the next (poll() still watches them).
  bool idle() const;
  // Serving and idle: every rank runs `job` next (the same parallel configuration). std::logic_error otherwise.
  void run_next(const plan::JobFile& job);
  // Asks every rank to stop at its next step; those that do not are killed after stop_grace_s.
  void cancel();
  const std::vector<RankView>& ranks() const { return ranks_; }
  const Outcome& outcome() const { return outcome_; }

 private:
  struct Local;
  struct Peer;
  void accept_connections();
  void read_peer(Peer& p);
  void handle(int rank, const events::Message& m);
  void read_stderr(Local& l, bool final);
  void reap();
  void watch();
  void fail(int rank, events::ErrorKind kind, const std::string& why, int exit_code);
  void stop_all();
  std::string tail_of(int rank) const;
  void log_event(const events::Message& m);

  LaunchPlan plan_;
  OnMessage on_message_;
  OnNote note_;
  std::string folder_;  // private: job file and socket
  std::unique_ptr<events::Listener> listener_;
  std::vector<std::unique_ptr<Peer>> peers_;
  std::vector<Local> locals_;
  pid_t group_ = 0;
  std::vector<RankView> ranks_;
  Outcome outcome_;
  bool stopping_ = false, settled_ = false;
  std::chrono::steady_clock::time_point started_, stop_sent_, failed_at_;
  bool killed_ = false;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> events_log_{nullptr, &std::fclose};
  std::set<std::pair<int, std::string>> reported_lines_;  // rank, a line of an error it reported
};

// A TCP port that is free on loopback now (for a rendezvous a moment later).
int free_loopback_port();

}  // namespace studio::workers
