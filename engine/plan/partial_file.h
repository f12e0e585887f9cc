// Where a file (or a folder of frames) is written before it is whole: beside it, hidden, named by the process
// that writes it (".NAME.partial-PID.EXT": the extension kept, FFmpeg chooses its muxer by it), then renamed into
// place. A reader never sees half a file, and what a killed writer left can be found by its pid.
#pragma once
#include <string>

namespace studio::plan {

std::string partial_path(const std::string& path);  // this process's

// Removes what process `pid` left in `folder` (partial files and folders, and their sidecars); returns how many
// entries it removed. For the launcher, after a rank that writes has died without cleaning up.
int remove_partials(const std::string& folder, long pid);

}  // namespace studio::plan
