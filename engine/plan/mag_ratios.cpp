#include "plan/mag_ratios.h"

#include <cmath>

#include "plan/error.h"
#include "plan/json_fields.h"
#include "plan/model_folder.h"

namespace studio::plan {

MagRatios read_mag_ratios(const std::string& path) {
  const Fields in(read_text_file(path, 1u << 20), path);
  MagRatios r;
  r.model = in.get<std::string>("model", "");
  r.variant = in.get<std::string>("variant", "");
  r.blocks = in.in_range("blocks", 0, 0, 100000);
  r.width = in.in_range("width", 0, 0, 1 << 20);
  r.steps = in.in_range("steps", 0, 2, 100000);
  const auto& v = in.raw().contains("ratios") ? in.raw()["ratios"] : json();
  if (!v.is_array() || v.size() != size_t(r.steps - 1))
    in.fail("ratios", in.dump("ratios"), "must be a list of " + std::to_string(r.steps - 1) +
                                             " numbers (one for each call after the first); measure them again "
                                             "with --magcache_calibrate FILE");
  for (const auto& x : v) {
    if (!x.is_number() || !std::isfinite(x.get<double>()) || x.get<double>() <= 0)
      in.fail("ratios", x.dump(), "is not a positive number; measure the ratios again with --magcache_calibrate FILE");
    r.ratios.push_back(x.get<double>());
  }
  return r;
}

void write_mag_ratios(const std::string& path, const MagRatios& r) {
  const json j{{"model", r.model}, {"variant", r.variant}, {"blocks", r.blocks}, {"width", r.width},
                {"steps", r.steps}, {"ratios", r.ratios}};
  write_text_file(path, j.dump(2) + "\n", "the MagCache ratios");
}

namespace {
std::string shape(const std::string& variant, int blocks, int width) {
  if (blocks == 0 || width == 0) return variant;  // an older file's
  return variant + ", " + std::to_string(blocks) + " blocks of width " + std::to_string(width);
}
}  // namespace

std::string mag_ratios_mismatch(const MagRatios& r, const std::string& variant, int blocks, int width) {
  const bool fits = (r.variant.empty() || r.variant == variant) && (r.blocks == 0 || r.blocks == blocks) &&
                    (r.width == 0 || r.width == width);
  if (fits) return "";
  return "measured on " + r.model + " (" + shape(r.variant, r.blocks, r.width) + "), not on a model like this one (" +
         shape(variant, blocks, width) + ")";
}

std::vector<double> mag_ratios_for(const MagRatios& r, int steps) {
  std::vector<double> src{1.0};
  src.insert(src.end(), r.ratios.begin(), r.ratios.end());
  if (int(src.size()) == steps) return src;
  if (steps == 1) return {src.back()};
  std::vector<double> out;
  const double scale = double(src.size() - 1) / double(steps - 1);
  for (int i = 0; i < steps; ++i) out.push_back(src[size_t(std::nearbyint(i * scale))]);
  return out;
}

}  // namespace studio::plan
