#include "plan/job.h"

#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "plan/error.h"
#include "plan/output_format.h"

namespace studio::plan {

void apply_model_defaults(JobSpec& job, const ModelFolder& model) {
  const auto& t = model.transformer;
  if (job.height == 0) job.height = t.sample_height * model.vae_scale_spatial();
  if (job.width == 0) job.width = t.sample_width * model.vae_scale_spatial();
  if (job.num_frames == 0) job.num_frames = t.sample_frames;
  if (job.fps == 0) job.fps = t.family() == Family::CogVideoX_15 ? 16 : 8;
  if (job.max_sequence_length == 0) job.max_sequence_length = t.max_text_seq_length;
}

namespace {

// The folder a file will be written to must exist and be writable: checked before any work.
void check_output_folder(const char* field, const std::string& file, std::vector<Problem>& out) {
  if (file.empty()) return;
  std::string trimmed = file;
  while (trimmed.size() > 1 && trimmed.back() == '/') trimmed.pop_back();
  const auto dir = std::filesystem::absolute(trimmed).parent_path();
  const std::string flag = std::string("--") + field + " " + file;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    out.push_back({field, flag + ": the folder " + dir.string() + " does not exist; create it or choose another path"});
  else if (::access(dir.c_str(), W_OK) != 0)
    out.push_back({field, flag + ": the folder " + dir.string() + " is not writable; choose another path"});
}

std::string nearest_multiples(int value, int step) {
  int below = value / step * step;
  int above = below + step;
  if (below <= 0) return std::to_string(above);
  return std::to_string(below) + " or " + std::to_string(above);
}

}  // namespace

std::vector<Problem> validate(const JobSpec& job, const ModelFolder& model) {
  std::vector<Problem> out;
  const auto& t = model.transformer;
  const int pixel_step = model.vae_scale_spatial() * t.patch_size;
  auto size_rule = [&](const char* field, int v) {
    if (v <= 0 || v % pixel_step != 0)
      out.push_back({field, std::string("--") + field + " " + std::to_string(v) + ": must be a positive multiple of " +
                                std::to_string(pixel_step) + " (the VAE's " + std::to_string(model.vae_scale_spatial()) +
                                "x times the patch size " + std::to_string(t.patch_size) + "); " +
                                nearest_multiples(v, pixel_step) + " would work"});
  };
  size_rule("height", job.height);
  size_rule("width", job.width);
  if (job.vae_tiling)
    for (auto [field, v] : {std::pair{"tile_sample_min_height", job.tile_sample_min_height},
                            std::pair{"tile_sample_min_width", job.tile_sample_min_width}})
      if (v < 2 * model.vae_scale_spatial() || v % model.vae_scale_spatial() != 0)
        out.push_back({field, std::string("--") + field + " " + std::to_string(v) +
                                  ": tiles must be a multiple of the VAE's " + std::to_string(model.vae_scale_spatial()) +
                                  " pixels and at least two latent rows; " +
                                  nearest_multiples(std::max(v, 2 * model.vae_scale_spatial()), model.vae_scale_spatial()) +
                                  " would work"});

  const int tc = model.vae_scale_temporal();
  if (job.num_frames <= 0 || (job.num_frames - 1) % tc != 0) {
    int below = job.num_frames <= 1 ? 1 : (job.num_frames - 1) / tc * tc + 1;
    out.push_back({"num_frames", "--num_frames " + std::to_string(job.num_frames) + ": must be " + std::to_string(tc) +
                                     "k+1 (the VAE compresses time " + std::to_string(tc) + "x, keeping the first frame); " +
                                     std::to_string(below) + " or " + std::to_string(below + tc) + " would work"});
  }
  const int max_steps = model.scheduler.num_train_timesteps;
  if (job.num_inference_steps < 1 || job.num_inference_steps > max_steps)
    out.push_back({"num_inference_steps", "--num_inference_steps " + std::to_string(job.num_inference_steps) +
                                              ": must be between 1 and " + std::to_string(max_steps) +
                                              " (the sampler's training steps); 50 is the usual value"});
  if (!std::isfinite(job.guidance_scale) || job.guidance_scale < 0)
    out.push_back({"guidance_scale", "--guidance_scale " + std::to_string(job.guidance_scale) +
                                         ": must be a number >= 0 (1 or less turns guidance off; 6 is usual)"});
  if (job.fps < 1 || job.fps > 240)
    out.push_back({"fps", "--fps " + std::to_string(job.fps) + ": must be between 1 and 240 frames per second"});
  if (job.prompt.empty() && job.prompt_embeds_file.empty())
    out.push_back({"prompt", "no prompt: give --prompt TEXT, or --prompt_embeds FILE with precomputed embeddings"});
  if (!job.prompt.empty() && !job.prompt_embeds_file.empty())
    out.push_back({"prompt", "--prompt and --prompt_embeds both given: use one (--prompt_embeds skips the encoder)"});
  if (!job.prompt.empty() && (!model.has_tokenizer || !model.text_encoder))
    out.push_back({"prompt", "--prompt: " + model.dir + " has no " +
                                 (model.has_tokenizer ? "text_encoder/" : "tokenizer/") +
                                 " folder to encode words with; download the whole model folder (e.g. "
                                 "huggingface-cli download THUDM/CogVideoX-2b) or pass --prompt_embeds FILE"});
  if (job.max_sequence_length < 1 || job.max_sequence_length > 4096)
    out.push_back({"max_sequence_length", "--max_sequence_length " + std::to_string(job.max_sequence_length) +
                                              ": must be between 1 and 4096 (226 is CogVideoX's)"});
  else if (!t.use_rotary_positional_embeddings && job.max_sequence_length != t.max_text_seq_length)
    out.push_back({"max_sequence_length", "--max_sequence_length " + std::to_string(job.max_sequence_length) +
                                              ": this model (3D sin-cos positions) needs exactly its "
                                              "max_text_seq_length, " + std::to_string(t.max_text_seq_length)});
  // Outputs are checked now, not after a long run.
  check_output_folder("save_tensors", job.save_tensors_file, out);
  check_output_folder("output", job.output_file, out);
  if (!job.output_file.empty()) {
    try {
      format_for(job.output_file);
    } catch (const InputError& e) {
      out.push_back({"output", e.what()});
    }
    if (!model.vae)
      out.push_back({"output", "--output " + job.output_file + ": the model folder has no vae/ to decode frames with"});
  }
  return out;
}

LatentGeometry latent_geometry(const JobSpec& job, const ModelFolder& model) {
  const auto& t = model.transformer;
  LatentGeometry g;
  g.frames = (job.num_frames - 1) / model.vae_scale_temporal() + 1;
  g.padded_frames = g.frames;
  const int pt = t.patch_size_t.value_or(1);
  if (g.frames % pt != 0) g.padded_frames += pt - g.frames % pt;  // the 1.5 pipeline pads at the start
  g.channels = t.in_channels;
  g.height = job.height / model.vae_scale_spatial();
  g.width = job.width / model.vae_scale_spatial();
  g.video_tokens = int64_t(g.padded_frames / pt) * (g.height / t.patch_size) * (g.width / t.patch_size);
  g.text_tokens = t.max_text_seq_length;
  return g;
}

}  // namespace studio::plan
