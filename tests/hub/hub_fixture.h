// What the Hub suites share: the local stand-in for the Hub (fake_hub.h) serving flux_words_tiny as a
// repository, a cache folder, and a float32 comparison of two files' tensors read without LibTorch.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "hub/download.h"
#include "hub/fake_hub.h"
#include "io/safetensors/safetensors_file.h"
#include "support.h"

namespace studio::test {

inline const char* kFluxRepo = "test-org/flux-words-tiny";

// The largest difference between two float32 tensors of as many values.
inline double max_abs_difference(const io::SafetensorsFile& fa, const io::TensorInfo& a, const io::SafetensorsFile& fb,
                                 const io::TensorInfo& b) {
  double worst = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    float x, y;
    std::memcpy(&x, fa.data(a) + 4 * i, 4);
    std::memcpy(&y, fb.data(b) + 4 * i, 4);
    worst = std::max(worst, double(std::fabs(x - y)));
  }
  return worst;
}

class Hub : public ::testing::Test {
 protected:
  void SetUp() override {
    server_.add_repo(kFluxRepo, golden_case("flux_words_tiny"));
    settings_.endpoint = server_.endpoint();
    settings_.cache_dir = tmp_.path("hub");
  }
  hub::DownloadResult download(const std::string& repo, hub::DownloadOptions o = {}) {
    hub::HubClient client(settings_);
    return hub::download_repo(client, repo, o);
  }
  int requests_for(const std::string& part, bool with_range = false) {
    int n = 0;
    for (const auto& r : server_.requests()) n += contains(r.target, part) && (!with_range || !r.range.empty());
    return n;
  }
  std::vector<std::string> ranges_for(const std::string& part) {
    std::vector<std::string> out;
    for (const auto& r : server_.requests())
      if (contains(r.target, part) && !r.range.empty()) out.push_back(r.range);
    return out;
  }
  std::string repo_path() const { return hub::repo_dir(settings_.cache_dir, kFluxRepo); }

  TempDir tmp_;
  FakeHub server_;
  hub::HubSettings settings_;
};

}  // namespace studio::test
