// A spin box puts its last value back, silently, when what was typed is outside its range ("0" steps): this
// says so. It watches the spin boxes under a widget; each refusal is told, in the field's words, until the
// field is edited again.
#pragma once
#include <QObject>
#include <QString>
#include <QWidget>

#include <map>
#include <string>
#include <vector>

#include "plan/job.h"

namespace studio::gui {

class RevertNotice : public QObject {
  Q_OBJECT
 public:
  using QObject::QObject;
  // Watches every named spin box under `root` (those present now).
  void watch(QWidget* root);
  // The refusals, each a problem of its field (the spin box's object name), to be shown as warnings.
  std::vector<plan::Problem> problems() const;

 Q_SIGNALS:
  void changed();

 private:
  std::map<std::string, QString> typed_;      // field -> what was last typed in it
  std::map<std::string, std::string> said_;   // field -> why it was not taken
};

}  // namespace studio::gui
