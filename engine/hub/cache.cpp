#include "hub/cache.h"

#include <sys/statvfs.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "io/safetensors/folder_weights.h"
#include "plan/error.h"
#include "plan/families/registry.h"
#include "plan/model_folder.h"

namespace fs = std::filesystem;

namespace studio::hub {

namespace {

const char* kVerifiedFile = "dit-studio-verified.json";

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : std::string();
}

std::string trimmed(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

bool valid_name_part(const std::string& p) {
  if (p.empty() || p.size() > 96 || p.find("..") != std::string::npos) return false;
  if (p.front() == '-' || p.front() == '.' || p.back() == '-' || p.back() == '.') return false;
  return std::all_of(p.begin(), p.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.'; });
}

std::string family_of(const fs::path& model_index) {
  std::error_code ec;
  if (!fs::exists(model_index, ec)) return "";
  try {
    const auto j = nlohmann::json::parse(plan::read_text_file(model_index.string(), 1 << 20));
    const std::string cls = j.value("_class_name", "");
    const plan::Family* family = plan::family_named_by(cls);
    return family ? family->name() : cls;
  } catch (const std::exception&) {
    return "";
  }
}

// What a complete diffusers snapshot has: model_index.json, a folder per component it names, every shard
// an index lists, and no link to a missing blob.
std::vector<std::string> snapshot_problems(const fs::path& snap) {
  std::vector<std::string> problems;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(snap, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
    if (it->is_symlink() && !fs::exists(it->path()))
      problems.push_back(it->path().lexically_relative(snap).string() + ": links to a missing blob");
  const fs::path index = snap / "model_index.json";
  if (!fs::exists(index)) {
    problems.push_back("no model_index.json (not a diffusers pipeline, or not downloaded yet)");
    return problems;
  }
  try {
    const auto j = nlohmann::json::parse(plan::read_text_file(index.string(), 1 << 20));
    for (const auto& [name, value] : j.items())
      if (value.is_array() && !value.empty() && !value[0].is_null() && !fs::is_directory(snap / name))
        problems.push_back(name + "/: named by model_index.json, not downloaded");
  } catch (const std::exception& e) {
    problems.push_back(std::string("model_index.json: ") + e.what());
  }
  const auto weights = io::weight_file_problems(snap.string());
  problems.insert(problems.end(), weights.begin(), weights.end());
  return problems;
}

int64_t mtime_ns(const fs::path& p) {
  std::error_code ec;
  const auto t = fs::last_write_time(p, ec);
  return ec ? 0 : int64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
}

}  // namespace

HubSettings settings_from_environment() {
  HubSettings s;
  s.endpoint = env("HF_ENDPOINT").empty() ? "https://huggingface.co" : env("HF_ENDPOINT");
  while (!s.endpoint.empty() && s.endpoint.back() == '/') s.endpoint.pop_back();
  std::string home = env("HF_HOME");
  if (home.empty()) {
    const std::string xdg = env("XDG_CACHE_HOME");
    home = (xdg.empty() ? env("HOME") + "/.cache" : xdg) + "/huggingface";
  }
  s.cache_dir = !env("HF_HUB_CACHE").empty() ? env("HF_HUB_CACHE")
              : !env("HUGGINGFACE_HUB_CACHE").empty() ? env("HUGGINGFACE_HUB_CACHE")
                                                      : home + "/hub";
  if (!env("HF_TOKEN").empty()) {
    s.token = trimmed(env("HF_TOKEN"));
    s.token_source = "HF_TOKEN";
  } else {
    const std::string file = env("HF_TOKEN_PATH").empty() ? home + "/token" : env("HF_TOKEN_PATH");
    std::error_code ec;
    if (fs::is_regular_file(file, ec)) {
      s.token = trimmed(plan::read_text_file(file, 4096));
      if (!s.token.empty()) s.token_source = file;
    }
  }
  return s;
}

bool is_repo_id(const std::string& s) {
  const auto slash = s.find('/');
  if (slash == std::string::npos || s.find('/', slash + 1) != std::string::npos) return false;
  return valid_name_part(s.substr(0, slash)) && valid_name_part(s.substr(slash + 1));
}

std::string repo_folder_name(const std::string& repo_id) {
  std::string name = "models--" + repo_id;
  for (size_t i; (i = name.find('/')) != std::string::npos;) name.replace(i, 1, "--");
  return name;
}

std::string repo_dir(const std::string& cache_dir, const std::string& repo_id) {
  return (fs::path(cache_dir) / repo_folder_name(repo_id)).string();
}

std::string snapshot_dir(const std::string& cache_dir, const std::string& repo_id, const std::string& revision) {
  const fs::path repo = repo_dir(cache_dir, repo_id);
  std::string commit = revision;
  std::error_code ec;
  if (fs::is_regular_file(repo / "refs" / revision, ec)) commit = trimmed(plan::read_text_file((repo / "refs" / revision).string(), 4096));
  if (commit.empty() || commit.find('/') != std::string::npos) return "";
  const fs::path snap = repo / "snapshots" / commit;
  return fs::is_directory(snap, ec) ? snap.string() : "";
}

std::string local_model_dir(const std::string& model, const HubSettings& settings) {
  std::error_code ec;
  if (fs::exists(model, ec) || !is_repo_id(model)) return model;
  const std::string snap = snapshot_dir(settings.cache_dir, model);
  if (!snap.empty()) return snap;
  throw InputError(model + ": no such folder here, and the Hugging Face cache (" + settings.cache_dir +
                   ", set by HF_HUB_CACHE or HF_HOME) has no snapshot of the repository " + model +
                   "'s main branch; download it with `dit-models download " + model + "`, or give a diffusers folder");
}

CachedRepo read_cached_repo(const std::string& cache_dir, const std::string& repo_id) {
  CachedRepo r;
  r.repo_id = repo_id;
  r.dir = repo_dir(cache_dir, repo_id);
  const fs::path dir = r.dir;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir / "refs", ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
    if (it->is_regular_file())
      r.refs[fs::relative(it->path(), dir / "refs").string()] = trimmed(plan::read_text_file(it->path().string(), 4096));
  if (auto main = r.refs.find("main"); main != r.refs.end() && fs::is_directory(dir / "snapshots" / main->second)) {
    r.commit = main->second;
  } else {  // no main: the snapshot written last
    fs::file_time_type newest{};
    for (const auto& e : fs::directory_iterator(dir / "snapshots", ec))
      if (e.is_directory() && (r.commit.empty() || e.last_write_time() > newest)) {
        r.commit = e.path().filename().string();
        newest = e.last_write_time();
      }
  }
  for (const auto& e : fs::directory_iterator(dir / "blobs", ec))
    if (e.is_regular_file()) r.bytes_on_disk += e.file_size();
  if (r.commit.empty()) {
    r.problems.push_back("no snapshot");
    return r;
  }
  const fs::path snap = dir / "snapshots" / r.commit;
  r.snapshot = snap.string();
  r.family = family_of(snap / "model_index.json");
  r.problems = snapshot_problems(snap);
  if (!fs::exists(snap / "model_index.json")) {
    // Subfolders too: LoRA repositories keep files by kind or author (Kijai/WanVideo_comfy's Lightx2v/...). A
    // component's config.json beside them is a pipeline's folder whose model_index.json is missing: not listed.
    bool components = false;
    for (auto it = fs::recursive_directory_iterator(snap, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec)) {
      components |= it.depth() > 0 && it->path().filename() == "config.json";
      if (const auto ext = it->path().extension(); ext == ".gguf" || ext == ".safetensors")
        r.single_files.push_back(it->path().lexically_relative(snap).generic_string());
    }
    if (components) r.single_files.clear();
    std::sort(r.single_files.begin(), r.single_files.end());
    if (!r.single_files.empty())  // not a pipeline, and not meant to be one
      r.problems.erase(std::remove_if(r.problems.begin(), r.problems.end(),
                                      [](const std::string& p) { return p.rfind("no model_index.json", 0) == 0; }),
                       r.problems.end());
  }
  r.complete = r.problems.empty();
  for (const auto& e : fs::directory_iterator(snap, ec)) {
    bool weights = false;
    for (const auto& f : fs::directory_iterator(e.path(), ec))
      weights |= f.path().filename().string().find(".safetensors") != std::string::npos;
    if (e.is_directory() && fs::exists(e.path() / "config.json") && !weights)
      r.without_weights.push_back(e.path().filename().string());
  }
  std::sort(r.without_weights.begin(), r.without_weights.end());
  // Verified: every file's blob is in our record, unchanged since.
  const auto verified = read_verified(r.dir);
  bool all = r.complete;
  for (auto it = fs::recursive_directory_iterator(snap, ec); all && !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_directory()) continue;
    const fs::path blob = fs::canonical(it->path(), ec);
    const auto v = verified.find(blob.filename().string());
    all = !ec && v != verified.end() && v->second.size == fs::file_size(blob, ec) && v->second.mtime_ns == mtime_ns(blob);
  }
  r.verified = all && !ec;
  return r;
}

std::vector<CachedRepo> list_cache(const std::string& cache_dir) {
  std::vector<CachedRepo> repos;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(cache_dir, ec)) {
    const std::string name = e.path().filename().string();
    if (!e.is_directory() || name.rfind("models--", 0) != 0) continue;
    const std::string rest = name.substr(8);
    const auto sep = rest.find("--");
    // An id without an organisation ("gpt2") is a folder "models--gpt2".
    const std::string id = sep == std::string::npos ? rest : rest.substr(0, sep) + "/" + rest.substr(sep + 2);
    repos.push_back(read_cached_repo(cache_dir, id));
  }
  std::sort(repos.begin(), repos.end(), [](const auto& a, const auto& b) { return a.repo_id < b.repo_id; });
  return repos;
}

uint64_t remove_repo(const std::string& cache_dir, const std::string& repo_id) {
  const fs::path dir = repo_dir(cache_dir, repo_id);
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw InputError(repo_id + ": not in the cache " + cache_dir + " (no " + dir.filename().string() + "); `dit-models list` shows what is");
  const uint64_t bytes = read_cached_repo(cache_dir, repo_id).bytes_on_disk;
  fs::remove_all(dir, ec);
  if (ec) throw InputError(dir.string() + ": cannot remove (" + ec.message() + ")");
  fs::remove_all(fs::path(cache_dir) / ".locks" / repo_folder_name(repo_id), ec);
  return bytes;
}

void link_snapshot_file(const std::string& repo, const std::string& commit, const std::string& path, const std::string& blob) {
  const fs::path link = fs::path(repo) / "snapshots" / commit / path;
  fs::create_directories(link.parent_path());
  // From snapshots/<commit>/<dirs of path>/ back up to the repo folder: as os.path.relpath gives it.
  std::string target = "../../";
  for (char c : path)
    if (c == '/') target += "../";
  target += "blobs/" + blob;
  const fs::path tmp = link.string() + ".linking";
  std::error_code ec;
  fs::remove(tmp, ec);
  fs::create_symlink(target, tmp, ec);
  if (!ec) fs::rename(tmp, link, ec);
  if (ec) throw InputError(link.string() + ": cannot link it to its blob (" + ec.message() + ")");
}

void write_ref(const std::string& repo, const std::string& revision, const std::string& commit) {
  if (revision == commit) return;
  const fs::path ref = fs::path(repo) / "refs" / revision;
  fs::create_directories(ref.parent_path());
  plan::write_text_file(ref.string(), commit, "the ref");
}

std::map<std::string, VerifiedBlob> read_verified(const std::string& repo) {
  std::map<std::string, VerifiedBlob> out;
  const fs::path file = fs::path(repo) / kVerifiedFile;
  std::error_code ec;
  if (!fs::exists(file, ec)) return out;
  try {
    const auto j = nlohmann::json::parse(plan::read_text_file(file.string()));
    for (const auto& [blob, v] : j.items())
      out[blob] = {v.at("size").get<uint64_t>(), v.at("mtime_ns").get<int64_t>()};
  } catch (const std::exception&) {
    out.clear();  // an unreadable record verifies nothing
  }
  return out;
}

void record_verified(const std::string& repo, const std::map<std::string, bool>& blob_matched) {
  auto record = read_verified(repo);
  std::error_code ec;
  for (const auto& [blob, matched] : blob_matched) {
    const fs::path p = fs::path(repo) / "blobs" / blob;
    if (matched) record[blob] = {uint64_t(fs::file_size(p, ec)), mtime_ns(p)};
    else record.erase(blob);
  }
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [blob, v] : record) j[blob] = {{"size", v.size}, {"mtime_ns", v.mtime_ns}};
  plan::write_text_file((fs::path(repo) / kVerifiedFile).string(), j.dump(1), "the record of verified blobs");
}

uint64_t free_bytes(const std::string& dir) {
  fs::path p = fs::absolute(dir);
  std::error_code ec;
  while (!fs::exists(p, ec) && p.has_parent_path() && p != p.parent_path()) p = p.parent_path();
  struct statvfs st {};
  if (::statvfs(p.c_str(), &st) != 0) throw InputError(p.string() + ": cannot read the disk's free space");
  return uint64_t(st.f_bavail) * st.f_frsize;
}


}  // namespace studio::hub
