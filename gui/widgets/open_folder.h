// Shows a folder in the desktop's file manager. Where none answers (no handler is registered for folders, as on a
// bare window manager), the caller is given the words to say so, with the path to open by hand.
#pragma once
#include <QString>

namespace studio::gui {

// "" when the file manager was asked; else what to tell the user.
QString open_folder(const QString& folder);

}  // namespace studio::gui
