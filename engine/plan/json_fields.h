// JSON config fields read with their types checked: every message names the file and the field. The
// one reader of every model folder's config files.
#pragma once
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "plan/error.h"

namespace studio::plan {

using nlohmann::json;

// Reads JSON fields with their types checked; every message names the file and the field.
class Fields {
 public:
  Fields(const std::string& text, std::string file) : file_(std::move(file)) {
    try {
      j_ = json::parse(text);
    } catch (const json::parse_error& e) {
      throw InputError(file_ + ": not valid JSON (" + e.what() + ")");
    }
    if (!j_.is_object()) throw InputError(file_ + ": expected a JSON object at the top level");
  }

  bool has(const char* key) const { return j_.contains(key) && !j_[key].is_null(); }

  template <typename T>
  T get(const char* key, T fallback) const {
    if (!has(key)) return fallback;
    const json& v = j_[key];
    try {
      if constexpr (std::is_same_v<T, bool>) {
        if (!v.is_boolean()) throw std::invalid_argument("");
      } else if constexpr (std::is_integral_v<T>) {
        if (!v.is_number_integer()) throw std::invalid_argument("");
      } else if constexpr (std::is_floating_point_v<T>) {
        if (!v.is_number()) throw std::invalid_argument("");
      } else {
        if (!v.is_string()) throw std::invalid_argument("");
      }
      return v.get<T>();
    } catch (const std::exception&) {
      throw InputError(file_ + ": field '" + key + "' has value " + v.dump() + ", expected " + kind<T>());
    }
  }

  int positive(const char* key, int fallback) const {
    int v = get<int>(key, fallback);
    if (v <= 0) fail(key, std::to_string(v), "must be a positive integer");
    return v;
  }

  // A list of positive integers.
  std::vector<int> positive_list(const char* key, std::vector<int> fallback) const {
    if (!has(key)) return fallback;
    const json& v = j_[key];
    std::vector<int> out;
    if (v.is_array() && !v.empty())
      for (const auto& x : v) {
        if (!x.is_number_integer() || x.get<int>() <= 0) break;
        out.push_back(x.get<int>());
      }
    if (out.empty() || out.size() != v.size()) fail(key, v.dump(), "must be a non-empty list of positive integers");
    return out;
  }

  [[noreturn]] void fail(const char* key, const std::string& value, const std::string& why) const {
    throw InputError(file_ + ": field '" + key + "' = " + value + " " + why);
  }

  const json& raw() const { return j_; }

 private:
  template <typename T>
  static const char* kind() {
    if constexpr (std::is_same_v<T, bool>) return "true or false";
    else if constexpr (std::is_integral_v<T>) return "an integer";
    else if constexpr (std::is_floating_point_v<T>) return "a number";
    else return "a string";
  }
  json j_;
  std::string file_;
};

inline void expect_class(const Fields& f, const char* file, std::initializer_list<const char*> accepted) {
  std::string cls = f.get<std::string>("_class_name", "");
  for (const char* a : accepted)
    if (cls == a) return;
  std::string list;
  for (const char* a : accepted) list += (list.empty() ? "" : " or ") + std::string(a);
  throw InputError(std::string(file) + ": _class_name is '" + cls + "'; this version supports " + list);
}


}  // namespace studio::plan
