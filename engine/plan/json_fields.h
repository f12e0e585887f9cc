// JSON config fields read with their types checked: every message names the file and the field. The
// one reader of every model folder's config files.
#pragma once
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
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
    } catch (const json::exception& e) {  // a syntax error, or a number out of range
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
        // Unsigned JSON integers above int64 and values outside T would otherwise wrap silently.
        if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX)))
          throw std::invalid_argument("");
        const int64_t x = v.get<int64_t>();
        if (x < int64_t(std::numeric_limits<T>::min()) || uint64_t(x) > uint64_t(std::numeric_limits<T>::max()))
          throw std::invalid_argument("");
      } else if constexpr (std::is_floating_point_v<T>) {
        if (!v.is_number() || !std::isfinite(v.get<double>())) throw std::invalid_argument("");
      } else {
        if (!v.is_string()) throw std::invalid_argument("");
      }
      return v.get<T>();
    } catch (const std::exception&) {
      throw InputError(file_ + ": field '" + key + "' has value " + v.dump() + ", expected " + kind<T>());
    }
  }

  // An integer from `lo` to `hi`: bounds well beyond any real model's, so that the sizes made from it
  // cannot overflow ("field 'num_attention_heads' = 0 must be 1 to 1024").
  int in_range(const char* key, int fallback, int lo, int hi) const {
    const int64_t v = get<int64_t>(key, fallback);
    if (v < lo || v > hi) fail(key, std::to_string(v), "must be " + std::to_string(lo) + " to " + std::to_string(hi));
    return int(v);
  }
  int positive(const char* key, int fallback, int hi) const { return in_range(key, fallback, 1, hi); }

  // A list of 1 to `max_count` integers, each 1 to `hi`.
  std::vector<int> positive_list(const char* key, std::vector<int> fallback, int hi, size_t max_count) const {
    const auto out = any_positive_list(key, std::move(fallback));
    if (!has(key)) return out;
    if (out.size() > max_count) fail(key, dump(key), "has more than " + std::to_string(max_count) + " entries");
    for (int x : out)
      if (x > hi) fail(key, dump(key), "must hold integers from 1 to " + std::to_string(hi));
    return out;
  }

  [[noreturn]] void fail(const char* key, const std::string& value, const std::string& why) const {
    throw InputError(file_ + ": field '" + key + "' = " + value + " " + why);
  }

  const json& raw() const { return j_; }
  // The field as written, for a message; "(absent: the default)" when the file leaves it out.
  std::string dump(const char* key) const { return j_.contains(key) ? j_[key].dump() : "(absent: the default)"; }

 private:
  // A list of positive integers.
  std::vector<int> any_positive_list(const char* key, std::vector<int> fallback) const {
    if (!has(key)) return fallback;
    const json& v = j_[key];
    std::vector<int> out;
    if (v.is_array() && !v.empty())
      for (const auto& x : v) {
        if (!x.is_number_integer() || x.get<int64_t>() <= 0 || x.get<int64_t>() > INT32_MAX) break;
        out.push_back(int(x.get<int64_t>()));
      }
    if (out.empty() || out.size() != v.size()) fail(key, v.dump(), "must be a non-empty list of positive integers");
    return out;
  }

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
