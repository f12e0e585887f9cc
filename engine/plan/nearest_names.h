// "Did you mean": the names a mistyped one was most likely meant to be (a flag, a job file's field).
#pragma once
#include <string>
#include <vector>

namespace studio::plan {

// Up to `most` of `names` closest to `given`: those within a few edits of it (letters swapped, missing or extra;
// more allowed for longer names), else those that contain it (--steps -> --num_inference_steps); nearest first.
std::vector<std::string> nearest_names(const std::string& given, const std::vector<std::string>& names,
                                       size_t most = 3);

// "; did you mean --a?" or "; did you mean --a or --b?" (each name after `prefix`), "" when none is near.
std::string did_you_mean(const std::string& given, const std::vector<std::string>& names,
                         const std::string& prefix = "--");

}  // namespace studio::plan
