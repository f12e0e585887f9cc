// A job and its parallel configuration as the JSON file the launcher hands to every worker. Its keys are
// the options' (plan/options.h): the command line's flags without the dashes.
#pragma once
#include <string>

#include "plan/job.h"
#include "plan/parallel.h"

namespace studio::plan {

struct JobFile {
  JobSpec job;
  ParallelConfig parallel;
};

// Every option's value: what the studio keeps of a run (its history, its last job), read back whole.
std::string to_json(const JobFile& f);
// Only the options set to other than their defaults: what a worker is handed (the launcher's job file, a serving
// worker's next job), so that a worker of an older version reads every job that sets nothing it lacks.
std::string to_worker_json(const JobFile& f);
// What a key that names no option means: a mistake in a file a person wrote, or a setting of a newer version
// (refused, with the nearest names and this version), or in what the studio kept (its history, its last job) a
// setting of another version (skipped).
enum class UnknownKeys { Refused, Skipped };
// InputError naming the file and field for anything malformed.
JobFile job_file_from_json(const std::string& text, const std::string& file,
                           UnknownKeys unknown = UnknownKeys::Refused);
// Writes `path` whole or not at all (a temporary file renamed into place); InputError with the reason.
void write_job_file(const std::string& path, const JobFile& f);

}  // namespace studio::plan
