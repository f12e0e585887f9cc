// Downloading a model repository into the Hub's cache, and checking one already there. A file is fetched
// into blobs/<blob>.incomplete (resumed with Range after a dropped connection or a restart), hashed
// (sha256 for LFS files, git's blob sha1 for the others), renamed to blobs/<blob> only when it matches,
// and only then linked into snapshots/<commit>/; refs/<revision> is written last. Files the cache holds
// already (from huggingface-cli, diffusers or an earlier run) are linked, not fetched again.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "hub/cache.h"
#include "hub/client.h"
#include "hub/hashing.h"

namespace studio::hub {

// Whether the engine reads a file of this name: safetensors weights and their indices, JSON configs,
// tokenizer files (spiece.model, tokenizer.json, vocab.json, merges.txt, ...). Never pickles (.bin, .pt,
// .ckpt, .pth), other formats (.onnx, .msgpack, .gguf, ...), nor variants (diffusion_pytorch_model.fp16.*)
// that diffusers loads only when asked for.
bool engine_reads(const std::string& path);

// The files of `all` to download: those the engine reads; with a model_index.json (a diffusers
// pipeline), only those inside the components it names and JSON at the top (as DiffusionPipeline's
// download does: a single-file checkpoint beside the folders is skipped).
std::vector<RemoteFile> files_to_download(const std::vector<RemoteFile>& all, const std::string& model_index_json);

struct Progress {
  std::string file;          // the one being fetched or hashed
  uint64_t file_bytes = 0, file_total = 0;
  uint64_t bytes = 0, total = 0;       // over every file to fetch
  int files_done = 0, files_total = 0;
  double bytes_per_second = 0;         // this run's average
  double eta_seconds = -1;             // -1: not known yet
  bool hashing = false;                // the file is being checked, not fetched
};

struct DownloadOptions {
  std::string revision = "main";
  std::function<void(const Progress&)> on_progress;
  std::function<void(const std::string& line)> on_note;  // one-line notes: skipped files, reused blobs
  const std::atomic<bool>* cancel = nullptr;
  int retries = 5;
  // Only these files of the repository, by path (a single-file checkpoint: a GGUF quant, an fp8 safetensors,
  // for --transformer), instead of what the engine reads of a pipeline.
  std::vector<std::string> files;
  // Components of a pipeline whose weights are not fetched, only their configs: a single file stands for them
  // (transformer, for dit-launch --transformer FILE).
  std::vector<std::string> without;
};

struct DownloadResult {
  std::string commit;
  std::string snapshot;            // the folder to give --model
  int files = 0;                   // in the snapshot
  int fetched = 0;                 // of which downloaded now
  uint64_t bytes_fetched = 0;
  std::vector<std::string> skipped;  // files of the repo the engine does not read
};

// Throws InputError when the Hub refuses (401, 403, 404), a file does not match its hash (the bad blob is
// deleted; nothing is linked) or the disk has too little room (before anything is fetched); NetworkError
// when the connection fails; Cancelled when the flag is set (the .incomplete files stay to be resumed).
DownloadResult download_repo(HubClient& client, const std::string& repo_id, const DownloadOptions& options);

struct VerifyResult {
  int files = 0;
  uint64_t bytes = 0;
  std::vector<std::string> mismatched;  // "path: blob X hashes to Y"
  std::vector<std::string> unchecked;   // blobs named by an ETag that is no content hash
};
// Hashes every blob the repo's snapshot (of `revision`) links to and records which matched.
VerifyResult verify_repo(const std::string& cache_dir, const std::string& repo_id, const std::string& revision,
                         const std::function<void(const Progress&)>& on_progress, const std::atomic<bool>* cancel);

// The blob's content matches its name: sha256 for 64 hex digits, git's blob sha1 for 40. "" when it
// does, else what it hashes to; `checked` false when the name is neither.
std::string blob_mismatch(const std::string& blob_path, const std::string& blob, bool& checked, const HashWatch& watch = {});

}  // namespace studio::hub
