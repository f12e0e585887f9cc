#include "plan/run_settings.h"

#include <charconv>
#include <cmath>

#include "plan/options.h"
#include "plan/single_file.h"

namespace studio::plan {

std::string shortest_number(double v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

std::map<std::string, std::string> settings_metadata(const JobSpec& job, const ParallelConfig& parallel) {
  const auto flag = [](bool on) { return std::string(on ? "true" : "false"); };
  std::map<std::string, std::string> m{{"generator", "DiT Studio " STUDIO_VERSION},
                                       {"model", job.model_dir},
                                       {"seed", std::to_string(job.seed)},
                                       {"height", std::to_string(job.height)},
                                       {"width", std::to_string(job.width)},
                                       {"num_frames", std::to_string(job.num_frames)},
                                       {"num_inference_steps", std::to_string(job.num_inference_steps)},
                                       {"use_dynamic_cfg", flag(job.use_dynamic_cfg)},
                                       {"prompt", job.prompt},
                                       {"prompt_2", job.prompt_2},
                                       {"negative_prompt", job.negative_prompt},
                                       {"num_videos_per_prompt", std::to_string(job.num_videos_per_prompt)},
                                       {"parallel", parallel.describe()},
                                       {"use_fbcache", flag(job.use_fbcache)},
                                       {"use_teacache", flag(job.use_teacache)},
                                       {"use_magcache", flag(job.use_magcache)}};
  if (!job.prompt_embeds_file.empty()) m["prompt_embeds"] = job.prompt_embeds_file;
  if (job.max_sequence_length > 0) m["max_sequence_length"] = std::to_string(job.max_sequence_length);
  if (!job.quantize.empty()) m["quantize"] = job.quantize;
  // The weights given one by one in place of the folder's: the run's result is theirs.
  for (auto [key, path] : {std::pair{"transformer", &job.transformer_file},
                           std::pair{"transformer_2", &job.transformer_2_file},
                           std::pair{"text_encoder", &job.text_encoder_file},
                           std::pair{"text_encoder_2", &job.text_encoder_2_file}})
    if (!path->empty()) m[key] = *path;
  if (!std::isnan(job.guidance_scale)) m["guidance_scale"] = shortest_number(job.guidance_scale);
  if (!std::isnan(job.guidance_scale_2)) m["guidance_scale_2"] = shortest_number(job.guidance_scale_2);
  return m;
}

nlohmann::json settings_json(const std::map<std::string, std::string>& metadata) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [key, text] : metadata) {
    auto& v = out[key] = text;
    const Option* o = option(key);
    const char *first = text.data(), *last = first + text.size();
    if (unsigned long long u;
        !o && ends_with(key, "_bytes") && !text.empty() && std::from_chars(first, last, u).ptr == last)
      v = u;  // a file's size
    if (!o || text.empty()) continue;
    if (o->spec.kind == OptionKind::Switch && (text == "true" || text == "false")) {
      v = text == "true";
    } else if (o->spec.kind == OptionKind::Integer) {
      // Signed or not, as wide as a seed: the text unchanged unless all of it is the number.
      if (long long n; text[0] == '-' && std::from_chars(first, last, n).ptr == last) v = n;
      else if (unsigned long long u; std::from_chars(first, last, u).ptr == last) v = u;
    } else if (o->spec.kind == OptionKind::Number) {
      if (double d; std::from_chars(first, last, d).ptr == last && std::isfinite(d)) v = d;
    }
  }
  return out;
}

}  // namespace studio::plan
