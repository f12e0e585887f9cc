// A part of a run that runs out of memory beside a transformer a serving worker keeps (run_job.h's
// KeptBetweenRuns) runs once more after the transformer is let go, as it would have fitted in a fresh run.
#pragma once
#include <exception>
#include <functional>
#include <string>

#include "sampling/noise.h"

namespace studio::pipeline {

// Whether `e` is out of memory and `make_room` let something go (false: nothing was kept); then says so, as
// "out of memory <doing> beside the transformer kept from the last run (<the error's first line>); it is let go,
// and <then>".
bool room_made(const std::exception& e, const std::function<bool()>& make_room, const std::string& doing,
               const std::string& then, const std::function<void(const std::string&)>& log);

// run(), and once more where it ran out of memory and room_made() made room.
template <class Run>
auto again_with_room(const Run& run, const std::function<bool()>& make_room, const std::string& doing,
                     const std::string& then, const std::function<void(const std::string&)>& log) -> decltype(run()) {
  try {
    return run();
  } catch (const std::exception& e) {
    if (!room_made(e, make_room, doing, then, log)) throw;
  }
  return run();
}

// again_with_room() for a part that draws from `noise` (CogVideoX's picture encode samples the VAE's posterior):
// the second try starts from the generators' state the first started from, so it draws what the first drew.
template <class Run>
auto again_with_room(const Run& run, sampling::SeededNoise& noise, const std::function<bool()>& make_room,
                     const std::string& doing, const std::string& then,
                     const std::function<void(const std::string&)>& log) -> decltype(run()) {
  const auto start = noise.snapshot();
  return again_with_room(
      [&] {
        noise = start.snapshot();
        return run();
      },
      make_room, doing, then, log);
}

}  // namespace studio::pipeline
