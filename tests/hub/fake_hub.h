// A local stand-in for the Hugging Face Hub, on 127.0.0.1 and a free port, serving folders as model
// repositories the way the Hub answers huggingface_hub: the revision and tree APIs (the tree in pages
// linked by a Link header), resolve/ answering LFS files (safetensors, *.model) with a 302 to a content
// URL carrying X-Linked-Etag (sha256) and the others directly with their git blob sha1 as ETag, Range
// requests (206), X-Repo-Commit, and 401 from a gated repo's resolve/ without its token. Faults on demand:
// a connection dropped after N bytes of a file (once), a file held after N bytes, a file served with a byte
// changed, and files listed with a size but no content. One connection at a time, each closed after its answer.
#pragma once
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "hub/hashing.h"
#include "support.h"

namespace studio::test {

class FakeHub {
 public:
  struct Request {
    std::string method, target, range, authorization;
  };

  FakeHub() {
    listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t n = sizeof a;
    if (::bind(listener_, reinterpret_cast<sockaddr*>(&a), n) != 0 || ::listen(listener_, 16) != 0 ||
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&a), &n) != 0)
      throw std::runtime_error("FakeHub: cannot listen on 127.0.0.1");
    endpoint_ = "http://127.0.0.1:" + std::to_string(ntohs(a.sin_port));
    thread_ = std::thread([this] { serve(); });
  }
  ~FakeHub() {
    ::shutdown(listener_, SHUT_RDWR);
    ::close(listener_);
    thread_.join();
  }

  const std::string& endpoint() const { return endpoint_; }

  // Serves `folder` as the repository `id`; a gated one answers resolve/ with 401 unless the request
  // carries `Authorization: Bearer token`.
  void add_repo(const std::string& id, const std::string& folder, const std::string& token = "") {
    Repo r;
    r.token = token;
    std::string all;
    for (const auto& e : std::filesystem::recursive_directory_iterator(folder)) {
      if (!e.is_regular_file()) continue;
      File f;
      f.source = e.path().string();
      f.size = e.file_size();
      const std::string path = std::filesystem::relative(e.path(), folder).string();
      const std::string ext = e.path().extension().string();
      if (ext == ".safetensors" || ext == ".model") {
        f.sha256 = hub::sha256_of_file(f.source);
        const std::string pointer = "version https://git-lfs.github.com/spec/v1\noid sha256:" + f.sha256 + "\nsize " +
                                    std::to_string(f.size) + "\n";
        f.oid = hub::git_blob_sha1_of(pointer);
      } else {
        f.oid = hub::git_blob_sha1_of_file(f.source);
      }
      all += path + f.oid;
      r.files[path] = f;
    }
    r.commit = hub::sha256_of(all).substr(0, 40);
    std::lock_guard<std::mutex> l(mutex_);
    repos_[id] = r;
  }
  // A file listed (in the tree, with this size and sha256) whose content is never served.
  void add_listed_file(const std::string& id, const std::string& path, uint64_t size) {
    std::lock_guard<std::mutex> l(mutex_);
    File f;
    f.size = size;
    f.sha256 = std::string(64, 'a');
    f.oid = std::string(40, 'b');
    repos_.at(id).files[path] = f;
  }
  std::string commit(const std::string& id) {
    std::lock_guard<std::mutex> l(mutex_);
    return repos_.at(id).commit;
  }
  void drop_once_after(const std::string& path, uint64_t bytes) {
    std::lock_guard<std::mutex> l(mutex_);
    drop_after_[path] = bytes;
  }
  // Sends the first `bytes` of the file, then nothing more until the client hangs up or `release(path)`:
  // a download that stays inside the file for as long as a test needs, to pause or cancel it there
  // (a slow file instead left a window that a loaded machine could miss).
  void hold(const std::string& path, uint64_t bytes) {
    std::lock_guard<std::mutex> l(mutex_);
    hold_[path] = bytes;
  }
  void release(const std::string& path) {
    std::lock_guard<std::mutex> l(mutex_);
    hold_.erase(path);
  }
  void corrupt(const std::string& path, bool on = true) {
    std::lock_guard<std::mutex> l(mutex_);
    if (on) corrupt_.insert({path, true});
    else corrupt_.erase(path);
  }
  std::vector<Request> requests() {
    std::lock_guard<std::mutex> l(mutex_);
    return requests_;
  }
  void forget_requests() {
    std::lock_guard<std::mutex> l(mutex_);
    requests_.clear();
  }

 private:
  struct File {
    std::string source;  // "" for a listed-only file
    uint64_t size = 0;
    std::string oid, sha256;
  };
  struct Repo {
    std::string commit, token;
    std::map<std::string, File> files;
  };
  struct Answer {
    int status = 200;
    std::vector<std::pair<std::string, std::string>> headers;
    std::string body;
    size_t drop_after = std::string::npos;  // close the connection after this many body bytes
    size_t hold_after = std::string::npos;  // send no more after this many body bytes while the file is held
    std::string file;                       // which file the body is
  };

  void serve() {
    for (;;) {
      const int c = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) return;
      std::string in;
      char buf[4096];
      while (in.find("\r\n\r\n") == std::string::npos) {
        const ssize_t n = ::recv(c, buf, sizeof buf, 0);
        if (n <= 0) break;
        in.append(buf, size_t(n));
      }
      if (in.find("\r\n\r\n") != std::string::npos) {
        const Answer a = answer(parse(in));
        send_answer(c, a);
      }
      ::close(c);
    }
  }

  static Request parse(const std::string& in) {
    Request r;
    const auto eol = in.find("\r\n");
    std::istringstream first(in.substr(0, eol));
    first >> r.method >> r.target;
    for (size_t at = eol + 2; at < in.size();) {
      const auto end = in.find("\r\n", at);
      const std::string line = in.substr(at, end - at);
      if (line.empty()) break;
      const auto colon = line.find(':');
      std::string name = line.substr(0, colon);
      for (auto& ch : name) ch = char(std::tolower(static_cast<unsigned char>(ch)));
      const std::string value = trimmed(line.substr(colon + 1));
      if (name == "range") r.range = value;
      if (name == "authorization") r.authorization = value;
      at = end + 2;
    }
    return r;
  }

  bool held(const std::string& file) {
    std::lock_guard<std::mutex> l(mutex_);
    return hold_.count(file) > 0;
  }

  // Whether the client closed the connection; waits up to `ms` for it.
  static bool hung_up(int c, int ms) {
    pollfd p{c, POLLIN | POLLRDHUP, 0};
    if (::poll(&p, 1, ms) <= 0) return false;
    char b;
    return (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) || ::recv(c, &b, 1, MSG_PEEK) <= 0;
  }

  static bool send_all(int c, const std::string& out) {
    for (size_t sent = 0; sent < out.size();) {
      const ssize_t n = ::send(c, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return false;
      sent += size_t(n);
    }
    return true;
  }

  void send_answer(int c, const Answer& a) {
    std::string head = "HTTP/1.1 " + std::to_string(a.status) + " X\r\nConnection: close\r\nContent-Length: " +
                       std::to_string(a.body.size()) + "\r\n";
    for (const auto& [k, v] : a.headers) head += k + ": " + v + "\r\n";
    head += "\r\n";
    const std::string body = a.body.substr(0, std::min(a.body.size(), a.drop_after));
    const size_t first = std::min(body.size(), a.hold_after);
    if (!send_all(c, head + body.substr(0, first)) || first == body.size()) return;
    while (held(a.file))
      if (hung_up(c, 20)) return;
    send_all(c, body.substr(first));
  }

  static Answer error(int status, const std::string& code, const std::string& message) {
    return {status, {{"X-Error-Code", code}, {"X-Error-Message", message}}, "{\"error\": \"" + message + "\"}"};
  }

  // The repo and the rest of the path of "/api/models/ORG/NAME/..." or "/ORG/NAME/...".
  static bool split_repo(const std::string& path, std::string& id, std::string& rest) {
    const auto a = path.find('/', 1), b = a == std::string::npos ? a : path.find('/', a + 1);
    if (b == std::string::npos) return false;
    id = path.substr(1, b - 1);
    rest = path.substr(b + 1);
    return true;
  }

  Answer answer(Request r) {
    std::lock_guard<std::mutex> l(mutex_);
    requests_.push_back(r);
    std::string path = r.target, query;
    if (const auto q = path.find('?'); q != std::string::npos) query = path.substr(q + 1), path = path.substr(0, q);
    std::string id, rest;
    if (path.rfind("/cdn/", 0) == 0) return content(path.substr(5), r);
    const bool api = path.rfind("/api/models/", 0) == 0;
    if (!split_repo(api ? path.substr(11) : path, id, rest)) return error(404, "EntryNotFound", "no route");
    const auto repo = repos_.find(id);
    if (repo == repos_.end()) return error(401, "RepoNotFound", "Repository not found");
    const Repo& R = repo->second;
    auto known_revision = [&](const std::string& rev) { return rev == "main" || rev == R.commit; };
    if (api && rest.rfind("revision/", 0) == 0) {
      if (!known_revision(rest.substr(9))) return error(404, "RevisionNotFound", "Invalid rev id");
      nlohmann::json j = {{"id", id}, {"sha", R.commit}, {"siblings", nlohmann::json::array()}};
      for (const auto& [p, f] : R.files) j["siblings"].push_back({{"rfilename", p}});
      return {200, {{"Content-Type", "application/json"}}, j.dump()};
    }
    if (api && rest.rfind("tree/", 0) == 0) {
      if (!known_revision(rest.substr(5))) return error(404, "RevisionNotFound", "Invalid rev id");
      // Pages of 6 entries, folders listed too, as the Hub's recursive listing does.
      nlohmann::json all = nlohmann::json::array();
      std::set<std::string> dirs;
      for (const auto& [p, f] : R.files) {
        for (auto s = p.find('/'); s != std::string::npos; s = p.find('/', s + 1))
          if (dirs.insert(p.substr(0, s)).second) all.push_back({{"type", "directory"}, {"oid", std::string(40, 'd')}, {"size", 0}, {"path", p.substr(0, s)}});
        nlohmann::json e = {{"type", "file"}, {"oid", f.oid}, {"size", f.sha256.empty() ? f.size : 134}, {"path", p}};
        if (!f.sha256.empty()) e["lfs"] = {{"oid", f.sha256}, {"size", f.size}, {"pointerSize", 134}};
        all.push_back(e);
      }
      size_t from = 0;
      if (const auto c = query.find("cursor="); c != std::string::npos) from = std::stoul(query.substr(c + 7));
      nlohmann::json page = nlohmann::json::array();
      for (size_t i = from; i < all.size() && i < from + 6; ++i) page.push_back(all[i]);
      Answer a{200, {{"Content-Type", "application/json"}}, page.dump()};
      if (from + 6 < all.size())
        a.headers.push_back({"Link", "<" + endpoint_ + path + "?recursive=true&cursor=" + std::to_string(from + 6) + ">; rel=\"next\""});
      return a;
    }
    if (!api && rest.rfind("resolve/", 0) == 0) {
      const auto slash = rest.find('/', 8);
      const std::string rev = rest.substr(8, slash - 8), file = rest.substr(slash + 1);
      if (!R.token.empty() && r.authorization != "Bearer " + R.token)
        return error(401, "GatedRepo", "Access to model " + id + " is restricted. You must be authenticated.");
      if (!known_revision(rev)) return error(404, "RevisionNotFound", "Invalid rev id");
      const auto f = R.files.find(file);
      if (f == R.files.end()) return error(404, "EntryNotFound", "Entry not found");
      if (!f->second.sha256.empty())
        return {302, {{"Location", endpoint_ + "/cdn/" + id + "/" + file}, {"X-Repo-Commit", R.commit},
                      {"X-Linked-Etag", "\"" + f->second.sha256 + "\""}, {"X-Linked-Size", std::to_string(f->second.size)},
                      {"ETag", "\"" + f->second.oid + "\""}}, ""};
      Answer a = content(id + "/" + file, r);
      a.headers.push_back({"X-Repo-Commit", R.commit});
      a.headers.push_back({"ETag", "\"" + f->second.oid + "\""});
      return a;
    }
    return error(404, "EntryNotFound", "no route");
  }

  // A file's bytes, from a Range's start when asked; faults applied.
  Answer content(const std::string& id_and_path, const Request& r) {
    std::string id, file;
    if (!split_repo("/" + id_and_path, id, file) || !repos_.count(id) || !repos_[id].files.count(file))
      return error(404, "EntryNotFound", "no such content");
    const File& f = repos_[id].files[file];
    if (f.source.empty()) return error(500, "", "listed only");
    std::string body = read_file(f.source);
    if (corrupt_.count(file)) body[body.size() / 2] ^= 0x5a;
    Answer a;
    if (r.range.rfind("bytes=", 0) == 0) {
      const uint64_t from = std::stoull(r.range.substr(6));
      a.status = 206;
      a.headers.push_back({"Content-Range", "bytes " + std::to_string(from) + "-" + std::to_string(body.size() - 1) + "/" +
                                                std::to_string(body.size())});
      body = body.substr(from);
    }
    if (auto h = hold_.find(file); h != hold_.end()) a.hold_after = h->second;
    a.file = file;
    if (auto d = drop_after_.find(file); d != drop_after_.end()) {
      a.drop_after = d->second;
      drop_after_.erase(d);
    }
    a.body = body;
    return a;
  }

  int listener_ = -1;
  std::string endpoint_;
  std::thread thread_;
  std::mutex mutex_;
  std::map<std::string, Repo> repos_;
  std::map<std::string, uint64_t> drop_after_;
  std::map<std::string, uint64_t> hold_;
  std::map<std::string, bool> corrupt_;
  std::vector<Request> requests_;
};

}  // namespace studio::test
