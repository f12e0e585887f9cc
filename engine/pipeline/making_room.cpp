#include "pipeline/making_room.h"

#include "plan/error.h"

namespace studio::pipeline {

bool room_made(const std::exception& e, const std::function<bool()>& make_room, const std::string& doing,
               const std::string& then, const std::function<void(const std::string&)>& log) {
  if (!is_out_of_memory(e.what()) || !make_room || !make_room()) return false;
  const std::string what = e.what();
  log("out of memory " + doing + " beside the transformer kept from the last run (" + what.substr(0, what.find('\n')) +
      "); it is let go, and " + then);
  return true;
}

}  // namespace studio::pipeline
