// dit-worker: one rank of a job. Started by dit-launch or the studio (or torchrun, srun, mpirun) with the
// rank's identity in its environment and the job file as its argument; reports over the launcher's event
// socket when DIT_EVENTS is set, else as plain lines on stderr.
// Usage: dit-worker --job FILE [--serve] | --list-devices | --version | --help
#include <sys/prctl.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <thread>

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <c10/util/Exception.h>
#include <nlohmann/json.hpp>

#include "compat/cpu_tensor_budget.h"
#include "compat/torch_compat.h"
#include "models/family_runtime.h"
#include "pipeline/decode.h"
#include "pipeline/run_job.h"
#include "plan/error.h"
#include "plan/job_check.h"
#include "plan/job_file.h"
#include "workers/launch/guarded_main.h"
#include "workers/launch/launch_args.h"
#include "workers/rank/calibrate.h"
#include "workers/rank/reporter.h"

namespace {

using namespace studio;

std::atomic<bool> g_signalled{false};
extern "C" void on_signal(int) { g_signalled.store(true); }

constexpr const char* kUsage = R"(usage: dit-worker --job FILE [--serve] | --calibrate DTYPE | --list-devices | --version | --help

One rank of a DiT Studio job. dit-launch and the studio start one per rank; so can torchrun, srun or
mpirun (`torchrun --nproc_per_node N --no_python dit-worker --job FILE`, with FILE from
`dit-launch --write_job FILE`).

  --job FILE        run this rank of the job the file describes
  --serve           then run each job the launcher sends over its event connection, keeping the
                    transformer between jobs, until the launcher closes it (the studio's ranks)
  --calibrate DTYPE measure this rank's matmul and attention rates at DTYPE (auto, float32, bfloat16,
                    float16) and the links to the other ranks, for the cost model; rank 0 prints them as
                    JSON (dit-launch --calibrate starts the ranks and caches the result)
  --list-devices    print the GPUs, the CPU and this build as JSON, and exit
  --version         print the version and what it was built with (LibTorch, CUDA, NCCL), and exit
  --help            print this text

Environment:
  RANK, WORLD_SIZE, LOCAL_RANK        the rank's place (torchrun's names; SLURM_PROCID, SLURM_NTASKS,
                                      SLURM_LOCALID and OMPI_COMM_WORLD_* are read too)
  MASTER_ADDR, MASTER_PORT            where the ranks meet (default: this machine, port 29500)
  DIT_EVENTS, DIT_EVENTS_TOKEN        the launcher's event socket and its secret (else plain lines on stderr)
  DIT_COLLECTIVE_TIMEOUT_S            how long one collective may take (default 600)
  TORCH_DISTRIBUTED_DEBUG=DETAIL      check that every rank calls the same collectives
  CUDA_VISIBLE_DEVICES                the GPUs this rank may see; it uses cuda:LOCAL_RANK

Exit status: 0 done, 1 internal failure, 2 bad argument, 3 bad input, 4 out of memory, 5 a peer lost,
130 cancelled.
)";

std::string version_line() { return "dit-worker " STUDIO_VERSION " (" + compat::build_description() + ")"; }

int list_devices() {
  nlohmann::json gpus = nlohmann::json::array();
  for (const auto& g : compat::list_gpus())
    gpus.push_back({{"index", g.index}, {"name", g.name}, {"memory_bytes", g.total_bytes}, {"free_bytes", g.free_bytes}});
  const uint64_t memory = uint64_t(::sysconf(_SC_PHYS_PAGES)) * uint64_t(::sysconf(_SC_PAGESIZE));
  nlohmann::json out = {{"gpus", gpus},
                        {"cpu", {{"cores", std::thread::hardware_concurrency()}, {"memory_bytes", memory}}},
                        {"torch", compat::torch_version()},
                        {"build", version_line()}};
  if (gpus.empty())
    out["note"] = compat::has_cuda_runtime() ? "CUDA is built in but no GPU is visible (check CUDA_VISIBLE_DEVICES and the driver); "
                                  "jobs run on the CPU"
                                : "this build has no CUDA (LibTorch " + std::string(compat::torch_version()) +
                                      " for the CPU); jobs run on the CPU";
  std::cout << out.dump(2) << std::endl;
  return workers::kOk;
}

// Fault injection, for the tests and for trying how a configuration fails: DIT_WORKER_MEMORY_LIMIT_MB=R:MB
// lets rank R's CPU tensors allocated after the first denoising step hold at most MB at once (0: its next
// tensor allocation fails). The budget is kept by the tensor allocator, so it fires at the same allocation
// every run (docs/workers.md); on a GPU rank it limits the rank's host tensors, not the GPU's.
// Read before the job starts, so that a malformed value fails at once.
struct MemoryFault {
  size_t bytes = 0;
  std::string setting;
};
std::optional<MemoryFault> memory_fault(int rank) {
  const char* v = std::getenv("DIT_WORKER_MEMORY_LIMIT_MB");
  if (!v) return std::nullopt;
  int r = -1, used = 0;
  long mb = -1;
  if (std::sscanf(v, "%d:%ld%n", &r, &mb, &used) != 2 || v[used] != '\0' || r < 0 || mb < 0 || mb > (1L << 30))
    throw InputError(std::string("DIT_WORKER_MEMORY_LIMIT_MB is '") + v +
                     "': expected RANK:MB, the rank and how many MB its tensors may take after the first step, "
                     "e.g. 1:200 (1:0 fails rank 1's next allocation)");
  if (r != rank) return std::nullopt;
  return MemoryFault{size_t(mb) << 20, std::string("DIT_WORKER_MEMORY_LIMIT_MB=") + v};
}

// Bytes the mesh had sent and received before this job (a rank serving several counts each job's own).
struct TrafficBefore {
  uint64_t sent = 0, received = 0;
};

events::Resources resources(const at::Device& device, const parallel::Mesh& mesh, const TrafficBefore& before) {
  auto r = workers::host_resources();
  if (auto a = compat::allocator_stats(device)) {
    r.device_allocated = a->allocated;
    r.device_reserved = a->reserved;
    r.device_peak = a->peak;
  }
  r.bytes_sent = mesh.traffic().total_sent() - before.sent;
  r.bytes_received = mesh.traffic().total_received() - before.received;
  return r;
}

events::Picture picture(const at::Tensor& rgb /* [H, W, 3] uint8 CPU contiguous */) {
  events::Picture p;
  p.height = int(rgb.size(0));
  p.width = int(rgb.size(1));
  p.rgb.assign(reinterpret_cast<const char*>(rgb.data_ptr<uint8_t>()), size_t(rgb.numel()));
  return p;
}

// LibTorch's CPU threads: this machine's physical cores shared among its ranks, unless OMP_NUM_THREADS says.
// LibTorch's own default, read before it is changed, is the physical cores: a second hyperthread of a core
// adds no arithmetic, and a process alone (a test, say) runs with that many, so a rank alone does too.
int physical_cores() {
  static const int cores = std::max(1, at::get_num_threads());
  return cores;
}

void share_cores(const parallel::DistEnv& env) {
  if (const int n =
          parallel::cpu_threads_per_rank(physical_cores(), env.local_world_size, std::getenv("OMP_NUM_THREADS")))
    at::set_num_threads(n);
}

// What a rank serving several jobs (--serve) keeps from one to the next: its place among the ranks, and the
// transformers and prompt embeddings of the last job (they go first: sharded weights use the mesh's groups).
struct Served {
  std::shared_ptr<parallel::Mesh> mesh;
  pipeline::KeptBetweenRuns kept;
};

// The job itself, reporting as it goes.
void run_rank(const plan::JobFile& file, const plan::ModelFolder& model, const parallel::DistEnv& env,
              const at::Device& device, workers::RankReporter& reporter, Served& served, bool serve) {
  reporter.phase("starting");
  const auto fault = memory_fault(env.rank);
  double timeout_s = 600;
  if (const char* t = std::getenv("DIT_COLLECTIVE_TIMEOUT_S")) timeout_s = std::max(1.0, std::atof(t));
  if (!served.mesh)
    served.mesh =
        parallel::Mesh::create(file.parallel, env, device, std::chrono::milliseconds(int64_t(timeout_s * 1000)));
  const auto& mesh = served.mesh;
  const TrafficBefore before{mesh->traffic().total_sent(), mesh->traffic().total_received()};
  workers::reset_host_peak();  // the peaks each job reports are its own
  compat::reset_allocator_peak(device);
  if (env.restart_count > 0 && env.rank == 0)
    reporter.log("torchrun restarted the job (attempt " + std::to_string(env.restart_count + 1) +
                 "): it starts again from the first step; nothing of the last attempt is reused");
  if (env.rank == 0 && device.is_cpu())
    reporter.log("CPU threads per rank: " + std::to_string(at::get_num_threads()) +
                 (std::getenv("OMP_NUM_THREADS") ? std::string(" (OMP_NUM_THREADS)")
                                                 : " (" + std::to_string(physical_cores()) +
                                                       " physical cores shared by " + std::to_string(env.local_world_size) +
                                                       (env.local_world_size == 1 ? " rank" : " ranks") +
                                                       " on this machine; OMP_NUM_THREADS overrides)"));

  const auto preview_rgb = models::latent_rgb(model);
  const bool channels_first = plan::latent_geometry(file.job, model).channels_first;
  pipeline::Hooks hooks;
  hooks.stop_requested = [&] { return g_signalled.load() || reporter.cancel_requested(); };
  hooks.on_phase = [&](const std::string& p) { reporter.phase(p); };
  hooks.on_decode_progress = [&](int done, int total) {
    reporter.phase("decoding", done, total, resources(device, *mesh, before));
  };
  hooks.on_step = [&](const pipeline::StepDone& d) {
    if (d.step == 1 && fault) compat::limit_cpu_tensor_memory(fault->bytes, fault->setting);
    reporter.progress({env.rank, d.step, d.total, d.seconds, d.full, resources(device, *mesh, before), d.calls});
    if (env.rank == 0 && reporter.connected()) {
      auto p = picture(pipeline::latent_preview(d.latents, preview_rgb, channels_first));
      p.rank = env.rank;
      p.step = d.step;
      reporter.picture(events::Kind::Preview, p);
    }
  };
  hooks.on_frames = [&](const at::Tensor& rgb, int first_video, int first_frame) {  // [b, T, H, W, 3]
    if (!reporter.connected()) return;
    for (int64_t b = 0; b < rgb.size(0); ++b)
      for (int64_t t = 0; t < rgb.size(1); ++t) {
        auto p = picture(rgb[b][t]);
        p.rank = env.rank;
        p.video = first_video + int(b);
        p.index = first_frame + int(t);
        reporter.picture(events::Kind::Frame, p);
      }
  };
  auto r = pipeline::run_job(file.job, model, *mesh, hooks, [&](const std::string& s) { reporter.log(s); },
                             serve ? &served.kept : nullptr);
  events::Done d;
  d.rank = env.rank;
  d.seconds_loading = r.seconds_loading;
  d.seconds_denoising = r.seconds_denoising;
  d.seconds_decoding = r.seconds_decoding;
  d.resources = resources(device, *mesh, before);
  d.outputs = r.outputs;
  reporter.done(d);
}

// The job file's job, checked against its model and this rank's place; `device`, once picked, is kept.
plan::JobFile read_job(const std::string& text, const std::string& where, const parallel::DistEnv& env,
                       plan::ModelFolder& model) {
  auto file = plan::job_file_from_json(text, where);
  model = plan::read_model_folder(file.job.model_dir);
  const auto problems = plan::check_job(file.job, file.parallel, model, {env.world_size});
  if (!problems.empty()) throw workers::ArgError(problems.front().message);
  return file;
}

// One job, or with `serve` each job the launcher sends after it until it closes the connection: the ranks keep
// their mesh, their transformers and the prompt embeddings between them (pipeline/run_job.h's KeptBetweenRuns).
int run(const std::string& job_path, const parallel::DistEnv& env, bool serve) {
  plan::ModelFolder model;
  auto file = read_job(plan::read_text_file(job_path, 1 << 20), job_path, env, model);  // a job is a few hundred bytes
  at::Device device = at::kCPU;
  if ((file.job.device == "auto" || file.job.device.rfind("cuda", 0) == 0) && at::hasCUDA()) {
    // One GPU per local rank, made current before anything touches CUDA, so that no work lands on GPU 0.
    device = at::Device(at::kCUDA, int8_t(parallel::gpu_index(env.local_rank, int(at::getNumGPUs()))));
    compat::bind_device(device);
  }

  workers::RankReporter reporter(env.rank, env.world_size, device.str());
  if (serve && !reporter.connected())
    throw workers::ArgError("--serve takes its jobs from the launcher's event connection (DIT_EVENTS); without one, "
                            "run each job with --job FILE alone");
  Served served;
  const plan::ParallelConfig first_parallel = file.parallel;
  try {
    for (;;) {
      if (device.is_cuda()) file.job.device = device.str();
      run_rank(file, model, env, device, reporter, served, serve);
      if (!serve) return workers::kOk;
      const auto next = reporter.next_job([] { return g_signalled.load(); });
      if (!next) return workers::kOk;  // the launcher ended the session
      file = read_job(*next, "the launcher's next job", env, model);
      if (!(file.parallel == first_parallel))
        throw workers::ArgError("the next job runs as " + file.parallel.describe() + "; these ranks serve " +
                                served.mesh->config().describe() + " (start new ranks for another configuration)");
    }
  } catch (const c10::Error& e) {
    const std::runtime_error plain(e.what_without_backtrace());  // guarded_main needs no LibTorch
    const auto f = workers::failure_of(std::make_exception_ptr(plain));
    reporter.error(f.kind, f.message);
    throw plain;
  } catch (...) {
    const auto f = workers::failure_of(std::current_exception());
    reporter.error(f.kind, f.message);
    throw;
  }
}

}  // namespace

int main(int argc, char** argv) {
  // No rank outlives the program that started it (and the events connection closing says the same).
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  std::string prefix = "dit-worker: ";
  return workers::guarded_main(prefix, [&]() -> int {
    if (argc == 2 && std::string(argv[1]) == "--list-devices") return list_devices();
    if (argc == 2 && std::string(argv[1]) == "--version") {
      std::cout << version_line() << std::endl;
      return workers::kOk;
    }
    if (argc == 2 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h"))
      return std::cout << kUsage, workers::kOk;
    const bool serve = argc == 4 && std::string(argv[3]) == "--serve";
    if ((argc != 3 && !serve) || (std::string(argv[1]) != "--job" && std::string(argv[1]) != "--calibrate") ||
        (serve && std::string(argv[1]) != "--job"))
      throw workers::ArgError(
          "usage: dit-worker --job FILE [--serve] | --calibrate DTYPE | --list-devices | --version | --help");
    const auto env = parallel::DistEnv::from_environment();
    share_cores(env);
    if (std::string(argv[1]) == "--calibrate") {
      // Nothing to stop cleanly between measurements: a signal (the launcher ending the ranks, its death) ends it.
      std::signal(SIGINT, SIG_DFL);
      std::signal(SIGTERM, SIG_DFL);
      const auto c = workers::calibrate(env, argv[2]);
      if (env.rank == 0) std::cout << plan::calibration_json(c) << std::endl;
      return workers::kOk;
    }
    prefix = "[rank " + std::to_string(env.rank) + "] ";
    try {
      return run(argv[2], env, serve);
    } catch (const c10::Error& e) {  // before the reporter exists
      throw std::runtime_error(e.what_without_backtrace());
    }
  });
}
