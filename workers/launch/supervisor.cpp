#include "workers/launch/supervisor.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "workers/launch/guarded_main.h"
#include "workers/launch/rank_process.h"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace studio::workers {

namespace {

constexpr size_t kTailLines = 20;
// How long a "lost a peer" report waits for the rank that really failed to be named.
constexpr auto kPeerLossGrace = std::chrono::seconds(2);
constexpr double kFailureGrace = 3;

void keep_in_tail(RankView& r, const std::string& line) {
  r.log_tail.push_back(line);
  if (r.log_tail.size() > kTailLines) r.log_tail.pop_front();
}

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

bool same_secret(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;  // no early exit: the time taken says nothing about where they differ
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace

struct Supervisor::Local {
  int rank = 0;
  pid_t pid = 0;
  int err_fd = -1;  // the rank's stdout and stderr
  std::string partial_line;
  bool exited = false;
};

struct Supervisor::Peer {
  std::unique_ptr<events::Connection> conn;
  int rank = -1;  // -1 until its hello is accepted
  Clock::time_point since = Clock::now(), last_heard = Clock::now();
  std::optional<Clock::time_point> closed_at;
};

int free_loopback_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    if (fd >= 0) ::close(fd);
    throw std::runtime_error("cannot find a free local port for the ranks to meet on");
  }
  ::close(fd);
  return ntohs(a.sin_port);
}

Supervisor::Supervisor(LaunchPlan plan, OnMessage on_message, OnNote note)
    : plan_(std::move(plan)), on_message_(std::move(on_message)), note_(std::move(note)) {}

Supervisor::~Supervisor() {
  bool running = false;
  for (auto& l : locals_) running |= !l.exited;
  if (running && group_ > 0) ::kill(-group_, SIGKILL);
  for (auto& l : locals_) {
    if (!l.exited) ::waitpid(l.pid, nullptr, 0);
    if (l.err_fd >= 0) ::close(l.err_fd);
  }
  peers_.clear();
  listener_.reset();
  std::error_code ec;
  if (!folder_.empty()) fs::remove_all(folder_, ec);
}

void Supervisor::start() {
  started_ = Clock::now();
  const int world = plan_.job.parallel.world_size();
  if (plan_.run.nnodes * plan_.local_ranks() != world)
    throw std::runtime_error(std::to_string(plan_.run.nnodes) + " machines x " + std::to_string(plan_.local_ranks()) +
                             " ranks each is not the " + std::to_string(world) + " ranks of " +
                             plan_.job.parallel.describe());
  for (int r = 0; r < world; ++r) ranks_.push_back(RankView{r});
  const bool several = plan_.run.nnodes > 1;
  if (several && plan_.serve) throw std::logic_error("ranks that serve several jobs run on one machine");
  if (several && plan_.token.empty())
    throw std::runtime_error("a job on several machines needs a shared secret: set DIT_STUDIO_TOKEN to the same random "
                             "value on every machine (e.g. export DIT_STUDIO_TOKEN=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \\n'))");
  if (plan_.token.empty()) plan_.token = events::random_token();
  if (plan_.run.master_addr.empty()) plan_.run.master_addr = "127.0.0.1";
  if (plan_.run.master_port == 0) plan_.run.master_port = free_loopback_port();
  if (plan_.events_port == 0) plan_.events_port = plan_.run.master_port + 1;

  const char* tmp = std::getenv("TMPDIR");
  std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/dit-launch-XXXXXX";
  if (!::mkdtemp(tmpl.data())) throw std::runtime_error("cannot create a private folder in " + tmpl + ": " + strerror(errno));
  folder_ = tmpl;  // 0700: the job file and the socket are the user's alone
  const std::string job_path = folder_ + "/job.json";
  plan::write_job_file(job_path, plan_.job);
  std::string endpoint;
  if (plan_.hub()) {
    listener_ = several ? events::Listener::tcp(plan_.run.master_addr, plan_.events_port)
                        : events::Listener::unix_socket(folder_ + "/events.sock");
    endpoint = listener_->endpoint().text;
  } else {
    endpoint = "tcp:" + plan_.run.master_addr + ":" + std::to_string(plan_.events_port);
  }
  if (!plan_.run.events_log.empty()) {
    events_log_.reset(std::fopen(plan_.run.events_log.c_str(), "w"));
    if (!events_log_) throw std::runtime_error("cannot write the events log " + plan_.run.events_log + ": " + strerror(errno));
  }

  std::vector<std::string> argv{"dit-worker", "--job", job_path};
  if (plan_.serve) argv.push_back("--serve");
  for (int i = 0; i < plan_.local_ranks(); ++i) {
    const int rank = plan_.run.node_rank * plan_.local_ranks() + i;
    std::vector<std::pair<std::string, std::string>> set{
        {"RANK", std::to_string(rank)},
        {"LOCAL_RANK", std::to_string(i)},
        {"WORLD_SIZE", std::to_string(world)},
        {"LOCAL_WORLD_SIZE", std::to_string(plan_.local_ranks())},
        {"MASTER_ADDR", plan_.run.master_addr},
        {"MASTER_PORT", std::to_string(plan_.run.master_port)},
        {"DIT_EVENTS", endpoint},
        {"DIT_EVENTS_TOKEN", plan_.token},  // the environment, not argv: ps shows argv to all
        {"DIT_COLLECTIVE_TIMEOUT_S", std::to_string(plan_.run.collective_timeout_s)}};
    if (!plan_.visible_gpus.empty()) set.emplace_back("CUDA_VISIBLE_DEVICES", plan_.visible_gpus);
    auto env = environment_with(set);
    RankProcess started;
    try {
      started = spawn_rank(plan_.worker_exe, argv, std::move(env), group_);  // group 0: the first leads a new one
    } catch (const std::exception& e) {
      if (group_) ::kill(-group_, SIGKILL);  // the others would wait for the missing rank until timing out
      for (auto& l : locals_) {
        ::waitpid(l.pid, nullptr, 0);
        l.exited = true;
      }
      throw std::runtime_error("cannot start rank " + std::to_string(rank) + " (" + plan_.worker_exe +
                               "): " + e.what());
    }
    if (!group_) group_ = started.pid;
    locals_.push_back(Local{rank, started.pid, started.output_fd});
  }
}

bool Supervisor::poll(int timeout_ms) {
  std::vector<pollfd> fds;
  if (listener_) fds.push_back({listener_->fd(), POLLIN, 0});
  for (auto& p : peers_)
    if (!p->closed_at) fds.push_back({p->conn->fd(), POLLIN, 0});
  for (auto& l : locals_)
    if (l.err_fd >= 0) fds.push_back({l.err_fd, POLLIN, 0});
  ::poll(fds.data(), fds.size(), std::min(timeout_ms, 100));  // children's exits wake nothing: look often

  accept_connections();
  for (auto& p : peers_)
    if (!p->closed_at) read_peer(*p);
  for (auto& l : locals_) read_stderr(l, false);
  reap();
  watch();

  if (idle()) return false;  // serving: this job is over, the ranks wait for the next
  bool locals_running = false;
  for (auto& l : locals_) locals_running |= !l.exited;
  if (locals_running) return true;
  for (auto& p : peers_)  // what the ranks sent just before they exited
    if (!p->closed_at) read_peer(*p);
  if (plan_.hub() && !stopping_) {
    for (auto& r : ranks_)
      if (!r.finished) return true;  // a rank on another machine is still at work
  }
  // A cancel that came after rank 0, the one that writes, had reported its result stopped nothing the user
  // asked for: the files are whole, and the run is done.
  if (outcome_.kind == events::ErrorKind::Cancelled && outcome_.failed_rank < 0 && plan_.hub() &&
      !ranks_.empty() && ranks_.front().done) {
    outcome_ = {};
    if (note_) note_("the cancel came after the output was written: it is complete");
  }
  // Over: a clean end needs every rank's done.
  if (outcome_.exit_code == 0 && plan_.hub())
    for (auto& r : ranks_)
      if (!r.done) {
        fail(r.rank, events::ErrorKind::Internal, "ended without reporting a result", 1);
        break;
      }
  if (outcome_.failed_rank >= 0) {
    const auto& r = ranks_[size_t(outcome_.failed_rank)];
    std::string who = "rank " + std::to_string(r.rank);
    if (r.pid) who += " (pid " + std::to_string(r.pid) + (r.host.empty() ? "" : " on " + r.host) + ")";
    outcome_.message = who + " " + outcome_.message + (ranks_.size() > 1 ? "; the other ranks were stopped" : "");
    if (const auto tail = tail_of(r.rank); !tail.empty()) outcome_.message += "\nits last lines:\n" + tail;
  }
  return false;
}

bool Supervisor::idle() const {
  if (!plan_.serve || stopping_ || outcome_.exit_code != 0) return false;
  return std::all_of(ranks_.begin(), ranks_.end(), [](const RankView& r) { return r.done.has_value(); }) &&
         std::none_of(locals_.begin(), locals_.end(), [](const Local& l) { return l.exited; });
}

void Supervisor::run_next(const plan::JobFile& job) {
  if (!idle()) throw std::logic_error("run_next: the ranks are not waiting for a job");
  if (!(job.parallel == plan_.job.parallel))
    throw std::logic_error("run_next: the ranks serve " + plan_.job.parallel.describe() + ", not " +
                           job.parallel.describe());
  plan_.job = job;
  for (auto& r : ranks_) r = RankView{r.rank, r.pid, r.host, r.device};
  for (auto& r : ranks_) r.connected = true;
  const auto next = events::next_job(plan::to_worker_json(job));
  for (auto& p : peers_)
    if (p->rank >= 0 && !p->closed_at) p->conn->send(next);
}

void Supervisor::accept_connections() {
  if (!listener_) return;
  while (auto c = listener_->accept()) {
    auto p = std::make_unique<Peer>();
    p->conn = std::move(c);
    peers_.push_back(std::move(p));
  }
}

void Supervisor::read_peer(Peer& p) {
  std::vector<events::Message> msgs;
  bool open = true;
  std::string broken;
  try {
    open = p.conn->read_available(msgs);
  } catch (const events::ProtocolError& e) {
    broken = e.what();
    open = false;
  }
  for (auto& m : msgs) {
    if (p.rank < 0) {  // the first message must be a valid hello with the job's token
      std::string why;
      events::Hello h;
      try {
        h = events::Hello::parse(m);
        if (!same_secret(h.token, plan_.token)) why = "it did not present the job's token";
        else if (h.world_size != int(ranks_.size()) || h.rank >= int(ranks_.size()))
          why = "it is rank " + std::to_string(h.rank) + " of " + std::to_string(h.world_size) + ", not of this job's " +
                std::to_string(ranks_.size());
        else if (ranks_[size_t(h.rank)].connected) why = "rank " + std::to_string(h.rank) + " is already connected";
      } catch (const events::ProtocolError& e) {
        why = std::string("its first message is not a valid hello (") + e.what() + ")";
      }
      if (!why.empty()) {
        if (note_) note_("dropped an events connection from " + p.conn->peer() + ": " + why);
        p.conn->close();
        p.closed_at = Clock::now();
        return;
      }
      p.rank = h.rank;
      auto& r = ranks_[size_t(h.rank)];
      r.connected = true;
      r.pid = h.pid;
      r.host = h.host;
      r.device = h.device;
      m.body.erase("token");  // it goes no further than this check
    }
    p.last_heard = Clock::now();
    try {
      handle(p.rank, m);
    } catch (const events::ProtocolError& e) {
      broken = e.what();
      open = false;
      break;
    }
  }
  if (open) return;
  if (!broken.empty() && note_)
    note_("dropped the events connection of rank " + std::to_string(p.rank) + " (" + p.conn->peer() + "): " + broken);
  p.conn->close();
  p.closed_at = Clock::now();
}

void Supervisor::handle(int rank, const events::Message& m) {
  if (events::rank_of(m) != rank)
    throw events::ProtocolError("a message about rank " + std::to_string(events::rank_of(m)) + " on rank " +
                                std::to_string(rank) + "'s connection");
  auto& r = ranks_[size_t(rank)];
  switch (m.kind) {
    case events::Kind::Phase: {
      const auto p = events::Phase::parse(m);
      r.phase = p.phase, r.phase_part = p.part, r.phase_parts = p.parts;
      if (p.resources) r.resources = *p.resources;
      break;
    }
    case events::Kind::Progress: {
      const auto p = events::Progress::parse(m);
      r.step = p.step;
      r.total = p.total;
      r.step_seconds = p.seconds;
      r.total_step_seconds += p.seconds;
      r.cached = p.full >= 0;
      r.calls_per_step = p.calls;
      if (p.full >= 0) r.reused_calls += p.calls - p.full;
      r.resources = p.resources;
      break;
    }
    case events::Kind::Preview:
    case events::Kind::Frame: events::Picture::parse(m); break;  // checked here so that no consumer sees a bad one
    case events::Kind::Log: keep_in_tail(r, events::LogLine::parse(m).text); break;
    case events::Kind::Done:
      r.done = events::Done::parse(m);
      r.finished = true;
      r.phase = "done";
      break;
    case events::Kind::Error: {
      const auto e = events::Error::parse(m);
      // The rank prints it on stderr too (for launchers without our events): those lines stay in its tail, where
      // the failure report ends with them, but are not passed on as they come, the failure saying it already.
      std::string lines = "[rank " + std::to_string(rank) + "] " + e.message;
      for (size_t from = 0, nl = 0; e.kind != events::ErrorKind::Cancelled && from < lines.size(); from = nl + 1) {
        nl = std::min(lines.find('\n', from), lines.size());
        reported_lines_.insert({rank, lines.substr(from, nl - from)});
      }
      r.phase = "failed";
      r.finished = true;  // it reported how it ended
      if (e.kind == events::ErrorKind::Cancelled) break;  // a stop we asked for
      fail(rank, e.kind, "failed (" + std::string(events::error_kind_name(e.kind)) + "): " + e.message,
           exit_code_of(e.kind));
      break;
    }
    case events::Kind::Hello:
    case events::Kind::Heartbeat:
    case events::Kind::Cancel:
    case events::Kind::Job: break;
  }
  if (m.kind == events::Kind::Heartbeat) return;
  log_event(m);
  if (on_message_) on_message_(m);
}

void Supervisor::read_stderr(Local& l, bool final) {
  if (l.err_fd < 0) return;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(l.err_fd, buf, sizeof buf);
    if (n > 0) {
      l.partial_line.append(buf, size_t(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n == 0 || (n < 0 && errno != EAGAIN)) {
      ::close(l.err_fd);
      l.err_fd = -1;
      final = true;
    }
    break;
  }
  size_t nl;
  while ((nl = l.partial_line.find('\n')) != std::string::npos || (final && !l.partial_line.empty())) {
    std::string line = l.partial_line.substr(0, nl);
    l.partial_line.erase(0, nl == std::string::npos ? std::string::npos : nl + 1);
    if (reported_lines_.count({l.rank, line})) {  // its error, reported already
      keep_in_tail(ranks_[size_t(l.rank)], line);
      continue;
    }
    events::Message m = events::LogLine{l.rank, line}.make();
    m.body["stream"] = "stderr";
    handle(l.rank, m);
  }
}

void Supervisor::reap() {
  for (;;) {
    int status = 0;
    const pid_t pid = ::waitpid(-group_, &status, WNOHANG);
    if (pid <= 0) return;
    for (auto& l : locals_) {
      if (l.pid != pid) continue;
      l.exited = true;
      read_stderr(l, true);
      auto& r = ranks_[size_t(l.rank)];
      r.finished = true;
      if (!r.pid) r.pid = pid;
      if (exit_status_of(status) == 0) break;
      if (l.rank == 0) remove_partial_outputs(plan_.job.job, pid);  // the rank that writes (parallel::writes)
      if (r.phase != "failed") r.phase = WIFSIGNALED(status) ? "killed" : "failed";
      if (!stopping_ || outcome_.kind == events::ErrorKind::LostPeer)
        fail(l.rank, kind_of_status(status), describe_status(status), exit_status_of(status));
    }
  }
}

void Supervisor::watch() {
  const auto now = Clock::now();
  for (auto& p : peers_) {
    if (p->rank < 0) {
      if (!p->closed_at && now - p->since > std::chrono::seconds(5)) {
        if (note_) note_("dropped an events connection from " + p->conn->peer() + ": no hello within 5 s");
        p->conn->close();
        p->closed_at = now;
      }
      continue;
    }
    auto& r = ranks_[size_t(p->rank)];
    // Once a failure is settled, what follows is the stop we caused; until then a rank that vanishes may
    // be the one that really failed.
    if (r.finished || (stopping_ && settled_)) continue;
    const bool local = std::any_of(locals_.begin(), locals_.end(), [&](const Local& l) { return l.rank == r.rank; });
    // A local rank's exit status says more, and comes within a poll or two; a remote one's never comes.
    if (p->closed_at && (!local || now - *p->closed_at > kPeerLossGrace))
      fail(r.rank, events::ErrorKind::Crash, "closed its events connection without a result: the rank or its machine died", 1);
    else if (!stopping_ && !p->closed_at && seconds_since(p->last_heard) > plan_.run.heartbeat_timeout_s) {
      fail(r.rank, events::ErrorKind::Hung,
           "sent nothing for " + std::to_string(int(plan_.run.heartbeat_timeout_s)) +
               " s, not even a heartbeat: it hangs (stopped, deadlocked, or its machine is unreachable)", 1);
      for (auto& l : locals_)
        if (l.rank == r.rank && !l.exited) ::kill(l.pid, SIGKILL);  // it answers no polite request
    }
  }
  if (plan_.hub() && !stopping_ && seconds_since(started_) > plan_.start_timeout_s)
    for (auto& r : ranks_)
      if (!r.connected && !r.finished) {
        fail(r.rank, events::ErrorKind::Hung,
             "did not report within " + std::to_string(int(plan_.start_timeout_s)) +
                 " s of the start (not started on its machine, or the events address is unreachable from it)", 1);
        break;
      }
  if (outcome_.kind == events::ErrorKind::LostPeer && !settled_ && now - failed_at_ > kPeerLossGrace) {
    settled_ = true;  // no peer was named as the one that failed: the lost peer is what is known
    if (note_ && ranks_.size() > 1) note_("rank " + std::to_string(outcome_.failed_rank) + " " + outcome_.message);
  }
  // A cancel lets the ranks finish their step; after a failure they are likely waiting on the failed
  // rank in a collective that will never complete, so they get little time.
  const double grace = outcome_.kind == events::ErrorKind::Cancelled ? plan_.stop_grace_s : kFailureGrace;
  if (stopping_ && !killed_ && seconds_since(stop_sent_) > grace) {
    killed_ = true;
    if (note_) note_("ranks still running " + std::to_string(int(grace)) + " s after the stop: killing them");
    for (auto& l : locals_)
      if (!l.exited) ::kill(l.pid, SIGKILL);
  }
}

void Supervisor::fail(int rank, events::ErrorKind kind, const std::string& why, int exit_code) {
  // The first failure is the one reported, except that a rank which only lost its peer gives way to the
  // peer that really failed, if that one is named within kPeerLossGrace.
  if (settled_) return;
  const bool provisional_before = outcome_.failed_rank >= 0 && outcome_.kind == events::ErrorKind::LostPeer;
  if (outcome_.failed_rank >= 0 && !(provisional_before && kind != events::ErrorKind::LostPeer)) return;
  outcome_ = {exit_code == 0 ? 1 : exit_code, rank, kind, why};
  failed_at_ = Clock::now();
  settled_ = kind != events::ErrorKind::LostPeer;
  // Told at once while the other ranks are stopped (up to their grace); alone, the report follows right away. A lost
  // peer is a symptom: told once the grace has passed without the peer that failed.
  if (note_ && ranks_.size() > 1 && settled_) note_("rank " + std::to_string(rank) + " " + why);
  if (!stopping_) stop_all();
}

void Supervisor::cancel() {
  if (stopping_) return;
  outcome_ = {130, -1, events::ErrorKind::Cancelled, "cancelled; every rank was stopped"};
  settled_ = true;
  stop_all();
}

void Supervisor::stop_all() {
  stopping_ = true;
  stop_sent_ = Clock::now();
  for (auto& p : peers_)
    if (p->rank >= 0 && !p->closed_at) p->conn->send(events::cancel());
  for (auto& l : locals_)
    if (!l.exited) ::kill(l.pid, SIGTERM);
}

std::string Supervisor::tail_of(int rank) const {
  std::string out;
  for (const auto& line : ranks_[size_t(rank)].log_tail) out += "  " + line + "\n";
  if (!out.empty()) out.pop_back();
  return out;
}

void Supervisor::log_event(const events::Message& m) {
  if (!events_log_) return;
  nlohmann::json line = {{"t", seconds_since(started_)}, {"kind", events::kind_name(m.kind)}, {"body", m.body}};
  if (!m.payload.empty()) line["payload_bytes"] = m.payload.size();
  std::fprintf(events_log_.get(), "%s\n", line.dump().c_str());
  std::fflush(events_log_.get());
}

}  // namespace studio::workers
