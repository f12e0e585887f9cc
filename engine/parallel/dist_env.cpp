#include "parallel/dist_env.h"

#include <algorithm>
#include <cstdlib>
#include <initializer_list>

#include "plan/error.h"

namespace studio::parallel {

namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

long env_long(const char* name, long fallback, long max) {
  const char* v = env(name);
  if (!v) return fallback;
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  if (*end != '\0' || x < 0 || x > max)
    throw InputError(std::string("environment variable ") + name + "='" + v + "' is not an integer from 0 to " +
                     std::to_string(max));
  return x;
}

// The first of `names` that is set: torchrun's, then Slurm's (srun), then Open MPI's (mpirun).
int env_first(std::initializer_list<const char*> names, int fallback) {
  for (const char* n : names)
    if (env(n)) return int(env_long(n, fallback, 1 << 20));
  return fallback;
}

}  // namespace

std::string first_slurm_host(const std::string& nodelist) {
  // The first entry, up to a comma outside brackets; in it, a bracket's first number (its padding kept).
  const size_t open = nodelist.find('['), comma = nodelist.find(',');
  if (open == std::string::npos || (comma != std::string::npos && comma < open))
    return nodelist.substr(0, comma);
  const size_t stop = nodelist.find_first_of(",-]", open + 1);
  if (stop == std::string::npos || stop == open + 1)
    throw InputError("SLURM_JOB_NODELIST='" + nodelist + "' cannot be read; export MASTER_ADDR (the first host)");
  return nodelist.substr(0, open) + nodelist.substr(open + 1, stop - open - 1);
}

int gpu_index(int local_rank, int visible) {
  if (visible == 1) return 0;
  if (local_rank >= visible)
    throw InputError("LOCAL_RANK " + std::to_string(local_rank) + " has no GPU: " + std::to_string(visible) +
                     " are visible on this machine (CUDA_VISIBLE_DEVICES); start at most " + std::to_string(visible) +
                     " ranks per machine");
  return local_rank;
}

int cpu_threads_per_rank(int cores, int local_world_size, const char* omp_num_threads) {
  if (omp_num_threads && *omp_num_threads) return 0;
  return std::max(1, cores / std::max(1, local_world_size));
}

DistEnv DistEnv::from_environment() {
  DistEnv e;
  e.rank = env_first({"RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK"}, 0);
  e.world_size = env_first({"WORLD_SIZE", "SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE"}, 1);
  e.local_rank = env_first({"LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK"}, e.rank);
  e.local_world_size = env_first({"LOCAL_WORLD_SIZE", "SLURM_NTASKS_PER_NODE", "OMPI_COMM_WORLD_LOCAL_SIZE"}, 1);
  const bool torchrun_style = env("RANK") != nullptr;
  const bool slurm = !torchrun_style && env("SLURM_PROCID"), mpi = !torchrun_style && !slurm && env("OMPI_COMM_WORLD_RANK");
  if (const char* a = env("MASTER_ADDR")) {
    e.master_addr = a;
  } else if (slurm && env("SLURM_JOB_NODELIST")) {
    e.master_addr = first_slurm_host(env("SLURM_JOB_NODELIST"));
  } else if (mpi && e.world_size > 1 &&
             env_first({"OMPI_COMM_WORLD_LOCAL_SIZE"}, 0) != e.world_size) {
    throw InputError("MASTER_ADDR is not set: under mpirun across machines, export it with the first machine's "
                     "address (mpirun -x MASTER_ADDR=node0 -x MASTER_PORT=29500 ...)");
  }
  if (env("MASTER_PORT")) e.master_port = int(env_long("MASTER_PORT", 29500, 65535));
  else if (slurm && env("SLURM_JOB_ID")) e.master_port = 29500 + int(env_long("SLURM_JOB_ID", 0, 1L << 40) % 10000);
  if (const char* a = env("TORCHELASTIC_USE_AGENT_STORE")) e.agent_store = std::string(a) == "True";
  e.restart_count = env_first({"TORCHELASTIC_RESTART_COUNT"}, 0);
  if (e.local_world_size < 1)
    throw InputError("LOCAL_WORLD_SIZE " + std::to_string(e.local_world_size) + " must be 1 or more");
  if (e.world_size < 1 || e.rank >= e.world_size)
    throw InputError("RANK " + std::to_string(e.rank) + " is not below WORLD_SIZE " + std::to_string(e.world_size));
  return e;
}

}  // namespace studio::parallel
