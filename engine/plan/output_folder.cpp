#include "plan/output_folder.h"

#include "plan/human_bytes.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <utility>
#include <vector>

#include "plan/error.h"
#include "plan/lora_choice.h"
#include "plan/output_format.h"

namespace studio::plan {

namespace {

FolderState state_of_errno(int e) {
  switch (e) {
    case EROFS: return FolderState::ReadOnly;
    case ENOSPC:
    case EDQUOT: return FolderState::NoSpace;
    case ENOENT: return FolderState::Missing;
    case ENOTDIR: return FolderState::NotFolder;
    default: return FolderState::NotWritable;
  }
}

FolderCheck failed(FolderState s, int e = 0) { return {s, 0, 0, e ? std::strerror(e) : ""}; }

// Creates, writes and removes a small file in `dir`: what access() cannot tell (a read-only mount seen
// by root, a full disk, a quota) shows here.
int test_write(const std::string& dir) {
  std::string path = dir + "/.dit-studio-write-test-XXXXXX";
  const int fd = ::mkstemp(path.data());
  if (fd < 0) return errno;
  const char probe[] = "dit-studio write test\n";
  int e = 0;
  if (::write(fd, probe, sizeof probe - 1) != ssize_t(sizeof probe - 1)) e = errno ? errno : ENOSPC;
  if (::close(fd) != 0 && !e) e = errno;
  ::unlink(path.c_str());
  return e;
}

}  // namespace

FolderCheck check_folder(const std::string& dir, uint64_t needed_bytes) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) return failed(errno == ENOTDIR ? FolderState::Missing : state_of_errno(errno), errno);
  if (!S_ISDIR(st.st_mode)) return failed(FolderState::NotFolder);
  struct statvfs fs {};
  const bool known = ::statvfs(dir.c_str(), &fs) == 0;
  if (known && (fs.f_flag & ST_RDONLY)) return failed(FolderState::ReadOnly);
  if (::access(dir.c_str(), W_OK) != 0) return failed(state_of_errno(errno), errno);
  // The folder exists (stat said so): a file that cannot be made in it (ENOENT in /proc) is refused, not missing.
  if (const int e = test_write(dir)) return e == ENOENT ? failed(FolderState::NotWritable) : failed(state_of_errno(e), e);
  FolderCheck c;
  if (!known) return c;  // statvfs is not answered everywhere (some FUSE mounts): the test write passed
  c.free_bytes = uint64_t(fs.f_bavail) * fs.f_frsize;
  c.needed_bytes = needed_bytes;
  if (c.free_bytes < needed_bytes) c.state = FolderState::NoSpace;
  return c;
}

std::string FolderCheck::reason(const std::string& dir) const {
  const std::string why = detail.empty() ? "" : " (" + detail + ")";
  switch (state) {
    case FolderState::Ok: return "can be written";
    case FolderState::Missing: return "does not exist";
    case FolderState::NotFolder: return "is not a folder";
    case FolderState::NotWritable: return "is not writable by this user" + why;
    case FolderState::ReadOnly: return "is on a read-only file system";
    case FolderState::NoSpace:
      if (needed_bytes == 0) return "is on a full disk" + why;
      return "has " + human_bytes(free_bytes) + " free, less than the " + human_bytes(needed_bytes) + " this job writes";
  }
  return "cannot be written (" + dir + ")";
}

uint64_t raw_frame_bytes(const JobSpec& job) {
  if (job.width <= 0 || job.height <= 0) return 0;
  const uint64_t frames = uint64_t(std::max(1, job.num_frames)) * uint64_t(std::max(1, job.num_videos_per_prompt));
  return frames * uint64_t(job.width) * uint64_t(job.height) * 3;
}

uint64_t expected_output_bytes(const JobSpec& job) {
  if (job.output_file.empty()) return 0;
  Format f;
  try {
    f = format_for(job.output_file);
  } catch (const InputError&) {
    return 0;  // the job's check names the bad path itself
  }
  const uint64_t raw = raw_frame_bytes(job);
  switch (f) {
    case Format::PNG:
    case Format::ImagePNG: return raw;
    case Format::GIF: return raw / 10;
    default: return raw / 100;  // H.264, VP9, JPEG, WebP at their usual quality
  }
}


void check_output_folder(const char* field, const std::string& file, std::vector<Problem>& out, uint64_t needed) {
  if (file.empty()) return;
  const auto dir = std::filesystem::absolute(without_trailing_slash(file)).parent_path().string();
  const auto c = check_folder(dir, needed);
  if (c.ok()) return;
  static const char* const remedy[] = {"", "; create it or choose another path", "; choose another path",
                                       "; choose another path", "; choose a folder on a writable disk",
                                       "; free some space or choose another disk"};
  out.push_back({field, std::string("--") + field + " " + file + ": the folder " + dir + " " + c.reason(dir) +
                            remedy[int(c.state)]});
}

void check_output_target(const char* field, const std::string& path, bool folder, std::vector<Problem>& out) {
  if (path.empty()) return;
  const std::string trimmed = without_trailing_slash(path);
  std::error_code ec;
  const auto status = std::filesystem::status(trimmed, ec);
  if (ec || !std::filesystem::exists(status)) return;
  const std::string flag = std::string("--") + field + " " + path;
  if (folder && !std::filesystem::is_directory(status))
    out.push_back({field, flag + (std::filesystem::is_regular_file(status) ? ": a file" : ": a device or a pipe") +
                              " of that name exists where the folder of frames would go; choose another name, or a "
                              "name ending in .mp4, .webm or .gif for a clip"});
  else if (folder && !std::filesystem::is_empty(trimmed, ec))
    out.push_back({field, flag + ": the folder exists and is not empty; choose a new folder name, or empty it"});
  else if (!folder && std::filesystem::is_directory(status))
    out.push_back({field, flag + ": a folder of that name exists; choose a file name"});
  else if (!folder && !std::filesystem::is_regular_file(status))
    out.push_back({field, flag + ": not a regular file (a device or a pipe); choose a file name in a folder"});
}

std::vector<OutputName> output_names(const JobSpec& job) {
  std::vector<OutputName> names;
  const int videos = job.output_file.empty() ? 0 : std::max(1, job.num_videos_per_prompt);
  for (int b = 0; b < videos; ++b) names.push_back({"output", output_of_video(job.output_file, b, videos)});
  names.push_back({"save_tensors", job.save_tensors_file});
  names.push_back({"magcache_calibrate", job.magcache_calibrate});
  try {
    const Format format = format_for(job.output_file);
    for (int b = 0; b < videos; ++b)
      names.push_back({"output", sidecar_of(output_of_video(job.output_file, b, videos), format), "sidecar JSON"});
  } catch (const InputError&) {
    // An output name of no known format: its own problem says so.
  }
  return names;
}

std::vector<OutputName> input_names(const JobSpec& job) {
  std::vector<OutputName> names{{"transformer", job.transformer_file},       {"transformer_2", job.transformer_2_file},
                                {"text_encoder", job.text_encoder_file},     {"text_encoder_2", job.text_encoder_2_file},
                                {"image", job.image_file},                   {"last_image", job.last_image_file},
                                {"prompt_embeds", job.prompt_embeds_file},   {"latents", job.latents_file},
                                {"sampler_noise", job.sampler_noise_file},   {"magcache_ratios", job.magcache_ratios}};
  for (auto [field, list] : {std::pair{"lora", &job.lora}, std::pair{"lora_2", &job.lora_2}}) {
    try {
      for (const auto& use : parse_loras(*list, std::string("--") + field)) names.push_back({field, use.file});
    } catch (const InputError&) {
      // A list that does not parse: its own problem says so.
    }
  }
  return names;
}

namespace {

std::filesystem::path where(const std::string& path) {
  std::error_code ec;
  const std::string trimmed = without_trailing_slash(path);
  auto at = std::filesystem::weakly_canonical(std::filesystem::absolute(trimmed), ec);
  return ec ? std::filesystem::absolute(trimmed).lexically_normal() : at;
}

}  // namespace

void check_outputs_differ(const std::vector<OutputName>& outputs, const std::vector<OutputName>& inputs,
                          std::vector<Problem>& out) {
  std::vector<std::pair<const OutputName*, std::filesystem::path>> seen, read;
  for (const auto& i : inputs)
    if (!i.path.empty()) read.emplace_back(&i, where(i.path));
  for (const auto& o : outputs) {
    if (o.path.empty()) continue;
    const auto at = where(o.path);
    const auto input = std::find_if(read.begin(), read.end(), [&](const auto& r) { return r.second == at; });
    if (input != read.end()) {
      const std::string named = std::string(o.role) == "file" ? " " + o.path : std::string("'s ") + o.role + " " + o.path;
      out.push_back({o.field, std::string("--") + o.field + named + " is --" + input->first->field +
                                  "'s file, which the job reads: writing there would destroy it; give --" + o.field +
                                  " another name"});
      continue;
    }
    for (const auto& [other, other_where] : seen)
      if (at == other_where) {
        // The flag to change is the one naming a file of its own; the other may only name it by its sidecar.
        const bool own = std::string(o.role) == "file";
        const OutputName& blamed = own ? o : *other;
        const OutputName& by = own ? *other : o;
        out.push_back({blamed.field, std::string("--") + blamed.field + " " + blamed.path + " is also --" + by.field +
                                         "'s " + by.role + "; the one written last would replace the other: give "
                                         "each its own name"});
        break;
      }
    seen.emplace_back(&o, at);
  }
}

}  // namespace studio::plan
