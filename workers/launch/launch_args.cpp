#include "workers/launch/launch_args.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>

#include "hub/cache.h"
#include "plan/error.h"

namespace studio::workers {

namespace {

long long to_integer(const std::string& flag, const std::string& v, long long lo, long long hi, const char* example) {
  errno = 0;
  char* end = nullptr;
  long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || errno == ERANGE)
    throw ArgError(flag + " '" + v + "': not an integer; expected e.g. " + flag + " " + example);
  if (x < lo || x > hi)
    throw ArgError(flag + " " + v + ": out of range; expected " + std::to_string(lo) + " to " + std::to_string(hi));
  return x;
}

double to_number(const std::string& flag, const std::string& v, const char* example) {
  char* end = nullptr;
  double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || !std::isfinite(x))
    throw ArgError(flag + " '" + v + "': not a number; expected e.g. " + flag + " " + example);
  return x;
}

// --model ORG/NAME that is no folder here: the Hugging Face cache's snapshot, as from_pretrained finds it.
std::string model_folder(const std::string& v) {
  try {
    return hub::local_model_dir(v);
  } catch (const InputError& e) {
    throw ArgError(std::string("--model ") + e.what());
  }
}

}  // namespace

LaunchArgs parse_launch_args(const std::vector<std::string>& argv) {
  LaunchArgs a;
  plan::JobSpec& j = a.job;
  plan::ParallelConfig& p = a.parallel;
  auto degree = [](const std::string& f, const std::string& v) { return int(to_integer(f, v, 1, plan::kMaxDegree, "2")); };
  auto seconds = [](const std::string& f, const std::string& v) {
    const double s = to_number(f, v, "30");
    if (s < 1 || s > 86400) throw ArgError(f + " " + v + ": out of range; expected 1 to 86400 seconds");
    return s;
  };
  using Setter = std::function<void(const std::string& flag, const std::string& value)>;
  const std::map<std::string, Setter> valued = {
      {"--model", [&](auto&, auto& v) { j.model_dir = model_folder(v); }},
      {"--height", [&](auto& f, auto& v) { j.height = int(to_integer(f, v, 1, 1 << 16, "480")); }},
      {"--width", [&](auto& f, auto& v) { j.width = int(to_integer(f, v, 1, 1 << 16, "720")); }},
      {"--num_frames", [&](auto& f, auto& v) { j.num_frames = int(to_integer(f, v, 1, 1 << 16, "49")); }},
      {"--num_inference_steps", [&](auto& f, auto& v) { j.num_inference_steps = int(to_integer(f, v, 1, 100000, "50")); }},
      {"--guidance_scale", [&](auto& f, auto& v) { j.guidance_scale = to_number(f, v, "6.0"); }},
      {"--guidance_scale_2", [&](auto& f, auto& v) { j.guidance_scale_2 = to_number(f, v, "3.0"); }},
      {"--seed", [&](auto& f, auto& v) { j.seed = uint64_t(to_integer(f, v, 0, INT64_MAX, "42")); }},
      {"--prompt_embeds", [&](auto&, auto& v) { j.prompt_embeds_file = v; }},
      {"--prompt", [&](auto&, auto& v) { j.prompt = v; }},
      {"--prompt_2", [&](auto&, auto& v) { j.prompt_2 = v; }},
      {"--negative_prompt", [&](auto&, auto& v) { j.negative_prompt = v; }},
      {"--max_sequence_length", [&](auto& f, auto& v) { j.max_sequence_length = int(to_integer(f, v, 1, 4096, "226")); }},
      {"--latents", [&](auto&, auto& v) { j.latents_file = v; }},
      {"--sampler_noise", [&](auto&, auto& v) { j.sampler_noise_file = v; }},
      {"--save_tensors", [&](auto&, auto& v) { j.save_tensors_file = v; }},
      {"--write_job", [&](auto&, auto& v) { a.write_job = v; }},
      {"--worker", [&](auto&, auto& v) { a.worker = v; }},
      {"--output", [&](auto&, auto& v) { j.output_file = v; }},
      {"--fps", [&](auto& f, auto& v) { j.fps = int(to_integer(f, v, 1, 240, "8")); }},
      {"--num_videos_per_prompt", [&](auto& f, auto& v) { j.num_videos_per_prompt = int(to_integer(f, v, 1, 1024, "2")); }},
      // diffusers' name for images; one field, as the pipelines treat them alike.
      {"--num_images_per_prompt", [&](auto& f, auto& v) { j.num_videos_per_prompt = int(to_integer(f, v, 1, 1024, "2")); }},
      {"--ulysses_degree", [&](auto& f, auto& v) { p.ulysses_degree = degree(f, v); }},
      {"--ring_degree", [&](auto& f, auto& v) { p.ring_degree = degree(f, v); }},
      {"--pipefusion_parallel_degree", [&](auto& f, auto& v) { p.pipefusion_parallel_degree = degree(f, v); }},
      {"--num_pipeline_patch", [&](auto& f, auto& v) { p.num_pipeline_patch = degree(f, v); }},
      {"--warmup_steps", [&](auto& f, auto& v) { p.warmup_steps = int(to_integer(f, v, 0, plan::kMaxWarmupSteps, "1")); }},
      {"--data_parallel_degree", [&](auto& f, auto& v) { p.data_parallel_degree = degree(f, v); }},
      {"--device", [&](auto&, auto& v) { j.device = v; }},
      {"--nnodes", [&](auto& f, auto& v) { a.run.nnodes = int(to_integer(f, v, 1, 4096, "2")); }},
      {"--node_rank", [&](auto& f, auto& v) { a.run.node_rank = int(to_integer(f, v, 0, 4095, "0")); }},
      {"--nproc_per_node", [&](auto& f, auto& v) { a.run.nproc_per_node = int(to_integer(f, v, 1, 1024, "8")); }},
      {"--master_addr", [&](auto&, auto& v) { a.run.master_addr = v; }},
      {"--master_port", [&](auto& f, auto& v) { a.run.master_port = int(to_integer(f, v, 1, 65534, "29500")); }},
      {"--heartbeat_timeout", [&](auto& f, auto& v) { a.run.heartbeat_timeout_s = seconds(f, v); }},
      {"--collective_timeout", [&](auto& f, auto& v) { a.run.collective_timeout_s = seconds(f, v); }},
      {"--events_log", [&](auto&, auto& v) { a.run.events_log = v; }},
      {"--tile_sample_min_height", [&](auto& f, auto& v) { j.tile_sample_min_height = int(to_integer(f, v, 16, 1 << 16, "240")); }},
      {"--tile_sample_min_width", [&](auto& f, auto& v) { j.tile_sample_min_width = int(to_integer(f, v, 16, 1 << 16, "360")); }},
      {"--dtype", [&](auto&, auto& v) { j.dtype = v; }},
      {"--cache_threshold", [&](auto& f, auto& v) { j.cache_threshold = to_number(f, v, "0.1"); }},
      {"--magcache_ratios", [&](auto&, auto& v) { j.magcache_ratios = v; }},
      {"--magcache_calibrate", [&](auto&, auto& v) { j.magcache_calibrate = v; }},
  };
  const std::map<std::string, bool*> switches = {
      {"--use_dynamic_cfg", &j.use_dynamic_cfg}, {"--use_cfg_parallel", &p.use_cfg_parallel},
      {"--use_parallel_vae", &p.use_parallel_vae}, {"--keep_partial", &j.keep_partial},
      {"--allow_tf32", &j.allow_tf32},          {"--use_fbcache", &j.use_fbcache},
      {"--use_teacache", &j.use_teacache},      {"--use_magcache", &j.use_magcache},
      {"--enable_tiling", &j.vae_tiling},        {"--enable_slicing", &j.vae_slicing},
      {"--plan", &a.plan},                      {"--json", &a.json},
      {"--auto", &a.auto_pick},                 {"--calibrate", &a.calibrate}};
  for (size_t i = 0; i < argv.size(); ++i) {
    std::string flag = argv[i], value;
    bool inline_value = false;
    if (auto eq = flag.find('='); flag.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
      inline_value = true;
    }
    if (flag == "--help" || flag == "-h") {
      a.help = true;
    } else if (flag == "--version") {
      a.version = true;
    } else if (auto sw = switches.find(flag); sw != switches.end()) {
      if (inline_value) throw ArgError(flag + " takes no value (it is a switch)");
      *sw->second = true;
    } else if (auto it = valued.find(flag); it != valued.end()) {
      if (!inline_value) {
        if (i + 1 >= argv.size() || argv[i + 1].rfind("--", 0) == 0)
          throw ArgError(flag + " needs a value; see dit-launch --help");
        value = argv[++i];
      }
      if (value.empty() && flag != "--negative_prompt") throw ArgError(flag + " needs a value; see dit-launch --help");
      it->second(flag, value);
    } else {
      throw ArgError("unknown option '" + argv[i] + "'; see dit-launch --help for the options");
    }
  }
  if (a.json && !a.plan) throw ArgError("--json goes with --plan (the ranked configurations as a JSON array)");
  if (a.plan && a.auto_pick) throw ArgError("--plan prints the ranking and runs nothing; --auto runs the best: choose one");
  if (a.run.node_rank >= a.run.nnodes)
    throw ArgError("--node_rank " + std::to_string(a.run.node_rank) + ": must be below --nnodes " +
                   std::to_string(a.run.nnodes) + " (machines are numbered from 0)");
  if (a.run.nnodes > 1 && (a.run.master_addr.empty() || a.run.master_port == 0))
    throw ArgError("--nnodes " + std::to_string(a.run.nnodes) + " needs --master_addr and --master_port: the first "
                   "machine's address and a port every machine can reach it on");
  return a;
}

std::string launch_usage() {
  return R"(usage: dit-launch [--model DIR] --prompt TEXT [--output FILE] [options]

Generates a video clip with a CogVideoX diffusers folder (CogVideoX-2b, -5b, 1.5-5B) or a Wan folder
(Wan2.1-T2V-1.3B, -14B, Wan2.2-T2V-A14B), or an image with a FLUX.1 folder (dev, schnell); the family is
read from model_index.json.

  --model DIR|ORG/NAME        diffusers folder (model_index.json, transformer/, scheduler/, vae/), or a
                              Hub repo id found in the Hugging Face cache (HF_HUB_CACHE; fetch it with
                              `dit-models download ORG/NAME`); default: the built-in demo model (random
                              weights: abstract motion)
  --prompt TEXT               what to generate, encoded with the folder's T5 (tokenizer/, text_encoder/;
                              Wan: umT5, after its prompt cleaning); FLUX.1: with CLIP (tokenizer/,
                              text_encoder/) and T5 (the _2 folders)
  --prompt_2 TEXT             FLUX.1: T5's own prompt (default: --prompt); CLIP reads 77 tokens only
  --negative_prompt TEXT      what to steer away from (default: ""; CogVideoX and Wan)
  --max_sequence_length N     T5's tokens (default: the model's: CogVideoX 226, FLUX.1 and Wan 512)
  --prompt_embeds FILE        instead of --prompt: safetensors with prompt_embeds and
                              negative_prompt_embeds [B, T, D] (skips the text encoder); FLUX.1:
                              prompt_embeds [B, T, D] and pooled_prompt_embeds [B, P]
  --output FILE               the clip: .mp4 (H.264), .webm (VP9), .gif, or a folder (numbered PNGs)
  --fps N                     default: the model's (8 for CogVideoX 1.0, 16 for 1.5 and Wan)
  --height H --width W        pixels, multiples of 16 (default: the model's sample size; Wan 480 x 832)
  --num_frames F              4k+1 frames (default: the model's, 49 for CogVideoX 1.0, 81 for Wan)
  --num_inference_steps S     default: the model's (50 for CogVideoX and Wan, 28 for FLUX.1-dev, 4 for
                              schnell)
  --guidance_scale G          default: the model's (6 for CogVideoX, 5 for Wan2.1, 4 for Wan2.2, where 1
                              or less turns classifier-free guidance off; 3.5 for FLUX.1-dev, an input of
                              its guidance embedding)
  --guidance_scale_2 G        Wan2.2: the low-noise expert's guidance (default: --guidance_scale)
  --use_dynamic_cfg           CogVideoX's cosine guidance schedule
  --seed N                    default 42; noise as torch.Generator("cpu").manual_seed(N) draws it
  --latents FILE              safetensors with latents_init [B, F, C, H, W] (Wan: [B, C, F, H, W];
                              FLUX.1: packed [B, N, 64]) (replaces the seeded noise)
  --sampler_noise FILE        safetensors with scheduler_noise [steps, B, F, C, H, W] (DPM's per-step noise)
  --save_tensors FILE         write final_latents [B, F, C, H, W] (Wan: [B, C, F, H, W]) and the
                              decoded video [B, 3, frames, H, W] (float32, before clamping) to a
                              safetensors file
  --num_videos_per_prompt N   videos to make; video i uses seed + i (default 1)
  --num_images_per_prompt N   the same for a model that makes images (FLUX.1)
  --device auto|cpu|cuda[:N]  default auto (CUDA when present)
  --dtype auto|float32|bfloat16|float16   default auto (float32 on CPU, bfloat16 on CUDA); with
                              float16 the T5 text encoder runs in bfloat16 (it overflows in float16)
  --allow_tf32                CUDA float32: let matmuls and convolutions use TF32 (faster; off by
                              default, so float32 means float32)

Step caching (faster, approximate; every parallel mix but PipeFusion takes the one-process decisions):
  --use_fbcache               First-Block Cache (diffusers' semantics): a step whose first block's output
                              changed little since the last full step reuses what the other blocks added
  --use_teacache              TeaCache: steps reuse what every block added while the accumulated,
                              rescaled change of the model's modulated input stays under the threshold
  --use_magcache              MagCache: steps reuse what every block added while the error the model's
                              calibrated magnitude ratios predict stays under the threshold (at most 2 in
                              a row; the first fifth of the steps always run); needs --magcache_ratios
  --magcache_ratios FILE      the ratios, measured once per model and step count by
  --magcache_calibrate FILE   an uncached run that measures them and writes FILE
  --cache_threshold X         how little (0 reuses nothing; higher is faster and drifts further); default
                              0.05 for First-Block Cache, for TeaCache the family's (CogVideoX 0.1, FLUX.1
                              0.25, Wan 0.05), 0.12 for MagCache

Parallel (xDiT's flags; processes = data x CFG x PipeFusion x ring x Ulysses, started here as
dit-worker ranks; each degree 1 is the single-process path):
  --ulysses_degree N          sequence parallel, all-to-all between sequence and heads
  --ring_degree N             sequence parallel, K/V blocks passed around a ring
  --use_cfg_parallel          the two guidance branches on two groups of ranks
  --data_parallel_degree N    the videos of --num_videos_per_prompt split among groups
  --pipefusion_parallel_degree N  layers split into N pipeline stages
  --num_pipeline_patch N      PipeFusion's patches of the latent rows (default 1)
  --warmup_steps N            PipeFusion's synchronous steps before pipelining (default 1)
  --use_parallel_vae          every rank decodes a band of rows (exact; memory per rank ~1/N)

Choosing a configuration (the cost model, docs/cost-model.md; the devices are measured once, in seconds,
and the figures cached per device set in $XDG_CACHE_HOME/dit-studio/):
  --plan                      print every valid configuration for the GPUs here (or --nproc_per_node CPU
                              processes) ranked by predicted time, with memory per rank; run nothing
  --json                      with --plan: a JSON array of {args, seconds_per_step, peak_bytes_per_rank,
                              fits, ...}
  --auto                      run the configuration predicted fastest among those that fit, saying why
  --calibrate                 measure the devices and links again (alone: print the figures and exit)

Decoding in one process (diffusers' names):
  --enable_tiling             overlapping tiles: memory of a tile, seams blended
  --tile_sample_min_height H --tile_sample_min_width W   the tiles, in pixels (default: the model's,
                              240 x 360 for CogVideoX, the VAE's sample size for FLUX.1)
  --enable_slicing            the videos of a batch one at a time
  Out of memory while decoding, a job decodes again with tiling, from the same latents.

Running (one machine by default; several with torchrun's flags, one dit-launch per machine, each with
DIT_STUDIO_TOKEN set to the same secret in its environment):
  --nnodes N --node_rank I    machines in the job, and which one this is (0 collects the events)
  --nproc_per_node N          ranks on each machine (default: the job's ranks / nnodes)
  --master_addr A --master_port P   where the ranks meet; events go to A, port P + 1
  --heartbeat_timeout S       a rank silent this long is declared hung and the job stopped (default 30)
  --collective_timeout S      c10d's timeout for one collective (default 600)
  --events_log FILE           every event of every rank as a line of JSON
  --worker PATH               the dit-worker to run: the file, its folder, or an unpacked worker archive
                              (default: the first found in $DIT_STUDIO_WORKER_PATH, then beside dit-launch;
                              e.g. the self-contained CUDA worker, see README)
  --write_job FILE            validate the job, write it as a job file and run nothing: start its ranks
                              with torchrun, srun or mpirun running `dit-worker --job FILE`
  --keep_partial              on cancel, keep the latents reached (FILE.partial.safetensors beside
                              --save_tensors or --output) and the frames decoded so far

Exit status: 0 done, 1 internal failure (or a rank hung), 2 bad command-line argument, 3 bad input
(model folder or tensor file), 4 out of memory, 5 a rank lost its peer, 128+N a rank was killed by
signal N, 130 cancelled (SIGINT/SIGTERM). A failure names the rank, why, and its last lines.
)";
}

}  // namespace studio::workers
