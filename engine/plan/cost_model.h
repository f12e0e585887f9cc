// The cost model: for a job and a parallel configuration, the predicted seconds per step (compute,
// communication, PipeFusion's bubble and warm-up) and of the VAE decode, and the peak memory per rank, from
// the family's FLOP counts, the degrees, and rates measured on the devices (`dit-worker --calibrate`).
// Torch-free: the launcher and the studio rank configurations before any process starts.
// Every number is explained in docs/cost-model.md.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "plan/parallel.h"
#include "plan/weight_choice.h"

namespace studio::plan {

// What `dit-worker --calibrate` measured on the devices of `ranks` ranks, at one dtype.
struct Calibration {
  int ranks = 1;
  std::string dtype = "float32";
  double gemm_flops_per_s = 0;           // one rank alone: a large matmul
  double gemm_flops_per_s_all = 0;       // per rank while every rank runs one at once (shared cores)
  double attention_flops_per_s = 0;      // one rank alone: the fused attention kernel
  double attention_flops_per_s_all = 0;  // per rank while every rank runs it
  // The kernel's rate at other head dims, as a multiple of its rate at head_dim 64 (the figures above): small
  // heads run it slower. {head_dim, factor} in increasing head_dim; empty: 1 at every head dim.
  std::vector<std::pair<int, double>> attention_by_head_dim;
  double memory_bytes_per_s = 0;         // one rank alone: bytes a block's elementwise ops read and write
  double memory_bytes_per_s_all = 0;     // per rank while every rank runs it
  double op_seconds = 0;                 // one rank alone: one small operation, dispatched and run
  double link_bytes_per_s = 0;           // per rank: bytes it sends per second in an all-to-all of every rank
  double link_latency_s = 0;             // one small collective of every rank
  double host_bytes_per_s = 0;           // per rank, the slowest, every rank copying page-locked host memory to its
                                         // device at once (0: not measured, or the device is the host)
  // ranks x ranks, row-major: the bytes per second rank i sends to rank j while j sends to i, the pair
  // alone (NVLink and PCIe pairs differ); empty when unknown (one rank).
  std::vector<double> pair_bytes_per_s;
};

// The bandwidth per rank of the collectives of groups along `dim` (plan::group_of) of `p`: the all-to-all
// rate of every rank, scaled by how much faster the slowest pair inside those groups is than the slowest
// pair of all (the one that held the all-to-all back). Without pair figures, the all-to-all rate.
double group_bytes_per_s(const Calibration& c, const ParallelConfig& p, Dim dim);

// The attention rate at `head_dim` as a multiple of the calibrated one (head_dim 64): interpolated in
// log2(head_dim) between the measured head dims, the nearest one's outside them.
double attention_head_dim_factor(const Calibration& c, double head_dim);

// The counts of one configuration's step, per rank (the busiest one), before any rate is applied.
struct StepWork {
  double batch = 1;             // samples this rank carries through each block
  double tokens = 0;            // tokens it holds through the GEMMs (its sequence share)
  int blocks = 0;               // blocks it runs (its PipeFusion stage's)
  double head_dim = 64;         // of the attention heads
  double gemm_flops = 0;        // per step
  double attention_flops = 0;   // per step
  double elementwise_bytes = 0; // per step: read and written by the work that is neither (norms, activations, ...)
  double ops = 0;               // operations dispatched per step (plan::BlockCosts)
  double ulysses_bytes = 0;     // sent per step in Ulysses' all-to-alls (4 per block)
  int ulysses_calls = 0;
  double ring_bytes = 0;        // sent per step passing key/value blocks around the ring
  int ring_calls = 0;
  double gather_bytes = 0;      // sent per step sharing the output (sequence and CFG all-gathers)
  int gather_calls = 0;
  double weight_bytes = 0;      // received per step gathering sharded blocks (--shard_weights)
  int weight_calls = 0;
  double host_bytes = 0;        // copied per step from host memory to the device (--offload blocks)
  double pipe_bytes = 0;        // sent per step from a PipeFusion stage to the next, one patch (or whole)
  int pipe_hops = 0;            // point-to-point sends on the critical path
  double vae_flops = 0;         // the decode of the job, on the busiest rank
};

StepWork count_step_work(const ParallelConfig& p, const JobSpec& job, const ModelFolder& model, int bytes_per_value,
                         bool pipelined);

struct Prediction {
  ParallelConfig config;
  double compute_s = 0;        // per step, averaged over warm-up and pipelined steps
  double communication_s = 0;  // per step
  double bubble_s = 0;         // per step: PipeFusion's fill and drain, and its synchronous warm-up
  double host_copy_s = 0;      // per step: the offloaded blocks' copies to the device that the compute does not hide
  double seconds_per_step = 0;
  // The two kinds of step it averages: PipeFusion's synchronous warm-up step and its pipelined one (both
  // the one step where PipeFusion is off): each step of the job is one or the other.
  double warmup_step_s = 0;
  double pipelined_step_s = 0;
  double vae_s = 0;            // the decode, once per job
  double total_s = 0;          // steps x seconds_per_step + vae_s
  double peak_bytes_per_rank = 0;
  bool fits = true;
  std::string reason;          // why it does not fit
  std::vector<StorageChoice> storage;  // the weights kept otherwise (--quantize fp8, ...), as plan/weight_choice.h
  bool offload = false;  // with --offload blocks (rank_configs, where nothing on the device fits)
};

Prediction predict(const ParallelConfig& p, const JobSpec& job, const ModelFolder& model, const Calibration& cal,
                   int bytes_per_value, double memory_gib = 0);

// Every valid configuration of the job on `processes` processes with its prediction, the fitting ones
// first, each part sorted by predicted total time. `memory_gib`: each device's memory (0: unknown, all fit).
// Where none fits and offloading saves the device's memory, each unsharded one again with --offload blocks
// (exact; its copies timed at the calibration's host link, where one was measured). Quantizing, which changes the
// result, is only offered (Prediction::storage).
std::vector<Prediction> rank_configs(const JobSpec& job, const ModelFolder& model, int processes,
                                     const Calibration& cal, double memory_gib, int bytes_per_value = 4);

// The JSON array `dit-launch --plan --json` prints: [{args, seconds_per_step, peak_bytes_per_rank, fits,
// ...}], and the calibration as its cache stores it.
std::string predictions_json(const std::vector<Prediction>& ranked);
std::string calibration_json(const Calibration& c);
Calibration calibration_from_json(const std::string& text, const std::string& file);

}  // namespace studio::plan
