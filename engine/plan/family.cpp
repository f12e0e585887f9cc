#include "plan/family.h"

#include <stdexcept>

namespace studio::plan {

const Family& rules_of(const ModelFolder& m) {
  if (!m.family) throw std::logic_error(m.dir + ": a model folder without its family (read it with read_model_folder)");
  return *m.family;
}

std::vector<std::string> Family::missing_text_parts(const ModelFolder& m) const {
  std::vector<std::string> missing;
  if (!m.has_tokenizer) missing.push_back(t5_tokenizer_part() + "/ (T5's spiece.model)");
  if (!m.text_encoder) missing.push_back(t5_part() + "/ (T5)");
  return missing;
}

const std::string& job_text(const JobSpec& job, const std::string& field) {
  if (field == "prompt") return job.prompt;
  if (field == "prompt_2") return job.prompt_2;
  if (field == "negative_prompt") return job.negative_prompt;
  throw std::logic_error("no text field '" + field + "' in a job");
}

std::vector<KnownRepo> image_to_video_repos(const Family& family) {
  std::vector<KnownRepo> out;
  for (auto& r : family.known_repos())
    if (r.image_to_video) out.push_back(r);
  return out;
}

}  // namespace studio::plan
