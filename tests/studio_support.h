// What the studio's Qt Test suites share: screenshots on request, answering a question box, waiting for a
// run and for the device list.
#pragma once
#include <QApplication>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QLabel>
#include <QListWidget>
#include <QMessageBox>
#include <QPushButton>
#include <QScrollArea>
#include <QSettings>
#include <QStandardPaths>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTimer>
#include <QtTest>

#include "gui/window/main_window.h"
#include "test_paths.h"

Q_DECLARE_METATYPE(studio::workers::Outcome)

namespace studio::test {

// Every studio suite's start: test-mode paths, the build tree's dit-worker and demo models, settings of its
// own (`organization`) cleared so that each run starts as a first start.
inline void start_studio_suite(const char* organization) {
  QStandardPaths::setTestModeEnabled(true);
  qputenv("DIT_STUDIO_BIN_DIR", build_bin_dir());
  QCoreApplication::setOrganizationName(organization);
  QSettings().clear();
  qRegisterMetaType<workers::Outcome>();
}

// With STUDIO_SCREENSHOTS=DIR: the window as it is now, as DIR/NAME.png.
inline void shoot(QWidget* w, const QString& name) {
  const QByteArray dir = qgetenv("STUDIO_SCREENSHOTS");
  if (dir.isEmpty()) return;
  QTest::qWait(200);
  w->window()->grab().save(QString::fromUtf8(dir) + "/" + name + ".png");
}

// The same at 1280 x 800 and 1920 x 1080 (NAME-1280x800.png, ...); the window is left at 1280 x 800.
inline void shoot_sizes(QWidget* w, const QString& name) {
  const QByteArray dir = qgetenv("STUDIO_SCREENSHOTS");
  if (dir.isEmpty()) return;
  for (QSize size : {QSize(1280, 800), QSize(1920, 1080)}) {
    w->window()->resize(size);
    QTest::qWait(300);
    w->window()->grab().save(
        QString("%1/%2-%3x%4.png").arg(QString::fromUtf8(dir), name).arg(size.width()).arg(size.height()));
  }
  w->window()->resize(1280, 800);
}

// shoot_sizes with `widget` scrolled into view in the settings column at each size.
inline void shoot_sizes_showing(QWidget* w, QWidget* widget, const QString& name) {
  const QByteArray dir = qgetenv("STUDIO_SCREENSHOTS");
  if (dir.isEmpty()) return;
  for (QSize size : {QSize(1280, 800), QSize(1920, 1080)}) {
    w->window()->resize(size);
    QTest::qWait(300);
    w->window()->findChild<QScrollArea*>("settings")->ensureWidgetVisible(widget);
    QTest::qWait(100);
    w->window()->grab().save(
        QString("%1/%2-%3x%4.png").arg(QString::fromUtf8(dir), name).arg(size.width()).arg(size.height()));
  }
  w->window()->resize(1280, 800);
}

// Clicks `button` in the next message box named `name` when it shows; *asked (if given) says it did.
inline void answer_next(const QString& name, QMessageBox::StandardButton button, bool* asked = nullptr) {
  if (asked) *asked = false;
  auto* poll = new QTimer;
  QObject::connect(poll, &QTimer::timeout, poll, [poll, name, button, asked] {
    auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget());
    if (!box || box->objectName() != name) return;
    if (asked) *asked = true;
    poll->deleteLater();
    box->button(button)->click();
  });
  poll->start(50);
}

// Waits for the window's run to end (MainWindow::run_finished); the outcome's exit code, or -1 on timeout.
inline int wait_for_run(QSignalSpy& spy, int ms) {
  if (spy.isEmpty() && !spy.wait(ms)) return -1;
  return spy.takeFirst().at(0).value<workers::Outcome>().exit_code;
}

// The window's own widgets, found by their object names as a user would find them on screen (the window
// hands out only its panels): Generate, the reason it is off, the queue, the tabs.
template <class T>
T* named(QWidget& w, const char* name) {
  T* found = w.findChild<T*>(QString::fromLatin1(name));
  if (!found) qFatal("the window has no %s named \"%s\"", T::staticMetaObject.className(), name);
  return found;
}
inline QPushButton* generate_button(QWidget& w) { return named<QPushButton>(w, "generate"); }
inline QLabel* reason(QWidget& w) { return named<QLabel>(w, "reason"); }
inline QListWidget* queue_list(QWidget& w) { return named<QListWidget>(w, "queue"); }
inline QTabWidget* tabs(QWidget& w) { return named<QTabWidget>(w, "tabs"); }

// Waits for the Player's export (started just now, on its own thread) to end: true when it was written, else false
// with `error` set.
inline bool wait_for_export(gui::Player& p, QString* error, int ms = 120000) {
  QSignalSpy done(&p, &gui::Player::exported), failed(&p, &gui::Player::export_failed);
  QElapsedTimer waited;
  waited.start();
  while (done.isEmpty() && failed.isEmpty() && waited.elapsed() < ms) QTest::qWait(20);
  if (!failed.isEmpty()) *error = failed.first().at(0).toString();
  else if (done.isEmpty()) *error = "the export did not end in time";
  return !done.isEmpty();
}

// Exports as the Player's Export does, in the format `path`'s extension names ("DIR/": PNG frames), and waits
// for it: the path written, or "" with `error` set.
inline QString export_as(gui::Player& p, const QString& path, QString* error) {
  const QString ext = path.endsWith('/') ? QString("/") : "." + QFileInfo(path).suffix().toLower();
  const int i = p.format->findData(ext);
  if (i < 0) return *error = "the Player offers no " + ext + " format here", QString();
  p.format->setCurrentIndex(i);
  const QString started = p.export_chosen(path, error);
  return !started.isEmpty() && wait_for_export(p, error) ? started : QString();
}

// Until `dit-worker --list-devices` has answered and the CPU is listed.
inline void wait_for_devices(gui::MainWindow& w) {
  QTRY_VERIFY_WITH_TIMEOUT(w.parallel_panel().devices->item(0)->text().contains(" cores"), 120000);
}

}  // namespace studio::test
