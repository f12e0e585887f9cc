// engine/video in a build configured with -DSTUDIO_WITH_FFMPEG=OFF (a headless GPU box that has no FFmpeg
// libraries): every call that would encode or decode through FFmpeg refuses, naming the file and what works
// instead. Runs that save tensors (--save_tensors) need none of it.
#include <string>

#include "plan/error.h"
#include "video/clip_writer.h"
#include "video/image_writer.h"
#include "video/picture.h"

namespace studio::video {
namespace {

[[noreturn]] void refuse(const std::string& what) {
  throw InputError(what + ": this build has no FFmpeg (it was configured with -DSTUDIO_WITH_FFMPEG=OFF), so it "
                   "cannot read or write pictures and clips; use --save_tensors, or a build with FFmpeg");
}

}  // namespace

struct ClipWriter::Impl {};

ClipWriter::ClipWriter(const std::string& path, const ClipInfo&) { refuse("--output " + path); }
ClipWriter::~ClipWriter() = default;
void ClipWriter::add_frame(const uint8_t*) { refuse("a clip's frame"); }
void ClipWriter::finish() { refuse("a clip"); }
const std::string& ClipWriter::encoder() const { refuse("a clip's encoder"); }
ClipProbe probe_clip(const std::string& path) { refuse(path); }
std::string write_image(const std::string& path, const uint8_t*, const ImageInfo&) { refuse("--output " + path); }
ImageProbe probe_image(const std::string& path) { refuse(path); }
Picture read_picture(const std::string& path, const std::string& flag) { refuse(flag + " " + path); }

}  // namespace studio::video
