#include "plan/output_format.h"

#include <cctype>
#include <filesystem>

#include "plan/error.h"

namespace studio::plan {

Format format_for(const std::string& path) {
  if (!path.empty() && path.back() == '/') return Format::PNG;
  std::string ext = std::filesystem::path(path).extension().string();
  for (auto& c : ext) c = char(std::tolower(static_cast<unsigned char>(c)));
  if (ext == ".mp4") return Format::MP4;
  if (ext == ".webm") return Format::WebM;
  if (ext == ".gif") return Format::GIF;
  if (ext.empty()) return Format::PNG;
  if (ext == ".png") return Format::ImagePNG;
  if (ext == ".jpg" || ext == ".jpeg") return Format::ImageJPEG;
  if (ext == ".webp") return Format::ImageWebP;
  throw InputError("--output " + path + ": unknown extension '" + ext +
                   "'; use .mp4, .webm, .gif or a folder name (numbered PNGs) for clips, .png, .jpg or .webp "
                   "for images");
}

bool is_image(Format f) { return f == Format::ImagePNG || f == Format::ImageJPEG || f == Format::ImageWebP; }

std::string output_of_video(const std::string& output, int sample, int videos) {
  if (videos == 1) return output;
  const std::filesystem::path p(without_trailing_slash(output));
  return (p.parent_path() / (p.stem().string() + "_" + std::to_string(sample + 1) + p.extension().string())).string() +
         (output.back() == '/' ? "/" : "");
}

std::string sidecar_of(const std::string& output, Format f) {
  if (f == Format::PNG) return (std::filesystem::path(without_trailing_slash(output)) / "clip.json").string();
  return output + ".json";
}

}  // namespace studio::plan
