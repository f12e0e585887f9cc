// dit-worker under the cluster launchers users already have, the real programs: torchrun from PyPI's torch
// (the Python side of the LibTorch 2.x package the build uses, run by the system's python3), two ranks on
// this machine on the CPU, from a job file `dit-launch --write_job` wrote. Each test checks the result and
// that no rank is left behind.
#include <dirent.h>
#include <signal.h>

#include <fstream>
#include <sstream>

#include "process.h"
#include "support.h"
#include "video/clip_writer.h"

using namespace studio;
using test::Args;

namespace {

// The pids of the dit-worker processes started for `job` (their command lines name it).
std::vector<pid_t> workers_of(const std::string& job) {
  std::vector<pid_t> out;
  DIR* proc = ::opendir("/proc");
  while (dirent* e = proc ? ::readdir(proc) : nullptr) {
    const pid_t pid = pid_t(std::atoi(e->d_name));
    if (pid <= 0) continue;
    std::ifstream f("/proc/" + std::string(e->d_name) + "/cmdline", std::ios::binary);
    std::stringstream s;
    s << f.rdbuf();
    const std::string cmd = s.str();
    if (test::contains(cmd, "dit-worker") && test::contains(cmd, job) && !test::contains(cmd, "torch.distributed.run"))
      out.push_back(pid);
  }
  if (proc) ::closedir(proc);
  return out;
}

class Torchrun : public ::testing::Test {
 protected:
  std::string path(const std::string& name) { return tmp_.path(name); }
  // dit-launch's flags for a small demo job, written as a job file.
  std::string write_job(const std::string& name, int steps, const Args& extra = {}) {
    const std::string job = path(name);
    const auto r = test::run(test::bin("dit-launch"),
                             Args{"--prompt", "A paper boat", "--num_frames", "9", "--num_inference_steps",
                                  std::to_string(steps), "--ulysses_degree", "2", "--write_job", job} + extra,
                             60000);
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_TRUE(test::contains(r.err, "torchrun --nproc_per_node 2 --no_python dit-worker --job " + job)) << r.err;
    return job;
  }
  void start(test::Process& p, const std::string& job, const Args& torchrun_flags = {}) {
    static int next = 0;
    const int port = 21000 + int(::getpid() % 10000) + 2 * next++;
    p.start("python3",
            Args{"-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", std::to_string(port)} +
                torchrun_flags + Args{"--no_python", test::bin("dit-worker"), "--job", job},
            {{"PYTHONPATH", STUDIO_TORCH_PYTHONPATH}});
  }
  test::TempDir tmp_;
};

}  // namespace

// torchrun's agent serves the rendezvous store itself; the ranks join it and write the clip.
TEST_F(Torchrun, two_ranks_write_the_clip) {
  const std::string job = write_job("job.json", 3, {"--output", path("boat.mp4")});
  test::Process p;
  start(p, job);
  const auto r = test::finish(p, 180000);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto probe = video::probe_clip(path("boat.mp4"));
  EXPECT_EQ(probe.frames, 9);
  EXPECT_EQ(probe.width, 288);
  EXPECT_TRUE(workers_of(job).empty());
}

// A refusal reaches torchrun's summary through its error file: our message, not "N/A".
TEST_F(Torchrun, a_refusal_is_in_torchruns_summary) {
  const std::string job = write_job("bad.json", 2, {"--output", path("bad.mp4")});
  test::edit_json(job, [](nlohmann::json& j) {
    j["prompt"] = "";
    j["prompt_embeds"] = "/nonexistent.safetensors";
  });
  test::Process p;
  start(p, job);
  const auto r = test::finish(p, 120000);
  EXPECT_NE(r.code, 0);
  EXPECT_TRUE(test::contains(r.err, "traceback : [rank 0] --prompt_embeds /nonexistent.safetensors: file not found"))
      << r.err;
  EXPECT_FALSE(std::filesystem::exists(path("bad.mp4")));
  EXPECT_TRUE(workers_of(job).empty());
}

// A rank killed mid-run: torchrun names it, the other rank stops, nothing is left running or half-written.
TEST_F(Torchrun, a_killed_rank_is_named_and_the_other_stops) {
  const std::string job = write_job("long.json", 1000, {"--output", path("long.mp4")});
  test::Process p;
  start(p, job);
  ASSERT_TRUE(p.wait_for_stderr("denoising", 120000)) << p.err();
  auto ranks = workers_of(job);
  ASSERT_EQ(ranks.size(), size_t(2)) << p.err();
  ::kill(ranks[1], SIGKILL);
  const auto r = test::finish(p, 120000);
  EXPECT_NE(r.code, 0);
  EXPECT_TRUE(test::contains(r.err, "Signal 9 (SIGKILL) received by PID " + std::to_string(ranks[1]))) << r.err;
  EXPECT_FALSE(std::filesystem::exists(path("long.mp4")));
  EXPECT_TRUE(workers_of(job).empty());
}

// With --max_restarts, a rank lost mid-run restarts the job: it says so and starts again, apart from the
// last attempt's rendezvous, and finishes.
TEST_F(Torchrun, a_restarted_job_starts_again_and_finishes) {
  const std::string job = write_job("again.json", 60, {"--output", path("again.mp4")});
  test::Process p;
  start(p, job, {"--max_restarts", "1"});
  ASSERT_TRUE(p.wait_for_stderr("step 1/60", 120000)) << p.err();
  auto ranks = workers_of(job);
  ASSERT_EQ(ranks.size(), size_t(2)) << p.err();
  ::kill(ranks[1], SIGKILL);
  const auto r = test::finish(p, 180000);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(test::contains(r.err, "torchrun restarted the job (attempt 2): it starts again from the first step"))
      << r.err;
  EXPECT_EQ(video::probe_clip(path("again.mp4")).frames, 9);
  EXPECT_TRUE(workers_of(job).empty());
}

// --write_job validates first: a configuration that cannot run writes nothing.
TEST(WriteJob, refuses_before_writing) {
  test::TempDir tmp;
  const auto r = test::run(test::bin("dit-launch"),
                           {"--prompt", "A paper boat", "--pipefusion_parallel_degree", "3", "--write_job",
                            tmp.path("job.json")},
                           60000);
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(test::contains(r.err, "--pipefusion_parallel_degree 3")) << r.err;
  EXPECT_FALSE(std::filesystem::exists(tmp.path("job.json")));
}
