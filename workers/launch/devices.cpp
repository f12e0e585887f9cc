#include "workers/launch/devices.h"

#include <sys/wait.h>

#include <cstdio>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace studio::workers {

Devices parse_devices(const std::string& text) {
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("gpus") || !j["gpus"].is_array())
    throw std::runtime_error("dit-worker --list-devices printed no device list: " + text.substr(0, 200));
  Devices d;
  try {
    for (const auto& g : j["gpus"])
      d.gpus.push_back({g.at("index").get<int>(), g.at("name").get<std::string>(), g.at("memory_bytes").get<uint64_t>(),
                        g.at("free_bytes").get<uint64_t>()});
    d.cpu_cores = j.at("cpu").at("cores").get<int>();
    d.cpu_memory_bytes = j.at("cpu").at("memory_bytes").get<uint64_t>();
    d.note = j.value("note", "");
    d.build = j.value("build", "");
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("dit-worker --list-devices printed a malformed device list: ") + e.what());
  }
  return d;
}

Devices list_devices(const std::string& worker_exe) {
  const std::string cmd = "'" + worker_exe + "' --list-devices 2>&1";
  std::FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) throw std::runtime_error("cannot run " + worker_exe + " --list-devices");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0 && out.size() < (1 << 20)) out.append(buf, n);
  const int status = ::pclose(p);
  if (status != 0) throw std::runtime_error(worker_exe + " --list-devices failed: " + out.substr(0, 400));
  return parse_devices(out);
}

}  // namespace studio::workers
