// What an output path asks for, decided by its name alone (shared by validation, export and the GUI).
#pragma once
#include <string>

namespace studio::plan {

enum class Format { MP4, WebM, GIF, PNG };

// By extension: .mp4, .webm, .gif; a path ending in '/' or with no extension is a folder of PNGs.
// Throws InputError naming the path and the extensions that work.
Format format_for(const std::string& path);

}  // namespace studio::plan
