// A picture a run starts from, as the run will read it: decoded by the engine's reader (video/picture.h), so what
// the studio shows is what the model sees (EXIF orientation applied, alpha dropped) and what the run would refuse
// is refused here first.
#pragma once
#include <QImage>
#include <QString>

namespace studio::gui {

// The picture at `path` as RGB; a null image with `why` set (the engine's words, naming `flag` and the file) when
// the run would refuse it.
QImage read_run_picture(const QString& path, const std::string& flag, QString* why);

}  // namespace studio::gui
