// A parallel configuration, the rank layout it implies, and its validation before any process starts.
// Torch-free: the GUI validates on every edit with the same code the launcher and workers use.
//
// world = data x CFG x PipeFusion x Ring x Ulysses, with rank order as xDiT's: Ulysses innermost on
// contiguous ranks, then Ring, PipeFusion, CFG, data.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "plan/job.h"

namespace studio::plan {

// What every interface accepts for a degree or PipeFusion's patch count, and for the warm-up steps
// (whether a configuration fits a job and a machine is validate_parallel's to say).
constexpr int kMaxDegree = 1024;
constexpr int kMaxWarmupSteps = 100000;

struct ParallelConfig {
  int ulysses_degree = 1;
  int ring_degree = 1;
  int pipefusion_parallel_degree = 1;
  int num_pipeline_patch = 1;
  int warmup_steps = 1;
  bool use_cfg_parallel = false;
  int data_parallel_degree = 1;
  bool use_parallel_vae = false;  // every rank decodes a band of rows (parallel/parallel_vae.*)
  bool shard_weights = false;     // the CFG x ring x Ulysses ranks each keep 1/N of every block (parallel/sharded_blocks.*)

  int cfg_degree() const { return use_cfg_parallel ? 2 : 1; }
  int sp_degree() const { return ulysses_degree * ring_degree; }
  // The ranks that run the same blocks at the same time (one PipeFusion stage of one data replica), over which
  // --shard_weights spreads them.
  int replica_degree() const { return cfg_degree() * sp_degree(); }
  int world_size() const {
    return data_parallel_degree * cfg_degree() * pipefusion_parallel_degree * ring_degree * ulysses_degree;
  }
  std::string describe() const;  // "ulysses 2 x ring 2 (4 processes)"
  std::string flags() const;     // "--ulysses_degree 2 --ring_degree 2"
  bool operator==(const ParallelConfig& o) const;
};

// The blocks [first, end) PipeFusion stage `stage` of `stages` runs and holds: as even as they go, the
// first stages taking one more when they do not divide.
std::pair<int, int> stage_blocks(int blocks, int stage, int stages);

// Where a rank sits in each dimension.
struct RankCoords {
  int data = 0, cfg = 0, pipefusion = 0, ring = 0, ulysses = 0;
};
RankCoords coords_of(int rank, const ParallelConfig& p);
int rank_of(const RankCoords& c, const ParallelConfig& p);
// A rank's part of the sequence under ring x Ulysses: Ulysses' ranks side by side within each ring position.
int sequence_part(int ring, int ulysses, const ParallelConfig& p);

// Sequence: Ring x Ulysses. Replica: CFG x Sequence, the ranks that run the same blocks side by side.
enum class Dim { Data, Cfg, PipeFusion, Ring, Ulysses, Sequence, Replica };
// The ranks that share every coordinate with `rank` except those of `dim`, in group order.
std::vector<int> group_of(int rank, Dim dim, const ParallelConfig& p);

// A rough upper estimate of one rank's memory for a job, from the configs alone: the transformer's
// weights (split by PipeFusion) plus the activations of the tokens it holds (split by ring x Ulysses, CFG
// and data parallel), the text encoder (released before denoising), and the VAE decode (one rank); the peak
// adds what the process holds of its own whatever the job (kProcessGiB).
struct MemoryEstimate {
  double transformer_gib = 0;   // weights + activations while denoising
  double text_encoder_gib = 0;  // weights + activations, before denoising
  double vae_gib = 0;           // weights + one frame batch's activations
  double block_weight_gib = 0;  // one transformer block's weights, as the job keeps them
  double peak_gib() const;
};
// A rank's own memory before any weight: on the CPU, LibTorch's libraries and buffers resident in the process
// (docs/memory.md says how it was measured); on a GPU it stands for the CUDA context and the libraries'
// workspaces, not yet measured.
constexpr double kProcessGiB = 0.45;
// Bytes per weight and activation the job will use: 2 on a GPU (bfloat16 unless float32 is asked for),
// 4 on the CPU (float32), as the engine picks its dtype.
int bytes_per_value(const JobSpec& job, bool on_gpu);
// The dtype a calibration is measured and cached in for that job: "float32", "bfloat16" or "float16".
std::string calibration_dtype(const JobSpec& job, bool on_gpu);

MemoryEstimate estimate_memory(const ParallelConfig& p, const JobSpec& job, const ModelFolder& model,
                               int bytes_per_value);

// Problems with the configuration for this job on `processes` processes (GPUs, or CPU processes).
// Each message says why and what would work; when the degrees do not multiply to `processes`, it lists
// the valid configurations for that count. `memory_gib` is each device's memory when known (0: unknown).
std::vector<Problem> validate_parallel(const ParallelConfig& p, const JobSpec& job, const ModelFolder& model,
                                       int processes, double memory_gib = 0, int bytes_per_value = 4);

// Every configuration that runs this job on exactly `processes` processes, nearest to `near` first.
std::vector<ParallelConfig> valid_configs(const JobSpec& job, const ModelFolder& model, int processes,
                                          const ParallelConfig& near = {});

}  // namespace studio::plan
