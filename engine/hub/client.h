// The Hub's HTTP API as huggingface_hub speaks it, through libcurl:
//   GET {endpoint}/api/models/{repo}/revision/{rev}        the commit a revision names, and its files
//   GET {endpoint}/api/models/{repo}/tree/{commit}?recursive=true   each file's size, git oid and LFS sha256
//                                                          (pages followed through the Link header)
//   GET {endpoint}/{repo}/resolve/{commit}/{path}          the content, redirects followed (LFS files go
//                                                          to a CDN), X-Repo-Commit and ETag/X-Linked-Etag
//                                                          checked, Range to resume
// with `Authorization: Bearer TOKEN` when there is a token. A refusal the user can act on (401, 403, 404)
// throws InputError saying what to do; a network failure throws NetworkError.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "hub/cache.h"

namespace studio::hub {

struct NetworkError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct RemoteFile {
  std::string path;    // in the repo, '/'-separated
  uint64_t size = 0;   // the content's (an LFS file's real size, not its pointer's)
  std::string oid;     // git blob sha1 (of the pointer, for an LFS file)
  std::string sha256;  // LFS files only
  // The name huggingface_hub gives its blob: the ETag the Hub sends (sha256 for LFS, else the git oid).
  std::string blob() const { return sha256.empty() ? oid : sha256; }
};

struct RepoRevision {
  std::string commit;
  std::vector<std::string> files;  // "siblings"
};

// Called with the file's bytes present so far (including what an earlier attempt left).
struct FetchWatch {
  std::function<void(uint64_t file_bytes)> on_bytes;
  const std::atomic<bool>* cancel = nullptr;
};

class HubClient {
 public:
  explicit HubClient(HubSettings settings);
  ~HubClient();
  HubClient(const HubClient&) = delete;
  HubClient& operator=(const HubClient&) = delete;

  const HubSettings& settings() const { return settings_; }
  RepoRevision revision(const std::string& repo, const std::string& revision);
  std::vector<RemoteFile> tree(const std::string& repo, const std::string& commit);

  // Brings `file` to the whole content of `f` at `commit`: what the file holds already is kept and the rest
  // asked for with Range (a server that ignores Range sends it all again); a dropped connection is resumed
  // the same way, up to `retries` times. Checks the size it ends with; the content is the caller's to hash.
  void fetch(const std::string& repo, const std::string& commit, const RemoteFile& f, const std::string& file,
             const FetchWatch& watch, int retries = 5);

 private:
  struct Response;
  Response get(const std::string& url, const std::string& what);
  std::string url(const std::string& path) const;
  [[noreturn]] void refuse(const Response& r, const std::string& repo, const std::string& what) const;

  HubSettings settings_;
  void* curl_ = nullptr;
};

// Percent-encodes one path segment (a revision: '/' too), or a path keeping its '/'.
std::string quote_segment(const std::string& s);
std::string quote_path(const std::string& s);

}  // namespace studio::hub
