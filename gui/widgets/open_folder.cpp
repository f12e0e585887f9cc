#include "gui/widgets/open_folder.h"

#include <QDesktopServices>
#include <QObject>
#include <QUrl>

namespace studio::gui {

QString open_folder(const QString& folder) {
  if (QDesktopServices::openUrl(QUrl::fromLocalFile(folder))) return {};
  return QObject::tr("No file manager answered (none is registered to open folders); the files are in %1").arg(folder);
}

}  // namespace studio::gui
