// What keeping the ranks between runs saves (the studio's ranks, docs/workers.md "Ranks that stay between runs"):
// runs the job of JOB_FILE once on fresh ranks, as dit-launch does, then RUNS times on one set of ranks that serve
// (dit-worker --serve), each LoRA's strength changed between runs (times 1, 0.5, 0.25, ...). Prints a markdown
// table: each run's wall seconds from start to its result, its seconds before the first step (the done event's
// seconds_loading: the text encoders and the transformer's load) and its fastest step.
// Usage: bench-served-runs JOB_FILE DIT_WORKER [RUNS]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

#include "plan/job_file.h"
#include "plan/lora_choice.h"
#include "workers/launch/supervisor.h"

namespace {

using namespace studio;

struct Figures {
  double wall = 0, to_first_step = 0, fastest_step = std::numeric_limits<double>::infinity();
};

// Polls `sup` until its job is over; the figures of rank 0.
Figures finish(workers::Supervisor& sup, std::chrono::steady_clock::time_point t0, const double& fastest) {
  while (sup.poll(50)) {
  }
  if (sup.outcome().exit_code != 0) throw std::runtime_error("the run failed: " + sup.outcome().message);
  Figures f;
  f.wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  f.to_first_step = sup.ranks().front().done->seconds_loading;
  f.fastest_step = fastest;
  return f;
}

// The job's LoRA list with every strength times `factor`.
std::string scaled(const std::string& list, double factor) {
  std::string out;
  for (const auto& use : plan::parse_loras(list)) {
    std::ostringstream entry;
    entry << use.file << ":" << use.scale * factor;
    out = plan::add_lora(out, entry.str());
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc < 3) {
    std::fprintf(stderr, "usage: bench-served-runs JOB_FILE DIT_WORKER [RUNS]\n");
    return 2;
  }
  std::ifstream in(argv[1]);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const plan::JobFile job = plan::job_file_from_json(text, argv[1]);
  const int runs = argc > 3 ? std::max(2, std::atoi(argv[3])) : 3;
  double fastest = 0;  // the current run's fastest step after its first
  const auto on_message = [&](const events::Message& m) {
    if (m.kind != events::Kind::Progress || events::rank_of(m) != 0) return;
    const auto p = events::Progress::parse(m);
    if (p.step > 1) fastest = std::min(fastest, p.seconds);
  };
  const auto plan_of = [&](bool serve) {
    workers::LaunchPlan lp;
    lp.job = job;
    lp.worker_exe = argv[2];
    lp.serve = serve;
    return lp;
  };
  std::printf("| run | ranks | LoRAs | wall (s) | before the first step (s) | fastest step (s) |\n|---|---|---|---|---|---|\n");
  const auto row = [&](const std::string& run, const char* ranks, const std::string& loras, const Figures& f) {
    std::printf("| %s | %s | %s | %.2f | %.2f | %.2f |\n", run.c_str(), ranks, loras.c_str(), f.wall, f.to_first_step,
                f.fastest_step);
  };
  const std::string strengths = job.job.lora.empty() ? "none" : "as given";
  {
    fastest = std::numeric_limits<double>::infinity();
    const auto t0 = std::chrono::steady_clock::now();
    workers::Supervisor fresh(plan_of(false), on_message, {});
    fresh.start();
    row("1", "fresh (as dit-launch)", strengths, finish(fresh, t0, fastest));
  }
  workers::Supervisor served(plan_of(true), on_message, {});
  double factor = 1;
  for (int i = 0; i < runs; ++i, factor /= 2) {
    fastest = std::numeric_limits<double>::infinity();
    const auto t0 = std::chrono::steady_clock::now();
    plan::JobFile next = job;
    next.job.lora = scaled(job.job.lora, factor);
    if (i == 0) served.start();
    else served.run_next(next);
    std::ostringstream loras;
    if (job.job.lora.empty()) loras << "none";
    else loras << "strengths x " << factor;
    row(std::to_string(i + 2), i == 0 ? "served, started" : "served, kept", loras.str(), finish(served, t0, fastest));
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench-served-runs: %s\n", e.what());
  return 1;
}
