#include "gui/run/frame_encoder.h"

namespace studio::gui {

QImage to_image(const events::Picture& p) {
  return QImage(reinterpret_cast<const uchar*>(p.rgb.data()), p.width, p.height, p.width * 3, QImage::Format_RGB888)
      .copy();  // the QImage above only borrows the message's bytes
}

RunPicture decode_picture(const events::Message& m) {
  const auto p = events::Picture::parse(m);
  return {m.kind == events::Kind::Frame, p.rank, p.step, p.video, p.index, to_image(p)};
}

FrameEncoder::FrameEncoder(QString folder) : folder_(std::move(folder)) {
  pool_.setMaxThreadCount(1);  // the ranks need the cores more
}

FrameEncoder::~FrameEncoder() { wait(); }

void FrameEncoder::save(const RunPicture& p) {
  if (folder_.isEmpty() || !p.frame || p.video != 0) return;
  const QString path = QString("%1/%2.png").arg(folder_).arg(p.index, 4, 10, QChar('0'));
  pool_.start([this, image = p.image, path] {
    if (!image.save(path)) ++failures_;
  });
}

void FrameEncoder::wait() { pool_.waitForDone(); }

}  // namespace studio::gui
