// The mouse wheel scrolls the panel rather than changing the value under the pointer: a spin box or
// combo box takes the wheel only while it has focus (a click or Tab gives it focus; the wheel no longer does).
#pragma once
#include <QObject>
#include <QWidget>

namespace studio::gui {

class WheelGuard : public QObject {
 public:
  using QObject::QObject;
  // Guards every spin box and combo box under `root` (those present now).
  void guard(QWidget* root);

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;
};

}  // namespace studio::gui
