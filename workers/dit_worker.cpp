// dit-worker: one rank of a job. Started by dit-launch (or torchrun) with RANK, WORLD_SIZE, LOCAL_RANK,
// MASTER_ADDR and MASTER_PORT in its environment and the job file as its argument.
// Usage: dit-worker --job FILE
#include <sys/prctl.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <iostream>

#include <ATen/Context.h>

#include "pipeline/run_job.h"
#include "plan/error.h"
#include "plan/job_file.h"
#include "workers/guarded_main.h"
#include "workers/launch_args.h"

namespace {

std::atomic<bool> g_cancel{false};
extern "C" void on_signal(int) { g_cancel.store(true); }

}  // namespace

int main(int argc, char** argv) {
  using namespace studio;
  // No rank outlives the program that started it.
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  const auto env = parallel::DistEnv::from_environment();
  const std::string prefix = "[rank " + std::to_string(env.rank) + "] ";
  return workers::guarded_main(prefix, [&]() -> int {
    if (argc != 3 || std::string(argv[1]) != "--job") throw workers::ArgError("usage: dit-worker --job FILE");
    auto file = plan::job_file_from_json(plan::read_text_file(argv[2]), argv[2]);
    auto model = plan::read_model_folder(file.job.model_dir);
    plan::apply_model_defaults(file.job, model);
    auto problems = plan::validate(file.job, model);
    auto more = plan::validate_parallel(file.parallel, file.job, model, env.world_size);
    problems.insert(problems.end(), more.begin(), more.end());
    if (!problems.empty()) throw workers::ArgError(problems.front().message);
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    at::Device device = at::kCPU;
    if (file.job.device == "auto" || file.job.device.rfind("cuda", 0) == 0)
      if (at::hasCUDA()) device = at::Device(at::kCUDA, int8_t(env.local_rank));
    if (device.is_cuda()) file.job.device = device.str();
    auto mesh = parallel::Mesh::create(file.parallel, env, device, std::chrono::minutes(5));
    pipeline::Hooks hooks;
    hooks.cancel = &g_cancel;
    hooks.on_step = [&](int step, int total, double seconds) {
      std::fprintf(stderr, "%sstep %d/%d  %.3f s  sent %.1f MB  received %.1f MB\n", prefix.c_str(), step, total,
                   seconds, double(mesh->traffic().total_sent()) / 1e6, double(mesh->traffic().total_received()) / 1e6);
    };
    auto log = [&](const std::string& s) {
      if (env.rank == 0) std::cerr << prefix << s << std::endl;
    };
    auto r = pipeline::run_job(file.job, model, *mesh, hooks, log);
    char line[200];
    std::snprintf(line, sizeof line, "done: loading %.2f s, denoising %.2f s, decoding and writing %.2f s", r.seconds_loading,
                  r.seconds_denoising, r.seconds_decoding);
    log(line);
    return workers::kOk;
  });
}
