#include "plan/job_file.h"

#include <nlohmann/json.hpp>

#include "plan/error.h"
#include "plan/json_fields.h"
#include "plan/nearest_names.h"
#include "plan/options.h"

namespace studio::plan {

using nlohmann::json;

std::string to_json(const JobFile& f) {
  json out = json::object();
  for (const auto& o : options())
    if (auto v = option_value(o, f); !v.is_null()) out[o.spec.key] = v;  // an unset number: the default's
  return out.dump(2);
}

void write_job_file(const std::string& path, const JobFile& f) {
  write_text_file(path, to_json(f) + "\n", "the job file");
}

JobFile job_file_from_json(const std::string& text, const std::string& file, UnknownKeys unknown) {
  // Types checked and integers range-checked as every config is read; the values themselves are the
  // job's validation's business.
  const Fields in(text, file);
  if (unknown == UnknownKeys::Refused)
    for (const auto& [key, value] : in.raw().items())
      if (!option(key)) {
        std::vector<std::string> keys;
        for (const auto& o : options()) keys.push_back(o.spec.key);
        throw InputError(file + ": field '" + key + "' is not a job setting" + did_you_mean(key, keys, "") +
                         " (the fields are dit-launch's flags without the dashes)");
      }
  JobFile f;
  for (const auto& o : options())
    with_field(o, f, [&](auto& field) { field = in.get<std::decay_t<decltype(field)>>(o.spec.key, field); });
  return f;
}

}  // namespace studio::plan
