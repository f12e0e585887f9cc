// dit-launch: the headless launcher. Today it runs the whole job in this process.
#include <unistd.h>

#include <climits>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include <c10/util/Exception.h>

#include "compat/torch_compat.h"
#include "pipeline/run_job.h"
#include "plan/error.h"
#include "workers/launch_args.h"

namespace {

std::atomic<bool> g_cancel{false};
extern "C" void on_signal(int) { g_cancel.store(true); }

enum Exit { kOk = 0, kInternal = 1, kBadArgument = 2, kBadInput = 3, kCancelled = 130 };

// The built-in demo model: share/dit-studio/demo-model beside bin/, in the build tree and installed.
std::string demo_model_dir() {
  char exe[PATH_MAX] = {0};
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  const auto bin = std::filesystem::path(n > 0 ? std::string(exe, size_t(n)) : "dit-launch").parent_path();
  return (bin.parent_path() / "share" / "dit-studio" / "demo-model").string();
}

int run(int argc, char** argv) {
  using namespace studio;
  workers::LaunchArgs args;
  plan::ModelFolder model;
  try {
    args = workers::parse_launch_args(std::vector<std::string>(argv + 1, argv + argc));
    if (args.help) return std::cout << workers::launch_usage(), kOk;
    if (args.version) return std::cout << "dit-launch 0.1.0 (LibTorch " << compat::torch_version() << ")\n", kOk;
  } catch (const workers::ArgError& e) {
    std::cerr << "dit-launch: " << e.what() << "\n";
    return kBadArgument;
  }
  const bool demo = args.job.model_dir.empty();
  if (demo) args.job.model_dir = demo_model_dir();
  try {
    model = plan::read_model_folder(args.job.model_dir);
  } catch (const InputError& e) {
    std::cerr << "dit-launch: --model " << e.what() << "\n";
    return kBadInput;
  }
  plan::apply_model_defaults(args.job, model);
  if (auto problems = plan::validate(args.job, model); !problems.empty()) {
    std::cerr << "dit-launch: " << problems.front().message << "\n";
    return kBadArgument;
  }
  if (demo)
    std::cerr << "dit-launch: no --model given: using the built-in demo model (random weights, abstract motion) at "
              << args.job.model_dir << "\n";
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  auto log = [](const std::string& s) { std::cerr << "dit-launch: " << s << "\n"; };
  pipeline::Hooks hooks;
  hooks.cancel = &g_cancel;
  hooks.on_step = [](int step, int total, double seconds) {
    std::fprintf(stderr, "step %d/%d  %.3f s\n", step, total, seconds);
  };
  try {
    auto result = pipeline::run_job(args.job, model, hooks, log);
    char line[160];
    std::snprintf(line, sizeof line, "done: loading %.2f s, denoising %.2f s, decoding and writing %.2f s",
                  result.seconds_loading, result.seconds_denoising, result.seconds_decoding);
    log(line);
    return kOk;
  } catch (const Cancelled&) {
    log("cancelled; nothing was written");
    return kCancelled;
  } catch (const InputError& e) {
    std::cerr << "dit-launch: " << e.what() << "\n";
    return kBadInput;
  } catch (const c10::Error& e) {
    std::cerr << "dit-launch: internal error: " << e.what_without_backtrace() << "\n";
    return kInternal;
  } catch (const std::exception& e) {
    std::cerr << "dit-launch: internal error: " << e.what() << "\n";
    return kInternal;
  }
}

}  // namespace

int main(int argc, char** argv) { return run(argc, argv); }
