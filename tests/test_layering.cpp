// The source tree's layers, read from its #include lines: a folder is a library's part (docs/design.md, "A
// library is a folder"), no folder includes another that includes it back (directly or through others),
// and the torch-free folders (everything the studio and the launcher link) include nothing of LibTorch's
// nor of a folder that needs it.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "test_paths.h"

namespace fs = std::filesystem;

namespace {

// The folder a file is in, as includes name it: engine/plan/job.h -> "plan", gui/window/x.h -> "gui/window".
std::string folder_of(const fs::path& file) {
  std::string dir = fs::path(file).parent_path().lexically_relative(studio::test::source_dir()).generic_string();
  return dir.rfind("engine/", 0) == 0 ? dir.substr(7) : dir;
}

struct Include {
  std::string file, line;
};

// folder -> folder it includes -> one include that shows it.
std::map<std::string, std::map<std::string, Include>> include_graph() {
  std::map<std::string, std::map<std::string, Include>> graph;
  const std::regex include_line(R"(^\s*#\s*include\s*["<]([^">]+)[">])");
  for (const char* top : {"engine", "workers", "gui"}) {
    for (const auto& e : fs::recursive_directory_iterator(fs::path(studio::test::source_dir()) / top)) {
      const auto ext = e.path().extension();
      if (!e.is_regular_file() || (ext != ".h" && ext != ".cpp")) continue;
      const std::string from = folder_of(e.path());
      std::ifstream in(e.path());
      for (std::string line; std::getline(in, line);) {
        std::smatch m;
        if (!std::regex_search(line, m, include_line)) continue;
        const std::string to = fs::path(m[1].str()).parent_path().generic_string();
        if (to.empty() || to == from) continue;
        graph[from].emplace(to, Include{e.path().lexically_relative(studio::test::source_dir()).string(), line});
      }
    }
  }
  return graph;
}

bool torch_free(const std::string& folder) {
  for (const char* prefix : {"plan", "io/files", "io/safetensors", "io/gguf", "text/tokenize", "video", "hub", "workers/events",
                             "workers/launch", "gui"})
    if (folder == prefix || folder.rfind(std::string(prefix) + "/", 0) == 0) return true;
  return false;
}

TEST(Layering, no_folder_includes_one_that_includes_it_back) {
  const auto graph = include_graph();
  ASSERT_TRUE(graph.count("plan") && graph.count("models")) << "no sources under " << studio::test::source_dir();
  // Depth-first search for a back edge; the path to it is the circle.
  std::map<std::string, int> state;  // 1: on the path, 2: done
  std::vector<std::string> path;
  std::string circle;
  std::function<void(const std::string&)> visit = [&](const std::string& f) {
    state[f] = 1;
    path.push_back(f);
    if (auto it = graph.find(f); it != graph.end())
      for (const auto& [to, why] : it->second) {
        if (!circle.empty()) break;
        if (state[to] == 1) {
          for (auto p = std::find(path.begin(), path.end(), to); p != path.end(); ++p) circle += *p + " -> ";
          circle += to + " (" + why.file + ": " + why.line + ")";
        } else if (state[to] == 0) {
          visit(to);
        }
      }
    path.pop_back();
    state[f] = 2;
  };
  for (const auto& [f, _] : graph)
    if (state[f] == 0 && circle.empty()) visit(f);
  EXPECT_TRUE(circle.empty()) << "the folders include each other in a circle: " << circle;
}

TEST(Layering, torch_free_folders_include_nothing_of_libtorch) {
  const auto graph = include_graph();
  std::set<std::string> ours;  // the folders with sources: an include of any other is a library's
  for (const auto& [from, targets] : graph) ours.insert(from);
  size_t checked = 0;
  for (const auto& [from, targets] : graph) {
    if (!torch_free(from)) continue;
    for (const auto& [to, why] : targets) {
      ++checked;
      const bool libtorch = to.rfind("ATen", 0) == 0 || to.rfind("torch", 0) == 0 || to.rfind("c10", 0) == 0;
      EXPECT_TRUE(!libtorch && (!ours.count(to) || torch_free(to)))
          << from << " is torch-free but includes " << to << " (" << why.file << ": " << why.line << ")";
    }
  }
  EXPECT_GT(checked, 10u);
}

}  // namespace
