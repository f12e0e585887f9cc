#include "plan/nearest_names.h"

#include <algorithm>
#include <cctype>

namespace studio::plan {

namespace {

std::string lower(std::string s) {
  for (auto& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Edits between a and b: a letter inserted, deleted or changed, or two neighbours swapped (Damerau's
// "optimal string alignment").
size_t edits(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1])});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

// Enough letters that a fragment says something: "a" is in every name.
constexpr size_t kShortestFragment = 3;

}  // namespace

std::vector<std::string> nearest_names(const std::string& given, const std::vector<std::string>& names, size_t most) {
  const std::string g = lower(given);
  const size_t allowed = std::max<size_t>(2, g.size() / 4);
  std::vector<std::pair<size_t, std::string>> near, containing;
  for (const auto& n : names) {
    const std::string l = lower(n);
    if (const size_t e = edits(g, l); e <= allowed) near.emplace_back(e, n);
    else if (g.size() >= kShortestFragment && l.find(g) != std::string::npos) containing.emplace_back(l.size(), n);
  }
  auto& pick = near.empty() ? containing : near;
  std::stable_sort(pick.begin(), pick.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> out;
  for (size_t i = 0; i < pick.size() && i < most; ++i) out.push_back(pick[i].second);
  return out;
}

std::string did_you_mean(const std::string& given, const std::vector<std::string>& names, const std::string& prefix) {
  const auto near = nearest_names(given, names);
  if (near.empty()) return "";
  std::string out = "; did you mean ";
  for (size_t i = 0; i < near.size(); ++i)
    out += (i == 0 ? "" : i + 1 == near.size() ? " or " : ", ") + prefix + near[i];
  return out + "?";
}

}  // namespace studio::plan
