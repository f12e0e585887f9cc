#include "gui/widgets/run_picture.h"

#include <exception>

#include "video/picture.h"

namespace studio::gui {

QImage read_run_picture(const QString& path, const std::string& flag, QString* why) {
  try {
    const auto p = video::read_picture(path.toStdString(), flag);
    return QImage(p.rgb.data(), p.width, p.height, 3 * p.width, QImage::Format_RGB888).copy();
  } catch (const std::exception& e) {
    if (why) *why = QString::fromStdString(e.what());
    return {};
  }
}

}  // namespace studio::gui
