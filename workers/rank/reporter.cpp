#include "workers/rank/reporter.h"

#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <vector>

namespace studio::workers {

namespace {

// After the launcher is gone, a rank gets this long to stop at a step boundary before it leaves anyway.
constexpr auto kOrphanGrace = std::chrono::seconds(10);

}  // namespace

events::Resources host_resources() {
  events::Resources r;
  std::ifstream status("/proc/self/status");
  std::string key;
  uint64_t kib = 0;
  while (status >> key) {
    if (key == "VmRSS:" && status >> kib) r.host_rss = kib << 10;
    else if (key == "VmHWM:" && status >> kib) r.host_peak = kib << 10;
    status.ignore(1 << 12, '\n');
  }
  return r;
}

void reset_host_peak() { std::ofstream("/proc/self/clear_refs") << "5"; }

RankReporter::RankReporter(int rank, int world_size, const std::string& device) : rank_(rank) {
  const char* where = std::getenv("DIT_EVENTS");
  if (!where || !*where) return;
  conn_ = events::connect_to(events::Endpoint::parse(where));
  events::Hello h;
  h.rank = rank;
  h.world_size = world_size;
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  h.host = host;
  h.pid = ::getpid();
  h.device = device;
  if (const char* t = std::getenv("DIT_EVENTS_TOKEN")) h.token = t;
  ::unsetenv("DIT_EVENTS_TOKEN");  // nothing this rank starts needs it
  send(h.make());
  try {
    start_threads();
  } catch (...) {  // no thread may be left joinable when a constructor throws
    stopping_.store(true);
    if (heartbeat_.joinable()) heartbeat_.join();
    throw;
  }
}

void RankReporter::start_threads() {
  heartbeat_ = std::thread([this] {
    while (!stopping_.load()) {
      send(events::heartbeat(rank_));
      for (int i = 0; i < 10 && !stopping_.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  listener_ = std::thread([this] { listen(); });
}

RankReporter::~RankReporter() {
  stopping_.store(true);
  if (heartbeat_.joinable()) heartbeat_.join();
  if (listener_.joinable()) listener_.join();
}

void RankReporter::listen() {
  std::vector<events::Message> in;
  while (!stopping_.load()) {
    pollfd p{conn_->fd(), POLLIN, 0};
    if (::poll(&p, 1, 200) <= 0) continue;
    bool open = false;
    try {
      open = conn_->read_available(in);
    } catch (const events::ProtocolError&) {
    }
    for (const auto& m : in) {
      if (m.kind == events::Kind::Cancel) {
        cancel_.store(true);
        std::lock_guard<std::mutex> lock(jobs_mutex_);
        closed_ = true;  // a rank waiting for a job ends instead
      } else if (m.kind == events::Kind::Job) {
        try {
          auto text = events::job_text(m);
          std::lock_guard<std::mutex> lock(jobs_mutex_);
          jobs_.push_back(std::move(text));
        } catch (const events::ProtocolError&) {
          open = false;  // a launcher that breaks the protocol is not one to serve
        }
      }
      jobs_arrived_.notify_all();
    }
    in.clear();
    if (open) continue;
    {
      std::lock_guard<std::mutex> lock(jobs_mutex_);
      closed_ = true;
    }
    jobs_arrived_.notify_all();
    // The launcher is gone (or broke the protocol): nobody is left to read our results.
    std::fprintf(stderr, "[rank %d] the launcher's connection closed; stopping\n", rank_);
    cancel_.store(true);
    const auto deadline = std::chrono::steady_clock::now() + kOrphanGrace;
    while (!stopping_.load() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (!stopping_.load()) ::_exit(130);
    return;
  }
}

std::optional<std::string> RankReporter::next_job(const std::function<bool()>& stop) {
  if (!conn_) return std::nullopt;
  std::unique_lock<std::mutex> lock(jobs_mutex_);
  while (!closed_ && jobs_.empty() && !stop())  // a signal wakes nobody: look again now and then
    jobs_arrived_.wait_for(lock, std::chrono::milliseconds(200));
  if (jobs_.empty()) return std::nullopt;
  auto text = std::move(jobs_.front());
  jobs_.pop_front();
  return text;
}

void RankReporter::send(const events::Message& m) {
  if (!conn_) return;
  std::lock_guard<std::mutex> lock(send_mutex_);
  conn_->send(m);  // a closed connection is noticed by listen()
}

void RankReporter::phase(const std::string& name, int part, int parts,
                         const std::optional<events::Resources>& resources) {
  if (conn_) send(events::Phase{rank_, name, part, parts, resources}.make());
}

void RankReporter::progress(const events::Progress& p) {
  if (conn_) return send(p.make());
  std::fprintf(stderr, "[rank %d] step %d/%d  %.3f s  sent %.1f MB  received %.1f MB\n", rank_, p.step, p.total,
               p.seconds, double(p.resources.bytes_sent) / 1e6, double(p.resources.bytes_received) / 1e6);
}

void RankReporter::picture(events::Kind kind, const events::Picture& p) {
  if (conn_) send(p.make(kind));
}

void RankReporter::log(const std::string& line) {
  if (conn_) return send(events::LogLine{rank_, line}.make());
  if (rank_ == 0)  // rank 0 narrates the job; the others would repeat it
    std::cerr << "[rank " << rank_ << "] " << line << std::endl;
}

void RankReporter::done(const events::Done& d) {
  if (conn_) return send(d.make());
  std::fprintf(stderr, "[rank %d] done: loading %.2f s, denoising %.2f s, decoding and writing %.2f s\n", rank_,
               d.seconds_loading, d.seconds_denoising, d.seconds_decoding);
}

void RankReporter::error(events::ErrorKind kind, const std::string& message) {
  if (conn_) send(events::Error{rank_, kind, message}.make());
}

}  // namespace studio::workers
