// The devices a job can use, as `dit-worker --list-devices` reports them (JSON). The launcher and the
// studio ask the worker rather than link LibTorch themselves.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace studio::workers {

struct Gpu {
  int index = 0;
  std::string name;
  uint64_t memory_bytes = 0, free_bytes = 0;
};

struct Devices {
  std::vector<Gpu> gpus;
  int cpu_cores = 0;
  uint64_t cpu_memory_bytes = 0;
  std::string note;   // e.g. why there is no GPU
  std::string build;  // the worker's --version line: what it was built with
};

// Parses the worker's JSON; std::runtime_error naming what is wrong.
Devices parse_devices(const std::string& json);
// Runs `worker_exe --list-devices`; std::runtime_error with its output when it fails.
Devices list_devices(const std::string& worker_exe);

}  // namespace studio::workers
