#include "gui/results_wiring.h"

#include <QSplitter>
#include <QStatusBar>

#include "gui/main_window.h"

namespace studio::gui {

void connect_results(MainWindow* w) {
  auto load = [w](const RunRecord& r) {
    QString error;
    if (!w->player->load_run(r, &error)) {
      w->history->status->setText(error);
      return false;
    }
    w->tabs->setCurrentWidget(w->player);
    return true;
  };
  QObject::connect(w->history, &History::play, w, [w, load](const RunRecord& r) {
    if (load(r) && !w->player->image_mode()) w->player->play();
  });
  QObject::connect(w->history, &History::export_run, w, [w, load](const RunRecord& r) {
    if (load(r)) w->player->export_dialog();
  });
  QObject::connect(w->player, &Player::exported, w,
                   [w](const QString& path) { w->statusBar()->showMessage(QObject::tr("Exported to %1").arg(path)); });
  // Compare shows two runs side by side: the settings panel steps aside while it is shown.
  QObject::connect(w->tabs, &QTabWidget::currentChanged, w, [w] {
    if (auto* split = w->findChild<QSplitter*>("split"))
      split->widget(0)->setVisible(w->tabs->currentWidget() != w->compare_view);
  });
}

}  // namespace studio::gui
