// dit-worker under the cluster launchers users already have, the real programs, two ranks on this machine
// on the CPU, from a job file `dit-launch --write_job` wrote: torchrun from PyPI's torch (the Python side of
// the LibTorch 2.x package the build uses, run by the system's python3; built only where that package is),
// mpirun from Debian's Open MPI, and srun against a one-machine Slurm (munged, slurmctld, slurmd) the test
// starts with a generated config. Each test checks the result and that no rank is left behind.
#include <ATen/Parallel.h>
#include <dirent.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "process.h"
#include "support.h"
#include "video/clip_writer.h"

using namespace studio;
using test::Args;

namespace {

// The pids of the dit-worker processes started for `job`: the program is dit-worker and its command line
// names the job (the launchers' own command lines name both too).
std::vector<pid_t> workers_of(const std::string& job) {
  std::vector<pid_t> out;
  DIR* proc = ::opendir("/proc");
  while (dirent* e = proc ? ::readdir(proc) : nullptr) {
    const pid_t pid = pid_t(std::atoi(e->d_name));
    if (pid <= 0) continue;
    std::ifstream f("/proc/" + std::string(e->d_name) + "/cmdline", std::ios::binary);
    std::stringstream s;
    s << f.rdbuf();
    const std::string cmd = s.str(), program = cmd.substr(0, cmd.find('\0'));
    const bool worker = program.size() >= 10 && program.compare(program.size() - 10, 10, "dit-worker") == 0;
    if (worker && test::contains(cmd, job)) out.push_back(pid);
  }
  if (proc) ::closedir(proc);
  return out;
}

// A small demo job, written as a job file by dit-launch --write_job.
std::string write_job(const std::string& job, int steps, const Args& extra = {}) {
  const auto r = test::run(test::bin("dit-launch"),
                           Args{"--prompt", "A paper boat", "--num_frames", "9", "--num_inference_steps",
                                std::to_string(steps), "--ulysses_degree", "2", "--write_job", job} + extra,
                           60000);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(test::contains(r.err, "torchrun --nproc_per_node 2 --no_python dit-worker --job " + job)) << r.err;
  return job;
}

// A rank's number, from the environment its launcher gave it (torchrun's RANK, srun's SLURM_PROCID, mpirun's
// OMPI_COMM_WORLD_RANK); -1 when none is there.
int rank_of(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
  for (std::string var; std::getline(f, var, '\0');)
    for (const char* key : {"RANK=", "SLURM_PROCID=", "OMPI_COMM_WORLD_RANK="})
      if (var.rfind(key, 0) == 0) return std::atoi(var.c_str() + std::strlen(key));
  return -1;
}

int free_port_base() { return 21000 + int(::getpid() % 2000) * 4; }

// Kills the job's second rank once denoising has begun (`begun` on the launcher's stderr): the launcher `p`
// must fail and say `named(pid)` of it, and no rank may be left running, nor the output written.
void kill_a_rank(test::Process& p, const std::string& job, const std::string& begun, const std::string& output,
                 const std::function<std::string(pid_t)>& named) {
  ASSERT_TRUE(p.wait_for_stderr(begun, 120000)) << p.err();
  const auto ranks = workers_of(job);
  ASSERT_EQ(ranks.size(), size_t(2)) << p.err();
  const pid_t second = rank_of(ranks[0]) == 1 ? ranks[0] : ranks[1];  // not by pid: pids wrap
  ASSERT_EQ(rank_of(second), 1) << "ranks " << rank_of(ranks[0]) << " and " << rank_of(ranks[1]);
  ::kill(second, SIGKILL);
  const auto r = test::finish(p, 120000);
  EXPECT_NE(r.code, 0);
  EXPECT_TRUE(test::contains(r.out + r.err, named(second))) << r.out << r.err;
  EXPECT_FALSE(std::filesystem::exists(output));
  EXPECT_TRUE(workers_of(job).empty());
}

}  // namespace

#ifdef STUDIO_TORCHRUN
class Torchrun : public ::testing::Test {
 protected:
  std::string path(const std::string& name) { return tmp_.path(name); }
  std::string write_job(const std::string& name, int steps, const Args& extra = {}) {
    return ::write_job(path(name), steps, extra);
  }
  void start(test::Process& p, const std::string& job, const Args& torchrun_flags = {}) {
    static int next = 0;
    const int port = free_port_base() + next++;
    p.start("python3",
            Args{"-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", std::to_string(port)} +
                torchrun_flags + Args{"--no_python", test::bin("dit-worker"), "--job", job},
            {{"PYTHONPATH", test::torch_pythonpath()}});
  }
  test::TempDir tmp_;
};

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
  kill_a_rank(p, job, "denoising", path("long.mp4"),
              [](pid_t pid) { return "Signal 9 (SIGKILL) received by PID " + std::to_string(pid); });
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

#endif  // STUDIO_TORCHRUN

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

// mpirun from Open MPI: on one machine the ranks meet at 127.0.0.1 without MASTER_ADDR.
class Mpirun : public ::testing::Test {
 protected:
  std::string path(const std::string& name) { return tmp_.path(name); }
  void start(test::Process& p, const std::string& job) {
    p.start("mpirun", {"--allow-run-as-root", "--oversubscribe", "-np", "2", "-x",
                       "MASTER_PORT=" + std::to_string(free_port_base() + 100), test::bin("dit-worker"), "--job", job});
  }
  test::TempDir tmp_;
};

TEST_F(Mpirun, two_ranks_write_the_clip) {
  const std::string job = write_job(path("job.json"), 3, {"--output", path("boat.mp4")});
  test::Process p;
  start(p, job);
  const auto r = test::finish(p, 180000);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(video::probe_clip(path("boat.mp4")).frames, 9);
  EXPECT_TRUE(workers_of(job).empty());
  // Two ranks on this machine (OMPI_COMM_WORLD_LOCAL_SIZE) share its physical cores (LibTorch's default count).
  const int threads = std::max(1, at::get_num_threads() / 2);
  EXPECT_TRUE(test::contains(r.err, "CPU threads per rank: " + std::to_string(threads) + " (")) << r.err;
}

TEST_F(Mpirun, a_killed_rank_is_named_and_the_other_stops) {
  const std::string job = write_job(path("long.json"), 1000, {"--output", path("long.mp4")});
  test::Process p;
  start(p, job);
  kill_a_rank(p, job, "step 1/1000", path("long.mp4"),
              [](pid_t) { return std::string("mpirun noticed that process rank 1 with PID"); });
}

// srun against a one-machine Slurm the fixture starts (munged, slurmctld, slurmd in the foreground, a
// config generated from `slurmd -C`); the ranks find their master in SLURM_JOB_NODELIST, no MASTER_ADDR.
class Srun : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string dir = tmp_.path("slurm");
    for (const char* sub : {"state", "spool", "munge"}) std::filesystem::create_directories(dir + "/" + sub);
    const int port = free_port_base() + 200;
    const auto node = test::run("slurmd", {"-C"}, 30000);
    ASSERT_EQ(node.code, 0) << node.err;
    const std::string node_line = node.out.substr(0, node.out.find('\n'));
    const std::string host = node_line.substr(9, node_line.find(' ') - 9);  // "NodeName=HOST ..."
    conf_ = dir + "/slurm.conf";
    test::write_file(conf_, "ClusterName=dittest\nSlurmctldHost=" + host + "(127.0.0.1)\nSlurmUser=root\n"
                            "SlurmctldPort=" + std::to_string(port) + "\nSlurmdPort=" + std::to_string(port + 1) +
                            "\nAuthType=auth/munge\nAuthInfo=socket=" + dir + "/munge/sock\nStateSaveLocation=" +
                            dir + "/state\nSlurmdSpoolDir=" + dir + "/spool\nSlurmctldPidFile=" + dir +
                            "/ctld.pid\nSlurmdPidFile=" + dir + "/d.pid\nProctrackType=proctrack/linuxproc\n"
                            "TaskPlugin=task/none\nJobAcctGatherType=jobacct_gather/none\n"
                            "AccountingStorageType=accounting_storage/none\nMpiDefault=none\nReturnToService=2\n"
                            "SelectType=select/cons_tres\nSelectTypeParameters=CR_Core\n" +
                            node_line + " NodeAddr=127.0.0.1 State=UNKNOWN\n"
                            "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE\n");
    env_ = {{"SLURM_CONF", conf_}};
    munged_.start("munged", {"-F", "--force", "--socket=" + dir + "/munge/sock", "--pid-file=" + dir + "/munge/pid",
                             "--seed-file=" + dir + "/munge/seed", "--log-file=" + dir + "/munge/log"});
    ASSERT_TRUE(wait_for_file(dir + "/munge/sock"));
    ctld_.start("slurmctld", {"-D", "-f", conf_}, env_);
    slurmd_.start("slurmd", {"-D", "-f", conf_}, env_);
    // Up when sinfo sees the node idle.
    bool idle = false;
    for (int i = 0; i < 100 && !idle; ++i) {
      idle = test::contains(test::run("sinfo", {"-h", "-o", "%T"}, 10000, env_).out, "idle");
      if (!idle) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    ASSERT_TRUE(idle) << "Slurm did not come up: " << ctld_.err() << slurmd_.err();
  }
  // Every job step's slurmstepd ends before the daemons stop (a step outlives a killed slurmd).
  void TearDown() override {
    test::run("scancel", {"--full", "--user", "root"}, 30000, env_);
    for (int i = 0; i < 100 && !processes_named("slurmstepd").empty(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    for (pid_t pid : processes_named("slurmstepd")) ::kill(pid, SIGKILL);
    for (test::Process* daemon : {&slurmd_, &ctld_, &munged_}) {  // SIGTERM: each reaps its own helpers
      daemon->signal(SIGTERM);
      daemon->wait_for_exit(15000);
    }
  }
  static std::vector<pid_t> processes_named(const std::string& name) {
    std::vector<pid_t> out;
    DIR* proc = ::opendir("/proc");
    while (dirent* e = proc ? ::readdir(proc) : nullptr) {
      const pid_t pid = pid_t(std::atoi(e->d_name));
      std::string comm;
      if (pid > 0 && std::getline(std::ifstream("/proc/" + std::string(e->d_name) + "/comm"), comm) && comm == name)
        out.push_back(pid);
    }
    if (proc) ::closedir(proc);
    return out;
  }
  static bool wait_for_file(const std::string& f) {
    for (int i = 0; i < 100; ++i) {
      if (std::filesystem::exists(f)) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }
  test::TempDir tmp_;
  std::string conf_;
  test::EnvVars env_;
  test::Process munged_, ctld_, slurmd_;  // stopped in TearDown (SIGKILL if they linger)
};

TEST_F(Srun, two_ranks_write_the_clip) {
  const std::string job = write_job(tmp_.path("job.json"), 3, {"--output", tmp_.path("boat.mp4")});
  const auto r = test::run("srun", {"-n", "2", "-O", test::bin("dit-worker"), "--job", job}, 180000, env_);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(video::probe_clip(tmp_.path("boat.mp4")).frames, 9);
  EXPECT_TRUE(workers_of(job).empty());
}

TEST_F(Srun, a_killed_rank_is_named_and_the_other_stops) {
  const std::string job = write_job(tmp_.path("long.json"), 1000, {"--output", tmp_.path("long.mp4")});
  test::Process p;
  p.start("srun", {"-n", "2", "-O", test::bin("dit-worker"), "--job", job}, env_);
  kill_a_rank(p, job, "step 1/1000", tmp_.path("long.mp4"), [](pid_t) { return std::string("task 1: Killed"); });
}
