// A line edit for a folder that reads whole at any width: while it does not have focus it shows the path
// elided in the middle ("/home/me/…/demo-model"), the full path in its tooltip; focused, it edits as usual.
#pragma once
#include <QLineEdit>

namespace studio::gui {

class PathEdit : public QLineEdit {
 public:
  explicit PathEdit(QWidget* parent = nullptr);
  // What the field shows while it does not have focus.
  QString shown_text() const;

 protected:
  void paintEvent(QPaintEvent* e) override;
};

}  // namespace studio::gui
