// dit-studio: the desktop studio. Links engine/plan, the event protocol and the launcher; never LibTorch.
#include <QApplication>

#include "gui/main_window.h"

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setOrganizationName("DiT Studio");
  QApplication::setApplicationName("dit-studio");
  studio::gui::MainWindow w;
  w.resize(1280, 860);
  w.show();
  return app.exec();
}
