#include "plan/cost_model.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <nlohmann/json.hpp>

#include "plan/device_memory.h"
#include "plan/error.h"
#include "plan/family.h"
#include "plan/weight_choice.h"

namespace studio::plan {

namespace {

// Per-rank rate with `busy` ranks working at once: a rank alone runs at `alone`; when more ranks share the
// devices (CPU processes on the same cores), the `all`-ranks measurement divides among those that work.
double rate(double alone, double all, int ranks, int busy) {
  if (busy <= 1 || all <= 0) return alone;
  return std::min(alone, all * ranks / busy);
}

double link_time(const Calibration& c, double bytes, int calls, double bytes_per_s) {
  if (calls == 0) return 0;
  return calls * c.link_latency_s + (bytes_per_s > 0 ? bytes / bytes_per_s : 0);
}

JobSpec with_defaults(JobSpec job, const ModelFolder& m) {
  rules_of(m).apply_defaults(job, m);
  return job;
}

}  // namespace

double group_bytes_per_s(const Calibration& c, const ParallelConfig& p, Dim dim) {
  const int P = p.world_size();
  if (c.ranks != P || c.pair_bytes_per_s.size() != size_t(P) * P || c.link_bytes_per_s <= 0) return c.link_bytes_per_s;
  const auto pair = [&](int i, int j) { return c.pair_bytes_per_s[size_t(i) * P + j]; };
  double slowest = 0, slowest_here = 0;
  for (int i = 0; i < P; ++i)
    for (int j = 0; j < P; ++j)
      if (i != j && (slowest == 0 || pair(i, j) < slowest)) slowest = pair(i, j);
  for (int r = 0; r < P; ++r) {
    const auto g = group_of(r, dim, p);
    for (int i : g)
      for (int j : g)
        if (i != j && (slowest_here == 0 || pair(i, j) < slowest_here)) slowest_here = pair(i, j);
  }
  return slowest > 0 && slowest_here > 0 ? c.link_bytes_per_s * slowest_here / slowest : c.link_bytes_per_s;
}

double attention_head_dim_factor(const Calibration& c, double head_dim) {
  const auto& m = c.attention_by_head_dim;
  if (m.empty() || head_dim <= 0) return 1;
  if (head_dim <= m.front().first) return m.front().second;
  if (head_dim >= m.back().first) return m.back().second;
  size_t i = 1;
  while (m[i].first < head_dim) ++i;
  const double t = std::log2(head_dim / m[i - 1].first) / std::log2(double(m[i].first) / m[i - 1].first);
  return m[i - 1].second + t * (m[i].second - m[i - 1].second);
}

StepWork count_step_work(const ParallelConfig& p, const JobSpec& job_in, const ModelFolder& model, int b,
                         bool pipelined) {
  const auto& rules = rules_of(model);
  const JobSpec job = with_defaults(job_in, model);
  const auto g = latent_geometry(job, model);
  const double text = job.max_sequence_length, latent = double(g.latent_tokens);
  const bool joint = rules.joint_text();
  const double seq = latent + (joint ? text : 0);  // the attended sequence
  const double branches = rules.classifier_free() && job.guidance_scale > 1 ? 2 : 1;
  const double videos = std::max(1, job.num_videos_per_prompt);
  const int U = p.ulysses_degree, R = p.ring_degree, sp = p.sp_degree(), S = p.pipefusion_parallel_degree;
  const int H = rules.attention_heads(model), Hp = (H + U - 1) / U * U;  // heads padded to divide among U
  const double D = rules.attention_flops_per_pair(model) / 4, d = D / H;
  const double per_pair = rules.attention_flops_per_pair(model) * Hp / H;

  StepWork w;
  w.batch = videos / p.data_parallel_degree * branches / p.cfg_degree();
  w.tokens = std::ceil(seq / sp);
  const auto [first, end] = stage_blocks(rules.blocks(model), 0, S);
  w.blocks = end - first;
  w.head_dim = d;
  w.gemm_flops = w.batch * w.tokens * w.blocks * rules.gemm_flops_per_token(model);
  const double latent_here = joint ? w.tokens * latent / seq : w.tokens;
  w.attention_flops = w.batch * w.blocks * per_pair * (w.tokens * seq + (joint ? 0 : latent_here * text));
  // The rest of a block's work: its values per token, and its operations once per call (Wan calls the
  // model once per guidance branch, unless CFG parallelism gives each rank one) and per PipeFusion patch;
  // and the step's own operations (guidance, the sampler).
  const auto costs = rules.block_costs(model);
  w.elementwise_bytes = w.batch * w.tokens * w.blocks * costs.values_per_token(D) * b;
  const double calls = rules.calls_per_guidance_branch() ? branches / p.cfg_degree() : 1;
  const int patches = S > 1 && pipelined ? p.num_pipeline_patch : 1;
  w.ops = calls * (w.blocks * costs.ops_per_block * patches + costs.ops_per_call) + costs.ops_per_step;

  if (const int n = p.replica_degree(); p.shard_weights && n > 1) {  // every block call gathers its other shards
    w.weight_calls = int(calls * w.blocks * patches);
    w.weight_bytes = w.weight_calls * estimate_memory(p, job, model, b).block_weight_gib * kGiB * (n - 1) / n;
  }
  if (job.offload == "blocks" && offload_saves_memory(job))  // every block call copies its block to the device
    w.host_bytes = calls * w.blocks * patches * estimate_memory(p, job, model, b).block_weight_gib * kGiB;
  const double qkv = w.batch * Hp * d * w.tokens * b;  // one of q, k, v or the output, on this rank
  if (U > 1) {
    w.ulysses_calls = 4 * w.blocks;
    w.ulysses_bytes = w.ulysses_calls * qkv * (U - 1) / U;
  }
  if (R > 1) {
    w.ring_calls = w.blocks * (R - 1);
    w.ring_bytes = w.ring_calls * 2 * qkv;
  }
  // The output: the latent's values for this rank's samples, gathered over the sequence ranks, then the
  // CFG pair; PipeFusion's last stage broadcasts it to the others.
  const double out = w.batch * double(g.frames) * g.channels * g.height * g.width * b;
  if (sp > 1) w.gather_bytes += out / sp * (sp - 1), ++w.gather_calls;
  if (p.use_cfg_parallel) w.gather_bytes += out, ++w.gather_calls;
  if (S > 1) w.gather_bytes += out, ++w.gather_calls;
  if (S > 1) {
    w.pipe_bytes = w.batch * D * b * (pipelined ? seq / patches : w.tokens);
    w.pipe_hops = pipelined ? patches + S - 1 : S - 1;
  }
  if (model.has_vae() && job.height > 0)
    w.vae_flops = rules.vae_decode_flops(model, job.height, job.width, job.num_frames) * videos /
                  (p.use_parallel_vae ? p.world_size() : p.data_parallel_degree);
  return w;
}

Prediction predict(const ParallelConfig& p, const JobSpec& job_in, const ModelFolder& model, const Calibration& c,
                   int b, double memory_gib) {
  const JobSpec job = with_defaults(job_in, model);
  const int P = p.world_size(), S = p.pipefusion_parallel_degree;
  // The device's work, then the host's dispatching the operations (on shared cores slowed as the GEMMs
  // are). They add up on a GPU too: measured on an H100, a step's time is their sum, not the longer of the
  // two, at every size (docs/cost-model.md). Figures not calibrated (0) leave their term out.
  auto compute = [&](const StepWork& w, int busy) {
    const double gemm = rate(c.gemm_flops_per_s, c.gemm_flops_per_s_all, c.ranks, busy);
    const double attention = rate(c.attention_flops_per_s, c.attention_flops_per_s_all, c.ranks, busy) *
                             attention_head_dim_factor(c, w.head_dim);
    double device = w.gemm_flops / gemm + w.attention_flops / attention;
    if (c.memory_bytes_per_s > 0)
      device += w.elementwise_bytes / rate(c.memory_bytes_per_s, c.memory_bytes_per_s_all, c.ranks, busy);
    return device + (gemm > 0 ? w.ops * c.op_seconds * c.gemm_flops_per_s / gemm : 0);
  };
  // Each kind of transfer over the links of its own groups; the output's gathers (sequence, CFG pair,
  // PipeFusion's broadcast) at the slowest of theirs.
  const double ulysses_bw = group_bytes_per_s(c, p, Dim::Ulysses), ring_bw = group_bytes_per_s(c, p, Dim::Ring),
               pipe_bw = group_bytes_per_s(c, p, Dim::PipeFusion);
  double gather_bw = 0;  // 0: no gather
  for (auto [dim, used] : {std::pair{Dim::Sequence, p.sp_degree() > 1}, std::pair{Dim::Cfg, p.use_cfg_parallel},
                           std::pair{Dim::PipeFusion, p.pipefusion_parallel_degree > 1}})
    if (used) {
      const double bw = group_bytes_per_s(c, p, dim);
      gather_bw = gather_bw > 0 ? std::min(gather_bw, bw) : bw;
    }
  auto collectives = [&](const StepWork& w) {
    return link_time(c, w.ulysses_bytes, w.ulysses_calls, ulysses_bw) + link_time(c, w.ring_bytes, w.ring_calls, ring_bw) +
           link_time(c, w.gather_bytes, w.gather_calls, gather_bw) +
           link_time(c, w.weight_bytes, w.weight_calls, group_bytes_per_s(c, p, Dim::Replica));
  };
  auto pipe_time = [&](const StepWork& w) { return link_time(c, w.pipe_bytes * w.pipe_hops, w.pipe_hops, pipe_bw); };
  Prediction r;
  r.config = p;
  const StepWork sync = count_step_work(p, job, model, b, false);
  const double full_rate_compute = compute(sync, P);
  double host_bytes = sync.host_bytes;  // copied per step, averaged as the compute is (--offload blocks)
  if (S == 1) {
    r.compute_s = full_rate_compute;
    r.communication_s = collectives(sync);
    r.warmup_step_s = r.pipelined_step_s = r.compute_s + r.communication_s;
  } else {
    // Warm-up: the stages run one after another, P / S ranks busy at a time; `stages` is the whole
    // model's work in units of the largest stage's (stages may differ by a block).
    const int blocks = rules_of(model).blocks(model);
    const double stages = double(blocks) / sync.blocks;
    const double sync_compute = stages * compute(sync, std::max(1, P / S));
    const double sync_comm = collectives(sync) + pipe_time(sync);
    // Pipelined: M patches through S stages in M + S - 1 slots; in slot t, stages first..last hold a
    // patch each (its share, 1 / M, of its blocks' work) and work at once. On shared devices (CPU ranks on
    // the same cores) they share them: k stages at work each go at the rate of k stages' ranks busy, and as
    // the smaller patches finish (stage_blocks gives the lower stages the extra blocks) the rest speed up;
    // a full slot runs at the rate of all the ranks, the fill and drain at the rate of few. On devices of
    // their own every rate is the rank's own, and a slot lasts as long as its largest patch.
    const StepWork pipe = count_step_work(p, job, model, b, true);
    const int M = p.num_pipeline_patch;
    double pipelined = 0;
    for (int t = 0; t < M + S - 1; ++t) {
      std::vector<double> patches;  // each working stage's, as a share of the largest stage's whole work
      for (int stage = std::max(0, t - M + 1); stage <= std::min(t, S - 1); ++stage) {
        const auto [begin, end] = stage_blocks(blocks, stage, S);
        patches.push_back(double(end - begin) / pipe.blocks / M);
      }
      std::sort(patches.begin(), patches.end());
      double done = 0;
      for (size_t i = 0; i < patches.size(); ++i) {
        pipelined += (patches[i] - done) * compute(pipe, int(patches.size() - i) * std::max(1, P / S));
        done = patches[i];
      }
    }
    const double pipe_comm = collectives(pipe) + pipe_time(pipe);
    const double warm = std::min(1.0, double(std::min(p.warmup_steps, job.num_inference_steps)) /
                                          std::max(1, job.num_inference_steps));
    // Compute: a stage's work with every rank at work (or less, where ranks that share cores get through
    // the fill and drain faster than that); the bubble: what the warm-up and the fill and drain add to it.
    const double step = warm * sync_compute + (1 - warm) * pipelined;
    r.compute_s = std::min(full_rate_compute, step);
    r.bubble_s = step - r.compute_s;
    r.communication_s = warm * sync_comm + (1 - warm) * pipe_comm;
    host_bytes = warm * sync.host_bytes + (1 - warm) * pipe.host_bytes;  // a pipelined step copies a block a patch
    r.warmup_step_s = sync_compute + sync_comm;
    r.pipelined_step_s = pipelined + pipe_comm;
  }
  // The offloaded blocks' copies: a call's (or patch's) first block is copied before it runs, each next one while
  // the one before computes (models/block_prefetch.h), so a step takes its first blocks' copies and the longer of
  // the other copies and the compute.
  if (c.host_bytes_per_s > 0 && host_bytes > 0) {
    const double copies = host_bytes / c.host_bytes_per_s, first = copies / sync.blocks;
    r.host_copy_s = first + std::max(0.0, copies - first - r.compute_s);
  }
  r.seconds_per_step = r.compute_s + r.bubble_s + r.communication_s + r.host_copy_s;
  const int decoders = p.use_parallel_vae ? P : p.data_parallel_degree;
  // The decoder's convolutions, counted as they run, go at the calibrated GEMM rate on a CPU (docs/cost-model.md).
  r.vae_s = sync.vae_flops / rate(c.gemm_flops_per_s, c.gemm_flops_per_s_all, c.ranks, decoders);
  r.total_s = job.num_inference_steps * r.seconds_per_step + r.vae_s;
  r.peak_bytes_per_rank = device_peak_gib(estimate_memory(p, job, model, b), job, memory_gib) * kGiB;
  for (auto& c : storage_choices(p, job, model, b, memory_gib))
    if (!c.flag.empty()) r.storage.push_back(c);
  if (memory_gib > 0)
    for (const auto& problem : validate_parallel(p, job, model, P, memory_gib, b))
      if (problem.field == "memory") r.fits = false, r.reason = problem.message;
  return r;
}

std::vector<Prediction> rank_configs(const JobSpec& job_in, const ModelFolder& model, int processes,
                                     const Calibration& cal, double memory_gib, int b) {
  const JobSpec job = with_defaults(job_in, model);
  // PipeFusion pipelined after one warm-up step, and (the only way it mixes with ring or Ulysses) warm-up
  // for every step; each with and without the parallel decode.
  ParallelConfig pipelined, synchronous;
  synchronous.warmup_steps = job.num_inference_steps;
  std::vector<ParallelConfig> configs = valid_configs(job, model, processes, pipelined);
  for (const auto& p : valid_configs(job, model, processes, synchronous))
    if (p.pipefusion_parallel_degree > 1 && p.sp_degree() > 1) configs.push_back(p);
  if (model.has_vae() && processes > 1)
    for (size_t i = 0, n = configs.size(); i < n; ++i) {
      ParallelConfig p = configs[i];
      p.use_parallel_vae = true;
      if (validate_parallel(p, job, model, processes).empty()) configs.push_back(p);
    }
  // Each with ranks that run the same blocks (CFG, sequence) also with its blocks sharded over them: slower by
  // the gathers, less memory.
  for (size_t i = 0, n = configs.size(); i < n; ++i)
    if (configs[i].replica_degree() > 1 && job.offload.empty()) {
      ParallelConfig p = configs[i];
      p.shard_weights = true;
      if (validate_parallel(p, job, model, processes).empty()) configs.push_back(p);
    }
  std::vector<Prediction> out;
  for (const auto& p : configs) out.push_back(predict(p, job, model, cal, b, memory_gib));
  if (std::none_of(out.begin(), out.end(), [](const Prediction& r) { return r.fits; }) && job.offload.empty() &&
      offload_saves_memory(job)) {
    JobSpec offloaded = job;
    offloaded.offload = "blocks";
    for (const auto& p : configs)
      if (!p.shard_weights) {
        out.push_back(predict(p, offloaded, model, cal, b, memory_gib));
        out.back().offload = true;
      }
  }
  std::stable_sort(out.begin(), out.end(), [](const Prediction& a, const Prediction& z) {
    return a.fits != z.fits ? a.fits : a.total_s < z.total_s;
  });
  return out;
}

std::string predictions_json(const std::vector<Prediction>& ranked) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& r : ranked) {
    std::string args = r.config.flags() == "(no parallel flags)" ? "" : r.config.flags();
    if (r.offload) args += std::string(args.empty() ? "" : " ") + "--offload blocks";
    nlohmann::json o = {{"args", args},
                        {"configuration", r.config.describe()},
                        {"seconds_per_step", r.seconds_per_step},
                        {"warmup_step_seconds", r.warmup_step_s},
                        {"pipelined_step_seconds", r.pipelined_step_s},
                        {"compute_seconds", r.compute_s},
                        {"communication_seconds", r.communication_s},
                        {"bubble_seconds", r.bubble_s},
                        {"host_copy_seconds", r.host_copy_s},
                        {"vae_seconds", r.vae_s},
                        {"total_seconds", r.total_s},
                        {"peak_bytes_per_rank", r.peak_bytes_per_rank},
                        {"fits", r.fits}};
    if (!r.fits) o["reason"] = r.reason;
    nlohmann::json other = nlohmann::json::array();
    for (const auto& c : r.storage)
      other.push_back({{"flag", c.flag}, {"peak_bytes_per_rank", c.peak_gib * kGiB}, {"fits", c.fits}});
    o["weights_otherwise"] = other;
    a.push_back(o);
  }
  return a.dump(2);
}

std::string calibration_json(const Calibration& c) {
  return nlohmann::json{{"ranks", c.ranks},
                        {"dtype", c.dtype},
                        {"gemm_flops_per_s", c.gemm_flops_per_s},
                        {"gemm_flops_per_s_all", c.gemm_flops_per_s_all},
                        {"attention_flops_per_s", c.attention_flops_per_s},
                        {"attention_flops_per_s_all", c.attention_flops_per_s_all},
                        {"attention_by_head_dim", c.attention_by_head_dim},
                        {"memory_bytes_per_s", c.memory_bytes_per_s},
                        {"memory_bytes_per_s_all", c.memory_bytes_per_s_all},
                        {"op_seconds", c.op_seconds},
                        {"link_bytes_per_s", c.link_bytes_per_s},
                        {"link_latency_s", c.link_latency_s},
                        {"host_bytes_per_s", c.host_bytes_per_s},
                        {"pair_bytes_per_s", c.pair_bytes_per_s}}
      .dump(2);
}

Calibration calibration_from_json(const std::string& text, const std::string& file) {
  try {
    const auto j = nlohmann::json::parse(text);
    Calibration c;
    c.ranks = j.at("ranks").get<int>();
    c.dtype = j.at("dtype").get<std::string>();
    c.gemm_flops_per_s = j.at("gemm_flops_per_s").get<double>();
    c.gemm_flops_per_s_all = j.at("gemm_flops_per_s_all").get<double>();
    c.attention_flops_per_s = j.at("attention_flops_per_s").get<double>();
    c.attention_flops_per_s_all = j.at("attention_flops_per_s_all").get<double>();
    c.memory_bytes_per_s = j.at("memory_bytes_per_s").get<double>();
    c.memory_bytes_per_s_all = j.at("memory_bytes_per_s_all").get<double>();
    c.op_seconds = j.at("op_seconds").get<double>();
    c.link_bytes_per_s = j.at("link_bytes_per_s").get<double>();
    c.link_latency_s = j.at("link_latency_s").get<double>();
    c.host_bytes_per_s = j.value("host_bytes_per_s", 0.0);  // calibrations before it have none: not counted
    if (j.contains("attention_by_head_dim"))
      c.attention_by_head_dim = j.at("attention_by_head_dim").get<std::vector<std::pair<int, double>>>();
    for (size_t i = 0; i < c.attention_by_head_dim.size(); ++i)
      if (c.attention_by_head_dim[i].first <= 0 || c.attention_by_head_dim[i].second <= 0 ||
          (i > 0 && c.attention_by_head_dim[i].first <= c.attention_by_head_dim[i - 1].first))
        throw InputError(file + ": attention_by_head_dim must hold [head_dim, factor] pairs, both positive, in "
                                "increasing head_dim; run dit-launch --calibrate again");
    if (j.contains("pair_bytes_per_s")) c.pair_bytes_per_s = j.at("pair_bytes_per_s").get<std::vector<double>>();
    if (!c.pair_bytes_per_s.empty() && c.pair_bytes_per_s.size() != size_t(c.ranks) * c.ranks)
      throw InputError(file + ": pair_bytes_per_s has " + std::to_string(c.pair_bytes_per_s.size()) +
                       " values, not ranks x ranks; run dit-launch --calibrate again");
    if (c.ranks < 1 || c.gemm_flops_per_s <= 0 || c.attention_flops_per_s <= 0 || c.memory_bytes_per_s <= 0 ||
        c.op_seconds <= 0 || c.host_bytes_per_s < 0)
      throw InputError(file + ": ranks and the rates must be positive; run dit-launch --calibrate again");
    return c;
  } catch (const nlohmann::json::exception& e) {
    throw InputError(file + ": not a calibration (" + e.what() + "); delete it or run dit-launch --calibrate again");
  }
}

}  // namespace studio::plan
