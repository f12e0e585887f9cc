// dit-launch: the headless launcher. Validates the job and its parallel configuration before anything
// starts, runs it as dit-worker ranks (one machine, or this machine's share of several), shows their
// progress, forwards Ctrl-C as a cancel, and exits with the job's status. It never loads the model
// itself and links no LibTorch: the studio drives the same ranks the same way.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <thread>

#include "io/safetensors/folder_weights.h"
#include "io/safetensors/lora_files.h"
#include "plan/cost_model.h"
#include "plan/error.h"
#include "plan/family.h"
#include "plan/job_check.h"
#include "plan/job_file.h"
#include "plan/parallel_defaults.h"
#include "plan/weight_choice.h"
#include "video/picture.h"
#include "workers/launch/guarded_main.h"
#include "workers/launch/calibration.h"
#include "workers/launch/devices.h"
#include "workers/launch/launch_args.h"
#include "workers/launch/paths.h"
#include "workers/launch/progress_view.h"
#include "workers/launch/supervisor.h"

namespace {

std::atomic<bool> g_cancel{false};
extern "C" void on_signal(int) { g_cancel.store(true); }

// --plan, --auto, --calibrate: the configurations ranked by the cost model on the processes this machine
// has. Returns true when dit-launch is done (it printed what was asked); --auto sets the best one in `args`.
bool plan_configs(studio::workers::LaunchArgs& args, const studio::plan::ModelFolder& model, const std::string& worker,
                  studio::workers::Devices devices, double memory_gib) {
  using namespace studio;
  if (devices.cpu_cores == 0) devices = workers::list_devices(worker);  // the cache's key, on the CPU too
  const bool gpus = !devices.gpus.empty() && args.job.device != "cpu";
  const int processes = args.run.nproc_per_node > 0 ? args.run.nproc_per_node
                        : gpus                      ? int(devices.gpus.size())
                                                    : std::max(1, devices.cpu_cores);
  plan::JobSpec job = args.job;
  plan::apply_model_defaults(job, model);
  const bool calibrate_only = args.calibrate && !args.plan && !args.auto_pick;
  if (const auto problems = plan::validate(job, model); !problems.empty() && !calibrate_only)
    throw workers::ArgError(problems.front().message);  // before the calibration's seconds
  const int b = plan::bytes_per_value(job, gpus);
  const std::string dtype = plan::calibration_dtype(job, gpus);
  bool cached = false;
  std::string busy;
  // Ctrl+C while the ranks measure ends them (they run in a process group of their own).
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  const auto cal =
      workers::calibration_for(worker, devices, processes, dtype, args.calibrate, &cached, &busy, &g_cancel);
  if (!busy.empty())
    std::cerr << "dit-launch: " << busy << " while calibrating; these figures may be far off and are not kept: "
              << "calibrate again with --calibrate when it is quiet" << std::endl;
  if (calibrate_only) {
    std::cout << plan::calibration_json(cal) << std::endl;
    if (busy.empty())
      std::cerr << "dit-launch: measured; cached in "
                << workers::calibration_cache_file(workers::calibration_key(devices, processes, dtype)) << std::endl;
    return true;
  }
  const auto ranked = plan::rank_configs(job, model, processes, cal, memory_gib, b);
  if (ranked.empty())
    throw workers::ArgError("no parallel configuration runs this job on " + std::to_string(processes) +
                            " processes; set --nproc_per_node to another count");
  if (args.plan && args.json) return std::cout << plan::predictions_json(ranked) << std::endl, true;
  if (args.plan) {
    std::printf("%s, %d steps, on %d %s (%s; calibration %s)\n", model.variant.name.c_str(), job.num_inference_steps,
                processes, gpus ? "GPUs" : "CPU processes", dtype.c_str(), cached ? "from the cache" : "measured now");
    std::printf("%4s %9s %9s %9s %9s %9s %8s %9s  %-4s %s\n", "rank", "s/step", "compute", "comm", "bubble",
                "total s", "VAE s", "GiB/rank", "fits", "flags");
    int i = 0;
    for (const auto& r : ranked)
      std::printf("%4d %9.3f %9.3f %9.3f %9.3f %9.1f %8.1f %9.2f  %-4s %s%s\n", ++i, r.seconds_per_step, r.compute_s,
                  r.communication_s, r.bubble_s, r.total_s, r.vae_s, r.peak_bytes_per_rank / plan::kGiB,
                  r.fits ? "yes" : "no", r.config.flags().c_str(), r.offload ? " --offload blocks" : "");
    std::printf("\nThe weights kept otherwise, with the first configuration (%s):\n", ranked.front().config.describe().c_str());
    plan::JobSpec first = job;  // as the first row runs it
    if (ranked.front().offload) first.offload = "blocks";
    for (const auto& c : plan::storage_choices(ranked.front().config, first, model, b, memory_gib))
      std::printf("  %-18s %9.2f GiB/rank  fits: %s\n", c.flag.empty() ? "(as given)" : c.flag.c_str(), c.peak_gib,
                  c.fits ? "yes" : "no");
    return true;
  }
  const auto& best = ranked.front();
  if (!best.fits) throw workers::ArgError("no configuration fits: " + best.reason);
  const long fitting = std::count_if(ranked.begin(), ranked.end(), [](const auto& r) { return r.fits; });
  char why[600];
  int n = std::snprintf(why, sizeof why, "dit-launch: --auto chose %s%s: predicted %.3g s/step (%.3g s in all), "
                        "%.2f GiB per rank, the fastest of the %ld configurations that fit %d processes",
                        best.config.describe().c_str(),
                        best.offload ? " with --offload blocks (nothing fits on the devices otherwise)" : "",
                        best.seconds_per_step, best.total_s,
                        best.peak_bytes_per_rank / plan::kGiB, fitting, processes);
  if (ranked.size() > 1)
    std::snprintf(why + n, sizeof why - size_t(n), "; next: %s at %.3g s/step", ranked[1].config.describe().c_str(),
                  ranked[1].seconds_per_step);
  std::cerr << why << std::endl;
  args.parallel = best.config;
  if (best.offload) args.job.offload = "blocks";
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace studio;
  const std::string prefix = "dit-launch: ";
  return workers::guarded_main(prefix, [&]() -> int {
    auto args = workers::parse_launch_args(std::vector<std::string>(argv + 1, argv + argc));
    if (args.help) return std::cout << workers::launch_usage(), workers::kOk;
    if (args.version) return std::cout << "dit-launch " STUDIO_VERSION "\n", workers::kOk;
    const std::string worker = args.worker.empty() ? workers::worker_program() : workers::worker_at(args.worker);
    if (worker.empty())
      throw workers::ArgError("--worker " + args.worker + ": no executable dit-worker there; give the dit-worker "
                              "file, the folder holding it, or the folder a worker archive was unpacked into");
    const bool demo = args.job.model_dir.empty();
    if (demo) args.job.model_dir = workers::demo_model_dir();
    plan::ModelFolder model;
    try {
      model = plan::read_model_folder(args.job.model_dir);
    } catch (const InputError& e) {
      throw InputError(std::string("--model ") + e.what());
    }
    // A family that sizes the video by its picture sizes it now, so that the plan and every rank agree. A
    // picture that is missing or does not decode is refused below, after the job's other checks.
    std::optional<video::Picture> picture;
    if (!args.job.image_file.empty() && std::filesystem::is_regular_file(args.job.image_file)) try {
        picture = video::read_picture(args.job.image_file, "--image");
        plan::size_from_picture(args.job, model, picture->width, picture->height);
      } catch (const InputError&) {
      }

    // On one machine: one rank per visible GPU (choose them with CUDA_VISIBLE_DEVICES), or on the CPU as
    // many ranks as the degrees ask for. Several machines: --nproc_per_node ranks on each.
    workers::Devices devices;
    // A job written for a cluster is checked against its own ranks, not this machine's devices.
    const bool for_cluster = !args.write_job.empty();
    if (args.job.device != "cpu" && !for_cluster) devices = workers::list_devices(worker);
    const bool gpus = !devices.gpus.empty();
    // Without a GPU every rank runs on the CPU; said so, the plan counts the memory the blocks run in.
    if (!gpus && !for_cluster && args.job.device == "auto") args.job.device = "cpu";
    double memory_gib = 0;  // the smallest GPU's
    for (const auto& g : devices.gpus)
      memory_gib = memory_gib == 0 ? double(g.memory_bytes) / (1 << 30) : std::min(memory_gib, double(g.memory_bytes) / (1 << 30));
    if ((args.plan || args.auto_pick || args.calibrate) && plan_configs(args, model, worker, devices, memory_gib))
      return workers::kOk;
    const int world = args.parallel.world_size();
    auto& run = args.run;
    if (!for_cluster && run.nproc_per_node > 0 && std::max(1, run.nnodes) * run.nproc_per_node != world)
      throw workers::ArgError(
          (run.nnodes > 1 ? "--nnodes " + std::to_string(run.nnodes) + " x " : std::string()) + "--nproc_per_node " +
          std::to_string(run.nproc_per_node) + " makes " + std::to_string(std::max(1, run.nnodes) * run.nproc_per_node) +
          " ranks, and the degrees given make " + std::to_string(world) + " (" + args.parallel.describe() +
          "); give degrees whose product is the ranks (--ulysses_degree, --ring_degree, --use_cfg_parallel, "
          "--pipefusion_parallel_degree, --data_parallel_degree), leave --nproc_per_node out, or let --auto choose");
    if (run.nproc_per_node == 0) run.nproc_per_node = run.nnodes > 1 ? std::max(1, world / run.nnodes) : 0;
    const int processes = for_cluster ? world
                          : run.nnodes > 1 ? run.nnodes * run.nproc_per_node
                          : gpus           ? int(devices.gpus.size())
                                           : world;
    auto problems = plan::check_job(args.job, args.parallel, model, {processes, memory_gib, gpus});
    io::check_lora_fits(args.job, model, problems);  // a LoRA for another model, from its header
    if (!problems.empty()) throw workers::ArgError(problems.front().message);
    // A weight file cut short or a shard missing is found from the headers now, not by every rank at load.
    if (const auto weights = io::weight_file_problems(model.dir); !weights.empty())
      throw InputError("--model " + model.dir + ": " + weights.front() +
                       (weights.size() > 1 ? " (and " + std::to_string(weights.size() - 1) + " more)" : ""));
    // A picture that does not decode is refused here, before any rank starts (each rank reads it again).
    if (!args.job.image_file.empty() && !picture) video::read_picture(args.job.image_file, "--image");
    if (!args.job.last_image_file.empty()) video::read_picture(args.job.last_image_file, "--last_image");
    workers::note_unused_settings(args);
    // Oversubscribing the CPU is allowed (tests and trials do it), and said: each step only gets slower.
    if (!gpus && !for_cluster && run.nnodes <= 1)
      if (const auto slower = plan::cpu_processes_problem(
              world, devices.cpu_cores > 0 ? devices.cpu_cores : int(std::thread::hardware_concurrency())))
        args.notes.push_back(slower->message);
    for (const auto& note : args.notes) std::cerr << prefix << "note: " << note << std::endl;
    if (for_cluster) {
      plan::write_job_file(args.write_job, {args.job, args.parallel});
      std::cerr << prefix << "wrote " << args.write_job << " (" << args.parallel.describe() << ", " << world
                << (world == 1 ? " rank" : " ranks") << "); start them with e.g. `torchrun --nproc_per_node " << world
                << " --no_python dit-worker --job " << args.write_job << "`" << std::endl;
      return workers::kOk;
    }
    if (demo)
      std::cerr << prefix << "no --model given: using the built-in demo model (random weights, abstract motion) at "
                << args.job.model_dir << std::endl;

    workers::LaunchPlan lp;
    lp.job = {args.job, args.parallel};
    lp.worker_exe = worker;
    lp.run = run;
    if (run.nnodes > 1)
      if (const char* t = std::getenv("DIT_STUDIO_TOKEN")) lp.token = t;

    workers::ProgressView view(stderr, ::isatty(STDERR_FILENO) == 1);
    workers::Supervisor* self = nullptr;
    workers::Supervisor sup(
        lp, [&](const events::Message& m) { view.message(m, self->ranks()); },
        [&](const std::string& line) { view.note(line, self->ranks()); });
    self = &sup;
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    if (world > 1 || run.nnodes > 1)
      std::cerr << prefix << "starting " << lp.local_ranks() << (lp.local_ranks() == 1 ? " rank" : " ranks")
                << (run.nnodes > 1 ? " on machine " + std::to_string(run.node_rank) + " of " + std::to_string(run.nnodes) : "")
                << ": " << args.parallel.describe() << std::endl;
    sup.start();
    bool cancelled = false;
    while (sup.poll(100)) {
      if (g_cancel.load() && !cancelled) {
        cancelled = true;
        view.note("stopping every rank", sup.ranks());
        sup.cancel();
      }
      view.tick(sup.ranks());
    }
    view.finish(sup.ranks());
    const auto& out = sup.outcome();
    if (out.exit_code != 0) {
      std::cerr << prefix << out.message << std::endl;
      return out.exit_code;
    }
    if (const auto& d = sup.ranks().front().done) {
      const auto& r0 = sup.ranks().front();
      char line[240];
      int n = std::snprintf(line, sizeof line, "done: loading %.2f s, denoising %.2f s, decoding and writing %.2f s",
                            d->seconds_loading, d->seconds_denoising, d->seconds_decoding);
      if (r0.cached)
        std::snprintf(line + n, sizeof line - size_t(n), "; the step cache reused %d of %d %s", r0.reused_calls,
                      r0.total * r0.calls_per_step, r0.calls_per_step > 1 ? "calls" : "steps");
      std::cerr << prefix << line << std::endl;
    }
    return workers::kOk;
  });
}
