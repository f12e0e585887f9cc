#include "plan/parallel.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "plan/device_memory.h"
#include "plan/family.h"
#include "plan/run_settings.h"
#include "plan/job_file.h"
#include "plan/options.h"
#include "plan/weight_choice.h"

namespace studio::plan {

std::string ParallelConfig::describe() const {
  std::vector<std::string> parts;
  if (data_parallel_degree > 1) parts.push_back("data " + std::to_string(data_parallel_degree));
  if (use_cfg_parallel) parts.push_back("CFG 2");
  if (pipefusion_parallel_degree > 1)
    parts.push_back("PipeFusion " + std::to_string(pipefusion_parallel_degree) + " (" +
                    std::to_string(num_pipeline_patch) + " patches)");
  if (ring_degree > 1) parts.push_back("ring " + std::to_string(ring_degree));
  if (ulysses_degree > 1) parts.push_back("ulysses " + std::to_string(ulysses_degree));
  std::string s;
  for (const auto& p : parts) s += (s.empty() ? "" : " x ") + p;
  if (s.empty()) s = "one process";
  return s + (world_size() > 1 ? " (" + std::to_string(world_size()) + " processes" +
                                     (use_parallel_vae ? ", parallel VAE" : "") +
                                     (shard_weights ? ", sharded weights" : "") + ")"
                               : "");
}

std::string ParallelConfig::flags() const {
  const JobFile mine{{}, *this}, defaults{};
  std::string s;
  for (const auto& o : options()) {
    if (o.spec.section != HelpSection::Parallel) continue;
    const auto v = option_value(o, mine);
    const bool shown = o.shown_with ? option_value(*option(o.shown_with), mine).get<int>() > 1
                                    : v != option_value(o, defaults);
    if (!shown) continue;
    s += (s.empty() ? "--" : " --") + std::string(o.spec.key);
    if (o.spec.kind != OptionKind::Switch) s += " " + v.dump();
  }
  return s.empty() ? "(no parallel flags)" : s;
}

bool ParallelConfig::operator==(const ParallelConfig& o) const {
  return ulysses_degree == o.ulysses_degree && ring_degree == o.ring_degree &&
         pipefusion_parallel_degree == o.pipefusion_parallel_degree && num_pipeline_patch == o.num_pipeline_patch &&
         warmup_steps == o.warmup_steps && use_cfg_parallel == o.use_cfg_parallel &&
         data_parallel_degree == o.data_parallel_degree && use_parallel_vae == o.use_parallel_vae &&
         shard_weights == o.shard_weights;
}

std::pair<int, int> stage_blocks(int blocks, int stage, int stages) {
  const int base = blocks / stages, rem = blocks % stages;
  const int first = stage * base + std::min(stage, rem);
  return {first, first + base + (stage < rem ? 1 : 0)};
}

RankCoords coords_of(int rank, const ParallelConfig& p) {
  RankCoords c;
  c.ulysses = rank % p.ulysses_degree;
  rank /= p.ulysses_degree;
  c.ring = rank % p.ring_degree;
  rank /= p.ring_degree;
  c.pipefusion = rank % p.pipefusion_parallel_degree;
  rank /= p.pipefusion_parallel_degree;
  c.cfg = rank % p.cfg_degree();
  c.data = rank / p.cfg_degree();
  return c;
}

int rank_of(const RankCoords& c, const ParallelConfig& p) {
  return (((c.data * p.cfg_degree() + c.cfg) * p.pipefusion_parallel_degree + c.pipefusion) * p.ring_degree + c.ring) *
             p.ulysses_degree +
         c.ulysses;
}

int sequence_part(int ring, int ulysses, const ParallelConfig& p) { return ring * p.ulysses_degree + ulysses; }

std::vector<int> group_of(int rank, Dim dim, const ParallelConfig& p) {
  const RankCoords me = coords_of(rank, p);
  std::vector<int> out;
  auto with = [&](auto set, int n) {
    for (int i = 0; i < n; ++i) {
      RankCoords c = me;
      set(c, i);
      out.push_back(rank_of(c, p));
    }
  };
  switch (dim) {
    case Dim::Data: with([](RankCoords& c, int i) { c.data = i; }, p.data_parallel_degree); break;
    case Dim::Cfg: with([](RankCoords& c, int i) { c.cfg = i; }, p.cfg_degree()); break;
    case Dim::PipeFusion: with([](RankCoords& c, int i) { c.pipefusion = i; }, p.pipefusion_parallel_degree); break;
    case Dim::Ring: with([](RankCoords& c, int i) { c.ring = i; }, p.ring_degree); break;
    case Dim::Ulysses: with([](RankCoords& c, int i) { c.ulysses = i; }, p.ulysses_degree); break;
    case Dim::Sequence:
    case Dim::Replica:
      for (int cfg = 0; cfg < (dim == Dim::Replica ? p.cfg_degree() : 1); ++cfg)
        for (int ring = 0; ring < p.ring_degree; ++ring)
          for (int u = 0; u < p.ulysses_degree; ++u) {  // in the order of sequence_part
            RankCoords c = me;
            if (dim == Dim::Replica) c.cfg = cfg;
            c.ring = ring, c.ulysses = u;
            out.push_back(rank_of(c, p));
          }
      break;
  }
  return out;
}

namespace {

// The rules that do not depend on the process count.
void check_shape(const ParallelConfig& p, const JobSpec& job, const ModelFolder& model, std::vector<Problem>& out) {
  const auto& rules = rules_of(model);
  const int heads = rules.attention_heads(model), blocks = rules.blocks(model);
  auto positive = [&](const char* field, int v) {
    if (v < 1) out.push_back({field, std::string("--") + field + " " + std::to_string(v) + ": must be 1 or more"});
    return v >= 1;
  };
  if (!positive("ulysses_degree", p.ulysses_degree) || !positive("ring_degree", p.ring_degree) ||
      !positive("pipefusion_parallel_degree", p.pipefusion_parallel_degree) ||
      !positive("data_parallel_degree", p.data_parallel_degree) || !positive("num_pipeline_patch", p.num_pipeline_patch))
    return;
  if (p.ulysses_degree > heads)
    out.push_back({"ulysses_degree", "--ulysses_degree " + std::to_string(p.ulysses_degree) + ": the model has " +
                                         std::to_string(heads) + " attention heads, so some ranks would hold none; "
                                         "use at most " + std::to_string(heads) + " (uneven splits are fine)"});
  if (p.use_cfg_parallel && !rules.classifier_free())
    out.push_back({"use_cfg_parallel", "--use_cfg_parallel: " + model.variant.name +
                                           " has no classifier-free guidance (one branch per step), so there is "
                                           "nothing to split; use --ulysses_degree, --ring_degree, "
                                           "--pipefusion_parallel_degree or --data_parallel_degree instead"});
  else if (p.use_cfg_parallel && job.guidance_scale <= 1)
    out.push_back({"use_cfg_parallel", "--use_cfg_parallel: --guidance_scale " + shortest_number(job.guidance_scale) +
                                           " turns guidance off, so there is no second branch to run in parallel"});
  const int videos = std::max(1, job.num_videos_per_prompt);
  if (p.data_parallel_degree > 1 && videos % p.data_parallel_degree != 0)
    out.push_back({"data_parallel_degree", "--data_parallel_degree " + std::to_string(p.data_parallel_degree) +
                                               ": the job makes " + std::to_string(videos) +
                                               " video(s), which must divide evenly among the data-parallel groups; "
                                               "set --num_videos_per_prompt to a multiple of it"});
  if (p.use_parallel_vae && job.height > 0 && p.world_size() > job.height / model.vae_scale_spatial())
    out.push_back({"use_parallel_vae", "--use_parallel_vae: " + std::to_string(p.world_size()) +
                                           " ranks cannot share the " + std::to_string(job.height / model.vae_scale_spatial()) +
                                           " latent rows of a " + std::to_string(job.height) +
                                           "-pixel-high video; drop --use_parallel_vae or use fewer ranks"});
  if (p.shard_weights && p.replica_degree() == 1)
    out.push_back({"shard_weights", "--shard_weights spreads each block's weights over the ranks that run it together "
                                    "(CFG x ring x Ulysses), and this configuration has one; add --use_cfg_parallel, "
                                    "--ulysses_degree or --ring_degree (PipeFusion already divides the blocks among its "
                                    "stages)"});
  if (p.shard_weights && job.offload == "blocks")
    out.push_back({"shard_weights", "--shard_weights and --offload blocks both keep the blocks' weights off the "
                                    "device between calls; choose one"});
  if (p.pipefusion_parallel_degree > 1 && !p.use_cfg_parallel && rules.branch_texts_differ() &&
      rules.classifier_free() && job.guidance_scale > 1)
    out.push_back({"pipefusion_parallel_degree",
                   "--pipefusion_parallel_degree " + std::to_string(p.pipefusion_parallel_degree) + ": " + rules.name() +
                       " runs its two guidance branches as separate calls (their texts differ in length), and "
                       "PipeFusion's pipelined steps would mix their activations; add --use_cfg_parallel (each CFG "
                       "group runs one branch), or use --ulysses_degree or --ring_degree"});
  if (p.use_parallel_vae && job.vae_tiling)
    out.push_back({"use_parallel_vae", "--use_parallel_vae and --enable_tiling both divide the decoding's memory; "
                                       "choose one (parallel decoding gives the untiled result)"});
  const char* cache = job.use_fbcache ? "use_fbcache" : job.use_teacache ? "use_teacache"
                     : job.use_magcache ? "use_magcache" : !job.magcache_calibrate.empty() ? "magcache_calibrate"
                     : nullptr;
  if (cache && p.pipefusion_parallel_degree > 1)
    out.push_back({cache, std::string("--") + cache + " with --pipefusion_parallel_degree " +
                              std::to_string(p.pipefusion_parallel_degree) +
                              ": a step cache runs or reuses the blocks of a whole call at once, while PipeFusion's "
                              "stages each hold some of them and work on different patches at once; split the work "
                              "with --ulysses_degree, --ring_degree, --use_cfg_parallel or --data_parallel_degree"});
  // Where each guidance branch keeps its own cache context (Wan), each CFG rank decides alone which blocks its
  // call runs; with the weights sharded across the branches a rank that skips would leave the other waiting in
  // the next block's gather.
  if (cache && p.shard_weights && p.use_cfg_parallel && rules.calls_per_guidance_branch() &&
      job.magcache_calibrate.empty())  // calibrating runs every block
    out.push_back({cache, std::string("--") + cache + " with --use_cfg_parallel and --shard_weights: on " +
                              rules.name() + " each guidance branch decides alone which blocks to skip, and weights "
                              "sharded across the branches need both to run the same blocks; drop --use_cfg_parallel "
                              "(shard over --ulysses_degree or --ring_degree instead), or the cache"});
  if (p.pipefusion_parallel_degree > blocks)
    out.push_back({"pipefusion_parallel_degree", "--pipefusion_parallel_degree " +
                                                     std::to_string(p.pipefusion_parallel_degree) + ": the model has " +
                                                     std::to_string(blocks) + " layers to split into stages; use "
                                                     "at most " + std::to_string(blocks)});
  if (p.pipefusion_parallel_degree > 1 && job.height > 0) {
    const int rows = job.height / rules.pixel_step(model);  // token rows of the latent grid
    if (p.num_pipeline_patch > rows)
      out.push_back({"num_pipeline_patch", "--num_pipeline_patch " + std::to_string(p.num_pipeline_patch) +
                                               ": the latent has " + std::to_string(rows) +
                                               " token rows to split into patches; use at most " +
                                               std::to_string(rows)});
    if (p.warmup_steps < 1 || p.warmup_steps > job.num_inference_steps)
      out.push_back({"warmup_steps", "--warmup_steps " + std::to_string(p.warmup_steps) + ": must be 1 to " +
                                         std::to_string(job.num_inference_steps) +
                                         " (the number of steps; the pipelined steps need one synchronous step "
                                         "first, and warm-up covering every step gives the one-process result)"});
    else if (p.sp_degree() > 1 && p.warmup_steps < job.num_inference_steps)
      out.push_back({"warmup_steps", "--warmup_steps " + std::to_string(p.warmup_steps) +
                                         ": with ring or Ulysses inside PipeFusion, this version runs every step "
                                         "synchronously; set --warmup_steps " +
                                         std::to_string(job.num_inference_steps) +
                                         " (= --num_inference_steps), or use PipeFusion alone"});
  }
}

std::vector<int> divisors(int n) {
  std::vector<int> d;
  for (int i = 1; i <= n; ++i)
    if (n % i == 0) d.push_back(i);
  return d;
}

int distance(const ParallelConfig& a, const ParallelConfig& b) {
  return std::abs(a.ulysses_degree - b.ulysses_degree) + std::abs(a.ring_degree - b.ring_degree) +
         std::abs(a.pipefusion_parallel_degree - b.pipefusion_parallel_degree) +
         (a.use_cfg_parallel != b.use_cfg_parallel ? 1 : 0) +
         std::abs(a.data_parallel_degree - b.data_parallel_degree);
}

}  // namespace

std::vector<ParallelConfig> valid_configs(const JobSpec& job, const ModelFolder& model, int processes,
                                          const ParallelConfig& near) {
  std::vector<ParallelConfig> out;
  for (int dp : divisors(processes))
    for (int cfg : {1, 2})
      for (int pf : divisors(processes))
        for (int ring : divisors(processes)) {
          const int rest = processes / dp;
          if (rest % cfg || (rest / cfg) % pf || (rest / cfg / pf) % ring) continue;
          ParallelConfig p = near;
          p.data_parallel_degree = dp;
          p.use_cfg_parallel = cfg == 2;
          p.pipefusion_parallel_degree = pf;
          p.ring_degree = ring;
          p.ulysses_degree = rest / cfg / pf / ring;
          if (pf > 1) p.num_pipeline_patch = std::max(p.num_pipeline_patch, pf);
          std::vector<Problem> problems;
          check_shape(p, job, model, problems);
          if (problems.empty()) out.push_back(p);
        }
  std::stable_sort(out.begin(), out.end(),
                   [&](const ParallelConfig& a, const ParallelConfig& b) { return distance(a, near) < distance(b, near); });
  return out;
}

int bytes_per_value(const JobSpec& job, bool on_gpu) { return on_gpu && job.dtype != "float32" ? 2 : 4; }

std::string calibration_dtype(const JobSpec& job, bool on_gpu) {
  if (bytes_per_value(job, on_gpu) != 2) return "float32";
  return job.dtype == "float16" ? "float16" : "bfloat16";
}

double MemoryEstimate::peak_gib() const {
  return kProcessGiB + std::max({transformer_gib, text_encoder_gib, vae_gib});
}

double transformer_gib(const ParallelConfig& p, const JobSpec& job, const ModelFolder& m, double block_params,
                       double other_params, double widest_linear, double width, int b, double float32_per_token) {
  const auto [first, end] = stage_blocks(rules_of(m).blocks(m), 0, p.pipefusion_parallel_degree);  // the largest
  const int blocks_here = end - first;
  const double all = rules_of(m).blocks(m) * block_params + other_params;
  // Sharded, a rank keeps 1/N of each block and gathers the one that runs into a buffer kept from block to block;
  // offloaded, the blocks stay in host memory and the one that runs is copied in (on the CPU, the device is the
  // host: the blocks and the copy). Off the CPU there are two such buffers: the next block is fetched while one
  // runs (models/block_prefetch.h).
  const double whole = job.device == "cpu" ? 1 : 2;
  const double resident = job.offload == "blocks" ? (offload_saves_memory(job) ? 0 : blocks_here) + whole
                          : p.shard_weights       ? blocks_here / double(p.replica_degree()) + whole
                                                  : blocks_here;
  const double kept = weight_bytes_per_param(job, all, b);
  const bool packed = kept < b && !job.fp8_gemm;  // dequantized per call (fp8 GEMMs take the fp8 values)
  const double weights = (resident * block_params + other_params) * kept + (packed ? widest_linear * b : 0);
  double tokens = 0, latent = 0;
  if (job.height > 0 && job.width > 0 && job.num_frames > 0) {
    latent = double(latent_geometry(job, m).latent_tokens);
    tokens = latent + job.max_sequence_length;
  }
  const double batch = double(std::max(1, job.num_videos_per_prompt)) / p.data_parallel_degree *
                       (rules_of(m).classifier_free() && job.guidance_scale > 1 && !p.use_cfg_parallel ? 2 : 1);
  const double local = tokens / p.sp_degree();
  return (weights + batch * width * (b * (16 * local + 2 * tokens / p.ring_degree) +
                                     4 * float32_per_token * latent / p.sp_degree())) /
         kGiB;
}

double block_weight_gib(const JobSpec& job, const ModelFolder& m, double block_params, double other_params, int b) {
  const double all = rules_of(m).blocks(m) * block_params + other_params;
  return block_params * weight_bytes_per_param(job, all, b) / kGiB;
}

MemoryEstimate estimate_memory(const ParallelConfig& p, const JobSpec& job, const ModelFolder& model,
                               int bytes_per_value) {
  auto m = rules_of(model).memory(p, job, model, bytes_per_value);
  // The text encoder runs only for words; embeddings from a file skip it.
  if (model.text_encoder && !job.prompt.empty())
    m.text_encoder_gib = std::max(m.text_encoder_gib, t5_weight_bytes(job, model, bytes_per_value) / kGiB);
  // --text_encoder_device cpu encodes in the host's memory, apart from a GPU's (on the CPU they are one).
  if (job.text_encoder_device == "cpu" && job.device != "cpu") m.text_encoder_gib = 0;
  return m;
}

std::vector<Problem> validate_parallel(const ParallelConfig& p, const JobSpec& job, const ModelFolder& model,
                                       int processes, double memory_gib, int bytes_per_value) {
  std::vector<Problem> out;
  check_shape(p, job, model, out);
  if (!out.empty()) return out;
  if (memory_gib > 0) {
    const auto m = estimate_memory(p, job, model, bytes_per_value);
    if (const double peak = device_peak_gib(m, job, memory_gib); peak > memory_gib) {
      // What would help is what divides the largest part: the decode, or the transformer.
      const char* remedy = m.vae_gib > m.transformer_gib && !job.vae_tiling
                               ? "the decode is the largest part: --enable_tiling decodes in tiles of a fixed size, "
                                 "and --use_parallel_vae divides it among the ranks"
                               : "more ring/Ulysses ranks, PipeFusion stages or CFG parallel divide it, and --quantize "
                                 "fp8 or a quantized --transformer file shrinks the weights";
      char msg[640];
      std::snprintf(msg, sizeof msg,
                    "%s is estimated at %.1f GiB per rank (transformer %.1f, text encoder %.1f%s, VAE decode %.1f), "
                    "more than the %.1f GiB each device has; %s",
                    p.describe().c_str(), peak, m.transformer_gib, m.text_encoder_gib,
                    encoder_sent_to_cpu(m, job, memory_gib) ? " on the CPU" : "", m.vae_gib, memory_gib, remedy);
      out.push_back({"memory", msg});
    }
  }
  if (p.world_size() != processes) {
    std::string msg = p.describe() + " needs " + std::to_string(p.world_size()) + " processes, but " +
                      std::to_string(processes) + (processes == 1 ? " is" : " are") +
                      " available (data x CFG x PipeFusion x ring x Ulysses must equal the process count).";
    auto valid = valid_configs(job, model, processes, p);
    if (!valid.empty()) {
      msg += " Valid for " + std::to_string(processes) + ":";
      for (size_t i = 0; i < valid.size() && i < 5; ++i) msg += (i ? ";" : "") + std::string(" ") + valid[i].flags();
    }
    out.push_back({"world_size", msg});
  }
  return out;
}

}  // namespace studio::plan
