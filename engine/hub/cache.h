// The Hugging Face Hub's cache, laid out as huggingface_hub lays it, so that what huggingface-cli or
// diffusers downloaded is found here and what we download is theirs too:
//   $HF_HUB_CACHE/models--ORG--NAME/blobs/<sha256 of an LFS file, or git blob sha1 of the others>
//                                  /snapshots/<commit>/<path in the repo>  (relative links to the blobs)
//                                  /refs/<branch or tag>                   (the commit it pointed at)
// Reading, listing, linking and removing need no network (the launcher resolves --model ORG/NAME here).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace studio::hub {

// Where to talk to and where to keep things, from the environment huggingface_hub reads: HF_ENDPOINT
// (default https://huggingface.co), HF_HOME (default $XDG_CACHE_HOME/huggingface, else
// ~/.cache/huggingface), HF_HUB_CACHE (or the older HUGGINGFACE_HUB_CACHE; default $HF_HOME/hub), and the
// token: HF_TOKEN, else the file HF_TOKEN_PATH (default $HF_HOME/token) that `huggingface-cli login` writes.
struct HubSettings {
  std::string endpoint;
  std::string cache_dir;
  std::string token;
  std::string token_source;  // "HF_TOKEN", the token file's path, or "" when there is no token
};
HubSettings settings_from_environment();

// "ORG/NAME" as the Hub spells repository ids: one '/', letters, digits, '-', '_', '.', no "..", no
// leading or trailing '-' or '.'.
bool is_repo_id(const std::string& s);
// "models--ORG--NAME".
std::string repo_folder_name(const std::string& repo_id);
std::string repo_dir(const std::string& cache_dir, const std::string& repo_id);

// The snapshot folder `revision` (a branch, tag or commit) names in the cache, as from_pretrained finds
// it offline: refs/<revision> holds the commit; a commit names its folder directly. "" when absent.
std::string snapshot_dir(const std::string& cache_dir, const std::string& repo_id, const std::string& revision = "main");

// --model's value as a folder: itself when it exists or is no repo id, else the cached snapshot of the
// repo's main branch. Throws InputError naming the value, the cache searched and the download command.
std::string local_model_dir(const std::string& model, const HubSettings& settings = settings_from_environment());

struct CachedRepo {
  std::string repo_id;
  std::string dir;                           // models--ORG--NAME
  std::map<std::string, std::string> refs;   // branch or tag -> commit
  std::string commit;                        // main's, else the newest snapshot's
  std::string snapshot;                      // its folder ("" when there is none)
  uint64_t bytes_on_disk = 0;                // every blob of the repo, each counted once
  std::string family;                        // "CogVideoX", "FLUX.1", "Wan", another pipeline class, or ""
  bool complete = false;                     // model_index.json, its components, every shard, no broken link
  bool verified = false;                     // every file's blob hashed and matched since it was written
  std::vector<std::string> problems;         // why it is not complete, one line each
  // A repository of single files (no model_index.json): its .gguf and .safetensors files, as paths in the
  // repository ("Lightx2v/lora.safetensors"), as `dit-models download REPO FILE` leaves them; complete when each
  // links to its blob.
  std::vector<std::string> single_files;
  // Components with their config and no weights (downloaded --without them): a single file stands for them.
  std::vector<std::string> without_weights;
};
std::vector<CachedRepo> list_cache(const std::string& cache_dir);
CachedRepo read_cached_repo(const std::string& cache_dir, const std::string& repo_id);

// Removes the repo's folder (and its lock folder); returns the bytes freed. InputError when absent.
uint64_t remove_repo(const std::string& cache_dir, const std::string& repo_id);

// Links snapshots/<commit>/<path> to blobs/<blob> with a relative link, replacing an older link at once.
void link_snapshot_file(const std::string& repo_dir, const std::string& commit, const std::string& path,
                        const std::string& blob);
// Writes refs/<revision> = commit, whole or not at all (a commit names itself: no ref is written).
void write_ref(const std::string& repo_dir, const std::string& revision, const std::string& commit);

// Blobs whose content matched their name, with the size and modification time they had then: a record of
// ours (dit-studio-verified.json in the repo's folder, which huggingface_hub does not read).
struct VerifiedBlob {
  uint64_t size = 0;
  int64_t mtime_ns = 0;
};
std::map<std::string, VerifiedBlob> read_verified(const std::string& repo_dir);
void record_verified(const std::string& repo_dir, const std::map<std::string, bool>& blob_matched);

// Bytes free to an unprivileged user on the disk holding `dir` (or its nearest existing parent).
uint64_t free_bytes(const std::string& dir);

}  // namespace studio::hub
