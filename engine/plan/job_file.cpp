#include "plan/job_file.h"

#include <nlohmann/json.hpp>

#include "plan/error.h"
#include "plan/json_fields.h"
#include "plan/nearest_names.h"
#include "plan/options.h"

namespace studio::plan {

using nlohmann::json;

namespace {

json options_json(const JobFile& f, bool changed_only) {
  const JobFile defaults;
  json out = json::object();
  for (const auto& o : options())
    if (auto v = option_value(o, f); !v.is_null() && (!changed_only || v != option_value(o, defaults)))
      out[o.spec.key] = v;  // an unset number (null): the default's
  return out;
}

}  // namespace

std::string to_json(const JobFile& f) { return options_json(f, false).dump(2); }
std::string to_worker_json(const JobFile& f) { return options_json(f, true).dump(2); }

void write_job_file(const std::string& path, const JobFile& f) {
  write_text_file(path, to_worker_json(f) + "\n", "the job file");
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
        throw InputError(file + ": field '" + key + "' is not a job setting of DiT Studio " STUDIO_VERSION +
                         did_you_mean(key, keys, "") +
                         " (a job of a newer version needs that version's dit-worker; a job's fields are "
                         "dit-launch's job flags without the dashes)");
      }
  JobFile f;
  for (const auto& o : options())
    with_field(o, f, [&](auto& field) { field = in.get<std::decay_t<decltype(field)>>(o.spec.key, field); });
  return f;
}

}  // namespace studio::plan
