// Who this process is in a job, read from the environment its launcher sets: dit-launch and torchrun
// (RANK, WORLD_SIZE, LOCAL_RANK), Slurm's srun (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID) or Open MPI's
// mpirun (OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK), in that order of precedence. Torch-free.
//
// Where the ranks meet: MASTER_ADDR and MASTER_PORT when set. Otherwise, under srun, the first host of
// SLURM_JOB_NODELIST and port 29500 + SLURM_JOB_ID mod 10000 (every rank of a job computes the same, and
// two jobs on one machine differ); under mpirun on one machine (OMPI_COMM_WORLD_SIZE equal to
// OMPI_COMM_WORLD_LOCAL_SIZE), 127.0.0.1 and 29500; across machines under mpirun, MASTER_ADDR is required
// (Open MPI says nothing of the first host), and the message says how to export it.
#pragma once
#include <string>

namespace studio::parallel {

struct DistEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  // Ranks on this machine: LOCAL_WORLD_SIZE (torchrun, dit-launch), SLURM_NTASKS_PER_NODE,
  // OMPI_COMM_WORLD_LOCAL_SIZE; 1 when no launcher says.
  int local_world_size = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  // torchrun's agent serves the store at MASTER_ADDR:MASTER_PORT itself (TORCHELASTIC_USE_AGENT_STORE=True):
  // every rank joins it as a client. TORCHELASTIC_RESTART_COUNT numbers the attempts of a restarted job.
  bool agent_store = false;
  int restart_count = 0;

  // InputError naming the variable when one is malformed or missing.
  static DistEnv from_environment();
};

// The GPU a rank takes among those it sees: its LOCAL_RANK; or the only one when the scheduler shows each
// rank just its own (Slurm's --gpus-per-task sets CUDA_VISIBLE_DEVICES per task). InputError when it has none.
int gpu_index(int local_rank, int visible_gpus);

// The CPU threads each rank runs its operators on: the machine's cores shared among its ranks (at least
// one), as torchrun does. A rank that kept LibTorch's default of every core would share each core with
// the other ranks' threads, and oversubscribed cores make every step slower (docs/cost-model.md has the
// measurement). 0: OMP_NUM_THREADS is set, LibTorch follows it.
int cpu_threads_per_rank(int cores, int local_world_size, const char* omp_num_threads);

// The first host of a Slurm node list: "gpu[03-05,9],cpu1" -> "gpu03". InputError if it cannot be read.
std::string first_slurm_host(const std::string& nodelist);

}  // namespace studio::parallel
