// MagCache's calibration (Ma et al. 2025, "MagCache: Fast Video Generation with Magnitude-Aware Cache";
// github.com/Zehong-Ma/MagCache): how the magnitude of what the blocks add changes from one call to the
// next, measured once on an uncached run of a model (`--magcache_calibrate FILE`) and kept in a file that
// later runs read (`--magcache_ratios FILE`). Torch-free: the launcher and the studio check the file first.
#pragma once
#include <string>
#include <vector>

namespace studio::plan {

struct MagRatios {
  std::string model;            // the folder it was measured on, for the user to see
  std::string variant;          // that model's Variant id: ratios of another model mean nothing ("" in older files)
  // Its transformer's shape: one variant id covers several sizes (Wan2.1's 1.3B and 14B); 0 in older files.
  int blocks = 0, width = 0;
  int steps = 0;                // the calls of the calibration run, one a step
  std::vector<double> ratios;   // steps - 1 of them: call i + 1's mean residual norm over call i's
};

// InputError naming the file, the field and what would work.
MagRatios read_mag_ratios(const std::string& path);
void write_mag_ratios(const std::string& path, const MagRatios& r);  // whole or not at all

// Why ratios measured on `r` do not fit the model of variant `variant`, `blocks` blocks of width `width`
// ("" when they fit; a file that does not say is taken as fitting).
std::string mag_ratios_mismatch(const MagRatios& r, const std::string& variant, int blocks, int width);

// The ratio of each call of a run of `steps` (call 0's is 1): the file's own when the counts agree, else
// nearest-interpolated over the calls as MagCache's code does (numpy's rounding, ties to even).
std::vector<double> mag_ratios_for(const MagRatios& r, int steps);

}  // namespace studio::plan
