#include "hub/download.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "plan/error.h"
#include "plan/model_folder.h"
#include "plan/human_bytes.h"

namespace fs = std::filesystem;

namespace studio::hub {

namespace {

using Clock = std::chrono::steady_clock;

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// huggingface_hub's lock for a blob (.locks/models--ORG--NAME/<blob>.lock, an flock), so that a
// huggingface-cli writing the same blob at the same time waits for us and we for it.
class BlobLock {
 public:
  BlobLock(const std::string& cache_dir, const std::string& repo_id, const std::string& blob) {
    const fs::path dir = fs::path(cache_dir) / ".locks" / repo_folder_name(repo_id);
    fs::create_directories(dir);
    fd_ = ::open((dir / (blob + ".lock")).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ >= 0) ::flock(fd_, LOCK_EX);
  }
  ~BlobLock() {
    if (fd_ >= 0) ::close(fd_);
  }
  BlobLock(const BlobLock&) = delete;
  BlobLock& operator=(const BlobLock&) = delete;

 private:
  int fd_ = -1;
};

// Throttled progress: at most ten reports a second, and each file's last.
class ProgressReporter {
 public:
  ProgressReporter(const DownloadOptions& o, uint64_t total, int files) : options_(o) {
    p_.total = total;
    p_.files_total = files;
  }
  void file(const std::string& name, uint64_t size, bool hashing) {
    p_.file = name;
    p_.file_total = size;
    p_.file_bytes = 0;
    p_.hashing = hashing;
  }
  void bytes(uint64_t file_bytes, uint64_t counted_bytes, bool force = false) {
    p_.file_bytes = file_bytes;
    p_.bytes = done_ + counted_bytes;
    const auto now = Clock::now();
    if (!force && now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    const double s = std::chrono::duration<double>(now - start_).count();
    fetched_now_ = std::max(fetched_now_, p_.bytes - first_);
    p_.bytes_per_second = s > 0 ? double(fetched_now_) / s : 0;
    p_.eta_seconds = p_.bytes_per_second > 0 ? double(p_.total - std::min(p_.total, p_.bytes)) / p_.bytes_per_second : -1;
    if (options_.on_progress) options_.on_progress(p_);
  }
  // Bytes an earlier run left: they count as done but not toward this run's speed.
  void resumed(uint64_t bytes) { first_ += bytes; }
  void finished_file(uint64_t size) {
    done_ += size;
    ++p_.files_done;
    bytes(size, 0, true);
  }

 private:
  const DownloadOptions& options_;
  Progress p_;
  uint64_t done_ = 0, first_ = 0, fetched_now_ = 0;
  Clock::time_point start_ = Clock::now(), last_{};
};

std::string files(size_t n) { return std::to_string(n) + (n == 1 ? " file" : " files"); }

}  // namespace

bool engine_reads(const std::string& path) {
  std::string name = path.substr(path.rfind('/') + 1);
  for (auto& c : name) c = char(std::tolower(static_cast<unsigned char>(c)));
  for (const char* variant : {".fp16.", ".fp16-", ".bf16.", ".bf16-", ".fp32.", ".fp32-"})
    if (name.find(variant) != std::string::npos) return false;
  for (const char* ext : {".safetensors", ".json", ".model", ".txt"})
    if (ends_with(name, ext)) return true;
  return false;
}

std::vector<RemoteFile> files_to_download(const std::vector<RemoteFile>& all, const std::string& model_index_json) {
  std::set<std::string> components;
  if (!model_index_json.empty()) {
    const auto j = nlohmann::json::parse(model_index_json);
    for (const auto& [name, value] : j.items())
      if (value.is_array() && !value.empty() && !value[0].is_null()) components.insert(name);
  }
  std::vector<RemoteFile> out;
  for (const auto& f : all) {
    if (!engine_reads(f.path)) continue;
    const auto slash = f.path.find('/');
    if (!model_index_json.empty() &&
        (slash == std::string::npos ? !ends_with(f.path, ".json") : !components.count(f.path.substr(0, slash))))
      continue;
    out.push_back(f);
  }
  return out;
}

std::string blob_mismatch(const std::string& blob_path, const std::string& blob, bool& checked, const HashWatch& watch) {
  checked = is_sha256_hex(blob) || is_sha1_hex(blob);
  if (!checked) return "";
  const std::string got = is_sha256_hex(blob) ? sha256_of_file(blob_path, watch) : git_blob_sha1_of_file(blob_path, watch);
  return got == blob ? "" : got;
}

namespace {

// The files of `all` at `paths`; InputError naming a path the repository lacks and the single files it has.
std::vector<RemoteFile> named_files(const std::vector<RemoteFile>& all, const std::string& repo_id,
                                    const std::vector<std::string>& paths) {
  std::vector<RemoteFile> out;
  for (const auto& p : paths) {
    const auto it = std::find_if(all.begin(), all.end(), [&](const RemoteFile& f) { return f.path == p; });
    if (it != all.end()) {
      out.push_back(*it);
      continue;
    }
    std::string have;
    int listed = 0;
    for (const auto& f : all) {
      const auto ext = fs::path(f.path).extension();
      if ((ext == ".gguf" || ext == ".safetensors") && listed++ < 12) have += (have.empty() ? "" : ", ") + f.path;
    }
    throw InputError(repo_id + " has no file '" + p + "'" +
                     (have.empty() ? "" : "; its single files include " + have));
  }
  return out;
}

// `wanted` less the weights of the components named in `without` (their configs stay: a single file given with
// --transformer FILE reads the folder's transformer/config.json). InputError for a name the pipeline lacks.
std::vector<RemoteFile> without_weights(std::vector<RemoteFile> wanted, const std::string& model_index_json,
                                        const std::vector<std::string>& without, const std::string& repo_id) {
  if (without.empty()) return wanted;
  if (model_index_json.empty())
    throw InputError(repo_id + " has no model_index.json: --without leaves out a component of a diffusers pipeline");
  std::set<std::string> components;
  const auto index = nlohmann::json::parse(model_index_json);
  for (const auto& [name, value] : index.items())
    if (value.is_array() && !value.empty() && !value[0].is_null()) components.insert(name);
  for (const auto& c : without)
    if (!components.count(c)) {
      std::string names;
      for (const auto& n : components) names += (names.empty() ? "" : ", ") + n;
      throw InputError("--without " + c + ": " + repo_id + " has no component '" + c + "'; its components are " +
                       names);
    }
  const auto left_out = [&](const RemoteFile& f) {
    const auto slash = f.path.find('/');
    return slash != std::string::npos && std::count(without.begin(), without.end(), f.path.substr(0, slash)) &&
           (ends_with(f.path, ".safetensors") || ends_with(f.path, ".safetensors.index.json"));
  };
  wanted.erase(std::remove_if(wanted.begin(), wanted.end(), left_out), wanted.end());
  return wanted;
}

}  // namespace

DownloadResult download_repo(HubClient& client, const std::string& repo_id, const DownloadOptions& o) {
  const HubSettings& s = client.settings();
  const fs::path repo = repo_dir(s.cache_dir, repo_id);
  const fs::path blobs = repo / "blobs";
  auto note = [&](const std::string& line) {
    if (o.on_note) o.on_note(line);
  };
  DownloadResult result;
  result.commit = client.revision(repo_id, o.revision).commit;
  const auto all = client.tree(repo_id, result.commit);
  fs::create_directories(blobs);

  // One file: reused when its blob is here and matches, else fetched into <blob>.incomplete and renamed
  // once it hashes to its name; then linked.
  std::map<std::string, bool> verified_now;
  const auto verified_before = read_verified(repo.string());
  auto blob_ready = [&](const RemoteFile& f) {
    std::error_code ec;
    const fs::path blob = blobs / f.blob();
    if (!fs::exists(blob, ec) || fs::file_size(blob, ec) != f.size) return false;
    auto v = verified_before.find(f.blob());
    return v != verified_before.end() && v->second.size == f.size;
  };
  auto bring = [&](const RemoteFile& f, ProgressReporter* progress) {
    const fs::path blob = blobs / f.blob();
    const fs::path partial = blob.string() + ".incomplete";
    BlobLock lock(s.cache_dir, repo_id, f.blob());
    std::error_code ec;
    bool checked = false;
    const bool present = fs::exists(blob, ec) && fs::file_size(blob, ec) == f.size;
    if (!present) {
      if (progress) progress->file(f.path, f.size, false);
      FetchWatch watch;
      watch.cancel = o.cancel;
      bool first = true;
      watch.on_bytes = [&](uint64_t b) {
        if (first && progress) progress->resumed(b);
        first = false;
        if (progress) progress->bytes(b, b);
      };
      client.fetch(repo_id, result.commit, f, partial.string(), watch, o.retries);
      ++result.fetched;
      result.bytes_fetched += f.size;
    }
    const fs::path to_hash = present ? blob : partial;
    if (!blob_ready(f)) {
      if (progress) progress->file(f.path, f.size, true);
      const std::string got = blob_mismatch(to_hash.string(), f.blob(), checked, {{}, o.cancel});
      if (!got.empty()) {
        fs::remove(to_hash, ec);
        throw InputError(repo_id + ": " + f.path + ": the downloaded content hashes to " + got + ", not the Hub's " +
                         (f.sha256.empty() ? "git blob id " : "sha256 ") + f.blob() +
                         "; the bad copy was deleted and nothing linked: run the download again");
      }
      verified_now[f.blob()] = checked;
    }
    if (!present) {
      fs::rename(partial, blob, ec);
      if (ec) throw InputError(blob.string() + ": cannot put the download in place (" + ec.message() + ")");
    }
    link_snapshot_file(repo.string(), result.commit, f.path, f.blob());
  };

  // A pipeline's model_index.json says which folders it uses; read it first. Files asked for by name are
  // all that is fetched.
  std::string model_index;
  for (const auto& f : all)
    if (f.path == "model_index.json" && o.files.empty()) {
      bring(f, nullptr);
      model_index = plan::read_text_file((blobs / f.blob()).string(), 1 << 20);
    }
  const auto read = o.files.empty() ? files_to_download(all, model_index) : named_files(all, repo_id, o.files);
  const auto wanted = o.files.empty() ? without_weights(read, model_index, o.without, repo_id) : read;
  for (const auto& f : all)
    if (std::none_of(read.begin(), read.end(), [&](const RemoteFile& w) { return w.path == f.path; }))
      result.skipped.push_back(f.path);
  if (read.size() > wanted.size()) {
    std::string names;
    for (const auto& c : o.without) names += (names.empty() ? "" : ", ") + c + "/";
    note("leaving out " + files(read.size() - wanted.size()) + " of weights in " + names +
         " (a single file stands for them); their configs are fetched");
  }
  if (!result.skipped.empty())
    note("skipping " + files(result.skipped.size()) + " the engine does not read (e.g. " + result.skipped.front() + ")");

  // Room for what is not here yet, before anything is fetched.
  uint64_t total = 0, needed = 0;
  int to_fetch = 0;
  for (const auto& f : wanted) {
    std::error_code ec;
    const fs::path blob = blobs / f.blob();
    if (fs::exists(blob, ec) && fs::file_size(blob, ec) == f.size) continue;
    const fs::path partial = blob.string() + ".incomplete";
    const uint64_t have = fs::exists(partial, ec) ? std::min<uint64_t>(fs::file_size(partial, ec), f.size) : 0;
    needed += f.size - have;
    total += f.size;
    ++to_fetch;
  }
  const uint64_t free = free_bytes(blobs.string());
  if (needed > free)
    throw InputError(repo_id + ": needs " + plan::human_bytes(needed) + " more in " + s.cache_dir + " (" +
                     std::to_string(to_fetch) + " files) but its disk has " + plan::human_bytes(free) +
                     " free; free some space, or set HF_HUB_CACHE to a folder on a larger disk");
  if (int reused = int(wanted.size()) - to_fetch - result.fetched; reused > 0)
    note(files(size_t(reused)) + " already in the cache: linked, not fetched again");

  ProgressReporter progress(o, total, to_fetch);
  for (const auto& f : wanted) {
    if (o.cancel && o.cancel->load()) throw Cancelled();
    std::error_code ec;
    const bool here = fs::exists(blobs / f.blob(), ec) && fs::file_size(blobs / f.blob(), ec) == f.size;
    bring(f, here ? nullptr : &progress);
    if (!here) progress.finished_file(f.size);
  }
  record_verified(repo.string(), verified_now);
  write_ref(repo.string(), o.revision, result.commit);
  result.snapshot = (repo / "snapshots" / result.commit).string();
  result.files = int(wanted.size());
  return result;
}

VerifyResult verify_repo(const std::string& cache_dir, const std::string& repo_id, const std::string& revision,
                         const std::function<void(const Progress&)>& on_progress, const std::atomic<bool>* cancel) {
  const std::string snap = snapshot_dir(cache_dir, repo_id, revision);
  if (snap.empty())
    throw InputError(repo_id + ": no snapshot of revision " + revision + " in the cache " + cache_dir +
                     "; `dit-models list` shows what is there, `dit-models download " + repo_id + "` fetches it");
  // Each blob once, named by one of the files linking to it.
  std::map<std::string, std::string> blob_files;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(snap, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_directory()) continue;
    const std::string rel = it->path().lexically_relative(snap).string();
    if (!fs::exists(it->path())) throw InputError(repo_id + ": " + rel + " links to a missing blob; download it again");
    blob_files.emplace(fs::canonical(it->path()).string(), rel);
  }
  VerifyResult r;
  uint64_t total = 0;
  for (const auto& [blob, rel] : blob_files) total += fs::file_size(blob);
  DownloadOptions reported;
  reported.on_progress = on_progress;
  ProgressReporter progress(reported, total, int(blob_files.size()));
  std::map<std::string, bool> matched;
  for (const auto& [blob, rel] : blob_files) {
    const std::string name = fs::path(blob).filename().string();
    const uint64_t size = fs::file_size(blob);
    progress.file(rel, size, true);
    progress.bytes(0, 0, true);
    HashWatch watch{[&](uint64_t b) { progress.bytes(b, b); }, cancel};
    bool checked = false;
    const std::string got = blob_mismatch(blob, name, checked, watch);
    if (!checked) r.unchecked.push_back(rel + ": blob " + name);
    else if (!got.empty()) r.mismatched.push_back(rel + ": blob " + name + " hashes to " + got);
    matched[name] = checked && got.empty();
    progress.finished_file(size);
    ++r.files;
    r.bytes += size;
  }
  record_verified((fs::path(cache_dir) / repo_folder_name(repo_id)).string(), matched);
  return r;
}

}  // namespace studio::hub
