#include "plan/options.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "plan/error.h"
#include "plan/lora_choice.h"

namespace studio::plan {

namespace {

using K = OptionKind;
using S = HelpSection;
constexpr long long k16 = 1 << 16;

const char* kTilingHelp =
    "Decodes the frames in overlapping tiles: far less memory for large sizes, a little slower. Use it when the "
    "decode runs out of memory.";

const std::vector<Option> kOptions = {
    // The job.
    {{"model", K::Text, "DIR|ORG/NAME", 0, 0, "THUDM/CogVideoX-2b", S::Job,
      "diffusers folder (model_index.json, transformer/, scheduler/, vae/), or a Hub repo id found in the Hugging "
      "Face cache (HF_HUB_CACHE; fetch it with `dit-models download ORG/NAME`); default: the built-in demo model "
      "(random weights: abstract motion)"},
     &JobSpec::model_dir, "Model folder",
     "A diffusers model folder (model_index.json and its parts). The demo models run anywhere in seconds; the "
     "Models tab downloads the real ones."},
    {{"prompt", K::Text, "TEXT", 0, 0, "\"a paper boat\"", S::Job,
      "what to generate, encoded with the folder's T5 (tokenizer/, text_encoder/; Wan: umT5, after its prompt "
      "cleaning); FLUX.1: with CLIP (tokenizer/, text_encoder/) and T5 (the _2 folders)"},
     &JobSpec::prompt, "Prompt",
     "What to generate, in words. The text encoder reads a limited number of tokens; the count below says how "
     "many this prompt uses, and what lies past the limit is ignored."},
    {{"prompt_2", K::Text, "TEXT", 0, 0, "\"a long description\"", S::Job,
      "FLUX.1: T5's own prompt (default: --prompt); CLIP reads 77 tokens only"},
     &JobSpec::prompt_2, "Prompt for T5",
     "FLUX.1 only: the text its second encoder (T5, 512 tokens) reads instead of the prompt. Use it for a long "
     "description when the prompt (read by CLIP, 77 tokens) should stay short."},
    {{"negative_prompt", K::Text, "TEXT", 0, 0, "\"blurry\"", S::Job,
      "what to steer away from (default: \"\"; CogVideoX, Wan and HunyuanVideo-1.5)"},
     &JobSpec::negative_prompt, "Negative prompt",
     "What the picture should not show. Guidance steers away from it; it has no effect with guidance at 1 or "
     "below."},
    {{"image", K::Text, "FILE", 0, 0, "start.png", S::Job,
      "image-to-video: the picture the clip starts from (PNG, JPEG, WebP, BMP; 8-bit RGB or grey), resized to "
      "--height x --width as the model's pipeline does"},
     &JobSpec::image_file, "Picture",
     "The picture the clip starts from: an image-to-video model animates it. It is resized to the output size "
     "(stretched, not cropped), as the reference pipeline does."},
    {{"last_image", K::Text, "FILE", 0, 0, "end.png", S::Job,
      "Wan image-to-video: the picture the clip ends on (first-and-last-frame, as Wan2.1-FLF2V)"},
     &JobSpec::last_image_file, "End picture", "Wan image-to-video: the picture the clip ends on."},
    {{"max_sequence_length", K::Integer, "N", 1, 4096, "226", S::Job,
      "T5's tokens (default: the model's: CogVideoX 226, FLUX.1 and Wan 512; HunyuanVideo-1.5 reads 1000 "
      "Qwen tokens, fixed)"},
     &JobSpec::max_sequence_length, "Text tokens", "How many tokens of the prompt the text encoder reads."},
    {{"height", K::Integer, "H", 1, k16, "480", S::Job,
      "pixels, a multiple of the model's step (default: the model's sample size; Wan 480 x 832)"},
     &JobSpec::height, "Height", "In pixels, a multiple of the model's step. More pixels take longer and more memory."},
    {{"width", K::Integer, "W", 1, k16, "720", S::Job, "pixels, likewise"},
     &JobSpec::width, "Width", "In pixels, a multiple of the model's step. More pixels take longer and more memory."},
    {{"num_frames", K::Integer, "F", 1, k16, "49", S::Job,
      "4k+1 frames (default: the model's, 49 for CogVideoX 1.0, 81 for Wan, 121 for HunyuanVideo-1.5)"},
     &JobSpec::num_frames, "Frames",
     "The clip's length in frames (its seconds are frames / frames per second). The model takes counts in its "
     "own steps (e.g. 4k + 1)."},
    {{"num_inference_steps", K::Integer, "S", 1, 100000, "50", S::Job,
      "default: the model's (50 for CogVideoX, Wan and HunyuanVideo-1.5, 28 for FLUX.1-dev, 4 for schnell)"},
     &JobSpec::num_inference_steps, "Steps",
     "Denoising steps. More steps give finer detail and take proportionally longer; drafts use about 20."},
    {{"guidance_scale", K::Number, "G", 0, 0, "6.0", S::Job,
      "default: the model's (6 for CogVideoX, 5 for Wan2.1, 4 for Wan2.2, where 1 or less turns classifier-free "
      "guidance off; HunyuanVideo-1.5's from its folder's guider/; 3.5 for FLUX.1-dev, an input of its guidance "
      "embedding)"},
     &JobSpec::guidance_scale, "Guidance",
     "Classifier-free guidance (CFG): how strongly the result follows the prompt. Higher follows it more "
     "closely but can look overdone; 1 or below turns it off (one branch per step, twice as fast)."},
    {{"guidance_scale_2", K::Number, "G", 0, 0, "3.0", S::Job,
      "Wan2.2: the low-noise expert's guidance (default: --guidance_scale)"},
     &JobSpec::guidance_scale_2, "Guidance, second expert",
     "Wan2.2: the guidance of the expert that does the last, low-noise steps (detail and texture); the one "
     "above is the first expert's (layout and motion)."},
    {{"use_dynamic_cfg", K::Switch, "", 0, 0, "", S::Job, "CogVideoX's cosine guidance schedule"},
     &JobSpec::use_dynamic_cfg, "Dynamic guidance",
     "CogVideoX: guidance that rises over the steps on a cosine schedule, as its pipeline's use_dynamic_cfg; "
     "often gives steadier motion."},
    {{"seed", K::Integer, "N", 0, INT64_MAX, "42", S::Job,
      "default 42; noise as torch.Generator(\"cpu\").manual_seed(N) draws it"},
     &JobSpec::seed, "Seed",
     "The starting noise. The same seed and settings give the same result; change it to get another take of "
     "the same prompt."},
    {{"num_videos_per_prompt", K::Integer, "N", 1, 1024, "2", S::Job,
      "videos to make; video i uses seed + i (default 1)"},
     &JobSpec::num_videos_per_prompt, "Videos per prompt", "How many results one run makes from the prompt."},
    {{"prompt_embeds", K::Text, "FILE", 0, 0, "embeds.safetensors", S::Job,
      "instead of --prompt: safetensors with prompt_embeds and negative_prompt_embeds [B, T, D] (skips the text "
      "encoder); FLUX.1: prompt_embeds [B, T, D] and pooled_prompt_embeds [B, P]"},
     &JobSpec::prompt_embeds_file, "Prompt embeddings", "Precomputed text embeddings (a safetensors file) instead of words."},
    {{"latents", K::Text, "FILE", 0, 0, "latents.safetensors", S::Job,
      "safetensors with latents_init [B, F, C, H, W] (Wan: [B, C, F, H, W]; FLUX.1: packed [B, N, 64]) "
      "(replaces the seeded noise)"},
     &JobSpec::latents_file, "Initial latents", "Starting latents (a safetensors file) instead of the seeded noise."},
    {{"sampler_noise", K::Text, "FILE", 0, 0, "noise.safetensors", S::Job,
      "safetensors with scheduler_noise [steps, B, F, C, H, W] (DPM's per-step noise)"},
     &JobSpec::sampler_noise_file, "Sampler noise", "The sampler's per-step noise (a safetensors file), for reproducing a run."},
    {{"save_tensors", K::Text, "FILE", 0, 0, "run.safetensors", S::Job,
      "write final_latents [B, F, C, H, W] (Wan: [B, C, F, H, W]) and the decoded video [B, 3, frames, H, W] "
      "(float32, before clamping) to a safetensors file"},
     &JobSpec::save_tensors_file, "Tensors saved to", "Where the final latents and the decoded frames are saved as tensors."},
    {{"output", K::Text, "FILE", 0, 0, "clip.mp4", S::Job,
      "the clip: .mp4 (H.264), .webm (VP9), .gif, or a folder (numbered PNGs)"},
     &JobSpec::output_file, "Output", "Where the result is written."},
    {{"fps", K::Integer, "N", 1, 240, "8", S::Job,
      "default: the model's (8 for CogVideoX 1.0, 16 for 1.5 and Wan, 24 for HunyuanVideo-1.5)"},
     &JobSpec::fps, "Frames per second",
     "How fast the clip plays; it does not change what is generated, only its length in seconds."},
    {{"device", K::Text, "auto|cpu|cuda[:N]", 0, 0, "cuda:0", S::Job, "default auto (CUDA when present)"},
     &JobSpec::device, "Device", "Where the ranks run: a GPU when there is one, else the CPU."},
    {{"dtype", K::Text, "auto|float32|bfloat16|float16", 0, 0, "bfloat16", S::Job,
      "default auto (float32 on CPU, bfloat16 on CUDA); with float16 the T5 text encoder runs in bfloat16 (it "
      "overflows in float16)"},
     &JobSpec::dtype, "Precision", "The weights' and activations' type: bfloat16 on a GPU, float32 on the CPU."},
    {{"keep_partial", K::Switch, "", 0, 0, "", S::Running,
      "on cancel, keep the latents reached (FILE.partial.safetensors beside --save_tensors or --output) and the "
      "frames decoded so far"},
     &JobSpec::keep_partial, "Keep partial results", "On cancel, keep the latents reached and the frames decoded so far."},
    {{"allow_tf32", K::Switch, "", 0, 0, "", S::Job,
      "CUDA float32: let matmuls and convolutions use TF32 (faster; off by default, so float32 means float32)"},
     &JobSpec::allow_tf32, "TF32 matmuls", "CUDA float32: TF32 tensor cores for matmuls and convolutions (faster, ~1e-3)."},
    {{"attention_kernel", K::Text, "auto|flash|cudnn|efficient|torch", 0, 0, "cudnn", S::Job,
      "CUDA: the fused attention kernel (default auto: each one this LibTorch has is timed on the run's first "
      "attention of each shape and the fastest kept, named in the log; torch: LibTorch's own choice)"},
     &JobSpec::attention_kernel, "Attention kernel",
     "Which GPU attention kernel runs: Auto times them on the first step and keeps the fastest."},
    {{"fp8_gemm", K::Switch, "", 0, 0, "", S::Job,
      "the transformer's linear layers as float8 GEMMs: weights float8_e4m3fn with a scale per output channel, "
      "inputs quantized per row at each call (GPUs with fp8 tensor cores, compute capability 8.9+, in bfloat16; "
      "elsewhere the same rounding computed in --dtype, to check the error); changes the result slightly"},
     &JobSpec::fp8_gemm, "fp8 matmuls",
     "Runs the transformer's matrix products in 8-bit floating point on GPUs that have it (Ada, Hopper): "
     "faster, with a small change in the result."},
    // Fitting the model in memory.
    {{"transformer", K::Text, "FILE", 0, 0, "flux1-dev-Q8_0.gguf", S::Memory,
      "the transformer from one file instead of the folder's transformer/ (whose config.json it must match): "
      "GGUF (F32, F16, BF16, Q8_0, Q5_0, Q5_1, Q4_0, Q4_1, Q6_K, Q5_K, Q4_K, Q3_K, Q2_K) or safetensors (fp8 "
      "plain or scaled, or float), in the diffusers layout or the original one (Black Forest Labs', Wan's); "
      "quantized weights stay quantized in memory"},
     &JobSpec::transformer_file, "Transformer file",
     "A single file for the transformer, as ComfyUI users keep them: a GGUF quant or an fp8 checkpoint. It "
     "stays quantized in memory, so a model that does not fit in bfloat16 can; the folder gives everything else."},
    {{"transformer_2", K::Text, "FILE", 0, 0, "wan2.2-low-noise-Q8_0.gguf", S::Memory,
      "Wan2.2: the second expert (transformer_2/) from one file, likewise"},
     &JobSpec::transformer_2_file, "Second expert file", "Wan2.2: a single file for the low-noise expert."},
    {{"text_encoder", K::Text, "FILE", 0, 0, "umt5-xxl-encoder-Q8_0.gguf", S::Memory,
      "the text encoder from one file instead of the folder's text_encoder/ (with its config.json): a T5 or umT5 "
      "GGUF in llama.cpp's names (city96's encoder files; quantized weights stay quantized), or safetensors in "
      "transformers' names (fp8 plain or scaled, as ComfyUI's t5xxl/umt5 files); FLUX.1's is CLIP (safetensors); "
      "HunyuanVideo-1.5's is Qwen2.5-VL's language model (a qwen2vl GGUF in llama.cpp's names, or safetensors)"},
     &JobSpec::text_encoder_file, "Text encoder file",
     "A single file for the text encoder, as ComfyUI users keep them: a T5/umT5 GGUF or fp8 file (FLUX.1: CLIP-L; "
     "HunyuanVideo-1.5: Qwen2.5-VL, GGUF or fp8). "
     "The folder gives its config and tokenizer."},
    {{"text_encoder_2", K::Text, "FILE", 0, 0, "t5-v1_1-xxl-encoder-Q8_0.gguf", S::Memory,
      "FLUX.1: T5 (text_encoder_2/) from one file, likewise"},
     &JobSpec::text_encoder_2_file, "Second text encoder file", "FLUX.1: a single file for T5-XXL, GGUF or fp8."},
    {{"lora", K::Text, "FILE[:SCALE]", 0, 0, "style.safetensors:0.8", S::Job,
      "a LoRA merged into the transformer's weights at SCALE (default 1), as diffusers' load_lora_weights: "
      "diffusers/PEFT, kohya (sd-scripts, musubi-tuner), ComfyUI or the original layout; repeat for several "
      "(commas also separate them, so a file's name cannot hold one)"},
     &JobSpec::lora, "LoRAs",
     "Adapters that steer the model (a style, a character, fewer steps), each with its strength.", nullptr, true},
    {{"lora_2", K::Text, "FILE[:SCALE]", 0, 0, "style_low_noise.safetensors", S::Job,
      "Wan2.2: a LoRA for the second expert (transformer_2/), likewise"},
     &JobSpec::lora_2, "Second expert LoRAs", "Wan2.2: LoRAs for the low-noise expert.", nullptr, true},
    {{"quantize", K::Text, "fp8", 0, 0, "fp8", S::Memory,
      "store the transformer's float linear weights as float8_e4m3fn with a scale per weight on load (half of "
      "bfloat16's memory; computed in --dtype)"},
     &JobSpec::quantize, "Quantize",
     "Keeps the transformer's linear weights in 8-bit floating point: half the memory of bfloat16, a small "
     "change in the result."},
    {{"offload", K::Text, "blocks", 0, 0, "blocks", S::Memory,
      "keep the transformer's blocks in host memory and copy each to the device while the one before runs "
      "(exact; the device holds two blocks; slower where the copies outlast the blocks' work)"},
     &JobSpec::offload, "Offload blocks",
     "Keeps the transformer's blocks in the computer's memory and moves each to the GPU only while it runs: a "
     "model much larger than the GPU fits, at the cost of the copies."},
    {{"text_encoder_device", K::Text, "auto|cpu", 0, 0, "cpu", S::Memory,
      "where the text encoders run (default auto: the run's device, or the CPU when it lacks the memory); cpu "
      "keeps the GPU for the transformer"},
     &JobSpec::text_encoder_device, "Text encoder on",
     "Where the prompt is encoded: the GPU, or the CPU to keep the GPU's memory for the transformer (T5-XXL and "
     "umT5 take 10-11 GB; on the CPU they take a few seconds to a minute)."},
    // Decoding.
    {{"enable_tiling", K::Switch, "", 0, 0, "", S::Decoding, "overlapping tiles: memory of a tile, seams blended"},
     &JobSpec::vae_tiling, "VAE tiling", kTilingHelp},
    {{"tile_sample_min_height", K::Integer, "H", 16, k16, "240", S::Decoding,
      "the tiles' height in pixels (default: the model's, 240 for CogVideoX, the VAE's sample size for FLUX.1)"},
     &JobSpec::tile_sample_min_height, "Tile height", "A tile's height in pixels, when decoding in tiles."},
    {{"tile_sample_min_width", K::Integer, "W", 16, k16, "360", S::Decoding,
      "the tiles' width in pixels (default: the model's, 360 for CogVideoX)"},
     &JobSpec::tile_sample_min_width, "Tile width", "A tile's width in pixels, when decoding in tiles."},
    {{"enable_slicing", K::Switch, "", 0, 0, "", S::Decoding, "the videos of a batch one at a time"},
     &JobSpec::vae_slicing, "VAE slicing", "Decodes the videos of a batch one at a time: less memory for several."},
    // Step caching.
    {{"use_fbcache", K::Switch, "", 0, 0, "", S::Caching,
      "First-Block Cache (diffusers' semantics): a step whose first block's output changed little since the last "
      "full step reuses what the other blocks added"},
     &JobSpec::use_fbcache, "First-Block Cache",
     "Skips the blocks after the first on steps whose first block changes little."},
    {{"use_teacache", K::Switch, "", 0, 0, "", S::Caching,
      "TeaCache: steps reuse what every block added while the accumulated, rescaled change of the model's "
      "modulated input stays under the threshold"},
     &JobSpec::use_teacache, "TeaCache", "Skips every block while the accumulated change of the input stays small."},
    {{"use_magcache", K::Switch, "", 0, 0, "", S::Caching,
      "MagCache: steps reuse what every block added while the error the model's calibrated magnitude ratios "
      "predict stays under the threshold (at most 2 in a row; the first fifth of the steps always run); needs "
      "--magcache_ratios"},
     &JobSpec::use_magcache, "MagCache", "Skips while the calibrated magnitude error stays small."},
    {{"magcache_ratios", K::Text, "FILE", 0, 0, "ratios.json", S::Caching,
      "the ratios, measured once per model and step count by"},
     &JobSpec::magcache_ratios, "MagCache ratios", "The model's calibrated ratios, a file that calibration wrote."},
    {{"magcache_calibrate", K::Text, "FILE", 0, 0, "ratios.json", S::Caching,
      "an uncached run that measures them and writes FILE"},
     &JobSpec::magcache_calibrate, "MagCache calibration", "Measures the ratios on an uncached run and writes them."},
    {{"cache_threshold", K::Number, "X", 0, 0, "0.1", S::Caching,
      "how little (0 reuses nothing; higher is faster and drifts further); default 0.05 for First-Block Cache, "
      "for TeaCache the family's (CogVideoX 0.1, FLUX.1 0.25, Wan 0.05), 0.12 for MagCache"},
     &JobSpec::cache_threshold, "Reuse threshold",
     "How little a step may change to be reused: 0 reuses nothing; higher is faster and less faithful. Each "
     "method starts from its default for the model."},
    // Parallel, in the order ParallelConfig::flags writes them.
    {{"ulysses_degree", K::Integer, "N", 1, kMaxDegree, "2", S::Parallel,
      "sequence parallel, all-to-all between sequence and heads"},
     &ParallelConfig::ulysses_degree, "Ulysses",
     "Sequence parallel (DeepSpeed-Ulysses): each rank attends with a share of the attention heads after an "
     "all-to-all. Fast on GPUs joined by NVLink; at most the model's heads. The first choice for 2 to 8 GPUs."},
    {{"ring_degree", K::Integer, "N", 1, kMaxDegree, "2", S::Parallel,
      "sequence parallel, K/V blocks passed around a ring"},
     &ParallelConfig::ring_degree, "Ring",
     "Sequence parallel (Ring attention): each rank keeps a share of the tokens and passes keys and values "
     "around the ring. Works for any head count and overlaps sending with computing; use it beyond what the "
     "heads allow Ulysses, or across slower links."},
    {{"pipefusion_parallel_degree", K::Integer, "N", 1, kMaxDegree, "2", S::Parallel,
      "layers split into N pipeline stages"},
     &ParallelConfig::pipefusion_parallel_degree, "PipeFusion stages",
     "Splits the model's layers into stages, one per rank, and pipelines patches of the image through them: "
     "each rank holds only its layers' weights. Use it when the model does not fit one GPU."},
    {{"num_pipeline_patch", K::Integer, "N", 1, kMaxDegree, "2", S::Parallel,
      "PipeFusion's patches of the latent rows (default 1)"},
     &ParallelConfig::num_pipeline_patch, "PipeFusion patches",
     "How many patches PipeFusion pipelines through its stages: more patches keep the stages busier but send "
     "more, smaller messages. At least the number of stages.",
     "pipefusion_parallel_degree"},
    {{"warmup_steps", K::Integer, "N", 0, kMaxWarmupSteps, "1", S::Parallel,
      "PipeFusion's synchronous steps before pipelining (default 1)"},
     &ParallelConfig::warmup_steps, "Warm-up steps",
     "PipeFusion's synchronous first steps, before it reuses the previous step's activations for the other "
     "patches. More warm-up is closer to the one-process result and slower; all steps give it exactly.",
     "pipefusion_parallel_degree"},
    {{"use_cfg_parallel", K::Switch, "", 0, 0, "", S::Parallel, "the two guidance branches on two groups of ranks"},
     &ParallelConfig::use_cfg_parallel, "CFG parallel",
     "Runs classifier-free guidance's two branches (with and without the prompt) on two groups of ranks at "
     "once: twice the speed for 2x the GPUs, with little communication. Only when guidance is on."},
    {{"data_parallel_degree", K::Integer, "N", 1, kMaxDegree, "2", S::Parallel,
      "the videos of --num_videos_per_prompt split among groups"},
     &ParallelConfig::data_parallel_degree, "Data parallel",
     "Independent copies of the whole job, each making its share of the videos. Use it for several results "
     "per prompt; it does not speed up a single one."},
    {{"use_parallel_vae", K::Switch, "", 0, 0, "", S::Parallel,
      "every rank decodes a band of rows, and encodes one of an image-to-video run's picture (exact; memory per "
      "rank ~1/N)"},
     &ParallelConfig::use_parallel_vae, "Parallel VAE",
     "Every rank decodes a band of rows of the frames, and encodes a band of the picture an image-to-video run "
     "starts from: the VAE's time and memory divided among the ranks, with the same result as one process."},
    {{"shard_weights", K::Switch, "", 0, 0, "", S::Parallel,
      "each CFG x ring x Ulysses rank keeps 1/N of every block's weights and gathers a block whole while the one "
      "before runs (exact; weights per rank ~1/N plus two blocks)"},
     &ParallelConfig::shard_weights, "Shard weights",
     "Spreads the transformer's blocks over the CFG- and sequence-parallel ranks, as FSDP does: each keeps a "
     "share and gathers a block just before running it. A model too large for one GPU then fits on several, with the "
     "same result; the gathering costs time on slower links."},
};

}  // namespace

long long parse_integer(const std::string& flag, const std::string& v, long long lo, long long hi, const char* example) {
  errno = 0;
  char* end = nullptr;
  const long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || errno == ERANGE)
    throw InputError(flag + " '" + v + "': not an integer; expected e.g. " + flag + " " + example);
  if (x < lo || x > hi)
    throw InputError(flag + " " + v + ": out of range; expected " + std::to_string(lo) + " to " + std::to_string(hi));
  return x;
}

double parse_number(const std::string& flag, const std::string& v, const char* example) {
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || !std::isfinite(x))
    throw InputError(flag + " '" + v + "': not a number; expected e.g. " + flag + " " + example);
  return x;
}

const std::vector<Option>& options() { return kOptions; }

const Option* option(const std::string& key) {
  for (const auto& o : kOptions)
    if (key == o.spec.key) return &o;
  return nullptr;
}

nlohmann::json option_value(const Option& o, const JobFile& f) {
  nlohmann::json out;
  with_field(o, f, [&](const auto& v) {
    if constexpr (std::is_same_v<std::decay_t<decltype(v)>, double>) {
      if (!std::isnan(v)) out = v;
    } else {
      out = v;
    }
  });
  return out;
}

void set_option_text(const Option& o, JobFile& f, const std::string& text) {
  const std::string flag = std::string("--") + o.spec.key;
  with_field(o, f, [&](auto& field) {
    using T = std::decay_t<decltype(field)>;
    if constexpr (std::is_same_v<T, bool>) field = true;
    else if constexpr (std::is_same_v<T, std::string>) field = o.repeated ? add_lora(field, text) : text;
    else if constexpr (std::is_same_v<T, double>) field = parse_number(flag, text, o.spec.example);
    else field = T(parse_integer(flag, text, o.spec.min, o.spec.max, o.spec.example));
  });
}

namespace {
constexpr size_t kHelpWidth = 110, kHelpColumn = 30;
}  // namespace

std::string wrapped(const std::string& text, size_t indent, size_t start) {
  std::string out;
  size_t width = start;
  bool line_empty = true;
  for (size_t i = 0; i < text.size();) {
    size_t end = text.find(' ', i);
    if (end == std::string::npos) end = text.size();
    const size_t word = end - i;
    if (!line_empty && width + 1 + word > kHelpWidth) {
      out += "\n" + std::string(indent, ' ');
      width = indent;
      line_empty = true;
    }
    if (!line_empty) {
      out += ' ';
      ++width;
    }
    out.append(text, i, word);
    width += word;
    line_empty = false;
    i = end + 1;
  }
  return out + "\n";
}

std::string usage_line(const OptionSpec& o) {
  std::string line = std::string("  --") + o.key + (*o.value ? std::string(" ") + o.value : "");
  line += line.size() + 2 <= kHelpColumn ? std::string(kHelpColumn - line.size(), ' ') : "  ";
  return line + wrapped(o.usage, kHelpColumn, line.size());
}

}  // namespace studio::plan
