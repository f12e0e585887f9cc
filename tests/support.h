// Helpers the test suites share: where the reference cases live, temporary folders, files, JSON edits,
// expected exceptions, skips for missing privileges.
#pragma once
#include <gtest/gtest.h>

#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "test_paths.h"

namespace studio::test {

// ../shared/goldens beside the checkout, or $STUDIO_GOLDENS_DIR.
inline std::string goldens_dir() {
  const char* env = std::getenv("STUDIO_GOLDENS_DIR");
  return env && *env ? std::string(env) : std::string(configured_goldens_dir());
}
inline std::string golden_case(const std::string& name) { return goldens_dir() + "/" + name; }

// A program of the build tree (dit-launch, dit-worker).
inline std::string bin(const std::string& name) { return std::string(build_bin_dir()) + "/" + name; }

inline std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot read " + path);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

inline void write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f.write(text.data(), std::streamsize(text.size()))) throw std::runtime_error("cannot write " + path);
}

inline nlohmann::json golden_json(const std::string& name) {
  return nlohmann::json::parse(read_file(golden_case(name) + "/golden.json"));
}

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

inline std::string trimmed(const std::string& text) {
  const auto space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  const auto begin = std::find_if_not(text.begin(), text.end(), space);
  const auto end = std::find_if_not(text.rbegin(), text.rend(), space).base();
  return begin < end ? std::string(begin, end) : std::string();
}

// A fresh folder under $TMPDIR (or /tmp), removed with everything in it when the object goes.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/studio-test-XXXXXX";
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp " + tmpl + ": " + std::strerror(errno));
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string path(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// A writable copy of a folder (the goldens are read-only).
inline void copy_tree(const std::string& from, const std::string& to) {
  std::filesystem::copy(from, to, std::filesystem::copy_options::recursive);
  for (auto& e : std::filesystem::recursive_directory_iterator(to))
    std::filesystem::permissions(e.path(), std::filesystem::perms::owner_write, std::filesystem::perm_options::add);
  std::filesystem::permissions(to, std::filesystem::perms::owner_write, std::filesystem::perm_options::add);
}

inline void edit_json(const std::string& path, const std::function<void(nlohmann::json&)>& edit) {
  auto j = nlohmann::json::parse(read_file(path));
  edit(j);
  write_file(path, j.dump(2));
}

// flux_tiny copied to `dir` with FLUX.1-dev's published transformer config: a folder the plan weighs as the
// real model (the weights stay tiny; only the configs are read).
inline std::string flux_dev_shaped(const std::string& dir) {
  copy_tree(golden_case("flux_tiny"), dir);
  edit_json(dir + "/transformer/config.json", [](nlohmann::json& j) {
    j.update({{"num_layers", 19}, {"num_single_layers", 38}, {"attention_head_dim", 128}, {"num_attention_heads", 24},
              {"joint_attention_dim", 4096}, {"pooled_projection_dim", 768}, {"axes_dims_rope", {16, 56, 56}}});
  });
  return dir;
}

// Runs `fn`, expecting an exception of type E whose message contains every one of `parts`.
template <typename E, typename Fn>
::testing::AssertionResult throws_with(Fn&& fn, std::initializer_list<const char*> parts) {
  try {
    fn();
  } catch (const E& e) {
    const std::string msg = e.what();
    for (const char* p : parts)
      if (!contains(msg, p)) return ::testing::AssertionFailure() << "message lacks '" << p << "': " << msg;
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "no exception was thrown";
}

// Runs `fn` with files limited to `bytes` (a full disk, as far as a write can tell: EFBIG), then restores
// the limit.
inline void with_file_size_limit(rlim_t bytes, const std::function<void()>& fn) {
  struct rlimit old {};
  getrlimit(RLIMIT_FSIZE, &old);
  auto handler = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit lim = old;
  lim.rlim_cur = bytes;
  setrlimit(RLIMIT_FSIZE, &lim);
  fn();
  setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, handler);
}

inline bool in_ci() {
  const char* ci = std::getenv("CI");
  return ci && std::string(ci) == "true";
}

}  // namespace studio::test

// For a test that needs a privilege this environment lacks (namespaces, mounts): a skip with its reason, but
// a failure where CI=true, since CI runs as root so that these tests always run there.
#define STUDIO_SKIP_WITHOUT_PRIVILEGE(reason)                                                  \
  do {                                                                                         \
    if (::studio::test::in_ci()) FAIL() << "CI=true, yet this test cannot run: " << (reason);  \
    GTEST_SKIP() << (reason);                                                                  \
  } while (0)
