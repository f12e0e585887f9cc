// dit-studio: the desktop studio. Links engine/plan, the event protocol and the launcher; never LibTorch.
#include <QApplication>
#include <QIcon>
#include <QTimer>

#include <cstdio>
#include <cstring>

#include "gui/window/main_window.h"
#include "workers/launch/paths.h"

namespace {

constexpr const char* kUsage = R"(usage: dit-studio [--screenshot FILE] [Qt options]

The DiT Studio desktop application: compose a prompt, check the settings as they are typed, generate
video clips and images on the GPUs or the CPU, and keep, play and compare the results.

  --screenshot FILE   start, wait until the worker has listed the devices, save the window as a PNG
                      image to FILE and quit (exit status 1 when it cannot be written)
  --version           print the version and exit
  --help              print this text and exit

Qt's own options apply too, e.g. -platform offscreen (or QT_QPA_PLATFORM=offscreen) to run with no
display. Runs and their history are kept in the user's data folder (~/.local/share/DiT Studio/dit-studio);
workers are looked for in the setting, in $DIT_STUDIO_WORKER_PATH, then beside dit-studio.
)";

}  // namespace

int main(int argc, char** argv) {
  // Answered before Qt starts, so that they work with no display (help2man, scripts).
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) return std::fputs(kUsage, stdout), 0;
    if (std::strcmp(argv[i], "--version") == 0) return std::puts("dit-studio " STUDIO_VERSION), 0;
  }
  QApplication app(argc, argv);
  QApplication::setOrganizationName("DiT Studio");
  QApplication::setApplicationName("dit-studio");
  QApplication::setDesktopFileName("io.github.ditstudio.DiTStudio");
  const QString icon = QString::fromStdString(studio::workers::data_dir()) +
                       "/../icons/hicolor/256x256/apps/io.github.ditstudio.DiTStudio.png";
  QApplication::setWindowIcon(QIcon::fromTheme("io.github.ditstudio.DiTStudio", QIcon(icon)));
  QString screenshot;
  const QStringList args = app.arguments();
  if (const auto i = args.indexOf("--screenshot"); i >= 0) {
    if (i + 1 >= args.size()) return std::fputs("dit-studio: --screenshot needs a file name (a .png)\n", stderr), 2;
    screenshot = args[i + 1];
  } else if (args.size() > 1) {
    std::fprintf(stderr, "dit-studio: unknown option '%s'; see dit-studio --help\n", qPrintable(args[1]));
    return 2;
  }
  studio::gui::MainWindow w;
  w.resize(1280, 860);
  w.show();
  if (!screenshot.isEmpty()) {
    auto save = [&] {
      const bool ok = w.grab().save(screenshot, "PNG");
      if (!ok) std::fprintf(stderr, "dit-studio: --screenshot %s: cannot write it there\n", qPrintable(screenshot));
      app.exit(ok ? 0 : 1);
    };
    QObject::connect(&w, &studio::gui::MainWindow::devices_listed, &app, save, Qt::QueuedConnection);
    QTimer::singleShot(30000, &app, save);  // a worker that never answers still gives a picture
  }
  return app.exec();
}
