#include "plan/model_folder.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "plan/error.h"
#include "plan/partial_file.h"
#include "plan/family.h"

namespace fs = std::filesystem;

namespace studio::plan {

std::string read_text_file(const std::string& path, size_t max_bytes) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw InputError(path + ": a folder, not a file; give the file itself");
  if (!fs::is_regular_file(path, ec)) throw InputError(path + ": file not found");
  auto size = fs::file_size(path, ec);
  if (ec) throw InputError(path + ": cannot read its size (" + ec.message() + ")");
  if (size > max_bytes)
    throw InputError(path + ": " + std::to_string(size) + " bytes is too large for a config file (limit " +
                     std::to_string(max_bytes) + ")");
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (!in && !in.eof()) throw InputError(path + ": read failed");
  return ss.str();
}

void write_text_file(const std::string& path, const std::string& text, const std::string& what) {
  const std::string tmp = partial_path(path);  // found and removed by the launcher should this process die
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    if (!out.flush()) {
      std::remove(tmp.c_str());
      throw InputError(path + ": cannot write " + what + " there (" + std::strerror(errno) + ")");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    throw InputError(path + ": cannot write " + what + " there (" + why + ")");
  }
}

std::string ModelFolder::t5_part() const { return rules_of(*this).t5_part(); }
std::string ModelFolder::t5_tokenizer_part() const { return rules_of(*this).t5_tokenizer_part(); }
bool ModelFolder::can_encode_words() const { return rules_of(*this).missing_text_parts(*this).empty(); }
bool ModelFolder::has_vae() const { return rules_of(*this).has_vae(*this); }
int ModelFolder::vae_scale_spatial() const { return rules_of(*this).vae_scale_spatial(*this); }
int ModelFolder::vae_scale_temporal() const { return rules_of(*this).vae_scale_temporal(*this); }

std::string part_path(const ModelFolder& m, const std::string& part, const std::string& file) {
  const fs::path p = fs::path(m.dir) / part;
  return (file.empty() ? p : p / file).string();
}

std::string missing_text_parts(const ModelFolder& m) {
  std::string out;
  for (const auto& part : rules_of(m).missing_text_parts(m)) out += (out.empty() ? "no " : ", no ") + part;
  return out;
}

std::string example_repo(const ModelFolder& m) {
  const auto repos = rules_of(m).known_repos();
  for (const auto& r : repos)
    if (r.variant == m.variant.id) return r.repo_id;
  return repos.empty() ? "" : repos.front().repo_id;
}

}  // namespace studio::plan
