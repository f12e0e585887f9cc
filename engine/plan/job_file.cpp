#include "plan/job_file.h"

#include <cmath>

#include <nlohmann/json.hpp>

#include "plan/error.h"
#include "plan/json_fields.h"

namespace studio::plan {

using nlohmann::json;

std::string to_json(const JobFile& f) {
  const JobSpec& j = f.job;
  const ParallelConfig& p = f.parallel;
  json out = {{"model", j.model_dir},
              {"prompt", j.prompt},
              {"prompt_2", j.prompt_2},
              {"negative_prompt", j.negative_prompt},
              {"max_sequence_length", j.max_sequence_length},
              {"height", j.height},
              {"width", j.width},
              {"num_frames", j.num_frames},
              {"num_inference_steps", j.num_inference_steps},
              {"use_dynamic_cfg", j.use_dynamic_cfg},
              {"seed", j.seed},
              {"num_videos_per_prompt", j.num_videos_per_prompt},
              {"prompt_embeds", j.prompt_embeds_file},
              {"latents", j.latents_file},
              {"sampler_noise", j.sampler_noise_file},
              {"save_tensors", j.save_tensors_file},
              {"output", j.output_file},
              {"fps", j.fps},
              {"device", j.device},
              {"dtype", j.dtype},
              {"keep_partial", j.keep_partial},
              {"allow_tf32", j.allow_tf32},
              {"enable_tiling", j.vae_tiling},
              {"tile_sample_min_height", j.tile_sample_min_height},
              {"tile_sample_min_width", j.tile_sample_min_width},
              {"enable_slicing", j.vae_slicing},
              {"use_fbcache", j.use_fbcache},
              {"use_teacache", j.use_teacache},
              {"use_magcache", j.use_magcache},
              {"magcache_ratios", j.magcache_ratios},
              {"magcache_calibrate", j.magcache_calibrate},
              {"use_parallel_vae", p.use_parallel_vae},
              {"ulysses_degree", p.ulysses_degree},
              {"ring_degree", p.ring_degree},
              {"pipefusion_parallel_degree", p.pipefusion_parallel_degree},
              {"num_pipeline_patch", p.num_pipeline_patch},
              {"warmup_steps", p.warmup_steps},
              {"use_cfg_parallel", p.use_cfg_parallel},
              {"data_parallel_degree", p.data_parallel_degree}};
  if (!std::isnan(j.guidance_scale)) out["guidance_scale"] = j.guidance_scale;  // unset: the model's default
  if (!std::isnan(j.guidance_scale_2)) out["guidance_scale_2"] = j.guidance_scale_2;
  if (!std::isnan(j.cache_threshold)) out["cache_threshold"] = j.cache_threshold;  // unset: the method's default
  return out.dump(2);
}

void write_job_file(const std::string& path, const JobFile& f) {
  write_text_file(path, to_json(f) + "\n", "the job file");
}

JobFile job_file_from_json(const std::string& text, const std::string& file) {
  // Types checked and integers range-checked as every config is read; the values themselves are the
  // job's validation's business.
  const Fields in(text, file);
  JobFile f;
  auto get = [&](const char* key, auto& into) { into = in.get<std::decay_t<decltype(into)>>(key, into); };
  JobSpec& j = f.job;
  ParallelConfig& p = f.parallel;
  get("model", j.model_dir);
  get("prompt", j.prompt);
  get("prompt_2", j.prompt_2);
  get("negative_prompt", j.negative_prompt);
  get("max_sequence_length", j.max_sequence_length);
  get("height", j.height);
  get("width", j.width);
  get("num_frames", j.num_frames);
  get("num_inference_steps", j.num_inference_steps);
  get("guidance_scale", j.guidance_scale);
  get("guidance_scale_2", j.guidance_scale_2);
  get("use_dynamic_cfg", j.use_dynamic_cfg);
  get("seed", j.seed);
  get("num_videos_per_prompt", j.num_videos_per_prompt);
  get("prompt_embeds", j.prompt_embeds_file);
  get("latents", j.latents_file);
  get("sampler_noise", j.sampler_noise_file);
  get("save_tensors", j.save_tensors_file);
  get("output", j.output_file);
  get("fps", j.fps);
  get("device", j.device);
  get("dtype", j.dtype);
  get("keep_partial", j.keep_partial);
  get("allow_tf32", j.allow_tf32);
  get("enable_tiling", j.vae_tiling);
  get("tile_sample_min_height", j.tile_sample_min_height);
  get("tile_sample_min_width", j.tile_sample_min_width);
  get("enable_slicing", j.vae_slicing);
  get("use_fbcache", j.use_fbcache);
  get("use_teacache", j.use_teacache);
  get("use_magcache", j.use_magcache);
  get("magcache_ratios", j.magcache_ratios);
  get("magcache_calibrate", j.magcache_calibrate);
  get("cache_threshold", j.cache_threshold);
  get("use_parallel_vae", p.use_parallel_vae);
  get("ulysses_degree", p.ulysses_degree);
  get("ring_degree", p.ring_degree);
  get("pipefusion_parallel_degree", p.pipefusion_parallel_degree);
  get("num_pipeline_patch", p.num_pipeline_patch);
  get("warmup_steps", p.warmup_steps);
  get("use_cfg_parallel", p.use_cfg_parallel);
  get("data_parallel_degree", p.data_parallel_degree);
  return f;
}

}  // namespace studio::plan
