#include "gui/results/clip_export.h"

#include <cstring>

#include "plan/output_format.h"
#include "video/clip_writer.h"
#include "video/image_writer.h"

namespace studio::gui {

namespace {

// RGB8 rows without QImage's line padding, as the writers take them.
std::vector<uint8_t> packed_rgb(const QImage& image) {
  const QImage rgb = image.convertToFormat(QImage::Format_RGB888);
  const size_t row = size_t(rgb.width()) * 3;
  std::vector<uint8_t> packed(row * size_t(rgb.height()));
  for (int y = 0; y < rgb.height(); ++y) std::memcpy(packed.data() + size_t(y) * row, rgb.constScanLine(y), row);
  return packed;
}

// Thrown out of the frame loop by a cancel: the writer's destructor removes what it began.
struct Stopped {};

}  // namespace

ClipExport::ClipExport(QObject* parent) : QObject(parent) {
  // Connected first, so that whoever listens sees the export as over.
  connect(this, &ClipExport::finished, this, [this] { running_ = false; });
}

ClipExport::~ClipExport() {
  cancel_ = true;
  if (thread_.joinable()) thread_.join();
}

void ClipExport::start(const std::vector<QImage>& frames, int shown, int fps,
                       const std::map<std::string, std::string>& metadata, const QString& path) {
  if (thread_.joinable()) thread_.join();  // the last one has emitted its ending: it is ending
  cancel_ = false;
  running_ = true;
  // QImage shares its pixels between copies, safely across threads for reading.
  thread_ = std::thread([this, frames, shown, fps, metadata, path] {
    const std::string out = path.toStdString();
    try {
      if (plan::is_image(plan::format_for(out))) {
        const QImage& image = frames[size_t(shown)];
        video::ImageInfo info;
        info.width = image.width();
        info.height = image.height();
        info.metadata = metadata;
        video::write_image(out, packed_rgb(image).data(), info);
        Q_EMIT progress(1, 1);
      } else {
        video::ClipInfo info;
        info.width = frames.front().width();
        info.height = frames.front().height();
        info.fps = fps;
        info.metadata = metadata;
        video::ClipWriter writer(out, info);
        for (size_t i = 0; i < frames.size(); ++i) {
          if (cancel_) throw Stopped{};
          writer.add_frame(packed_rgb(frames[i]).data());
          Q_EMIT progress(int(i + 1), int(frames.size()));
        }
        if (cancel_) throw Stopped{};  // not moved into place: the writer removes it
        writer.finish();
      }
      Q_EMIT finished(path, {}, false);
    } catch (const Stopped&) {
      Q_EMIT finished(path, {}, true);
    } catch (const std::exception& e) {
      // The writers name the command line's flag before the path: the export names its path alone.
      QString why = QString::fromStdString(e.what());
      if (why.startsWith("--output ")) why.remove(0, int(std::strlen("--output ")));
      Q_EMIT finished(path, why, false);
    }
  });
}

}  // namespace studio::gui
