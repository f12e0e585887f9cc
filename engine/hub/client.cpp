#include "hub/client.h"

#include <curl/curl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <thread>

#include <nlohmann/json.hpp>

#include "plan/error.h"

namespace fs = std::filesystem;

namespace studio::hub {

namespace {

std::string lower(std::string s) {
  for (auto& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  const auto e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// An ETag as huggingface_hub keeps it: no weak marker, no quotes.
std::string normalized_etag(std::string e) {
  if (e.rfind("W/", 0) == 0) e = e.substr(2);
  e.erase(std::remove(e.begin(), e.end(), '"'), e.end());
  return e;
}

// Each response of a request (redirects make several): its status and headers (names lower-cased).
struct Hop {
  long status = 0;
  std::map<std::string, std::string> headers;
};

size_t on_header(char* data, size_t size, size_t n, void* user) {
  auto& hops = *static_cast<std::vector<Hop>*>(user);
  const std::string line(data, size * n);
  if (line.rfind("HTTP/", 0) == 0) {
    Hop h;
    const auto sp = line.find(' ');
    if (sp != std::string::npos) h.status = std::strtol(line.c_str() + sp + 1, nullptr, 10);
    hops.push_back(h);
  } else if (const auto colon = line.find(':'); colon != std::string::npos && !hops.empty()) {
    hops.back().headers[lower(trim(line.substr(0, colon)))] = trim(line.substr(colon + 1));
  }
  return size * n;
}

size_t into_string(char* data, size_t size, size_t n, void* user) {
  auto& body = *static_cast<std::string*>(user);
  if (body.size() > (64u << 20)) return 0;  // no API answer is this large
  body.append(data, size * n);
  return size * n;
}

// The next page of a listing: Link: <URL>; rel="next".
std::string next_link(const std::string& link) {
  for (size_t at = 0; at < link.size();) {
    const auto open = link.find('<', at), close = link.find('>', at);
    if (open == std::string::npos || close == std::string::npos) break;
    const auto end = link.find(',', close);
    const std::string params = link.substr(close + 1, end == std::string::npos ? std::string::npos : end - close - 1);
    if (params.find("rel=\"next\"") != std::string::npos || params.find("rel=next") != std::string::npos)
      return link.substr(open + 1, close - open - 1);
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return "";
}

bool transient(CURLcode c) {
  switch (c) {
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_COULDNT_CONNECT:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM: return true;
    default: return false;
  }
}

struct CurlGlobal {
  CurlGlobal() { curl_global_init(CURL_GLOBAL_DEFAULT); }
};

std::string quote(const std::string& s, bool keep_slash) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/')) out += char(c);
    else out += {'%', hex[c >> 4], hex[c & 15]};
  }
  return out;
}

}  // namespace

std::string quote_segment(const std::string& s) { return quote(s, false); }
std::string quote_path(const std::string& s) { return quote(s, true); }

struct HubClient::Response {
  long status = 0;
  std::vector<Hop> hops;
  std::string body;
  std::string header(const std::string& name) const {
    for (const auto& h : hops)
      if (auto it = h.headers.find(name); it != h.headers.end()) return it->second;
    return "";
  }
};

HubClient::HubClient(HubSettings settings) : settings_(std::move(settings)) {
  static CurlGlobal global;
  curl_ = curl_easy_init();
  if (!curl_) throw std::runtime_error("libcurl: cannot start a session");
}

HubClient::~HubClient() { curl_easy_cleanup(static_cast<CURL*>(curl_)); }

std::string HubClient::url(const std::string& path) const { return settings_.endpoint + path; }

HubClient::Response HubClient::get(const std::string& url, const std::string& what) {
  CURL* c = static_cast<CURL*>(curl_);
  curl_easy_reset(c);
  Response r;
  curl_slist* headers = nullptr;
  if (!settings_.token.empty()) headers = curl_slist_append(headers, ("Authorization: Bearer " + settings_.token).c_str());
  headers = curl_slist_append(headers, "User-Agent: dit-studio/" STUDIO_VERSION);
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 120L);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &r.hops);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, into_string);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &r.body);
  const CURLcode code = curl_easy_perform(c);
  curl_slist_free_all(headers);
  if (code == CURLE_COULDNT_RESOLVE_HOST || code == CURLE_COULDNT_RESOLVE_PROXY || code == CURLE_COULDNT_CONNECT)
    throw NetworkError(what + ": no network: the Hugging Face Hub cannot be reached at " + settings_.endpoint + " (" +
                       curl_easy_strerror(code) + "); check the connection, or HF_ENDPOINT and the proxy settings");
  if (code != CURLE_OK) throw NetworkError(what + ": " + url + ": " + curl_easy_strerror(code));
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
  return r;
}

void HubClient::refuse(const Response& r, const std::string& repo, const std::string& what) const {
  const std::string page = settings_.endpoint + "/" + repo;
  const std::string code = r.header("x-error-code");
  const std::string server_says = r.header("x-error-message");
  const std::string token = settings_.token_source.empty() ? "" : " with the token from " + settings_.token_source;
  if (r.status == 401)
    throw InputError(repo + ": the Hub answered 401 Unauthorized" + token + " for " + what +
                     ": a gated or private repository (or none by that name). " +
                     (settings_.token.empty() ? "Set HF_TOKEN to an access token (" + settings_.endpoint +
                                                    "/settings/tokens) or run `huggingface-cli login`, and accept "
                                                    "the model's license on " + page
                                              : "Check that the token is valid (`huggingface-cli whoami`) and that the "
                                                "model's license is accepted on " + page));
  if (r.status == 403)
    throw InputError(repo + ": the Hub answered 403 Forbidden" + token + " for " + what +
                     ": the model's license must be accepted on " + page +
                     " with that account, or the token needs read access to it");
  if (r.status == 404) {
    if (code == "RevisionNotFound")
      throw InputError(repo + ": " + what + ": no such revision (a branch, tag or commit of the repository; "
                       "default main)");
    if (code == "EntryNotFound") throw InputError(repo + ": " + what + ": no such file in the repository");
    throw InputError(repo + ": no such model repository on " + settings_.endpoint + " (" + what +
                     " answered 404); check the id on " + page);
  }
  throw NetworkError(repo + ": " + what + ": HTTP " + std::to_string(r.status) +
                     (server_says.empty() ? "" : " (" + server_says + ")"));
}

RepoRevision HubClient::revision(const std::string& repo, const std::string& rev) {
  const std::string what = "the revision " + rev;
  const auto r = get(url("/api/models/" + repo + "/revision/" + quote_segment(rev)), what);
  if (r.status != 200) refuse(r, repo, what);
  RepoRevision out;
  try {
    const auto j = nlohmann::json::parse(r.body);
    out.commit = j.at("sha").get<std::string>();
    for (const auto& s : j.value("siblings", nlohmann::json::array())) out.files.push_back(s.at("rfilename").get<std::string>());
  } catch (const std::exception& e) {
    throw NetworkError(repo + ": " + what + ": the Hub's answer is not the expected JSON (" + e.what() + ")");
  }
  return out;
}

std::vector<RemoteFile> HubClient::tree(const std::string& repo, const std::string& commit) {
  std::vector<RemoteFile> files;
  const std::string what = "the file list of " + commit;
  for (std::string next = url("/api/models/" + repo + "/tree/" + quote_segment(commit) + "?recursive=true"); !next.empty();) {
    const auto r = get(next, what);
    if (r.status != 200) refuse(r, repo, what);
    try {
      for (const auto& e : nlohmann::json::parse(r.body)) {
        if (e.at("type") != "file") continue;
        RemoteFile f;
        f.path = e.at("path").get<std::string>();
        f.size = e.at("size").get<uint64_t>();
        f.oid = e.at("oid").get<std::string>();
        if (e.contains("lfs") && e["lfs"].is_object()) {
          f.sha256 = e["lfs"].at("oid").get<std::string>();
          f.size = e["lfs"].value("size", f.size);
        }
        files.push_back(f);
      }
    } catch (const std::exception& e) {
      throw NetworkError(repo + ": " + what + ": the Hub's answer is not the expected JSON (" + e.what() + ")");
    }
    next = next_link(r.header("link"));
  }
  return files;
}

namespace {

// One GET of the rest of a file, appended to it.
struct Transfer {
  FILE* out = nullptr;
  uint64_t offset = 0;  // bytes the file held when this request started
  uint64_t written = 0;
  std::vector<Hop>* hops = nullptr;
  std::string error_body;
  const FetchWatch* watch = nullptr;
  bool started = false, restarted = false, failed_write = false;
};

size_t into_file(char* data, size_t size, size_t n, void* user) {
  auto& t = *static_cast<Transfer*>(user);
  const size_t bytes = size * n;
  const long status = t.hops->empty() ? 0 : t.hops->back().status;
  if (status >= 400) {  // an error page, not content
    if (t.error_body.size() < 65536) t.error_body.append(data, bytes);
    return bytes;
  }
  if (!t.started) {
    t.started = true;
    if (t.offset > 0 && status == 200) {  // the server sent the whole file: start it again
      if (std::fflush(t.out) != 0 || ::ftruncate(fileno(t.out), 0) != 0 || std::fseek(t.out, 0, SEEK_SET) != 0) {
        t.failed_write = true;
        return 0;
      }
      t.offset = 0;
      t.restarted = true;
    }
  }
  if (t.watch->cancel && t.watch->cancel->load()) return 0;
  if (std::fwrite(data, 1, bytes, t.out) != bytes) {
    t.failed_write = true;
    return 0;
  }
  t.written += bytes;
  if (t.watch->on_bytes) t.watch->on_bytes(t.offset + t.written);
  return bytes;
}

// libcurl calls this as bytes arrive and, while a transfer waits, about once a second: so a cancel lands
// and the progress is told even when the connection stalls (into_file runs only when bytes come).
int while_transferring(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto& t = *static_cast<Transfer*>(user);
  if (t.watch->cancel && t.watch->cancel->load()) return 1;  // abort: fetch() then throws Cancelled
  if (t.started && t.watch->on_bytes) t.watch->on_bytes(t.offset + t.written);
  return 0;
}

}  // namespace

void HubClient::fetch(const std::string& repo, const std::string& commit, const RemoteFile& f, const std::string& file,
                      const FetchWatch& watch, int retries) {
  const std::string what = f.path;
  const std::string link = url("/" + repo + "/resolve/" + quote_segment(commit) + "/" + quote_path(f.path));
  for (int attempt = 0;; ++attempt) {
    std::error_code ec;
    uint64_t have = fs::exists(file, ec) ? fs::file_size(file, ec) : 0;
    if (have > f.size) {
      fs::resize_file(file, 0, ec);
      have = 0;
    }
    if (have == f.size && f.size > 0) return;
    std::unique_ptr<FILE, decltype(&std::fclose)> out(std::fopen(file.c_str(), "ab"), &std::fclose);
    if (!out) throw InputError(file + ": cannot write (" + std::strerror(errno) + ")");
    if (watch.on_bytes) watch.on_bytes(have);

    CURL* c = static_cast<CURL*>(curl_);
    curl_easy_reset(c);
    std::vector<Hop> hops;
    Transfer t;
    t.out = out.get();
    t.offset = have;
    t.hops = &hops;
    t.watch = &watch;
    curl_slist* headers = nullptr;
    if (!settings_.token.empty()) headers = curl_slist_append(headers, ("Authorization: Bearer " + settings_.token).c_str());
    headers = curl_slist_append(headers, "User-Agent: dit-studio/" STUDIO_VERSION);
    if (have > 0) headers = curl_slist_append(headers, ("Range: bytes=" + std::to_string(have) + "-").c_str());
    curl_easy_setopt(c, CURLOPT_URL, link.c_str());
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);  // a stalled connection: under 1 byte/s for a minute
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 60L);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &hops);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, into_file);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, while_transferring);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, &t);
    const CURLcode code = curl_easy_perform(c);
    curl_slist_free_all(headers);
    const bool flushed = std::fflush(out.get()) == 0;
    out.reset();
    if (watch.cancel && watch.cancel->load()) throw Cancelled();
    if (t.failed_write || !flushed)
      throw InputError(file + ": cannot write (" + std::strerror(errno) + "); is the disk full?");
    Response r;
    r.hops = hops;
    r.body = t.error_body;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
    if (code == CURLE_OK && r.status >= 400) refuse(r, repo, what);
    if (code != CURLE_OK) {
      if (transient(code) && attempt < retries) {
        std::this_thread::sleep_for(std::chrono::milliseconds(200 << std::min(attempt, 4)));
        continue;  // resume from what arrived
      }
      throw NetworkError(repo + ": " + what + ": " + curl_easy_strerror(code) + " (after " + std::to_string(attempt + 1) +
                         " attempts; run the same download again to resume)");
    }
    // The first answer (the Hub's, before a CDN's) names the commit and the blob.
    const std::string served_commit = r.header("x-repo-commit");
    if (!served_commit.empty() && served_commit != commit)
      throw NetworkError(repo + ": " + what + ": the Hub served commit " + served_commit + ", not " + commit);
    std::string etag = r.header("x-linked-etag");
    if (etag.empty() && !hops.empty()) etag = hops.front().headers.count("etag") ? hops.front().headers.at("etag") : "";
    if (!etag.empty() && normalized_etag(etag) != f.blob())
      throw NetworkError(repo + ": " + what + ": the Hub's ETag " + normalized_etag(etag) + " is not the file list's " + f.blob());
    const uint64_t size = fs::file_size(file, ec);
    if (size == f.size) return;
    if (attempt >= retries)
      throw NetworkError(repo + ": " + what + ": got " + std::to_string(size) + " bytes of " + std::to_string(f.size));
  }
}

}  // namespace studio::hub
