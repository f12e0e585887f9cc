// dit-launch and dit-worker as processes on one machine: the events of whole runs, and every way a rank can fail
// (killed, out of memory, hung, cancelled, bad input), the launcher itself killed, and two jobs at once. Every test
// checks that no process is left behind. Jobs over TCP between launchers: test_workers_machines.cpp.
#include <unistd.h>

#include <csignal>
#include <filesystem>

#include "io/safetensors/safetensors_file.h"
#include "worker_runs.h"
#include "workers/events/messages.h"

using namespace studio;
using namespace studio::test;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

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
  // Rank 0 lost its peer: a symptom, not said as a failure of its own once the killed rank is named.
  EXPECT_FALSE(test::contains(r.err, "rank 0 failed (lost_peer)")) << r.err;
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
  // Rank 0 says what it kept; rank 1, which cannot know, does not claim anything was.
  const auto said = [&](int rank) { return of_kind(all, "error", rank).at(0)["body"]["message"].get<std::string>(); };
  EXPECT_TRUE(test::contains(said(0), keep ? "kept the latents of step " : "nothing was written")) << said(0);
  EXPECT_EQ(said(1), keep ? "cancelled; anything kept is written by rank 0" : "cancelled; nothing was written");
  EXPECT_EQ(of_kind(all, "progress", 0).size(), of_kind(all, "progress", 1).size());
  EXPECT_FALSE(fs::exists(out));
  EXPECT_EQ(fs::exists(out + ".partial.safetensors"), keep);
  EXPECT_TRUE(all_gone(pids_of(all)));
}

// Cancelled while decoding: the denoising is done, so --keep_partial keeps its latents whole, and the clip of the
// frames decoded so far says in its sidecar that it was cut short; the rank's last word says what it kept.
TEST_F(Workers, a_cancel_while_decoding_keeps_the_latents_and_the_frames_so_far) {
  const std::string clip = path("cut.mp4");
  test::Process p;
  // 25 frames: the demo's decoder takes them in 3 batches.
  p.start(kLaunch, Args{"--prompt", "a paper boat", "--num_frames", "25", "--num_inference_steps", "2", "--output", clip,
                        "--keep_partial"});
  ASSERT_TRUE(p.wait_for_stderr("(33%)", kRunMs)) << p.err();
  p.signal(SIGINT);
  const auto r = test::finish(p, 30000);
  ASSERT_EQ(r.code, 130) << r.err;
  EXPECT_TRUE(test::contains(r.err, "cancelled; kept the latents of step 2/2 in ") &&
              test::contains(r.err, "; kept the first "))
      << r.err;
  EXPECT_FALSE(test::contains(r.err, "nothing was written")) << r.err;
  const auto first = r.err.find("kept the latents of step");  // said once, in the run's last line
  EXPECT_EQ(r.err.find("kept the latents of step", first + 1), std::string::npos) << r.err;
  const auto side = json::parse(test::read_file(clip + ".json"));
  EXPECT_TRUE(test::contains(side["cancelled"].get<std::string>(), "kept the first ")) << side.dump();
  EXPECT_LT(side["frames"].get<int>(), 25);
  const auto latents = io::SafetensorsFile::open(clip + ".partial.safetensors");
  EXPECT_EQ(latents->metadata().at("cancelled_after_step"), "2/2");
}

// The rank that writes killed mid-clip cannot remove its partial file: the launcher does, and the folder holds
// nothing the run began.
TEST_F(Workers, a_writer_killed_while_decoding_leaves_no_partial_file) {
  const std::string folder = path("killed"), log = path("killed.jsonl");
  fs::create_directory(folder);
  test::Process p;
  p.start(kLaunch, Args{"--prompt", "a paper boat", "--num_frames", "25", "--num_inference_steps", "2", "--output",
                        folder + "/clip.mp4", "--events_log", log});
  ASSERT_TRUE(p.wait_for_stderr("(33%)", kRunMs)) << p.err();
  const int64_t writer = pid_of_rank(read_events(log), 0);
  ::kill(pid_t(writer), SIGKILL);
  const auto r = test::finish(p, 30000);
  EXPECT_NE(r.code, 0);
  EXPECT_TRUE(test::contains(r.err, "was killed by signal 9")) << r.err;
  EXPECT_TRUE(fs::is_empty(folder)) << fs::directory_iterator(folder)->path();
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

}  // namespace
