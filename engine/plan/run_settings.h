// The settings a run's outputs carry in their metadata (a PNG's text chunks, a clip's tags, the sidecar JSON):
// one list for the worker that writes them and the studio that writes them again on export.
#pragma once
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "plan/job.h"
#include "plan/parallel.h"

namespace studio::plan {

// 3.5 as "3.5", not "3.500000": the shortest text that reads back as the same double.
std::string shortest_number(double v);

// The job's own settings as the metadata names them (seed, size, steps, guidance, prompts, caches, the parallel
// configuration; "model" the folder as the job names it, which the worker replaces with the folder it resolved); a
// guidance scale the job leaves to the model (NaN) is left out. What depends on the run, the model folder or the
// files (the dtype computed in, the family, sampler, the pictures' and LoRAs' hashes) each writer adds.
std::map<std::string, std::string> settings_metadata(const JobSpec& job, const ParallelConfig& parallel);

// The metadata as the sidecar JSON (and the settings embedded in a GIF, JPEG, WebP or PNG) write it: an option
// that is a number or a switch as a JSON number or boolean (the seed exact), a file's "..._bytes" as a number, every
// other value as its text.
nlohmann::json settings_json(const std::map<std::string, std::string>& metadata);

}  // namespace studio::plan
