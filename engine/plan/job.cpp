#include "plan/job.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "plan/error.h"
#include "plan/family.h"
#include "plan/run_settings.h"
#include "plan/mag_ratios.h"
#include "plan/output_format.h"
#include "plan/output_folder.h"
#include "plan/kernel_choice.h"
#include "plan/lora_choice.h"
#include "plan/weight_choice.h"

namespace studio::plan {

void apply_model_defaults(JobSpec& job, const ModelFolder& model) { rules_of(model).apply_defaults(job, model); }

void size_from_picture(JobSpec& job, const ModelFolder& model, int width, int height) {
  if (job.width != 0 || job.height != 0) return;
  const auto [w, h] = rules_of(model).size_for_picture(model, width, height);
  if (w > 0 && h > 0) job.width = w, job.height = h;
}

namespace {

// The names the ranks take (pipeline/device_choice.*), checked before any starts; whether this machine has the
// device named is the rank's to say.
void check_device_and_dtype(const JobSpec& job, std::vector<Problem>& out) {
  const std::string& d = job.device;
  const bool index = d.size() > 5 && d.rfind("cuda:", 0) == 0 &&
                     d.find_first_not_of("0123456789", 5) == std::string::npos;
  if (d != "auto" && d != "cpu" && d != "cuda" && !index)
    out.push_back({"device", "--device '" + d + "': expected auto, cpu, cuda or cuda:N"});
  const std::string& t = job.dtype;
  if (t != "auto" && t != "float32" && t != "bfloat16" && t != "float16")
    out.push_back({"dtype", "--dtype '" + t + "': expected auto, float32, bfloat16 or float16"});
}

std::string nearest_multiples(int value, int step) {
  int below = value / step * step;
  int above = below + step;
  if (below <= 0) return std::to_string(above);
  return std::to_string(below) + " or " + std::to_string(above);
}

}  // namespace

void check_frames(int num_frames, int tc, std::vector<Problem>& out) {
  if (num_frames > 0 && (num_frames - 1) % tc == 0) return;
  const int below = num_frames <= 1 ? 1 : (num_frames - 1) / tc * tc + 1;
  out.push_back({"num_frames", "--num_frames " + std::to_string(num_frames) + ": must be " + std::to_string(tc) +
                                   "k+1 (the VAE compresses time " + std::to_string(tc) + "x, keeping the first frame); " +
                                   std::to_string(below) + " or " + std::to_string(below + tc) + " would work"});
}

void check_multiple(const char* field, int value, int step, const std::string& why, std::vector<Problem>& out) {
  if (value <= 0 || value % step != 0)
    out.push_back({field, std::string("--") + field + " " + std::to_string(value) + ": must be a positive multiple of " +
                              std::to_string(step) + " (" + why + "); " + nearest_multiples(value, step) + " would work"});
}

namespace {

// One step cache at a time, its threshold in range, MagCache's ratios readable, calibration uncached.
void check_step_cache(const JobSpec& job, const ModelFolder& model, std::vector<Problem>& out) {
  const int caches = int(job.use_fbcache) + int(job.use_teacache) + int(job.use_magcache);
  if (caches > 1)
    out.push_back({"use_teacache", "--use_fbcache, --use_teacache, --use_magcache: one step cache at a time; "
                                   "choose one"});
  if (!std::isnan(job.cache_threshold) && caches == 0)
    out.push_back({"cache_threshold", "--cache_threshold: no step cache is on; add --use_fbcache, --use_teacache or "
                                      "--use_magcache, or drop it"});
  if (job.use_magcache && job.magcache_ratios.empty())
    out.push_back({"magcache_ratios", "--use_magcache needs --magcache_ratios FILE: the model's calibrated ratios; "
                                      "measure them once with an uncached run and --magcache_calibrate FILE"});
  else if (job.use_magcache) {
    try {
      const auto r = read_mag_ratios(job.magcache_ratios);
      const auto& rules = rules_of(model);
      const auto why = mag_ratios_mismatch(r, model.variant.id, rules.blocks(model), rules.hidden_size(model));
      if (!why.empty())
        out.push_back({"magcache_ratios", "--magcache_ratios " + job.magcache_ratios + ": " + why +
                                              "; measure this model's once with an uncached run and "
                                              "--magcache_calibrate FILE"});
    } catch (const InputError& e) {
      out.push_back({"magcache_ratios", "--magcache_ratios: " + std::string(e.what())});
    }
  }
  if (!job.magcache_calibrate.empty() && caches > 0)
    out.push_back({"magcache_calibrate", "--magcache_calibrate measures the uncached model; drop the step cache "
                                         "for this run"});
  check_output_folder("magcache_calibrate", job.magcache_calibrate, out);
  check_output_target("magcache_calibrate", job.magcache_calibrate, false, out);
  const double t = job.cache_threshold;
  if (caches > 0 && !std::isnan(t) && !(t >= 0 && t <= kMaxCacheThreshold))
    out.push_back({"cache_threshold", "--cache_threshold " + shortest_number(job.cache_threshold) +
                                          ": must be between 0 (skip nothing: the uncached result) and " +
                                          std::to_string(int(kMaxCacheThreshold)) +
                                          " (the default: First-Block Cache " + shortest_number(kFirstBlockCacheThreshold) +
                                          ", TeaCache " + shortest_number(rules_of(model).teacache_threshold()) +
                                          " for this model, MagCache " + shortest_number(kMagCacheThreshold) +
                                          "; higher skips more)"});
}

// The pictures an image-to-video model needs, and none for a model that takes none. Whether a file decodes
// is the engine's check (video/picture.h), made before any work.
void check_pictures(const JobSpec& job, const ModelFolder& model, std::vector<Problem>& out) {
  const auto& rules = rules_of(model);
  const bool takes = rules.takes_image(model);
  if (rules.needs_image(model) && job.image_file.empty())
    out.push_back({"image", "this is an image-to-video model (" + model.variant.name + "): give the picture the clip "
                            "starts from with --image FILE"});
  if (!takes && !job.image_file.empty()) {
    std::string offer;
    for (const auto& r : image_to_video_repos(rules)) offer += (offer.empty() ? "" : ", ") + r.repo_id;
    out.push_back({"image", "--image " + job.image_file + ": this model (" + model.variant.name + ") generates from "
                            "words alone; drop the picture" +
                            (offer.empty() ? std::string(" (its family has no image-to-video model)")
                                           : ", or use an image-to-video checkpoint of its family (" + offer + ")")});
  }
  if (!job.last_image_file.empty() && !rules.takes_last_image(model))
    out.push_back({"last_image", "--last_image " + job.last_image_file + ": this model (" + model.variant.name +
                                     ") cannot end on a picture; drop it, or use a model that can (Wan2.1-FLF2V, "
                                     "Wan2.2 I2V-A14B)"});
  else if (!job.last_image_file.empty() && job.image_file.empty())
    out.push_back({"last_image", "--last_image without --image: give the first picture too"});
  for (auto [field, path] : {std::pair{"image", &job.image_file}, std::pair{"last_image", &job.last_image_file}}) {
    std::error_code ec;
    if (!path->empty() && std::filesystem::is_directory(*path, ec))
      out.push_back({field, "--" + std::string(field) + " " + *path + ": a folder, not a picture; give a PNG, JPEG or "
                                                                      "WebP file"});
    else if (!path->empty() && !std::filesystem::is_regular_file(*path, ec))
      out.push_back({field, "--" + std::string(field) + " " + *path + ": no such file"});
  }
}

}  // namespace

double cache_threshold(const JobSpec& job, const ModelFolder& model) {
  if (!std::isnan(job.cache_threshold)) return job.cache_threshold;
  if (job.use_magcache) return kMagCacheThreshold;
  return job.use_teacache ? rules_of(model).teacache_threshold() : kFirstBlockCacheThreshold;
}

std::vector<Problem> validate(const JobSpec& job, const ModelFolder& model) {
  std::vector<Problem> out;
  const auto& rules = rules_of(model);
  rules.validate(job, model, out);
  const int max_steps = rules.train_steps(model);
  if (job.num_inference_steps < 1 || job.num_inference_steps > max_steps)
    out.push_back({"num_inference_steps", "--num_inference_steps " + std::to_string(job.num_inference_steps) +
                                              ": must be between 1 and " + std::to_string(max_steps) +
                                              " (the sampler's training steps)"});
  if (!std::isfinite(job.guidance_scale) || job.guidance_scale < 0)
    out.push_back({"guidance_scale", "--guidance_scale " + shortest_number(job.guidance_scale) + ": must be a number >= 0"});
  if (!std::isnan(job.guidance_scale_2) && !rules_of(model).takes_guidance_2(model))
    out.push_back({"guidance_scale_2", "--guidance_scale_2: the second expert's guidance (Wan2.2); this model has one "
                                       "transformer, so give --guidance_scale alone"});
  else if (!std::isnan(job.guidance_scale_2) && !(std::isfinite(job.guidance_scale_2) && job.guidance_scale_2 >= 0))
    out.push_back({"guidance_scale_2", "--guidance_scale_2 " + shortest_number(job.guidance_scale_2) +
                                           ": must be a number >= 0"});
  if (rules.makes_video() && (job.fps < 1 || job.fps > 240))
    out.push_back({"fps", "--fps " + std::to_string(job.fps) + ": must be between 1 and 240 frames per second"});
  if (!job.prompt_2.empty() && !rules.takes_prompt_2())
    out.push_back({"prompt_2", "--prompt_2: FLUX.1's second prompt (for its T5); this model has one text encoder, "
                               "so put everything in --prompt"});
  else if (!job.prompt_2.empty() && job.prompt.empty())
    out.push_back({"prompt_2", "--prompt_2 without --prompt: give the prompt too (CLIP reads --prompt, T5 --prompt_2)"});
  else if (job.prompt.find_first_not_of(" \t\r\n") == std::string::npos && job.prompt_embeds_file.empty())
    out.push_back({"prompt", std::string(job.prompt.empty() ? "no prompt" : "a prompt of only spaces") +
                                 ": give --prompt TEXT, or --prompt_embeds FILE with precomputed embeddings"});
  if (!job.prompt.empty() && !job.prompt_embeds_file.empty())
    out.push_back({"prompt", "--prompt and --prompt_embeds both given: use one (--prompt_embeds skips the encoder)"});
  if (!job.prompt.empty() && job.prompt_embeds_file.empty() && !model.can_encode_words())
    out.push_back({"prompt", "--prompt: " + model.dir + " has " + missing_text_parts(model) +
                                 " to encode words with; download the whole model folder (e.g. huggingface-cli "
                                 "download " + example_repo(model) + ") or pass --prompt_embeds FILE"});
  // Before the inputs' own checks: a file the job reads must not be named as an output, whatever else is wrong.
  check_outputs_differ(output_names(job), input_names(job), out);
  check_step_cache(job, model, out);
  check_weight_choices(job, model, out);
  check_loras(job, model, out);
  check_kernel_choices(job, out);
  check_device_and_dtype(job, out);
  check_pictures(job, model, out);
  // Outputs are checked now, not after a long run.
  check_output_folder("save_tensors", job.save_tensors_file, out);
  check_output_target("save_tensors", job.save_tensors_file, false, out);
  check_output_folder("output", job.output_file, out, expected_output_bytes(job));
  if (!job.output_file.empty()) {
    try {
      const Format format = format_for(job.output_file);
      for (int b = 0, videos = std::max(1, job.num_videos_per_prompt); b < videos; ++b) {
        const std::string video = output_of_video(job.output_file, b, videos), side = sidecar_of(video, format);
        check_output_target("output", video, format == Format::PNG, out);
        std::error_code ec;  // the sidecar beside a clip or an image (a folder of frames holds its own)
        if (format != Format::PNG && std::filesystem::exists(side, ec) && !std::filesystem::is_regular_file(side, ec))
          out.push_back({"output", "--output " + video + ": its sidecar JSON would go to " + side + ", where " +
                                       (std::filesystem::is_directory(side, ec) ? "a folder" : "a device or a pipe") +
                                       " of that name is; move it away, or choose another name"});
      }
      const bool image = is_image(format);
      if (image && rules.makes_video())
        out.push_back({"output", "--output " + job.output_file + ": this model makes clips, not single images; use "
                                 ".mp4, .webm, .gif or a folder name (numbered PNGs)"});
      if (!image && !rules.makes_video())
        out.push_back({"output", "--output " + job.output_file + ": this model makes images; use .png, .jpg or .webp"});
    } catch (const InputError& e) {
      out.push_back({"output", e.what()});
    }
    if (!model.has_vae())
      out.push_back({"output", "--output " + job.output_file + ": the model folder has no vae/ to decode frames with"});
  }
  return out;
}

LatentGeometry latent_geometry(const JobSpec& job, const ModelFolder& model) {
  return rules_of(model).geometry(job, model);
}

}  // namespace studio::plan
