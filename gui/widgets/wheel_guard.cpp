#include "gui/widgets/wheel_guard.h"

#include <QAbstractSpinBox>
#include <QComboBox>
#include <QEvent>

namespace studio::gui {

void WheelGuard::guard(QWidget* root) {
  QList<QWidget*> fields;
  for (auto* s : root->findChildren<QAbstractSpinBox*>()) fields << s;
  for (auto* c : root->findChildren<QComboBox*>()) fields << c;
  for (QWidget* w : fields) {
    w->setFocusPolicy(Qt::StrongFocus);
    w->removeEventFilter(this);
    w->installEventFilter(this);
  }
}

bool WheelGuard::eventFilter(QObject* watched, QEvent* event) {
  auto* w = qobject_cast<QWidget*>(watched);
  if (event->type() != QEvent::Wheel || !w || w->hasFocus()) return false;
  // Ignored and filtered: QApplication passes the wheel on to the parents, up to the scroll area.
  event->ignore();
  return true;
}

}  // namespace studio::gui
