// Whether a folder can take a job's files, with the true reason when it cannot: missing, not a folder,
// not writable (permissions), on a read-only file system, or short of space. One check for the
// launcher's plan (flag wording) and the studio (the window's wording).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "plan/job.h"

namespace studio::plan {

enum class FolderState { Ok, Missing, NotFolder, NotWritable, ReadOnly, NoSpace };

struct FolderCheck {
  FolderState state = FolderState::Ok;
  uint64_t free_bytes = 0;    // for the user, where statvfs could say
  uint64_t needed_bytes = 0;
  std::string detail;         // the system's words (strerror), where a call failed
  bool ok() const { return state == FolderState::Ok; }
  // What is wrong with `dir`, as the end of a sentence: "does not exist", "is on a read-only file system", ...
  std::string reason(const std::string& dir) const;
};

// Checks `dir` for existence, write access (access(W_OK) and a real write of a small file, removed
// again: a read-only mount or a full disk shows only then) and at least `needed_bytes` free (statvfs).
FolderCheck check_folder(const std::string& dir, uint64_t needed_bytes = 0);

// The checks of a job's (or the launcher's) output `path` before any work, as `field`'s problems: its folder
// exists and takes a file of `needed` bytes (the true reason when not); what stands at the path itself can be
// replaced by what is written there (a file, or with `folder` an empty folder of frames).
void check_output_folder(const char* field, const std::string& path, std::vector<Problem>& out, uint64_t needed = 0);
void check_output_target(const char* field, const std::string& path, bool folder, std::vector<Problem>& out);
// One file a job writes: the flag that names it, its path, and what it is to that flag ("file", "sidecar JSON").
struct OutputName {
  const char* field;
  std::string path;
  const char* role = "file";
};
// Every file a job writes under a name the user gave: the outputs first, then the outputs' sidecars.
std::vector<OutputName> output_names(const JobSpec& job);
// Every file a job reads by a name the user gave: weights given one by one, LoRAs, pictures, tensors, ratios.
std::vector<OutputName> input_names(const JobSpec& job);
// No two of a job's outputs may be the same file (the one written last would replace the other), and none may be a
// file the job reads (writing it would destroy it).
void check_outputs_differ(const std::vector<OutputName>& outputs, const std::vector<OutputName>& inputs,
                          std::vector<Problem>& out);

// The decoded frames of a job in bytes (RGB8, every video). 0 when the size is not known yet (a
// dimension left at the model's default).
uint64_t raw_frame_bytes(const JobSpec& job);

// The least a job's output file takes, by its format: the raw frames for PNGs (lossless, and little
// smaller on generated pictures), a fraction of them for the lossy and palette formats. A folder with
// less free space surely cannot take it; one with more may still fill up, which the writer reports.
uint64_t expected_output_bytes(const JobSpec& job);

}  // namespace studio::plan
