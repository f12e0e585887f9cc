// One generation job: what the user asks for, checked against the model before any work starts.
// Field names are xDiT's flag names without the dashes, so a problem names the flag a user typed.
#pragma once
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "plan/model_folder.h"

namespace studio::plan {

struct JobSpec {
  std::string model_dir;
  int height = 0;      // pixels; 0 = the model's default
  int width = 0;       // pixels; 0 = the model's default
  int num_frames = 0;  // video frames; 0 = the model's default (images: 1)
  int num_inference_steps = 0;  // 0 = the model's default (CogVideoX 50, FLUX.1-dev 28, schnell 4)
  double guidance_scale = std::numeric_limits<double>::quiet_NaN();  // NaN = the model's default
  // Wan2.2: the low-noise expert's guidance scale; NaN = guidance_scale (as WanPipeline)
  double guidance_scale_2 = std::numeric_limits<double>::quiet_NaN();
  bool use_dynamic_cfg = false;
  uint64_t seed = 42;              // video i of the job uses seed + i
  int num_videos_per_prompt = 1;
  std::string prompt;               // words, encoded with the folder's tokenizer(s) and text encoder(s)
  std::string prompt_2;             // FLUX.1: T5's own prompt; "" = the prompt (as diffusers' prompt_2)
  std::string negative_prompt;      // "" by default, as the reference pipeline
  int max_sequence_length = 0;      // text tokens; 0 = the transformer's max_text_seq_length (226)
  std::string image_file;           // image-to-video: the picture the clip starts from
  std::string last_image_file;      // and the one it ends on (Wan's first-and-last-frame use)
  std::string prompt_embeds_file;  // safetensors: prompt_embeds, negative_prompt_embeds [B, T, D]
  std::string latents_file;        // safetensors: latents_init (CogVideoX [B, F, C, H, W]; FLUX packed [B, N, 64])
  std::string sampler_noise_file;  // safetensors: scheduler_noise [steps, B, F, C, H, W]
  std::string save_tensors_file;   // safetensors written at the end
  std::string output_file;         // a clip: .mp4, .webm, .gif or a folder of PNGs
  int fps = 0;                     // 0 = the model's (8 for CogVideoX 1.0, 16 for 1.5)
  std::string device = "auto";     // "auto", "cpu", "cuda", "cuda:N"
  std::string dtype = "auto";      // "auto", "float32", "bfloat16", "float16"
  bool allow_tf32 = false;         // CUDA float32: TF32 tensor cores for matmuls and convolutions (faster, ~1e-3)
  std::string attention_kernel = "auto";  // CUDA: auto (timed once per shape), flash, cudnn, efficient or torch
  bool fp8_gemm = false;           // the transformer's linear layers as float8 GEMMs (weights per channel, inputs per row)
  bool keep_partial = false;       // on cancel: keep the latents reached, and the frames decoded so far
  bool vae_tiling = false;         // decode in overlapping tiles (diffusers' enable_tiling)
  int tile_sample_min_height = 0, tile_sample_min_width = 0;  // the tiles, in pixels; 0 = the model's
  bool vae_slicing = false;        // decode the videos of a batch one at a time (diffusers' enable_slicing)
  bool use_fbcache = false;        // First-Block Cache: skip the blocks after the first on steps that change little
  bool use_teacache = false;       // TeaCache: skip every block while the accumulated change stays small
  bool use_magcache = false;       // MagCache: skip while the calibrated magnitude error stays small
  std::string magcache_ratios;     // MagCache's calibrated ratios (a file --magcache_calibrate wrote)
  std::string magcache_calibrate;  // measure the ratios on this uncached run and write them there
  double cache_threshold = std::numeric_limits<double>::quiet_NaN();  // NaN = the method's default
  // Fitting the model in memory.
  std::string transformer_file;    // one file (GGUF or safetensors) for transformer/, with the folder's config
  std::string transformer_2_file;  // likewise for transformer_2/ (Wan2.2's low-noise expert)
  std::string text_encoder_file;    // one file for text_encoder/ (T5, umT5, or FLUX.1's CLIP)
  std::string text_encoder_2_file;  // likewise for text_encoder_2/ (FLUX.1's T5)
  // LoRAs merged into the transformer's weights: "FILE[:SCALE]" entries joined by commas (--lora, repeated);
  // lora_2 for Wan2.2's second expert (plan/lora_choice.h).
  std::string lora, lora_2;
  std::string quantize;            // "" or "fp8": store the transformer's float linear weights so on load
  std::string offload;             // "" or "blocks": the blocks in host memory, each copied in to run
  std::string text_encoder_device = "auto";  // "auto" or "cpu"
};

// Whether --offload blocks saves the device's memory: off the CPU only (on the CPU the blocks run where they are).
inline bool offload_saves_memory(const JobSpec& job) { return job.device != "cpu"; }

// First-Block Cache's default threshold: diffusers' FirstBlockCacheConfig. The largest accepted.
constexpr double kFirstBlockCacheThreshold = 0.05;
constexpr double kMagCacheThreshold = 0.12;  // MagCache's own default (its Wan2.1 scripts' magcache_thresh)
constexpr double kMaxCacheThreshold = 100;
// The threshold a job's cache uses: its own, or the method's default for the model (TeaCache's is the
// family's, Family::teacache_threshold).
double cache_threshold(const JobSpec& job, const ModelFolder& model);

// The latent grid a job denoises, as the reference pipeline derives it.
struct LatentGeometry {
  int frames = 1;         // latent frames that are decoded: (num_frames - 1) / temporal + 1; 1 for an image
  int padded_frames = 1;  // latent frames that are denoised (CogVideoX 1.5 pads to patch_size_t)
  int channels = 0;
  int height = 0;  // latent pixels
  int width = 0;
  bool has_frames = true;     // the latents have a frame axis ([B, F, C, h, w]); an image's are [B, C, h, w]
  bool channels_first = false;  // a video's latents are [B, C, F, h, w] (Wan)
  int64_t latent_tokens = 0;  // per sample, after patching (FLUX: after 2x2 packing)
  int text_tokens = 0;
  int pad_frames() const { return padded_frames - frames; }
  std::vector<int64_t> shape(int64_t batch) const {
    if (has_frames && channels_first) return {batch, channels, padded_frames, height, width};
    if (has_frames) return {batch, padded_frames, channels, height, width};
    return {batch, channels, height, width};
  }
};

struct Problem {
  std::string field;    // e.g. "height"
  std::string message;  // a whole sentence: value, why, what would work
};

// Fills 0-valued sizes and steps and an unset guidance scale from the model's family and config, as the
// reference pipeline does.
void apply_model_defaults(JobSpec& job, const ModelFolder& model);
// Where the family sizes the video by its picture (Family::size_for_picture) and the job gives no size: the
// picture's `width` x `height` pixels decide job.width and job.height, as the reference pipeline decides them.
void size_from_picture(JobSpec& job, const ModelFolder& model, int width, int height);

// Every problem with the job for this model; empty when it can run.
std::vector<Problem> validate(const JobSpec& job, const ModelFolder& model);

// Valid only for a job that validate() accepts.
LatentGeometry latent_geometry(const JobSpec& job, const ModelFolder& model);

}  // namespace studio::plan
