// The cost model's calibration as the launcher gets it: from the cache when this machine's devices, the
// rank count and the dtype are those it was measured for, else measured by starting that many
// `dit-worker --calibrate` ranks (a few seconds) and cached ($XDG_CACHE_HOME/dit-studio/, else
// ~/.cache/dit-studio/, one file per device set, rank count and dtype). Torch-free.
#pragma once
#include <atomic>
#include <optional>
#include <string>

#include "plan/cost_model.h"
#include "workers/launch/devices.h"

namespace studio::workers {

// What the cache is keyed by: the devices as `dit-worker --list-devices` lists them (less free memory),
// the worker's build, the ranks and the dtype. A change of any of them is a new measurement.
std::string calibration_key(const Devices& devices, int ranks, const std::string& dtype);
std::string calibration_cache_file(const std::string& key);

// The cached calibration for this key, if any (measures nothing: for the studio's lists).
std::optional<plan::Calibration> cached_calibration(const Devices& devices, int ranks, const std::string& dtype);

// `measure`: measure again even when the cache holds this key. `used_cache` says which happened. Figures
// measured on a busy machine are returned but not cached, and `busy_note` says why they look busy ("the
// machine was busy (a small operation took N us)"), for each interface to add its own remedy. `stop` set
// while the ranks measure ends them and throws Cancelled.
plan::Calibration calibration_for(const std::string& worker_exe, const Devices& devices, int ranks,
                                  const std::string& dtype, bool measure, bool* used_cache = nullptr,
                                  std::string* busy_note = nullptr, const std::atomic<bool>* stop = nullptr);

}  // namespace studio::workers
