// dit-launch: the headless launcher. One process runs the job itself; a parallel configuration is
// validated here, before anything starts, then run as that many local dit-worker ranks.
#include <unistd.h>

#include <atomic>
#include <climits>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include <ATen/Context.h>

#include "compat/torch_compat.h"
#include "pipeline/run_job.h"
#include "plan/error.h"
#include "plan/job_file.h"
#include "workers/guarded_main.h"
#include "workers/launch_args.h"
#include "workers/local_launch.h"

namespace fs = std::filesystem;

namespace {

std::atomic<bool> g_cancel{false};
extern "C" void on_signal(int) { g_cancel.store(true); }

fs::path bin_dir() {
  char exe[PATH_MAX] = {0};
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  return fs::path(n > 0 ? std::string(exe, size_t(n)) : "dit-launch").parent_path();
}

// The built-in demo model: share/dit-studio/demo-model beside bin/, in the build tree and installed.
std::string demo_model_dir() { return (bin_dir().parent_path() / "share" / "dit-studio" / "demo-model").string(); }

}  // namespace

int main(int argc, char** argv) {
  using namespace studio;
  const std::string prefix = "dit-launch: ";
  return workers::guarded_main(prefix, [&]() -> int {
    auto args = workers::parse_launch_args(std::vector<std::string>(argv + 1, argv + argc));
    if (args.help) return std::cout << workers::launch_usage(), workers::kOk;
    if (args.version) return std::cout << "dit-launch 0.1.0 (LibTorch " << compat::torch_version() << ")\n", workers::kOk;
    const bool demo = args.job.model_dir.empty();
    if (demo) args.job.model_dir = demo_model_dir();
    plan::ModelFolder model;
    try {
      model = plan::read_model_folder(args.job.model_dir);
    } catch (const InputError& e) {
      throw InputError(std::string("--model ") + e.what());
    }
    plan::apply_model_defaults(args.job, model);
    auto problems = plan::validate(args.job, model);
    // One rank per visible GPU (choose them with CUDA_VISIBLE_DEVICES); on the CPU, as many ranks as the
    // degrees ask for.
    const bool gpus = args.job.device != "cpu" && at::hasCUDA();
    const int processes = gpus ? int(at::getNumGPUs()) : args.parallel.world_size();
    double memory_gib = 0;  // the smallest GPU's, when known
    for (int i = 0; gpus && i < processes; ++i)
      if (auto m = compat::device_memory(at::Device(at::kCUDA, int8_t(i))))
        memory_gib = memory_gib == 0 ? double(m->total_bytes) / (1 << 30)
                                     : std::min(memory_gib, double(m->total_bytes) / (1 << 30));
    auto more = plan::validate_parallel(args.parallel, args.job, model, processes, memory_gib,
                                        gpus && args.job.dtype != "float32" ? 2 : 4);
    problems.insert(problems.end(), more.begin(), more.end());
    if (!problems.empty()) throw workers::ArgError(problems.front().message);
    if (demo)
      std::cerr << prefix << "no --model given: using the built-in demo model (random weights, abstract motion) at "
                << args.job.model_dir << std::endl;
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);

    if (processes > 1) {
      std::cerr << prefix << "starting " << processes << " ranks: " << args.parallel.describe() << std::endl;
      auto out = workers::launch_local({args.job, args.parallel}, (bin_dir() / "dit-worker").string(), g_cancel);
      if (out.exit_code != 0) std::cerr << prefix << out.message << std::endl;
      return out.exit_code;
    }
    auto log = [&](const std::string& s) { std::cerr << prefix << s << std::endl; };
    pipeline::Hooks hooks;
    hooks.cancel = &g_cancel;
    hooks.on_step = [](int step, int total, double seconds) {
      std::fprintf(stderr, "step %d/%d  %.3f s\n", step, total, seconds);
    };
    auto mesh = parallel::Mesh::single();
    auto result = pipeline::run_job(args.job, model, *mesh, hooks, log);
    char line[160];
    std::snprintf(line, sizeof line, "done: loading %.2f s, denoising %.2f s, decoding and writing %.2f s",
                  result.seconds_loading, result.seconds_denoising, result.seconds_decoding);
    log(line);
    return workers::kOk;
  });
}
