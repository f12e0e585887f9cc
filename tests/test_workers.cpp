// dit-launch and dit-worker as processes: the events of whole runs, and every way a rank can fail (killed,
// out of memory, hung, cancelled, bad input), the launcher itself killed, two jobs at once, and a job over
// TCP between two launchers (loopback, then two network namespaces). Every test checks that no process
// is left behind.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <thread>

#include "io/safetensors/safetensors_file.h"
#include "process.h"
#include "support.h"
#include "workers/events/messages.h"

using namespace studio;
using nlohmann::json;
using test::Args;
namespace fs = std::filesystem;

namespace {

const std::string kLaunch = test::bin("dit-launch");
const std::string kWorker = test::bin("dit-worker");
constexpr int kRunMs = 120000;

// A short job on the built-in demo model: 9 frames, a few steps.
Args demo_job(int steps) {
  return {"--prompt", "a paper boat", "--num_frames", "9", "--num_inference_steps", std::to_string(steps)};
}

// The events the launcher has logged so far: whole lines only, since it may be writing the last one.
std::vector<json> read_events(const std::string& path) {
  std::vector<json> out;
  std::ifstream f(path);
  const std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  for (size_t at = 0, end; (end = all.find('\n', at)) != std::string::npos; at = end + 1)
    out.push_back(json::parse(all.substr(at, end - at)));
  return out;
}

std::vector<json> of_kind(const std::vector<json>& all, const char* kind, int rank = -1) {
  std::vector<json> out;
  for (const auto& e : all)
    if (e["kind"] == kind && (rank < 0 || e["body"]["rank"] == rank)) out.push_back(e);
  return out;
}

std::vector<int64_t> pids_of(const std::vector<json>& all) {
  std::vector<int64_t> pids;
  for (const auto& h : of_kind(all, "hello")) pids.push_back(h["body"]["pid"].get<int64_t>());
  return pids;
}

int64_t pid_of_rank(const std::vector<json>& all, int rank) {
  const auto hello = of_kind(all, "hello", rank);
  if (hello.empty()) throw std::runtime_error("no hello from rank " + std::to_string(rank));
  return hello[0]["body"]["pid"].get<int64_t>();
}

// Whether `pid` still runs: it exists and is not a zombie (an orphan's exit is reaped by init, whenever).
bool still_runs(int64_t pid) {
  if (::kill(pid_t(pid), 0) != 0) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  const auto paren = line.rfind(')');  // "pid (name) state ...": the name may hold spaces
  return paren == std::string::npos || paren + 2 >= line.size() || line[paren + 2] != 'Z';
}

// True once none of `pids` runs (waits up to `ms` for the kernel to finish with them).
bool all_gone(const std::vector<int64_t>& pids, int ms = 10000) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  for (;;) {
    bool any = false;
    for (auto pid : pids) any |= still_runs(pid);
    if (!any) return true;
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

int64_t file_size(const std::string& path) { return fs::exists(path) ? int64_t(fs::file_size(path)) : -1; }

// Whether nothing listens on (or holds) 127.0.0.1:`port` now.
bool port_free(int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(uint16_t(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const bool free = fd >= 0 && ::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0;
  if (fd >= 0) ::close(fd);
  return free;
}

// A --master_port for a job over TCP: it and the next port (the events') free now, both below the kernel's
// ephemeral range (32768 on), where no outgoing connection can take them before the launcher listens.
int free_master_port() {
  for (int i = 0; i < 1000; ++i) {
    const int port = 20000 + int((unsigned(::getpid()) * 7919u + unsigned(i) * 104729u) % 12000u);
    if (port_free(port) && port_free(port + 1)) return port;
  }
  throw std::runtime_error("no two adjacent free ports between 20000 and 32000 on 127.0.0.1");
}

// A TCP connection to 127.0.0.1:`port`, tried for up to `attempts` x 100 ms; -1 if none was made.
int connect_loopback(int port, int attempts) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(uint16_t(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (int i = 0; i < attempts; ++i) {
    const auto next = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) return fd;
    if (fd >= 0) ::close(fd);
    std::this_thread::sleep_until(next);
  }
  return -1;
}

// True once the peer has closed `fd` (within `ms`); whatever it sends meanwhile is read and dropped.
bool wait_for_close(int fd, int ms) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  char buf[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, int(left.count())) <= 0) continue;
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) return true;
  }
}

class Workers : public ::testing::Test {
 protected:
  test::TempDir tmp_;
  std::string path(const std::string& name) { return tmp_.path(name); }
};

struct Layout {
  const char* name;
  Args flags;
  int world;
};

class EventsOfWholeRuns : public Workers, public ::testing::WithParamInterface<Layout> {};

TEST_P(EventsOfWholeRuns, on_every_rank) {
  const int world = GetParam().world, steps = 3;
  const std::string log = path("events.jsonl"), clip = path("run.mp4");
  // The launcher's private folder (job file, socket) goes under TMPDIR, and is gone when it is.
  const std::string private_tmp = path("tmp");
  fs::create_directories(private_tmp);
  test::Process p;
  p.start(kLaunch, demo_job(steps) + GetParam().flags + Args{"--output", clip, "--events_log", log},
          {{"TMPDIR", private_tmp}});
  const auto r = test::finish(p, kRunMs);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(fs::is_empty(private_tmp));
  const auto all = read_events(log);
  const auto pids = pids_of(all);
  ASSERT_EQ(int(pids.size()), world);
  for (int rank = 0; rank < world; ++rank) {
    const auto hello = of_kind(all, "hello", rank);
    ASSERT_EQ(hello.size(), size_t(1));
    EXPECT_EQ(hello[0]["body"]["device"], "cpu");
    EXPECT_FALSE(hello[0]["body"].contains("token"));  // the secret goes no further than the check
    const auto progress = of_kind(all, "progress", rank);
    ASSERT_EQ(int(progress.size()), steps);
    for (int i = 0; i < steps; ++i) {
      const auto& b = progress[size_t(i)]["body"];
      EXPECT_EQ(b["step"].get<int>(), i + 1);
      EXPECT_EQ(b["total"].get<int>(), steps);
      EXPECT_GT(b["seconds"].get<double>(), 0);
      EXPECT_GT(b["host_rss"].get<uint64_t>(), 10u << 20);
      EXPECT_GE(b["host_peak"].get<uint64_t>(), b["host_rss"].get<uint64_t>());
      EXPECT_TRUE(b["bytes_sent"].get<uint64_t>() > 0 && b["bytes_received"].get<uint64_t>() > 0);
    }
    EXPECT_EQ(of_kind(all, "done", rank).size(), size_t(1));
  }
  std::vector<std::string> phases;
  std::vector<std::pair<int, int>> decoded;  // the decode's parts as rank 0 told them
  for (const auto& e : of_kind(all, "phase", 0)) {
    if (!e["body"].contains("parts")) {
      phases.push_back(e["body"]["phase"]);
      continue;
    }
    decoded.push_back({e["body"]["part"], e["body"]["parts"]});
    // The decode's memory, which no step reports: the launcher's line and the studio show it as it goes.
    EXPECT_GT(e["body"].value("host_rss", uint64_t(0)), 10u << 20) << e.dump();
    EXPECT_GE(e["body"].value("host_peak", uint64_t(0)), e["body"].value("host_rss", uint64_t(0)));
  }
  EXPECT_EQ(phases, (std::vector<std::string>{"starting", "encoding", "loading", "denoising", "decoding", "writing"}));
  // 3 latent frames decode as one batch of frames: 1 of 1.
  EXPECT_EQ(decoded, (std::vector<std::pair<int, int>>{{1, 1}}));
  // A preview per step from rank 0 (the latent grid, 24 x 36), then the 9 decoded frames (192 x 288).
  const auto previews = of_kind(all, "preview");
  ASSERT_EQ(int(previews.size()), steps);
  EXPECT_EQ(previews[0]["payload_bytes"].get<int>(), 24 * 36 * 3);
  const auto frames = of_kind(all, "frame");
  ASSERT_EQ(frames.size(), size_t(9));
  for (int i = 0; i < 9; ++i) {
    EXPECT_EQ(frames[size_t(i)]["body"]["index"].get<int>(), i);
    EXPECT_EQ(frames[size_t(i)]["payload_bytes"].get<int>(), 192 * 288 * 3);
  }
  const auto done = of_kind(all, "done", 0);
  ASSERT_FALSE(done.empty());
  EXPECT_EQ(done[0]["body"]["outputs"][0].get<std::string>(), clip);
  EXPECT_GT(file_size(clip), 1000);
  EXPECT_TRUE(all_gone(pids));
}

INSTANTIATE_TEST_SUITE_P(Layouts, EventsOfWholeRuns,
                         ::testing::Values(Layout{"ulysses2", {"--ulysses_degree", "2"}, 2},
                                           Layout{"cfg_x_ring2", {"--use_cfg_parallel", "--ring_degree", "2"}, 4}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST_F(Workers, a_killed_rank_is_named_with_its_last_lines) {
  const std::string log = path("killed.jsonl");
  test::Process p;
  p.start(kLaunch, demo_job(1000) + Args{"--ring_degree", "2", "--events_log", log});
  ASSERT_TRUE(p.wait_for_stderr("[rank 1  denoising  step 2/1000", kRunMs)) << p.err();
  const auto pids = pids_of(read_events(log));
  ASSERT_EQ(pids.size(), size_t(2));
  const int64_t victim = pid_of_rank(read_events(log), 1);
  const auto start = std::chrono::steady_clock::now();
  ::kill(pid_t(victim), SIGKILL);
  const auto r = test::finish(p, 30000);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
  std::printf("the launcher returned %lld ms after the kill\n", (long long)ms);
  EXPECT_LT(ms, 15000);
  EXPECT_EQ(r.code, 128 + SIGKILL);
  EXPECT_TRUE(test::contains(r.err, "rank 1 (pid " + std::to_string(victim) + " on ")) << r.err;
  EXPECT_TRUE(test::contains(r.err, "was killed by signal 9 (Killed: the system's out-of-memory killer sends it "
                                    "when the machine runs out of memory; `dmesg` says whether it did); the other "
                                    "ranks were stopped"))
      << r.err;
  EXPECT_TRUE(test::contains(r.err, "its last lines:")) << r.err;
  EXPECT_TRUE(all_gone(pids));
}

TEST_F(Workers, out_of_memory_on_one_rank_is_named) {
  const auto r = test::run(kLaunch, demo_job(2) + Args{"--ulysses_degree", "2", "--events_log", path("oom.jsonl")},
                           kRunMs, {{"DIT_WORKER_MEMORY_LIMIT_MB", "1:0"}});
  EXPECT_EQ(r.code, 4);
  EXPECT_TRUE(test::contains(r.err, "rank 1 (pid") && test::contains(r.err, "failed (out_of_memory): out of memory"))
      << r.err;
  EXPECT_TRUE(test::contains(r.err, "can't allocate memory") && test::contains(r.err, "DIT_WORKER_MEMORY_LIMIT_MB=1:0"))
      << r.err;
  EXPECT_TRUE(all_gone(pids_of(read_events(path("oom.jsonl")))));
}

TEST_F(Workers, a_malformed_memory_fault_is_refused) {
  const auto r = test::run(kLaunch, demo_job(2), kRunMs, {{"DIT_WORKER_MEMORY_LIMIT_MB", "1:lots"}});
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_TRUE(test::contains(r.err, "DIT_WORKER_MEMORY_LIMIT_MB is '1:lots': expected RANK:MB")) << r.err;
  EXPECT_FALSE(test::contains(r.err, "step 1/")) << r.err;
}

TEST_F(Workers, out_of_memory_while_decoding_retries_in_tiles) {
  // Rank 0's tensors may take 150 MB once the first step is done: enough to denoise and to decode 64 x 96-pixel
  // tiles, not to decode 192 x 288 frames whole; well apart from what either needs (docs/performance.md,
  // "Figures the tests are sized by").
  const std::string out = path("retry.safetensors"), log = path("retry.jsonl");
  const auto r = test::run(kLaunch,
                           demo_job(2) + Args{"--tile_sample_min_height", "64", "--tile_sample_min_width", "96",
                                              "--save_tensors", out, "--events_log", log},
                           kRunMs, {{"DIT_WORKER_MEMORY_LIMIT_MB", "0:150"}});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(test::contains(r.err, "out of memory decoding at full size") &&
              test::contains(r.err, "decoding again in tiles of 64 x 96 pixels from the same latents"))
      << r.err;
  const auto all = read_events(log);
  EXPECT_EQ(of_kind(all, "progress", 0).size(), size_t(2));  // denoised once
  int decoding = 0;
  std::vector<std::pair<int, int>> tiles;  // the tiled decode's progress, tile by tile
  for (const auto& e : of_kind(all, "phase", 0)) {
    if (e["body"]["phase"] != "decoding") continue;
    if (!e["body"].contains("parts")) ++decoding;
    else if (decoding == 2) tiles.push_back({e["body"]["part"], e["body"]["parts"]});
  }
  EXPECT_EQ(decoding, 2);
  // 24 x 36 latent pixels in tiles of 8 x 12 that start every 6 rows and 9 columns: 4 x 4 tiles.
  ASSERT_EQ(tiles.size(), 16u);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(tiles[size_t(i)], std::make_pair(i + 1, 16));
  EXPECT_TRUE(test::contains(r.err, "decoding   16/16 (100%)  RSS ")) << r.err;  // the launcher's line for it
  const auto file = io::SafetensorsFile::open(out);
  const auto* video = file->find("video");
  ASSERT_TRUE(video);
  EXPECT_EQ(video->shape, (std::vector<int64_t>{1, 3, 9, 192, 288}));
}

TEST_F(Workers, a_hung_rank_is_found_by_its_silence) {
  const std::string log = path("hung.jsonl");
  test::Process p;
  // The silence allowed is 10 heartbeats (one a second): a rank whose heartbeat thread a loaded machine
  // starves for a few seconds is not taken for hung; the bound below is that silence plus the stop's grace.
  p.start(kLaunch, demo_job(1000) + Args{"--ulysses_degree", "2", "--heartbeat_timeout", "10", "--events_log", log});
  ASSERT_TRUE(p.wait_for_stderr("[rank 1  denoising  step 1/1000", kRunMs)) << p.err();
  const auto pids = pids_of(read_events(log));
  const int64_t victim = pid_of_rank(read_events(log), 1);
  const auto start = std::chrono::steady_clock::now();
  ::kill(pid_t(victim), SIGSTOP);  // frozen: no step, no heartbeat, its peer waits in a collective
  const auto r = test::finish(p, 90000);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
  std::printf("the launcher returned %lld ms after the rank froze\n", (long long)ms);
  EXPECT_LT(ms, 30000);
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(test::contains(r.err, "rank 1 (pid " + std::to_string(victim)) &&
              test::contains(r.err, "sent nothing for 10 s, not even a heartbeat: it hangs"))
      << r.err;
  EXPECT_TRUE(all_gone(pids));
}

class Cancel : public Workers, public ::testing::WithParamInterface<bool> {};

TEST_P(Cancel, stops_every_rank_and_keeps_only_what_was_asked) {
  const bool keep = GetParam();
  const std::string log = path("cancel.jsonl"), out = path("cancel.safetensors");
  Args args = demo_job(1000) + Args{"--ulysses_degree", "2", "--save_tensors", out, "--events_log", log};
  if (keep) args.push_back("--keep_partial");
  test::Process p;
  p.start(kLaunch, args);
  ASSERT_TRUE(p.wait_for_stderr("[rank 0  denoising  step 2/1000", kRunMs)) << p.err();
  const auto start = std::chrono::steady_clock::now();
  p.signal(SIGINT);
  const auto r = test::finish(p, 30000);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
  std::printf("cancelled in %lld ms\n", (long long)ms);
  EXPECT_EQ(r.code, 130);
  EXPECT_TRUE(test::contains(r.err, "cancelled; every rank was stopped")) << r.err;
  const auto all = read_events(log);
  // Every rank stopped at the same step boundary, by agreement, and said so.
  EXPECT_EQ(of_kind(all, "error").size(), size_t(2));
  for (const auto& e : of_kind(all, "error")) EXPECT_EQ(e["body"]["kind"], "cancelled");
  EXPECT_EQ(of_kind(all, "progress", 0).size(), of_kind(all, "progress", 1).size());
  EXPECT_FALSE(fs::exists(out));
  EXPECT_EQ(fs::exists(out + ".partial.safetensors"), keep);
  EXPECT_TRUE(all_gone(pids_of(all)));
}

INSTANTIATE_TEST_SUITE_P(Kept, Cancel, ::testing::Bool(),
                         [](const auto& info) { return std::string(info.param ? "keep_partial" : "nothing_kept"); });

TEST_F(Workers, bad_input_is_refused_clearly) {
  // Before anything starts: the plan.
  auto r = test::run(kLaunch, demo_job(2) + Args{"--pipefusion_parallel_degree", "3"}, kRunMs);
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(!test::contains(test::trimmed(r.err), "\n") && test::contains(r.err, "--pipefusion_parallel_degree 3"))
      << r.err;
  // A worker given a broken job file (as a hand-written torchrun job would be).
  const std::string bad = path("bad.json");
  test::write_file(bad, "{\"model\": 7}");
  r = test::run(kWorker, {"--job", bad}, kRunMs);
  EXPECT_EQ(r.code, 3);
  EXPECT_TRUE(test::contains(r.err, "bad.json: field 'model' has value 7, expected a string")) << r.err;
  test::write_file(bad, std::string(2 << 20, ' '));
  r = test::run(kWorker, {"--job", bad}, kRunMs);
  EXPECT_EQ(r.code, 3);
  EXPECT_TRUE(test::contains(r.err, "too large")) << r.err;
  r = test::run(kWorker, {"--jobs"}, kRunMs);
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(test::contains(r.err, "usage: dit-worker --job FILE [--serve] | --calibrate DTYPE | --list-devices"))
      << r.err;
  // --serve takes its next jobs from a launcher's events; without one it is refused, not left waiting.
  const std::string job = path("demo.json");
  ASSERT_EQ(test::run(kLaunch, demo_job(1) + Args{"--write_job", job}, kRunMs).code, 0);
  r = test::run(kWorker, {"--job", job, "--serve"}, kRunMs);
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(test::contains(r.err, "--serve takes its jobs from the launcher's event connection")) << r.err;
}

TEST_F(Workers, list_devices_offers_the_cpu) {
  const auto r = test::run(kWorker, {"--list-devices"}, kRunMs);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = json::parse(r.out);
  EXPECT_TRUE(j["gpus"].is_array());
  EXPECT_GE(j["cpu"]["cores"].get<int>(), 1);
  EXPECT_GT(j["cpu"]["memory_bytes"].get<uint64_t>(), 1u << 30);
  if (j["gpus"].empty()) {
    EXPECT_TRUE(test::contains(j["note"].get<std::string>(), "jobs run on the CPU"));
  }
}

TEST_F(Workers, two_jobs_at_once_do_not_collide) {
  test::Process a, b;
  a.start(kLaunch, demo_job(2) + Args{"--ulysses_degree", "2", "--save_tensors", path("a.safetensors")});
  b.start(kLaunch, demo_job(2) + Args{"--ring_degree", "2", "--save_tensors", path("b.safetensors")});
  const auto ra = test::finish(a, kRunMs), rb = test::finish(b, kRunMs);
  EXPECT_EQ(ra.code, 0) << ra.err;
  EXPECT_EQ(rb.code, 0) << rb.err;
}

TEST_F(Workers, no_rank_outlives_a_killed_launcher) {
  const std::string log = path("orphans.jsonl");
  test::Process p;
  p.start(kLaunch, demo_job(1000) + Args{"--ulysses_degree", "2", "--events_log", log});
  ASSERT_TRUE(p.wait_for_stderr("step 1/1000", kRunMs)) << p.err();
  const auto pids = pids_of(read_events(log));
  ASSERT_EQ(pids.size(), size_t(2));
  p.signal(SIGKILL);
  p.wait_for_exit(30000);
  EXPECT_TRUE(all_gone(pids, 15000)) << "a rank outlived its launcher";
}

TEST_F(Workers, a_second_machine_joins_with_the_token) {
  // Two launchers over TCP on loopback, as two machines would run them; a stranger without the token
  // is dropped and logged.
  const int port = free_master_port();
  const Args machine = demo_job(2) + Args{"--ulysses_degree", "2", "--nnodes", "2", "--master_addr", "127.0.0.1",
                                          "--master_port", std::to_string(port)};
  const test::EnvVars env{{"DIT_STUDIO_TOKEN", "0123456789abcdef0123456789abcdef"}};
  test::Process first, second;
  first.start(kLaunch, machine + Args{"--node_rank", "0", "--events_log", path("tcp.jsonl"), "--output", path("tcp.mp4")},
              env);
  ASSERT_TRUE(first.wait_for_stderr("starting 1 rank on machine 0 of 2", kRunMs)) << first.err();
  const int stranger = connect_loopback(port + 1, 100);
  ASSERT_GE(stranger, 0) << "cannot connect to the events port " << port + 1;
  events::Hello h{1, 2, "elsewhere", "cpu", "not-the-token", 1};
  const std::string bytes = events::encode(h.make());
  ::send(stranger, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  const bool dropped = wait_for_close(stranger, 10000);
  ::close(stranger);
  ASSERT_TRUE(dropped);
  ASSERT_TRUE(first.wait_for_stderr("it did not present the job's token", kRunMs)) << first.err();
  second.start(kLaunch, machine + Args{"--node_rank", "1"}, env);
  const auto r1 = test::finish(first, kRunMs), r2 = test::finish(second, kRunMs);
  ASSERT_EQ(r1.code, 0) << r1.err;
  ASSERT_EQ(r2.code, 0) << r2.err;
  const auto all = read_events(path("tcp.jsonl"));
  EXPECT_EQ(of_kind(all, "hello").size(), size_t(2));
  EXPECT_EQ(of_kind(all, "done").size(), size_t(2));
  EXPECT_GT(file_size(path("tcp.mp4")), 1000);
  EXPECT_TRUE(all_gone(pids_of(all)));
}

TEST_F(Workers, a_rank_lost_on_another_machine_is_named) {
  // Two launchers over loopback TCP; the rank of the second "machine" is killed mid-run. The first
  // launcher names that rank (not its partner, which only lost its peer), and both stop.
  const int port = free_master_port();
  const Args machine = demo_job(1000) + Args{"--ulysses_degree", "2", "--nnodes", "2", "--master_addr", "127.0.0.1",
                                             "--master_port", std::to_string(port)};
  const test::EnvVars env{{"DIT_STUDIO_TOKEN", "00112233445566778899aabbccddeeff"}};
  const std::string log = path("remote.jsonl");
  test::Process first, second;
  first.start(kLaunch, machine + Args{"--node_rank", "0", "--events_log", log}, env);
  second.start(kLaunch, machine + Args{"--node_rank", "1"}, env);
  ASSERT_TRUE(first.wait_for_stderr("step 2/1000", kRunMs)) << first.err();
  const auto pids = pids_of(read_events(log));
  ASSERT_EQ(pids.size(), size_t(2));
  const int64_t victim = pid_of_rank(read_events(log), 1);
  ::kill(pid_t(victim), SIGKILL);
  const auto r1 = test::finish(first, 30000), r2 = test::finish(second, 30000);
  EXPECT_TRUE(r1.code != 0 && r2.code != 0);
  EXPECT_TRUE(test::contains(r1.err, "rank 1 (pid " + std::to_string(victim)) &&
              test::contains(r1.err, "closed its events connection without a result"))
      << r1.err;
  EXPECT_TRUE(test::contains(r2.err, "was killed by signal 9")) << r2.err;
  EXPECT_TRUE(all_gone(pids));
}

TEST_F(Workers, two_machines_in_network_namespaces) {
  // Two network namespaces joined by a veth pair stand for two machines with their own addresses.
  const std::string a = "ditA" + std::to_string(::getpid()), b = "ditB" + std::to_string(::getpid());
  auto ip = [](const Args& args) {
    try {
      return test::run("ip", args, 30000).code == 0;
    } catch (const std::system_error&) {
      return false;  // no iproute2
    }
  };
  if (!ip({"netns", "add", a}))
    STUDIO_SKIP_WITHOUT_PRIVILEGE("cannot create network namespaces here (needs root and iproute2)");
  ip({"netns", "add", b});
  struct Cleanup {
    std::function<void()> run;
    ~Cleanup() { run(); }
  } cleanup{[&] {
    ip({"netns", "del", a});
    ip({"netns", "del", b});
  }};
  auto last8 = [](const std::string& s) { return s.substr(s.size() > 8 ? s.size() - 8 : 0); };
  const std::string va = "v" + last8(a), vb = "v" + last8(b);
  ASSERT_TRUE(ip({"link", "add", va, "type", "veth", "peer", "name", vb}));
  ASSERT_TRUE(ip({"link", "set", va, "netns", a}) && ip({"link", "set", vb, "netns", b}));
  ASSERT_TRUE(ip({"-n", a, "addr", "add", "10.231.0.1/24", "dev", va}) &&
              ip({"-n", b, "addr", "add", "10.231.0.2/24", "dev", vb}));
  for (const auto& [ns, dev] : {std::pair{a, va}, std::pair{b, vb}}) {
    ASSERT_TRUE(ip({"-n", ns, "link", "set", dev, "up"}));
    ASSERT_TRUE(ip({"-n", ns, "link", "set", "lo", "up"}));
  }
  const Args job = demo_job(2) + Args{"--use_cfg_parallel", "--nnodes", "2", "--master_addr", "10.231.0.1",
                                      "--master_port", "29600"};
  const test::EnvVars env{{"DIT_STUDIO_TOKEN", "fedcba9876543210fedcba9876543210"}};
  test::Process first, second;
  first.start("ip", Args{"netns", "exec", a, kLaunch} + job +
                        Args{"--node_rank", "0", "--events_log", path("netns.jsonl"), "--save_tensors",
                             path("netns.safetensors")},
              env);
  second.start("ip", Args{"netns", "exec", b, kLaunch} + job + Args{"--node_rank", "1"}, env);
  const auto r1 = test::finish(first, kRunMs), r2 = test::finish(second, kRunMs);
  ASSERT_EQ(r1.code, 0) << r1.err;
  ASSERT_EQ(r2.code, 0) << r2.err;
  const auto all = read_events(path("netns.jsonl"));
  EXPECT_EQ(of_kind(all, "done").size(), size_t(2));
  EXPECT_TRUE(fs::exists(path("netns.safetensors")));
  EXPECT_TRUE(all_gone(pids_of(all)));
}

}  // namespace
