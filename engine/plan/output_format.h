// What an output path asks for, decided by its name alone (shared by validation, export and the GUI).
#pragma once
#include <string>

namespace studio::plan {

// Clips: MP4, WebM, GIF, a folder of numbered PNGs. Images: one PNG, JPEG or WebP file.
enum class Format { MP4, WebM, GIF, PNG, ImagePNG, ImageJPEG, ImageWebP };
bool is_image(Format f);

// By extension: .mp4, .webm, .gif; .png, .jpg/.jpeg, .webp; a path ending in '/' or with no extension is
// a folder of PNGs. Throws InputError naming the path and the extensions that work.
Format format_for(const std::string& path);

// The path without the '/' that asks for a folder of frames: the name the folder (or a file) has on disk.
inline std::string without_trailing_slash(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

// Where video `sample` of `videos` goes: the output itself for one, NAME_1.ext, NAME_2.ext ... for several.
std::string output_of_video(const std::string& output, int sample, int videos);

// The JSON beside an output of format `f` that records how it was made: a folder of frames' clip.json, else
// OUTPUT.json.
std::string sidecar_of(const std::string& output, Format f);

}  // namespace studio::plan
