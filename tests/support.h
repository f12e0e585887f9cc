// Helpers the test suites share: where the reference cases live, temporary model folders, JSON edits.
#pragma once
#include <QDir>
#include <QFile>
#include <QString>
#include <QtTest>

#include <sys/resource.h>

#include <csignal>
#include <filesystem>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

namespace studio::test {

// ../shared/goldens beside the checkout, or $STUDIO_GOLDENS_DIR.
inline std::string goldens_dir() {
  const QByteArray env = qgetenv("STUDIO_GOLDENS_DIR");
  return env.isEmpty() ? std::string(STUDIO_GOLDENS_DIR) : env.toStdString();
}
inline std::string golden_case(const std::string& name) { return goldens_dir() + "/" + name; }

inline nlohmann::json golden_json(const std::string& name) {
  QFile f(QString::fromStdString(golden_case(name) + "/golden.json"));
  if (!f.open(QIODevice::ReadOnly)) qFatal("cannot read %s", qPrintable(f.fileName()));
  return nlohmann::json::parse(f.readAll().toStdString());
}

// A writable copy of a folder (the goldens are read-only).
inline void copy_tree(const std::string& from, const std::string& to) {
  std::filesystem::copy(from, to, std::filesystem::copy_options::recursive);
  for (auto& e : std::filesystem::recursive_directory_iterator(to))
    std::filesystem::permissions(e.path(), std::filesystem::perms::owner_write, std::filesystem::perm_options::add);
  std::filesystem::permissions(to, std::filesystem::perms::owner_write, std::filesystem::perm_options::add);
}

inline void write_file(const std::string& path, const std::string& text) {
  QFile f(QString::fromStdString(path));
  if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate)) qFatal("cannot write %s", path.c_str());
  f.write(text.data(), qint64(text.size()));
}

inline std::string read_file(const std::string& path) {
  QFile f(QString::fromStdString(path));
  if (!f.open(QIODevice::ReadOnly)) qFatal("cannot read %s", path.c_str());
  return f.readAll().toStdString();
}

inline void edit_json(const std::string& path, const std::function<void(nlohmann::json&)>& edit) {
  auto j = nlohmann::json::parse(read_file(path));
  edit(j);
  write_file(path, j.dump(2));
}

// Runs `fn`, expecting an exception of type E whose message contains every one of `parts`.
template <typename E, typename Fn>
bool throws_with(Fn&& fn, std::initializer_list<const char*> parts) {
  try {
    fn();
  } catch (const E& e) {
    const std::string msg = e.what();
    for (const char* p : parts)
      if (msg.find(p) == std::string::npos) {
        qWarning("message lacks '%s': %s", p, msg.c_str());
        return false;
      }
    return true;
  }
  qWarning("no exception was thrown");
  return false;
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

}  // namespace studio::test
