// What the results views say about a run, from its job file: short names for a parallel configuration
// ("U2xR2", "PF2x2", "CFG", "DP2"), readable names for its settings, the one-line facts the history lists,
// and every setting as the metadata an exported file carries (the same fields the worker writes, plus the
// whole job file). Torch-free: the model folder is read with engine/plan.
#pragma once
#include <QString>
#include <QStringList>

#include <map>
#include <optional>
#include <string>

#include "plan/job_file.h"

namespace studio::gui {

// "U2", "R2", "U2xR2", "PF2x2" (stages x patches), "CFG", "DP2", joined with "x"; "1 process" alone.
QString short_label(const plan::ParallelConfig& p);

// The job file's field as the studio labels it (plan::field_label: "ring_degree" -> "Ring").
QString setting_label(const QString& key);

// A run's job file from the history's settings; nullopt when they cannot be read.
std::optional<plan::JobFile> job_of(const QString& settings);

// A run as a comparison names it: its number, the start of its prompt and its configuration
// ("run 12, "a paper boat on…", U2").
QString run_name(qint64 id, const QString& prompt, const QString& settings);

// Every setting of the job for an exported file's tags and sidecar: model, family, sampler, seed, size,
// frames, fps, steps, guidance, negative prompt, caches, parallel, pictures, LoRAs..., and "settings": the job
// file's JSON. Where the run wrote its output, what the worker put beside it (the input pictures' and LoRAs'
// SHA-256 among it) is taken as it is.
std::map<std::string, std::string> run_metadata(const plan::JobFile& f);
// The LoRA files of `now`, a run of `then`'s job again, that were not what `then` read: the SHA-256 each run's
// output recorded (the worker hashes them as it reads them) differ. None where either recorded none.
QStringList changed_loras(const plan::JobFile& then, const plan::JobFile& now);

// The pictures a run starts from, and the name of the copy of each its folder keeps ("input.png"): the run reads
// the copy, made when the job was queued; its record names the file the user chose.
struct InputPicture {
  std::string plan::JobSpec::*path;
  const char* kept;
  const char* field;  // the job file's name for it
};
inline constexpr InputPicture kInputPictures[] = {{&plan::JobSpec::image_file, "input", "image"},
                                                  {&plan::JobSpec::last_image_file, "input_last", "last_image"}};
// The copy of `picture` kept in `run_folder`; empty when it keeps none.
QString kept_picture(const QString& run_folder, const InputPicture& picture);
// The job's pictures replaced by the copies `run_folder` keeps: all of them with `exact` (Run again reads what the
// run read), else only those whose file is gone (Open its settings offers the user's own files while they last).
void use_kept_pictures(plan::JobSpec& job, const QString& run_folder, bool exact);

// Whether the job's model makes clips (true when its folder cannot be read: the clip controls stay).
bool makes_clips(const plan::JobSpec& job);

// 75 s as "1 min 15 s", 8.25 as "8.3 s".
QString duration_text(double seconds);

}  // namespace studio::gui
